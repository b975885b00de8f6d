//! The schedule: which events exist, which one is measured in each iteration, and where a
//! probe's runs go. Three stages, one file each:
//!
//! - `learn.rs`: during warmup, every run of a selected probe reports (probe, stream,
//!   occurrence) and its parent; distinct triples become events, in execution order.
//! - `plan.rs`: when warmup ends, the events are allocated with their sample storage (the
//!   budget is checked here, never on the hot path) and each probe gets its routing table;
//!   probes first seen later are planned as they appear.
//! - `arm.rs`: at each `step()`, the next event (all of them in `trace` mode) is armed and the
//!   others put back to rest.
//!
//! The routing tables live here, beside the schedule that fills them: a descriptor holds only
//! its state and its index into [`ProbeRoute`]s. [`Schedule`] is what the hot path reads
//! (lock-free); [`Plan`] is the cold-path state, kept behind the session's lock.

pub(crate) mod arm;
pub(crate) mod delay;
mod learn;
mod plan;

use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{Mutex, OnceLock};

use crate::instrument::device::Stream;
use crate::register::descriptor::{Descriptor, State};
use crate::register::registry::registry;
use crate::select::config::{Config, Mode};
use crate::store::samples::Store;

pub(crate) use learn::{BeforeLoop, FirstRun, Key, Learner, Parent, Planned, MERGED};
pub(crate) use plan::POOL_ITERATIONS;

/// No event: an index that means "none".
pub(crate) const NONE: u32 = u32::MAX;

/// Where the runs of one probe on one stream go.
#[derive(Debug)]
pub(crate) struct Route {
    pub stream: Stream,
    /// Runs on this stream started in the current iteration.
    pub calls: AtomicU32,
    pub first_event: u32,
    pub events: u32,
    pub merged_event: u32,
}

/// A probe's routes, one per stream it ran on during warmup.
#[derive(Debug)]
pub(crate) struct Routes(pub Box<[Route]>);

impl Route {
    /// The event of the next run on this stream, or `NONE`.
    #[inline]
    pub(crate) fn next_event(&self) -> u32 {
        // Acquire: pairs with the count's restart (`reset_calls`), see there.
        let occ = self.calls.fetch_add(1, Acquire);
        if occ < self.events {
            self.first_event + occ
        } else {
            self.merged_event
        }
    }
}

/// Where the runs of one probe go: its events without a stream, its per-stream routes, and its
/// run counter for the current iteration. One per registered probe, owned by the session and
/// indexed by [`Descriptor::index`](crate::register::descriptor::Descriptor).
#[derive(Debug)]
pub(crate) struct ProbeRoute {
    /// Runs of this probe started in the current iteration (counted while not `Off`).
    pub calls: AtomicU32,
    /// Index of this probe's first event in the session's event table.
    pub first_event: AtomicU32,
    /// How many per-occurrence events this probe has.
    pub events: AtomicU32,
    /// The event later occurrences fold into, or `NONE`.
    pub merged_event: AtomicU32,
    /// The events of this probe's runs on streams, when it ran on any during warmup (owned by
    /// the session, which is never freed), else null.
    pub streams: AtomicPtr<Routes>,
}

