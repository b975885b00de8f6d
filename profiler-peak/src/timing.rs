//! Timed repetitions of a kernel on several threads, each pinned to a CPU of its own where it
//! can be ([`super::affinity`]). Each thread builds its own data (so that its pages
//! are first touched, and placed, by the thread that uses them); every repetition starts all
//! threads together and lasts until the last one is done.
//!
//! Thread 0 leads: it reads the clock, releases the others, runs its own share, waits for
//! theirs, and reads the clock again, so that a delay anywhere can only lengthen a repetition,
//! never shorten it. The threads wait for each other by spinning on two counters, not on a
//! `Barrier`: a thread asleep on a barrier takes tens of microseconds to wake, which a
//! repetition of a fraction of a millisecond would count (measured on 384x384 GEMMs: 6% lower
//! figures with a barrier). The leader is one of the workers, so `threads` threads run on
//! `threads` CPUs and nothing else of ours competes with them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::affinity;

/// Timed repetitions at least (after the warmup), whatever the time budget.
pub const MIN_REPS: usize = 3;
/// Timed repetitions at most: enough for the budget's default of 2 s per kernel at 20 µs a
/// repetition.
pub const MAX_REPS: usize = 100_000;
/// The share of the budget given to untimed warmup repetitions (at least one is run): the
/// clock frequency settling under wide vector instructions, the first touch of the kernels'
/// own buffers.
const WARMUP_SHARE: u32 = 10;
/// Spins at each look before a waiting thread yields its CPU: the wait at the end of a
/// repetition is usually short, and a yield lets other work run when it is not.
const SPINS: u32 = 1 << 10;

/// What [`repeat`] measured.
#[derive(Debug)]
pub struct Repeated {
    /// The durations of each phase's timed repetitions, `times[phase][repetition]`.
    pub times: Vec<Vec<Duration>>,
    /// How many warmup repetitions ran before them.
    pub warmup: usize,
    /// Whether every thread was pinned to a CPU of its own.
    pub pinned: bool,
}

/// What the threads share.
struct Team {
    /// Bumped by the leader to start each phase of each repetition, and once more to stop.
    start: AtomicUsize,
    /// Bumped by each other thread once its data is built and at the end of each phase.
    done: AtomicUsize,
    /// Read by the other threads when `start` moves: whether to leave instead.
    stop: AtomicBool,
    /// Set when a thread panics, so that no other waits for it forever.
    broken: AtomicBool,
    /// Threads pinned to their CPU.
    pinned: AtomicUsize,
    /// The first error of a thread's `init`.
    failure: Mutex<Option<String>>,
}

impl Team {
    /// Spins, then yields, until `ready()`; false when a thread panicked instead.
    fn wait(&self, ready: impl Fn() -> bool) -> bool {
        let mut spins = 0;
        while !ready() {
            if self.broken.load(Ordering::Relaxed) {
                return false;
            }
            if spins < SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        true
    }

    /// Pins the calling thread (thread `thread`) where `cpus` says, then builds its data.
    fn join<S>(
        &self,
        thread: usize,
        cpus: Option<&[usize]>,
        init: impl Fn(usize) -> Result<S, String>,
    ) -> Option<S> {
        if cpus.is_some_and(|cpus| affinity::pin(cpus[thread])) {
            self.pinned.fetch_add(1, Ordering::Relaxed);
        }
        match init(thread) {
            Ok(data) => Some(data),
            Err(e) => {
                self.failure
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(e);
                None
            }
        }
    }
}

/// Marks the team broken when the thread holding it unwinds.
struct Breaks<'a>(&'a AtomicBool);

