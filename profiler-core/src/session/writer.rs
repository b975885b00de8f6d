//! `continuous` mode's writer: one long-lived thread, started at the first window close, that
//! turns each closed window into what `prof.json` shows and rewrites the file (at most once a
//! second). The training thread hands a window over and goes on: it moves the window's samples
//! and copies its iteration marks into a [`Closed`] from a pool of spare ones (so a close
//! allocates nothing once the pool is warm) and queues it. It does not wake the writer: a
//! wake-up is a system call, and on a busy machine the woken thread would take the training
//! thread's processor (measured: a close took 15-35 µs with one, 1-2 µs without). The writer
//! looks at the queue every [`POLL`] instead, and on Linux runs as `SCHED_BATCH`, whose
//! wake-ups never preempt the thread running.
//!
//! Locks, always taken in this order: `control` (the cold path), [`Archive`] (what the writer
//! built), the queue. The training thread takes only `control` and the queue, so the writer's
//! work never holds it up; the writer takes `control` only to read what changes as the run
//! goes (merged events, kernels, the iteration count). A window is taken from the queue only
//! with the archive locked, so whoever holds the archive and has emptied the queue has every
//! window handed over: the end of the run and a snapshot absorb what is still queued
//! themselves ([`Writer::archive_now`]) and never wait for the writer.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::instrument::clock::Reading;
use crate::instrument::device::Stream;
use crate::measure::Measuring;
use crate::select::config::Config;
use crate::store::samples::Resolved;
use crate::sync::lock;
use profiler_format::{Profile, Stats, Window, WindowEvent};

/// The least time between two rewrites of the file.
const WRITE_INTERVAL: Duration = Duration::from_secs(1);

/// How often the writer looks for windows handed over.
const POLL: Duration = Duration::from_millis(100);

/// A closed window, handed from the training thread to the writer.
#[derive(Debug, Default)]
pub(crate) struct Closed {
    /// The window's index (0 for the run's first).
    index: u64,
    /// Its first iteration.
    first_iteration: u32,
    /// The marks at which its iterations began, and the one at which the last ended.
    marks: Vec<u64>,
    /// The plan's events, in execution order (schedule indices).
    order: Vec<u32>,
    /// The plan's streams.
    streams: Vec<Stream>,
    /// The window's resolved samples, per event (schedule index).
    resolved: Vec<Resolved>,
}

/// The last closed window, which `events` and `iterations` show.
#[derive(Debug)]
pub(crate) struct Shown {
    /// The window as it was handed over, its samples sorted by iteration.
    pub closed: Closed,
    /// The wall time of each of its iterations.
    pub wall_ns: Vec<u64>,
    /// The CPU samples taken during its iterations (`PROF_CPU_SAMPLE`), collected by the
    /// writer when it took the window in.
    pub cpu_samples: Option<profiler_format::CpuSamples>,
}

impl Shown {
    /// The window's first iteration.
    pub fn first_iteration(&self) -> u64 {
        u64::from(self.closed.first_iteration)
    }

    /// The plan's events when the window closed, in execution order (schedule indices).
    pub fn order(&self) -> &[u32] {
        &self.closed.order
    }

    /// The plan's streams when the window closed.
    pub fn streams(&self) -> &[Stream] {
        &self.closed.streams
    }

    /// The window's samples of event `e` (schedule index), sorted by iteration.
    pub fn resolved(&self, e: u32) -> Option<&Resolved> {
        self.closed.resolved.get(e as usize)
    }
}

/// What the writer made of the windows handed over.
#[derive(Debug, Default)]
pub(crate) struct Archive {
    /// The run's first windows (`PROF_BASELINE_WINDOWS`), kept for the whole run.
    baseline: Vec<Window>,
    /// The most recent windows after them, oldest first (at most `PROF_WINDOWS`).
    recent: VecDeque<Window>,
    /// The last closed window's events and iterations.
    pub shown: Option<Shown>,
    /// Windows absorbed so far: the generation of a write (a newer file has a higher one).
    absorbed: u64,
}

impl Archive {
    /// Every window kept, oldest first: the baseline windows, then the recent ones.
    pub fn windows(&self) -> Vec<Window> {
        self.baseline.iter().chain(&self.recent).cloned().collect()
    }

    /// The generation of a write of what is absorbed now: the windows absorbed so far.
    pub fn generation(&self) -> u64 {
        self.absorbed
    }
}