impl Default for ProbeRoute {
    fn default() -> Self {
        ProbeRoute {
            calls: AtomicU32::new(0),
            first_event: AtomicU32::new(NONE),
            events: AtomicU32::new(0),
            merged_event: AtomicU32::new(NONE),
            streams: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

impl ProbeRoute {
    /// The route of runs on `stream`, if warmup saw this probe run there.
    #[inline]
    pub(crate) fn on(&self, stream: Stream) -> Option<&Route> {
        self.streams()
            .and_then(|r| r.0.iter().find(|r| r.stream == stream))
    }

    /// The per-stream routes, if any.
    #[inline]
    pub(crate) fn streams(&self) -> Option<&Routes> {
        // SAFETY: a non-null pointer comes from a `Box<Routes>` owned by a session, and
        // sessions are never freed.
        unsafe { self.streams.load(Acquire).as_ref() }
    }

    /// The event that occurrence `occ` of this probe belongs to, or `NONE`.
    #[inline]
    pub(crate) fn event_for(&self, occ: u32) -> u32 {
        if occ < self.events.load(Relaxed) {
            self.first_event.load(Relaxed) + occ
        } else {
            self.merged_event.load(Relaxed)
        }
    }

    /// A new iteration: no run counted yet, on any stream.
    /// Restarts the occurrence counts, after the iteration and slot are stored: `Release`,
    /// so that a run on another thread whose `fetch_add` (`Acquire`) takes an occurrence from
    /// the restarted count also reads the new iteration and slot (on x86 the same instructions
    /// as relaxed ones).
    pub(crate) fn reset_calls(&self) {
        self.calls.store(0, Release);
        if let Some(routes) = self.streams() {
            for route in routes.0.iter() {
                route.calls.store(0, Release);
            }
        }
    }
}

/// Hooks of a run (`PROF_NVTX`, `PROF_SYNC`, `PROF_DELAY`): bits of a guard, undone (or, for
/// the delay, applied) when the run ends.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Hooks {
    /// `PROF_SYNC`'s level.
    pub sync: u8,
    /// NVTX ranges are pushed (`PROF_NVTX=1` and the device has NVTX).
    pub nvtx: bool,
    /// The device's hooks apply (on a device, NVTX or `PROF_SYNC` of 2 or more).
    pub device: bool,
    /// Some probe has hooks (the device's, or a delay): the probes that have them are never
    /// fully off while the session runs.
    pub any: bool,
}

/// Hook bits of a guard: an NVTX range was pushed.
pub(crate) const HOOK_NVTX: u8 = 1;
/// Hook bits of a guard: synchronize the device when the run ends.
pub(crate) const HOOK_SYNC: u8 = 2;
/// Hook bits of a guard: a kernel-attribution tag was pushed.
pub(crate) const HOOK_KERNELS: u8 = 4;
/// Hook bits of a guard: the run's allocations are counted ([`Alloc`](crate::Alloc)).
pub(crate) const HOOK_MEMORY: u8 = 8;
/// Hook bits of a guard: the run is delayed when it ends (`PROF_DELAY`,
/// [`Delay`](crate::schedule::delay::Delay)).
pub(crate) const HOOK_DELAY: u8 = 16;

impl Hooks {
    /// The hooks a run of `desc` opens (`nests`: it ends on the thread it started on).
    pub(crate) fn of(&self, desc: &Descriptor, nests: bool) -> u8 {
        let mut hooks = 0;
        if !self.device {
            return 0;
        }
        if self.sync >= 3 || (self.sync == 2 && desc.info.phase.is_some()) {
            hooks |= HOOK_SYNC;
        }
        // NVTX ranges are a per-thread stack: an `async fn` may end on another thread.
        if self.nvtx && nests {
            hooks |= HOOK_NVTX;
        }
        hooks
    }
}

/// A scheduled event and its storage.
#[derive(Debug)]
pub(crate) struct Event {
    /// The probe's registry index.
    pub entry: usize,
    /// 0 (no stream), or 1 + the index of the stream in [`Plan::streams`].
    pub lane: u32,
    /// Which run of the probe (on its lane) within an iteration, or `MERGED`.
    pub occurrence: u32,
    /// Position in the iteration's execution order.
    pub order: u32,
    /// The learner key of the run that contained this one, if any, and whether it ran on
    /// another thread than that run.
    pub parent: Option<Parent>,
    /// It ran on a thread other than the one that calls `step()`.
    pub off_thread: bool,
    /// Its runs are recorded into the threads' buffers (`trace` mode), and its samples stored
    /// from there at `step()`.
    pub recorded: bool,
    /// Where its samples go.
    pub store: Store,
}

/// The stream of `lane` (0: none).
pub(crate) fn lane_stream(streams: &[Stream], lane: u32) -> Option<&Stream> {
    streams.get((lane as usize).checked_sub(1)?)
}

/// The schedule's lock-free half: the events with their storage, the probes' routes and what
/// is armed now. The hot path reads it; the cold path fills it.
#[derive(Debug)]
pub(crate) struct Schedule {
    /// The events, allocated when planned (fixed capacity: the bound, one merged event per
    /// probe and lane, and room for probes registered later).
    pub events: Box<[OnceLock<Event>]>,
    /// Where each probe's runs go, by registry index (room for probes registered later).
    pub routes: Box<[ProbeRoute]>,
    /// The event armed in `sample` and `continuous` mode.
    pub armed_event: AtomicU32,
    /// Every event is armed, not only `armed_event`: always in `trace` mode, and in
    /// `continuous` mode while a trace taken on demand runs (`session/on_demand.rs`).
    pub every_event: AtomicBool,
    /// The sample slot armed runs write.
    pub cur_slot: AtomicU32,
    /// The iteration armed runs belong to.
    pub cur_iter: AtomicU32,
    /// Still in warmup: selected probes report their runs to the learner.
    pub learning: AtomicBool,
    /// `trace` mode with no warmup: iteration 0 both learns the events and is measured (its
    /// runs are timed on the learning path and stored when the events are made).
    pub measure_first: bool,
    /// The first iteration (until the first `step()`) is being learned and its learning runs
    /// not on a stream are timed: with `measure_first`, as the events' first samples; with a
    /// warmup of two iterations or more, for the events that run only before the loop.
    pub first_iteration: AtomicBool,
    /// What warmup has seen.
    pub learner: Mutex<Learner>,
    /// The hooks runs open.
    pub hooks: Hooks,
    /// What is measured after warmup: `PROF_MODE`, decided once at start-up.
    pub mode: SessionMode,
    /// `PROF_WARMUP`.
    pub warmup: u32,
    /// `PROF_REPEAT`.
    pub repeat: u32,
    /// The most bytes of sample storage to reserve.
    pub sample_budget_bytes: usize,
    /// The program's global allocator is [`Alloc`](crate::Alloc): armed runs count what they
    /// allocate, and events keep it per sample.
    pub memory: bool,
    /// `trace` mode on a linear clock: runs are recorded into the threads' buffers (learning
    /// runs all, measured runs where [`Schedule::recorded`] says so).
    pub records: bool,
    /// Runs skipped because they started while their thread was exiting (a probe in a
    /// thread-local's destructor, after the profiler's own thread-locals were gone).
    pub exiting: AtomicU64,
    /// `PROF_DELAY`: the probes delayed after each run, and what was injected.
    pub delay: Option<crate::schedule::delay::Delay>,
}

/// What a session measures after warmup: `PROF_MODE` as a session runs it, decided once at
/// start-up (`off` never starts a session).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionMode {
    /// One event per iteration, `repeat` iterations per event.
    Sample,
    /// Every selected event in each of `repeat` iterations.
    Trace,
    /// `sample` forever, in windows.
    Continuous,
}

impl SessionMode {
    /// The session's mode for `mode`; `None` for `off`, which runs no session.
    pub(crate) fn of(mode: Mode) -> Option<SessionMode> {
        match mode {
            Mode::Sample => Some(SessionMode::Sample),
            Mode::Trace => Some(SessionMode::Trace),
            Mode::Continuous => Some(SessionMode::Continuous),
            Mode::Off => None,
        }
    }