impl Drop for Breaks<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// The durations of each phase's timed repetitions (`phases` of them per repetition, timed one
/// after the other), after untimed warmup repetitions: at least one, and as many as fit in a
/// tenth of `budget`.
///
/// `init(thread)` builds a thread's data on that thread; `work(data, phase)` runs one phase of
/// one repetition on it. Repetitions go on while the next one should end within `budget` (from
/// the call, the building and the warmup included), from [`MIN_REPS`] to [`MAX_REPS`]. The
/// first thread's error from `init` is the error.
pub fn repeat<S>(
    threads: usize,
    phases: usize,
    budget: Duration,
    init: impl Fn(usize) -> Result<S, String> + Sync,
    work: impl Fn(&mut S, usize) + Sync,
) -> Result<Repeated, String> {
    let started = Instant::now();
    let cpus = affinity::plan(threads);
    let team = Team {
        start: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        broken: AtomicBool::new(false),
        pinned: AtomicUsize::new(0),
        failure: Mutex::new(None),
    };
    let followers = threads - 1;
    let measured = std::thread::scope(|scope| {
        // Each thread waits for word that all of them started before it does anything: when
        // one cannot be started (a limit on processes, say), the others are told to leave
        // (their channel closes) instead of waiting for it forever.
        let mut launched = Vec::with_capacity(threads);
        let (team, cpus, init, work) = (&team, cpus.as_deref(), &init, &work);
        for thread in 1..threads {
            let (tell, told) = std::sync::mpsc::channel::<()>();
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                if told.recv().is_err() {
                    return;
                }
                let _breaks = Breaks(&team.broken);
                let mut data = team.join(thread, cpus, init);
                team.done.fetch_add(1, Ordering::Release);
                let mut seen = 0;
                let mut phase = 0;
                loop {
                    if !team.wait(|| team.start.load(Ordering::Acquire) != seen) {
                        return;
                    }
                    seen += 1;
                    if team.stop.load(Ordering::Relaxed) {
                        return;
                    }
                    if let Some(data) = data.as_mut() {
                        work(data, phase);
                    }
                    phase = (phase + 1) % phases;
                    team.done.fetch_add(1, Ordering::Release);
                }
            });
            match spawned {
                Ok(_) => launched.push(tell),
                Err(e) => {
                    return Err(format!(
                        "cannot start thread {} of {threads}: {e}",
                        thread + 1
                    ))
                }
            }
        }
        let (tell, told) = std::sync::mpsc::channel::<()>();
        let leader = std::thread::Builder::new().spawn_scoped(scope, move || {
            let mut times: Vec<Vec<Duration>> = vec![Vec::new(); phases];
            if told.recv().is_err() {
                return (times, 0);
            }
            let _breaks = Breaks(&team.broken);
            let mut data = team.join(0, cpus, init);
            let mut finished = followers;
            let ready = team.wait(|| team.done.load(Ordering::Acquire) == finished);
            let failed = team
                .failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some();
            let mut warmup = 0;
            if ready && !failed {
                // One phase of one repetition, all threads together. The clock is read before
                // the others are released and after the last one is done: were this thread
                // descheduled in between, a repetition would only look longer than it was.
                let mut run = |phase: usize| -> Option<Duration> {
                    let t0 = Instant::now();
                    team.start.fetch_add(1, Ordering::Release);
                    if let Some(data) = data.as_mut() {
                        work(data, phase);
                    }
                    finished += followers;
                    team.wait(|| team.done.load(Ordering::Acquire) == finished)
                        .then(|| t0.elapsed())
                };
                let warm_until = started.elapsed() + budget / WARMUP_SHARE;
                'warm: loop {
                    for phase in 0..phases {
                        if run(phase).is_none() {
                            break 'warm;
                        }
                    }
                    warmup += 1;
                    if started.elapsed() >= warm_until {
                        break;
                    }
                }
                'timed: while times[0].len() < MAX_REPS {
                    let mut next = Duration::ZERO;
                    for (phase, phase_times) in times.iter_mut().enumerate() {
                        let Some(t) = run(phase) else {
                            break 'timed;
                        };
                        phase_times.push(t);
                        next += t;
                    }
                    if times[0].len() >= MIN_REPS && started.elapsed() + next > budget {
                        break;
                    }
                }
            }
            team.stop.store(true, Ordering::Relaxed);
            team.start.fetch_add(1, Ordering::Release);
            (times, warmup)
        });
        let leader = match leader {
            Ok(leader) => leader,
            Err(e) => return Err(format!("cannot start thread 1 of {threads}: {e}")),
        };
        for tell in launched.into_iter().chain([tell]) {
            // The thread is alive and waiting on the other end, so the send succeeds.
            let _ = tell.send(());
        }
        // The leader is joined here, so its panic is raised here (the scope raises the
        // others').
        Ok(leader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })?;
    if let Some(e) = team.failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let (times, warmup) = measured;
    Ok(Repeated {
        times,
        warmup,
        pinned: team.pinned.into_inner() == threads,
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
        assert_eq!(times.times.len(), 2);
        assert_eq!(times.times[0].len(), MIN_REPS);
        assert_eq!(times.times[1].len(), MIN_REPS);
        // The warmup too: one repetition when there is no budget.
        assert_eq!(times.warmup, 1);
        assert_eq!(*runs.lock().unwrap(), vec![[MIN_REPS + 1; 2]; 3]);
    }

    #[test]
    fn the_budget_bounds_the_repetitions_and_a_tenth_of_it_warms_up() {
        let budget = Duration::from_millis(50);
        let r = repeat(2, 1, budget, Ok, |_: &mut usize, _| {
            std::thread::sleep(Duration::from_millis(1))
        })
        .unwrap();
        // Never less than a millisecond a repetition, so these bounds hold however loaded the
        // machine is (a loaded one only runs fewer).
        assert!(
            r.times[0].len() >= MIN_REPS && r.times[0].len() <= 50,
            "{r:?}"
        );
        assert!(r.warmup >= 1 && r.warmup <= 6, "{r:?}");
        assert!(r.times[0].iter().all(|t| *t >= Duration::from_millis(1)));
    }

    #[test]
    fn a_panicking_thread_does_not_leave_the_others_waiting() {
        let result = std::panic::catch_unwind(|| {
            repeat(3, 1, Duration::ZERO, Ok, |thread: &mut usize, _| {
                assert_ne!(*thread, 2, "thread 2 fails");
            })
        });
        assert!(result.is_err());
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