/// The queue between the training thread and the writer.
#[derive(Debug, Default)]
struct Queue {
    /// Windows handed over, oldest first.
    closed: VecDeque<Closed>,
    /// Windows handed over so far: the writer has news when this moved since it last looked,
    /// whoever absorbed them (the writer, or a `snapshot()` on another thread).
    handed: u64,
    /// Emptied [`Closed`] buffers, for the next closes.
    spare: Vec<Closed>,
    /// The writer thread was started (or could not be).
    started: bool,
    /// No writer thread could be started: the training thread absorbs windows itself.
    inline: bool,
    /// The run's results were written for the last time: the writer stops.
    stopped: bool,
    /// With `PROF_METRICS`: samples measured per event (by schedule index) in every window
    /// handed over so far, counted at the hand-over, so that a window the writer drops unread
    /// still counts (`prof_event_calls_total`); an add per event, no hashing, at the close.
    calls: Vec<u64>,
}

/// What the writer thread asks of the run it serves.
pub(crate) trait Served: Sync {
    /// The run's configuration.
    fn config(&self) -> &Config;
    /// What the run measures with (the clock, the schedule's events).
    fn measuring(&self) -> &Measuring;
    /// Between two looks at the queue: the control file read, the traces on demand handed
    /// over written.
    fn between_looks(&self);
    /// The profile of the windows absorbed as the run stands, and its generation
    /// ([`Archive::generation`]), unless the run's last write was made or no window is shown.
    /// Locks, in order: the cold path's, then [`Writer::archive_now`].
    fn latest(&self) -> Option<(Profile, u64)>;
    /// A profile of the windows was made to be written (`PROF_METRICS` serves it).
    fn publish(&self, profile: &Profile);
}

/// A closed window as the training thread hands it over (its samples aside).
pub(crate) struct Handed<'a> {
    /// The window's index (0 for the run's first).
    pub index: u64,
    /// Its first iteration, and the iteration that ended it.
    pub iterations: (u32, u32),
    /// The iteration marks, and the iteration the first of them began.
    pub marks: (&'a [u64], u32),
    /// The plan's events in execution order, and its streams.
    pub plan: (&'a [u32], &'a [Stream]),
}

/// `continuous` mode's writer: the queue to its thread, the condition variable it sleeps on
/// between looks (woken only to stop), and what it made of the windows.
#[derive(Default)]
pub(crate) struct Writer {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// What the writer made of the closed windows.
    archive: Mutex<Archive>,
    /// Serializes writes of the results (the end's and the writer's), holding the generation
    /// last written so that an older profile never replaces a newer.
    written_generation: Mutex<u64>,
    /// A background write failed (said once).
    failed: AtomicBool,
    /// The run the thread serves (set once the session is installed).
    served: OnceLock<&'static dyn Served>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("queue", &self.queue)
            .field("archive", &self.archive)
            .field("written_generation", &self.written_generation)
            .finish_non_exhaustive()
    }
}

impl Writer {
    /// The run whose windows the thread writes, once it starts.
    pub(crate) fn serve(&self, served: &'static dyn Served) {
        let _ = self.served.set(served);
    }

    /// The writer stops: the results were written for the last time.
    pub(crate) fn stop(&self) {
        lock(&self.queue).stopped = true;
        self.wake.notify_one();
    }

