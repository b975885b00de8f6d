//! One profiling run: its configuration, clock, events and schedule state, and the cold path
//! that drives them (warmup, arming at `step()`, resolution, the end).
//!
//! The hot path (`probe.rs`) only reaches this file through [`Session::start_run`] and
//! [`Session::finish_run`], and only for probes the schedule has armed or is learning.

use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::clock::{Clock, CpuClock, Reading};
use crate::config::{Config, Mode};
use crate::output::json::{self, Profile, Stats};
use crate::probe::{Armed, Descriptor, ARMED, LEARN, NONE, OFF};
use crate::record::{resolve_slot, Outcome, Resolved, Store, RESERVOIR};
use crate::registry::registry;
use crate::schedule::{Learner, Planned, MERGED};

/// The clock of a session: the CPU clock dispatched statically (it is the common case and
/// sits on the armed path), anything else through the [`Clock`] trait.
pub(crate) enum ActiveClock {
    Cpu(CpuClock),
    Custom(Box<dyn Clock>),
}

impl std::fmt::Debug for ActiveClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl ActiveClock {
    #[inline(always)]
    pub fn mark(&self) -> u64 {
        match self {
            ActiveClock::Cpu(clock) => clock.raw(),
            ActiveClock::Custom(clock) => clock.mark(),
        }
    }

    pub fn elapsed(&self, start: u64, stop: u64) -> Reading {
        match self {
            ActiveClock::Cpu(clock) => clock.elapsed(start, stop),
            ActiveClock::Custom(clock) => clock.elapsed(start, stop),
        }
    }

    fn settle(&self) {
        if let ActiveClock::Custom(clock) = self {
            clock.settle();
        }
    }

    pub fn release(&self, mark: u64) {
        if let ActiveClock::Custom(clock) = self {
            clock.release(mark);
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ActiveClock::Cpu(clock) => clock.name(),
            ActiveClock::Custom(clock) => clock.name(),
        }
    }

    fn is_linear(&self) -> bool {
        match self {
            ActiveClock::Cpu(_) => true,
            ActiveClock::Custom(clock) => clock.is_linear(),
        }
    }
}

/// A scheduled event and its storage.
#[derive(Debug)]
pub(crate) struct Event {
    entry: usize,
    occurrence: u32,
    order: u32,
    store: Store,
}

/// Cold-path state, behind one lock.
#[derive(Debug, Default)]
struct Control {
    /// `iter_marks[i]` is the mark at which iteration `i` began; one more than completed.
    iter_marks: Vec<u64>,
    /// Iterations in which something was armed, after warmup.
    armed_iterations: u64,
    /// Event indices in execution order.
    schedule: Vec<u32>,
    /// Events allocated in `Session::events`.
    allocated: usize,
    /// Events armed in the iteration now running.
    armed: Vec<u32>,
    /// The probe armed in `sample` mode.
    armed_entry: Option<usize>,
    /// Slots written (or about to be) and not yet resolved.
    pending: Vec<(u32, u32)>,
    /// Resolved samples, per event.
    resolved: Vec<Resolved>,
    /// Selected probes not seen yet; they stay in learning state.
    late: Vec<usize>,
    finished: bool,
    written: bool,
}

/// One profiling run.
#[derive(Debug)]
pub struct Session {
    config: Config,
    clock: ActiveClock,
    linear: bool,
    selected: Vec<usize>,
    events: Box<[OnceLock<Event>]>,
    armed_event: AtomicU32,
    cur_slot: AtomicU32,
    cur_iter: AtomicU32,
    learning: AtomicBool,
    done: AtomicBool,
    /// Median of an empty measurement: what every sample includes besides the code measured.
    floor_ns: u64,
    control: Mutex<Control>,
    learner: Mutex<Learner>,
}

/// Locks, shrugging off poisoning: a panic elsewhere must not take the profiler down with it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

