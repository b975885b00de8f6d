//! Timed repetitions of a kernel on several threads: each thread builds its own data (so that
//! its pages are first touched, and placed, by the thread that uses them), then every
//! repetition starts all threads together and lasts until the last one is done.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// Timed repetitions at least (after one warmup), whatever the time budget.
pub const MIN_REPS: usize = 3;
/// Timed repetitions at most.
pub const MAX_REPS: usize = 1000;

/// The durations of each phase's timed repetitions (`phases` of them per repetition, timed one
/// after the other), after one untimed warmup repetition.
///
/// `init(thread)` builds a thread's data on that thread; `work(data, phase)` runs one phase of
/// one repetition on it. Repetitions go on while the next one should end within `budget` (from
/// the call, the building included), from [`MIN_REPS`] to [`MAX_REPS`]. The first thread's
/// error from `init` is the error.
pub fn repeat<S>(
    threads: usize,
    phases: usize,
    budget: Duration,
    init: impl Fn(usize) -> Result<S, String> + Sync,
    work: impl Fn(&mut S, usize) + Sync,
) -> Result<Vec<Vec<Duration>>, String> {
    let started = Instant::now();
    let ready = Barrier::new(threads + 1);
    let go = Barrier::new(threads + 1);
    let done = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|scope| {
        // Each thread waits for word that all of them started before it joins the barriers:
        // when one cannot be started (a limit on processes, say), the others are told to leave
        // (their channel closes) instead of waiting at a barrier for it forever.
        let mut launched = Vec::with_capacity(threads);
        for thread in 0..threads {
            let (ready, go, done, stop, failure) = (&ready, &go, &done, &stop, &failure);
            let (init, work) = (&init, &work);
            let (tell, told) = std::sync::mpsc::channel::<()>();
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                if told.recv().is_err() {
                    return;
                }
                let mut data = match init(thread) {
                    Ok(data) => Some(data),
                    Err(e) => {
                        failure
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get_or_insert(e);
                        None
                    }
                };
                ready.wait();
                loop {
                    go.wait();
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    for phase in 0..phases {
                        if let Some(data) = data.as_mut() {
                            work(data, phase);
                        }
                        done.wait();
                        if phase + 1 < phases {
                            go.wait();
                        }
                    }
                }
            });
            if let Err(e) = spawned {
                return Err(format!(
                    "cannot start thread {} of {threads}: {e}",
                    thread + 1
                ));
            }
            launched.push(tell);
        }
        for tell in launched {
            // The thread is alive and waiting on the other end, so the send succeeds.
            let _ = tell.send(());
        }
        ready.wait();
        let failed = failure.lock().unwrap_or_else(|p| p.into_inner()).take();
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); phases];
        if failed.is_none() {
            // Repetition 0 is the warmup.
            for rep in 0..=MAX_REPS {
                let mut this = Vec::with_capacity(phases);
                for _ in 0..phases {
                    // The clock is read before the threads are released, never after: were this
                    // thread descheduled between the barrier and the clock, a repetition would
                    // look shorter than it was, and the best of them too good. Read before,
                    // a delay can only lengthen it.
                    let t0 = Instant::now();
                    go.wait();
                    done.wait();
                    this.push(t0.elapsed());
                }
                if rep > 0 {
                    for (phase, t) in this.iter().enumerate() {
                        times[phase].push(*t);
                    }
                }
                let next: Duration = this.iter().sum();
                if rep >= MIN_REPS && started.elapsed() + next > budget {
                    break;
                }
            }
        }
        stop.store(true, Ordering::Release);
        go.wait();
        match failed {
            Some(e) => Err(e),
            None => Ok(times),
        }
    })
}

/// A vector of `len` copies of `value`, or an error saying how much memory was asked for
/// (instead of the abort of a failed allocation).
pub fn try_filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        format!(
            "cannot allocate {what} ({:.1} MiB)",
            (len * std::mem::size_of::<T>()) as f64 / (1 << 20) as f64
        )
    })?;
    v.resize(len, value);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_runs_every_phase_of_every_repetition() {
        let runs = Mutex::new(vec![[0usize; 2]; 3]);
        let times = repeat(3, 2, Duration::ZERO, Ok, |thread: &mut usize, phase| {
            runs.lock().unwrap()[*thread][phase] += 1
        })
        .unwrap();
        assert_eq!(times.len(), 2);
        assert_eq!(times[0].len(), MIN_REPS);
        assert_eq!(times[1].len(), MIN_REPS);
        // The warmup too.
        assert_eq!(*runs.lock().unwrap(), vec![[MIN_REPS + 1; 2]; 3]);
    }

    #[test]
    fn a_thread_that_cannot_build_its_data_is_the_error() {
        let result = repeat(
            2,
            1,
            Duration::ZERO,
            |t| {
                if t == 1 {
                    Err("no memory".into())
                } else {
                    Ok(())
                }
            },
            |_, _| {},
        );
        assert_eq!(result.unwrap_err(), "no memory");
    }
}