    /// The final write begins: no background write may land after it (held while it lasts).
    pub(crate) fn last_write(&self) -> MutexGuard<'_, u64> {
        let mut generation = lock(&self.written_generation);
        *generation = u64::MAX;
        generation
    }

    /// Hands a closed window to the writer: its samples are moved out of `resolved` (which
    /// gets empty buffers back) and its marks copied.
    pub(crate) fn hand_over(
        &'static self,
        (config, m): (&Config, &Measuring),
        handed: Handed<'_>,
        resolved: &mut Vec<Resolved>,
    ) {
        let Handed {
            index,
            iterations: (first, completed),
            marks: (marks, base),
            plan: (order, streams),
        } = handed;
        let mut q = lock(&self.queue);
        if config.metrics.is_some() {
            if q.calls.len() < resolved.len() {
                q.calls.resize(resolved.len(), 0);
            }
            for &e in order {
                let n = resolved.get(e as usize).map_or(0, |r| r.durations.len());
                if let Some(count) = q.calls.get_mut(e as usize) {
                    *count += n as u64;
                }
            }
        }
        let mut closed = q.spare.pop().unwrap_or_default();
        closed.index = index;
        closed.first_iteration = first;
        let from = first.saturating_sub(base) as usize;
        let to = (completed.saturating_sub(base) as usize + 1).min(marks.len());
        closed.marks.clear();
        closed
            .marks
            .extend_from_slice(marks.get(from..to).unwrap_or_default());
        closed.order.clear();
        closed.order.extend_from_slice(order);
        closed.streams.clear();
        closed.streams.extend_from_slice(streams);
        // The training thread gets these buffers back: empty, whatever window they held.
        closed.resolved.iter_mut().for_each(Resolved::clear);
        closed
            .resolved
            .resize_with(resolved.len(), Resolved::default);
        std::mem::swap(&mut closed.resolved, resolved);
        q.closed.push_back(closed);
        q.handed += 1;
        bound_queue(config, &mut q);
        self.start(config, &mut q);
        if q.inline {
            // No writer: absorb here, so that memory stays bounded (no lock order issue: the
            // archive is taken after the queue is released).
            drop(q);
            drop(self.archive_now(config, m));
        }
    }

    /// Starts the writer thread, once: at the first window closed, or at the end of warmup when
    /// a control file is to be watched (`PROF_CONTROL`).
    fn start(&'static self, config: &Config, q: &mut MutexGuard<'_, Queue>) {
        if q.started {
            return;
        }
        q.started = true;
        q.inline = match self.served.get().copied() {
            Some(served) => {
                crate::sync::spawn("profiler-writer", move || self.run(served)).is_err()
            }
            None => true,
        };
        if q.inline {
            say!(
                "profiler-core: warning: cannot start the thread that writes continuous mode's \
                 results; they are written when the program ends{}",
                if config.control.is_some() {
                    ", and PROF_CONTROL is not read"
                } else {
                    ""
                }
            );
        }
    }

    /// Warmup is over in `continuous` mode: with a control file to watch, the writer starts now.
    pub(crate) fn start_watching(&'static self, config: &Config) {
        if config.control.is_some() {
            self.start(config, &mut lock(&self.queue));
        }
    }

    /// Makes sure the writer thread runs; false when there is none to hand work to (it could
    /// not be started, or the run's last write was made).
    pub(crate) fn running(&'static self, config: &Config) -> bool {
        let mut q = lock(&self.queue);
        self.start(config, &mut q);
        !(q.inline || q.stopped)
    }

    /// Samples measured per event (`order`) in every window handed over so far (with
    /// `PROF_METRICS`); merged events, which have no windows, left out.
    pub(crate) fn calls(&self, m: &Measuring) -> HashMap<u32, u64> {
        let q = lock(&self.queue);
        q.calls
            .iter()
            .enumerate()
            .filter_map(|(e, &n)| {
                let ev = m.schedule.events.get(e)?.get()?;
                ev.store.totals.is_none().then_some((ev.order, n))
            })
            .collect()
    }

    /// The archive, with every window handed over absorbed (by the writer, or here).
    pub(crate) fn archive_now(&self, config: &Config, m: &Measuring) -> MutexGuard<'_, Archive> {
        let mut archive = lock(&self.archive);
        let queued: Vec<Closed> = lock(&self.queue).closed.drain(..).collect();
        self.absorb_all((config, m), &mut archive, queued);
        archive
    }

    /// Absorbs `batch` (oldest first) and gives the buffers it no longer needs back to the pool.
    fn absorb_all(
        &self,
        (config, m): (&Config, &Measuring),
        archive: &mut Archive,
        batch: impl IntoIterator<Item = Closed>,
    ) {
        let mut emptied = Vec::new();
        for closed in batch {
            // Emptied by the training thread when it takes them again.
            emptied.extend(absorb((config, m), archive, closed));
        }
        if !emptied.is_empty() {
            lock(&self.queue).spare.extend(emptied);
        }
    }

    /// The writer thread: absorbs the windows as they are handed over, and rewrites the file
    /// with the latest of them at most once every [`WRITE_INTERVAL`], until the run's last
    /// write.
    fn run(&'static self, served: &'static dyn Served) {
        yield_to_the_training_thread();
        let (config, m) = (served.config(), served.measuring());
        let mut last_write: Option<Instant> = None;
        let mut news = false;
        // Windows handed over when the writer last looked.
        let mut seen = 0;
        let mut batch: VecDeque<Closed> = VecDeque::new();
        loop {
            served.between_looks();
            let mut q = lock(&self.queue);
            loop {
                if q.stopped {
                    return;
                }
                if q.handed != seen {
                    break;
                }
                let due_in = last_write.map_or(Duration::ZERO, |t| {
                    WRITE_INTERVAL.saturating_sub(t.elapsed())
                });
                if news && due_in.is_zero() {
                    break;
                }
                let nap = if news { due_in.min(POLL) } else { POLL };
                let waited = self.wake.wait_timeout(q, nap);
                drop(waited.unwrap_or_else(PoisonError::into_inner).0);
                // Not under the queue's lock: the control file's request takes `control`.
                served.between_looks();
                q = lock(&self.queue);
            }
            // New windows are news even when a snapshot absorbed them first.
            news |= q.handed != seen;
            seen = q.handed;
            drop(q);
            {
                let mut archive = lock(&self.archive);
                // Taken with the archive locked: see the module's documentation.
                std::mem::swap(&mut lock(&self.queue).closed, &mut batch);
                self.absorb_all((config, m), &mut archive, batch.drain(..));
            }
            let due = last_write.is_none_or(|t| t.elapsed() >= WRITE_INTERVAL);
            if news && due {
                news = false;
                last_write = Some(Instant::now());
                self.write_latest(served);
            }
        }
    }

    /// Writes the latest windows, unless the run's last write was made. A window handed over
    /// since the writer last looked is absorbed first (under the cold-path lock, taken by
    /// [`Served::latest`], so rarely that it does not matter): the kernel records kept in the
    /// cold-path state are those of the last window closed, which must be the one shown.
    fn write_latest(&self, served: &dyn Served) {
        if let Some((profile, generation)) = served.latest() {
            self.write_generation(served, generation, &profile);
        }
    }

    /// Writes `profile` and publishes it to the metrics endpoint, unless a newer generation is
    /// on disk already (the end's final write among them: it holds the same lock while it
    /// writes and publishes, so that older numbers never follow it). Failures are reported
    /// once; the end's write reports its own.
    fn write_generation(&self, served: &dyn Served, generation: u64, profile: &Profile) {
        let mut last = lock(&self.written_generation);
        if generation <= *last {
            return;
        }
        served.publish(profile);
        let path = served.config().output_path();
        match crate::output::write_profile(profile, &path) {
            Ok(()) => *last = generation,
            Err(why) => {
                if !self.failed.swap(true, Relaxed) {
                    say!(
                        "profiler-core: error: cannot write the results to {}: {why} (continuous \
                         mode goes on, and tries again as the next windows close)",
                        path.display()
                    );
                }
            }
        }
    }
}