    /// The name `prof.json` gives it (`run.mode`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SessionMode::Sample => Mode::Sample,
            SessionMode::Trace => Mode::Trace,
            SessionMode::Continuous => Mode::Continuous,
        }
        .as_str()
    }
}

/// The schedule's cold-path state, behind the session's lock.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// The registry indices of the probes the filter selects (runtime probes join as they are
    /// registered).
    pub selected: Vec<usize>,
    /// Event indices in execution order.
    pub order: Vec<u32>,
    /// Events allocated in [`Schedule::events`].
    pub allocated: usize,
    /// Events armed in the iteration now running.
    pub armed: Vec<u32>,
    /// The probe armed in `sample` mode.
    pub armed_entry: Option<usize>,
    /// Iterations in which something was armed, after warmup.
    pub armed_iterations: u64,
    /// Selected probes not seen yet; they stay in learning state.
    pub late: Vec<usize>,
    /// The events that ran only before the loop (not scheduled), in the order they first ran.
    pub before_loop: Vec<BeforeLoop>,
    /// The clock's mark at start-up, where the first iteration began: the origin of the
    /// before-loop runs' offsets.
    pub origin: u64,
    /// The streams of the events, lane `k` being `streams[k - 1]`.
    pub streams: Vec<Stream>,
    /// The route tables the probes' routes point to (kept alive here; boxed so that their
    /// addresses stay put when the vector grows).
    #[allow(clippy::vec_box)]
    pub tables: Vec<Box<Routes>>,
    /// Bytes reserved for samples so far.
    pub sample_bytes: usize,
    /// Events left out because their storage would pass the budget.
    pub events_over_budget: usize,
    /// Some of them were timed on a stream (their slots are larger).
    pub over_budget_on_device: bool,
    /// The budget warning was given.
    pub warned_budget: bool,
}