static CURRENT: AtomicPtr<Session> = AtomicPtr::new(std::ptr::null_mut());

/// The running session, if any.
#[inline(always)]
pub(crate) fn current() -> Option<&'static Session> {
    let ptr = CURRENT.load(Acquire);
    // SAFETY: a non-null pointer in CURRENT always comes from `Box::leak` in `install`, and
    // sessions are never freed, so the reference is valid for 'static.
    unsafe { ptr.as_ref() }
}

/// Makes `session` the running one. The previous session (tests start several) is disarmed
/// and left allocated: guards still in flight may point to it.
pub(crate) fn install(session: Session) -> &'static Session {
    let leaked: &'static Session = Box::leak(Box::new(session));
    let old = CURRENT.swap(leaked as *const Session as *mut Session, AcqRel);
    // SAFETY: as in `current`.
    if let Some(old) = unsafe { old.as_ref() } {
        old.done.store(true, Relaxed);
    }
    leaked.arm_initial();
    leaked
}

impl Session {
    /// A session over the registered probes that `config.filter` selects.
    pub(crate) fn new(config: Config, clock: ActiveClock) -> Session {
        let reg = registry();
        for entry in &reg.entries {
            entry.desc.reset();
        }
        let selected: Vec<usize> = if config.mode == Mode::Off {
            Vec::new()
        } else {
            (0..reg.entries.len())
                .filter(|&i| reg.entries[i].selected_by(&config.filter))
                .collect()
        };
        let capacity = config.max_events as usize + selected.len();
        let learning = config.mode != Mode::Off && config.warmup > 0;
        let control = Control {
            iter_marks: vec![clock.mark()],
            late: if learning {
                Vec::new()
            } else {
                selected.clone()
            },
            ..Control::default()
        };
        Session {
            floor_ns: timer_floor(&clock),
            linear: clock.is_linear(),
            learner: Mutex::new(Learner::new(config.max_events)),
            config,
            clock,
            selected,
            events: (0..capacity).map(|_| OnceLock::new()).collect(),
            armed_event: AtomicU32::new(NONE),
            cur_slot: AtomicU32::new(0),
            cur_iter: AtomicU32::new(0),
            learning: AtomicBool::new(learning),
            done: AtomicBool::new(false),
            control: Mutex::new(control),
        }
    }

    /// The configuration this session runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How many registered probes the filter selected.
    pub fn selected_count(&self) -> usize {
        self.selected.len()
    }