/// Keeps the queue bounded when the writer falls behind: a window that `PROF_WINDOWS` newer
/// ones already follow would be dropped from the archive at once, so it is dropped from the
/// queue now (its buffers go back to the pool). Baseline windows are never dropped.
fn bound_queue(config: &Config, q: &mut MutexGuard<'_, Queue>) {
    let baseline = u64::from(config.baseline_windows);
    let recent = q.closed.iter().filter(|c| c.index >= baseline).count();
    if recent > config.windows as usize {
        if let Some(k) = q.closed.iter().position(|c| c.index >= baseline) {
            if let Some(stale) = q.closed.remove(k) {
                q.spare.push(stale);
            }
        }
    }
}

/// Keeps a closed window's statistics as a [`Window`] and makes it the one `events` shows;
/// returns the one shown before.
fn absorb(
    (config, m): (&Config, &Measuring),
    archive: &mut Archive,
    mut closed: Closed,
) -> Option<Closed> {
    let wall_ns: Vec<u64> = closed
        .marks
        .windows(2)
        .map(|w| match m.clock.elapsed(w[0], w[1]) {
            Reading::Ready(ns) => ns,
            _ => 0,
        })
        .collect();
    let mut measured = Vec::new();
    for &e in &closed.order {
        let Some(ev) = m.schedule.events[e as usize].get() else {
            continue;
        };
        if ev.store.totals.is_some() {
            continue; // merged: exact totals over the whole run, in `events`
        }
        let Some(resolved) = closed.resolved.get_mut(e as usize) else {
            continue;
        };
        resolved.sort_by_iteration();
        measured.push(WindowEvent {
            order: ev.order,
            stats: Stats::of(&resolved.durations),
            samples_ns: resolved.durations.clone(),
        });
    }
    measured.sort_by_key(|e| e.order);
    let window = Window {
        index: closed.index,
        first_iteration: u64::from(closed.first_iteration),
        wall_ns: wall_ns.clone(),
        events: measured,
        baseline: closed.index < u64::from(config.baseline_windows),
    };
    // The samples of the window's iterations, from the sampler's rings (drained here, on the
    // writer's thread or at the end: never at the window's close).
    let cpu_samples = match (closed.marks.first(), closed.marks.last()) {
        (Some(&from), Some(&to)) if closed.marks.len() > 1 => {
            crate::sample::window_samples(from, to)
        }
        _ => None,
    };
    archive.absorbed = closed.index + 1;
    if window.baseline {
        archive.baseline.push(window);
    } else {
        archive.recent.push_back(window);
        while archive.recent.len() > config.windows as usize {
            archive.recent.pop_front();
        }
    }
    closed.marks.clear();
    let shown = archive.shown.replace(Shown {
        closed,
        wall_ns,
        cpu_samples,
    });
    shown.map(|s| s.closed)
}

/// Makes the calling thread (the writer) `SCHED_BATCH` on Linux: the scheduler then never
/// lets its wake-ups preempt the thread running, which is the training thread when the
/// machine's processors are all busy. Its share of the processor is unchanged. Elsewhere, or
/// if refused, nothing changes.
fn yield_to_the_training_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed `sched_param` (priority 0) is the one SCHED_BATCH takes; pid 0 is
        // the calling thread.
        unsafe {
            let param: libc::sched_param = std::mem::zeroed();
            libc::sched_setscheduler(0, libc::SCHED_BATCH, &param);
        }
    }
}