impl Schedule {
    /// The schedule of a session measuring as `mode` says, over at most `config.max_probes`
    /// probes, those registered while it runs included.
    pub(crate) fn new(config: &Config, mode: SessionMode, hooks: Hooks, linear: bool) -> Schedule {
        // One merged event per probe taking part beyond the bound on events.
        let max_probes = config.max_probes as usize;
        let capacity = config.max_events as usize + max_probes;
        let measure_first = mode == SessionMode::Trace && config.warmup == 0;
        // Indexed by registry entry: room for `max_probes` registrations after this one
        // (selected or not), of which at most `max_probes` in all take part.
        let room = registry().len() + max_probes;
        let delay = match (&config.delay_filter, config.delay) {
            (Some(filter), Some(amount)) => Some(crate::schedule::delay::Delay::new(
                filter.clone(),
                amount,
                room,
            )),
            _ => None,
        };
        Schedule {
            events: (0..capacity).map(|_| OnceLock::new()).collect(),
            routes: (0..room).map(|_| ProbeRoute::default()).collect(),
            delay,
            armed_event: AtomicU32::new(NONE),
            every_event: AtomicBool::new(mode == SessionMode::Trace),
            cur_slot: AtomicU32::new(0),
            cur_iter: AtomicU32::new(0),
            learning: AtomicBool::new(config.warmup > 0 || measure_first),
            measure_first,
            first_iteration: AtomicBool::new(measure_first || config.warmup >= 2),
            learner: Mutex::new(Learner::new(config.max_events)),
            hooks,
            mode,
            warmup: config.warmup,
            repeat: config.repeat,
            sample_budget_bytes: config.sample_budget_bytes,
            memory: crate::instrument::alloc::installed(),
            records: mode == SessionMode::Trace && linear,
            exiting: AtomicU64::new(0),
        }
    }

    /// Whether the measured runs of probe `entry` on `lane` are recorded into the threads'
    /// buffers. Not so for runs timed on a stream (device marks; a probe's runs are all on
    /// streams or none are), runs with hooks, runs whose
    /// memory is counted (a record has no room for the figures), or a probe whose index does
    /// not fit a record: those take the armed path.
    pub(crate) fn recorded(&self, entry: usize, lane: u32) -> bool {
        self.records
            && lane == 0
            && !self.memory
            && entry <= crate::store::buffer::tag::ENTRY as usize
            && (!self.hooks.any || self.hooks_of(self.desc(entry), true) == 0)
    }

    /// Whether events keep each run's work and shape (`flops`, `bytes`, `shape` keys): in
    /// `sample` and `continuous` mode (a trace on demand included), not in `trace` mode, whose
    /// runs are recorded without them (its events get no storage for them, and probes that
    /// must take the armed path there are [`State::Traced`], which evaluates no key).
    pub(crate) fn keeps_work(&self) -> bool {
        self.mode != SessionMode::Trace
    }

    /// The hooks a run of `desc` opens (`nests`: it ends on the thread it started on): the
    /// device's, and the delay's when `PROF_DELAY_FILTER` selects it.
    #[inline]
    pub(crate) fn hooks_of(&self, desc: &Descriptor, nests: bool) -> u8 {
        let mut hooks = self.hooks.of(desc, nests);
        if let Some(delay) = &self.delay {
            if delay.selects(desc.index.load(Relaxed) as usize) {
                hooks |= HOOK_DELAY;
            }
        }
        hooks
    }

    /// The descriptor of probe `entry`.
    pub(crate) fn desc(&self, entry: usize) -> &'static Descriptor {
        registry().entry(entry).desc
    }

    /// Where probe `entry`'s runs go. Every selected probe has one (a probe registered beyond
    /// the room reserved is not adopted).
    pub(crate) fn route(&self, entry: usize) -> &ProbeRoute {
        &self.routes[entry]
    }

    /// Event `e`, once allocated.
    #[inline]
    pub(crate) fn event(&self, e: u32) -> Option<&Event> {
        self.events.get(e as usize).and_then(OnceLock::get)
    }

    /// The state of a selected probe that is not measured: `Hook` when its runs have hooks.
    pub(crate) fn idle_state(&self, entry: usize) -> State {
        if self.hooks.any && self.hooks_of(self.desc(entry), true) != 0 {
            State::Hook
        } else {
            State::Off
        }
    }
}