    fn desc(&self, entry: usize) -> &'static Descriptor {
        registry().entries[entry].desc
    }

    /// Puts every selected probe in learning state.
    fn arm_initial(&self) {
        for &entry in &self.selected {
            self.desc(entry).state.store(LEARN, Release);
        }
    }

    /// True once the schedule is complete.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Relaxed)
    }

    // ---- the slow path of a probe (called from probe.rs) ----

    /// A run of `desc` starts; returns the measurement if this run is the armed event.
    #[inline]
    pub(crate) fn start_run(&'static self, desc: &'static Descriptor, state: u32) -> Option<Armed> {
        let occ = desc.calls.fetch_add(1, Relaxed);
        if state != ARMED {
            // Learning. During warmup the cold path notes the run; after warmup a probe not
            // seen yet is only counted, lock-free, and picked up at the next `step()`.
            if self.learning.load(Relaxed) {
                if let Some(entry) = registry().position(desc) {
                    lock(&self.learner).observe(entry, occ);
                }
            }
            return None;
        }
        let event = desc.event_for(occ);
        if event == NONE
            || (self.config.mode == Mode::Sample && event != self.armed_event.load(Relaxed))
        {
            return None;
        }
        Some(Armed {
            session: self,
            event,
            slot: self.cur_slot.load(Relaxed),
            iter: self.cur_iter.load(Relaxed),
            start: self.clock.mark(),
        })
    }

    /// A measured run ends: store its marks.
    #[inline]
    pub(crate) fn finish_run(&self, armed: &Armed) {
        let stop = self.clock.mark();
        if let Some(event) = self
            .events
            .get(armed.event as usize)
            .and_then(OnceLock::get)
        {
            event
                .store
                .record(armed.slot, armed.iter, armed.start, stop, self.linear);
        }
    }

    // ---- the cold path ----

    /// The end of an iteration.
    pub(crate) fn step(&'static self) {
        if self.config.mode == Mode::Off {
            return;
        }
        let now = self.clock.mark();
        let mut c = lock(&self.control);
        if c.finished {
            return;
        }
        c.iter_marks.push(now);
        let completed = (c.iter_marks.len() - 1) as u32;
        if self.learning.load(Relaxed) {
            lock(&self.learner).next_iteration();
            self.reset_calls();
            if completed >= self.config.warmup {
                self.learning.store(false, Relaxed);
                self.plan_after_warmup(&mut c);
                self.arm(&mut c, completed);
            }
            return;
        }
        if !c.armed.is_empty() {
            let slot = self.cur_slot.load(Relaxed);
            let armed = std::mem::take(&mut c.armed);
            c.pending.extend(armed.iter().map(|&e| (e, slot)));
            c.armed_iterations += 1;
        }
        self.resolve(&mut c, false);
        self.discover_late(&mut c);
        let total = self.total_armed_iterations(&c);
        if total > 0 && c.armed_iterations >= total {
            self.finish(&mut c);
            return;
        }
        self.arm(&mut c, completed);
    }

    fn total_armed_iterations(&self, c: &Control) -> u64 {
        let repeat = u64::from(self.config.repeat);
        match self.config.mode {
            Mode::Sample => c.schedule.len() as u64 * repeat,
            Mode::Trace if c.schedule.is_empty() => 0,
            Mode::Trace => repeat,
            Mode::Off => 0,
        }
    }

    fn reset_calls(&self) {
        for &entry in &self.selected {
            self.desc(entry).calls.store(0, Relaxed);
        }
    }

    /// Allocates the events of one probe (occurrences `0..occurrences`, plus a merged event)
    /// and points its descriptor at them.
    fn add_probe_events(
        &self,
        c: &mut Control,
        entry: usize,
        occurrences: u32,
        merged: bool,
        order: &mut dyn FnMut(u32) -> u32,
    ) {
        let first = c.allocated as u32;
        let repeat = self.config.repeat as usize;
        let mut make = |c: &mut Control, occurrence: u32| {
            let index = c.allocated;
            let event = Event {
                entry,
                occurrence,
                order: order(occurrence),
                store: Store::new(repeat, occurrence == MERGED),
            };
            // Capacity is max_events plus one merged event per selected probe, which the
            // learner's bound guarantees.
            if self.events.get(index).map(|slot| slot.set(event)).is_some() {
                c.allocated += 1;
                c.resolved.push(Resolved::default());
                Some(index as u32)
            } else {
                None
            }
        };
        let mut count = 0;
        for occ in 0..occurrences {
            if make(c, occ).is_some() {
                count += 1;
            }
        }
        let merged_index = if merged { make(c, MERGED) } else { None };
        let desc = self.desc(entry);
        desc.first_event.store(first, Relaxed);
        desc.events.store(count, Relaxed);
        desc.merged_event
            .store(merged_index.unwrap_or(NONE), Relaxed);
    }

    /// Warmup is over: turn what it saw into events in execution order.
    fn plan_after_warmup(&self, c: &mut Control) {
        let plan: Vec<Planned> = lock(&self.learner).plan();
        let mut entries: Vec<usize> = Vec::new();
        for p in &plan {
            if !entries.contains(&p.entry) {
                entries.push(p.entry);
            }
        }
        for &entry in &entries {
            let occurrences = plan
                .iter()
                .filter(|p| p.entry == entry && p.occurrence != MERGED)
                .count() as u32;
            let merged = plan
                .iter()
                .any(|p| p.entry == entry && p.occurrence == MERGED);
            let mut order = |occ: u32| {
                plan.iter()
                    .position(|p| p.entry == entry && p.occurrence == occ)
                    .unwrap_or(0) as u32
            };
            self.add_probe_events(c, entry, occurrences, merged, &mut order);
        }
        let mut schedule: Vec<u32> = (0..c.allocated as u32).collect();
        schedule.sort_by_key(|&e| {
            self.events[e as usize]
                .get()
                .map_or(u32::MAX, |ev| ev.order)
        });
        c.schedule = schedule;
        c.late = self
            .selected
            .iter()
            .copied()
            .filter(|e| !entries.contains(e))
            .collect();
        for &entry in &entries {
            self.desc(entry).state.store(OFF, Relaxed);
        }
        if plan.is_empty() {
            eprintln!(
                "profiler-core: warning: none of the {} selected probes ran during the {} warmup \
                 iterations; events will be scheduled as they first appear",
                self.selected.len(),
                self.config.warmup
            );
        }
        // Everything the measured iterations need is reserved now.
        let iterations =
            self.config.warmup as usize + c.schedule.len().max(1) * self.config.repeat as usize + 2;
        c.iter_marks.reserve(iterations);
        c.pending.reserve(c.schedule.len().max(1) * 2);
    }

    /// Probes first seen after warmup: each is scheduled after the others.
    fn discover_late(&self, c: &mut Control) {
        if c.late.is_empty() {
            return;
        }
        let late = std::mem::take(&mut c.late);
        let mut still_unseen = Vec::new();
        for entry in late {
            let desc = self.desc(entry);
            let calls = desc.calls.swap(0, Relaxed);
            if calls == 0 {
                still_unseen.push(entry);
                continue;
            }
            let mut learner = lock(&self.learner);
            let occurrences = calls.min(learner.budget_left() as u32);
            learner.spend(occurrences as usize);
            drop(learner);
            let base = c.schedule.len() as u32;
            let before = c.allocated as u32;
            let mut order = |occ: u32| base + if occ == MERGED { occurrences } else { occ };
            self.add_probe_events(c, entry, occurrences, calls > occurrences, &mut order);
            c.schedule.extend(before..c.allocated as u32);
            desc.state.store(OFF, Relaxed);
        }
        c.late = still_unseen;
    }

    /// Arms what iteration `iter` measures.
    fn arm(&self, c: &mut Control, iter: u32) {
        self.reset_calls();
        c.armed.clear();
        if c.schedule.is_empty() {
            return;
        }
        let k = c.armed_iterations;
        let repeat = u64::from(self.config.repeat);
        self.cur_iter.store(iter, Relaxed);
        match self.config.mode {
            Mode::Sample => {
                let event = c.schedule[(k / repeat) as usize];
                let entry = self.events[event as usize].get().map(|e| e.entry);
                if let (Some(old), true) = (c.armed_entry, c.armed_entry != entry) {
                    self.desc(old).state.store(OFF, Relaxed);
                }
                self.cur_slot.store((k % repeat) as u32, Relaxed);
                self.armed_event.store(event, Relaxed);
                if let Some(entry) = entry {
                    self.desc(entry).state.store(ARMED, Release);
                }
                c.armed_entry = entry;
                c.armed.push(event);
            }
            Mode::Trace => {
                self.cur_slot.store(k as u32, Relaxed);
                for &event in &c.schedule {
                    if let Some(e) = self.events[event as usize].get() {
                        self.desc(e.entry).state.store(ARMED, Release);
                    }
                }
                c.armed.extend_from_slice(&c.schedule);
            }
            Mode::Off => {}
        }
    }

    /// Turns stored marks into samples where the clock can already tell.
    fn resolve(&self, c: &mut Control, last_chance: bool) {
        let pending = std::mem::take(&mut c.pending);
        let marks = std::mem::take(&mut c.iter_marks);
        let mut kept = Vec::with_capacity(pending.len());
        for (event, slot) in pending {
            let Some(ev) = self.events[event as usize].get() else {
                continue;
            };
            if ev.store.totals.is_some() {
                continue; // merged events are read whole at the end
            }
            let outcome = resolve_slot(
                &self.clock,
                &ev.store,
                slot as usize,
                |iter| marks.get(iter as usize).copied(),
                true,
                &mut c.resolved[event as usize],
            );
            let keep = match outcome {
                Outcome::Done => false,
                // Empty: the event did not run (or a late thread has not written yet).
                Outcome::Empty | Outcome::Pending => !last_chance,
            };
            if keep {
                kept.push((event, slot));
            }
        }
        c.iter_marks = marks;
        c.pending = kept;
    }

    fn finish(&self, c: &mut Control) {
        c.finished = true;
        self.done.store(true, Relaxed);
        for &entry in &self.selected {
            self.desc(entry).state.store(OFF, Relaxed);
        }
        c.armed.clear();
        self.write(c, true);
        if self.config.exit {
            eprintln!("profiler-core: PROF_EXIT=1: the schedule is complete, exiting");
            std::process::exit(0);
        }
    }

    fn write(&self, c: &mut Control, complete: bool) {
        if c.written || self.config.mode == Mode::Off {
            return;
        }
        c.written = true;
        let profile = self.profile(c, complete, true);
        crate::output::emit(&profile, &self.config.output_path(), self.config.summary);
    }

    /// The program is ending: write what there is, marked incomplete if the schedule is not
    /// done.
    pub(crate) fn end(&self) {
        let mut c = lock(&self.control);
        self.done.store(true, Relaxed);
        for &entry in &self.selected {
            self.desc(entry).state.store(OFF, Relaxed);
        }
        let complete = c.finished;
        self.write(&mut c, complete);
    }

    /// The results so far.
    pub(crate) fn snapshot(&self) -> Profile {
        let mut c = lock(&self.control);
        let complete = c.finished;
        self.profile(&mut c, complete, false)
    }

    fn profile(&self, c: &mut Control, complete: bool, last_chance: bool) -> Profile {
        if !c.armed.is_empty() && last_chance {
            let slot = self.cur_slot.load(Relaxed);
            let armed = c.armed.clone();
            c.pending.extend(armed.iter().map(|&e| (e, slot)));
        }
        if last_chance {
            self.clock.settle();
        }
        self.resolve(c, last_chance);
        let reg = registry();
        let marks = &c.iter_marks;
        let wall_ns: Vec<u64> = marks
            .windows(2)
            .map(|w| match self.clock.elapsed(w[0], w[1]) {
                Reading::Ready(ns) => ns,
                _ => 0,
            })
            .collect();
        let events = c
            .schedule
            .iter()
            .filter_map(|&e| {
                let ev = self.events[e as usize].get()?;
                let entry = &reg.entries[ev.entry];
                let info = &entry.desc.info;
                let (resolved, stats) = match &ev.store.totals {
                    None => {
                        let mut r = c.resolved[e as usize].clone();
                        sort_by_iteration(&mut r);
                        let stats = Stats::of(&r.durations);
                        (r, stats)
                    }
                    Some(_) => self.merged_samples(ev, marks),
                };
                let occurrence = if ev.occurrence == MERGED {
                    entry.desc.events.load(Relaxed)
                } else {
                    ev.occurrence
                };
                Some(json::Event {
                    id: entry.id.clone(),
                    name: info.name.to_owned(),
                    layer: info.layer.map(str::to_owned),
                    phase: info.phase.map(str::to_owned),
                    kind: info.kind.as_str().to_owned(),
                    module: info.module.to_owned(),
                    file: info.file.to_owned(),
                    line: info.line,
                    occurrence,
                    order: ev.order,
                    device: None,
                    stream: None,
                    merged: ev.occurrence == MERGED,
                    samples_ns: resolved.durations,
                    offsets_ns: resolved.offsets,
                    sample_iters: resolved.iters,
                    stats,
                })
            })
            .collect::<Vec<_>>();
        let mut events = events;
        events.sort_by_key(|e| e.order);
        Profile {
            schema: json::SCHEMA.to_owned(),
            complete,
            run: json::Run {
                program: program_name(),
                pid: std::process::id(),
                host: host_name(),
                rank: crate::config::rank(),
                mode: self.config.mode.as_str().to_owned(),
                filter: self.config.filter.source().to_owned(),
                warmup: self.config.warmup,
                repeat: self.config.repeat,
                clock: self.clock.name().to_owned(),
                max_events: self.config.max_events,
                timer_floor_ns: self.floor_ns,
                profiler_version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            iterations: json::Iterations {
                count: wall_ns.len() as u64,
                wall_ns,
            },
            events,
        }
    }

    /// A merged event: exact totals, and the reservoir for median and p90.
    fn merged_samples(&self, ev: &Event, marks: &[u64]) -> (Resolved, Stats) {
        let mut r = Resolved::default();
        for slot in 0..RESERVOIR {
            let _ = resolve_slot(
                &self.clock,
                &ev.store,
                slot,
                |iter| marks.get(iter as usize).copied(),
                false,
                &mut r,
            );
        }
        sort_by_iteration(&mut r);
        let mut stats = Stats::of(&r.durations);
        if let (Some(t), true) = (&ev.store.totals, self.linear) {
            let count = t.count.load(Relaxed);
            if count > 0 {
                // Linear clock: raw units scale to nanoseconds by one factor.
                let unit = 1u64 << 32;
                let scale = match self.clock.elapsed(0, unit) {
                    Reading::Ready(ns) => ns as f64 / unit as f64,
                    _ => 1.0,
                };
                let n = count as f64;
                let sum = t.sum.load(Relaxed) as f64;
                let sum_sq = f64::from_bits(t.sum_sq.load(Relaxed));
                let mean = sum / n;
                let var = if count > 1 {
                    ((sum_sq - n * mean * mean) / (n - 1.0)).max(0.0)
                } else {
                    0.0
                };
                stats.count = count;
                stats.mean_ns = (mean * scale).round() as u64;
                stats.min_ns = (t.min.load(Relaxed) as f64 * scale).round() as u64;
                stats.max_ns = (t.max.load(Relaxed) as f64 * scale).round() as u64;
                stats.stddev_ns = (var.sqrt() * scale).round() as u64;
            }
        }
        (r, stats)
    }
}

/// The median duration of an empty measurement (two marks back to back), measured once at
/// start-up so that readers know the floor under every sample. Nothing is subtracted.
fn timer_floor(clock: &ActiveClock) -> u64 {
    let mut samples: Vec<u64> = (0..201)
        .filter_map(|_| {
            let start = clock.mark();
            let stop = clock.mark();
            let reading = clock.elapsed(start, stop);
            clock.release(start);
            clock.release(stop);
            match reading {
                Reading::Ready(ns) => Some(ns),
                _ => None,
            }
        })
        .collect();
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or(0)
}

fn sort_by_iteration(r: &mut Resolved) {
    let mut idx: Vec<usize> = (0..r.iters.len()).collect();
    idx.sort_by_key(|&i| (r.iters[i], r.offsets[i]));
    r.durations = idx.iter().map(|&i| r.durations[i]).collect();
    r.offsets = idx.iter().map(|&i| r.offsets[i]).collect();
    r.iters = idx.iter().map(|&i| r.iters[i]).collect();
}

fn program_name() -> String {
    std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "unknown".into())
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}
