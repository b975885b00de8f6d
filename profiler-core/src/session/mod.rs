//! One profiling run: its configuration, clock, events and schedule state.
//!
//! The hot path (`probe.rs`) reaches a session only through [`Session::start_run`] and
//! [`Session::finish_run`], and only for probes the schedule has armed or is learning. The cold
//! path lives beside this file: `step.rs` (warmup, arming at `step()`, resolution, the end) and
//! `results.rs` (turning what was stored into a [`Profile`](crate::Profile)).

mod kernels;
mod results;
mod step;
mod windows;

use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub(crate) use crate::clock::ActiveClock;
use crate::config::{Config, Mode};
use crate::device::{Device, Stream, NO_MARK};
use crate::probe::{
    Armed, Descriptor, Routes, ARMED, HOOK, HOOKS_ONLY, HOOK_KERNELS, HOOK_NVTX, HOOK_SYNC, LEARN,
    LEARNING, NONE, OFF,
};
use crate::record::{Resolved, Store};
use crate::registry::registry;
use crate::schedule::{Key, Learner};

/// Events kept free for the merged events of probes registered while a session runs.
const RUNTIME_RESERVE: usize = 1024;

/// The `slot` of a learning run that is also timed (`trace` mode without warmup).
const CAPTURE: u32 = u32::MAX;

/// A scheduled event and its storage.
#[derive(Debug)]
pub(crate) struct Event {
    entry: usize,
    /// 0 (no stream), or 1 + the index of the stream in `Control::streams`.
    lane: u32,
    occurrence: u32,
    order: u32,
    /// The learner key of the run that contained this one, if any.
    parent: Option<Key>,
    store: Store,
}

/// Cold-path state, behind one lock.
#[derive(Debug, Default)]
struct Control {
    /// The registry indices of the probes the filter selects (runtime probes join as they are
    /// registered).
    selected: Vec<usize>,
    /// `iter_marks[i]` is the mark at which iteration `iter_base + i` began; one more than
    /// completed.
    iter_marks: Vec<u64>,
    /// The iteration `iter_marks[0]` began: 0, except in `continuous` mode, where marks older
    /// than the current window (and than any pending sample) are dropped.
    iter_base: u32,
    /// `continuous` mode: the windows closed and kept, oldest first, and the last one's
    /// samples (what `events` shows).
    windows: std::collections::VecDeque<profiler_format::Window>,
    /// `continuous` mode: windows closed so far (kept or dropped).
    windows_closed: u64,
    /// `continuous` mode: the first iteration of the window now running.
    window_first_iter: u32,
    /// `continuous` mode: the resolved samples of the last closed window, per event.
    shown: Option<Vec<Resolved>>,
    /// When `continuous` mode last handed results to the background writer.
    last_background_write: Option<std::time::Instant>,
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
    /// Slots written (or about to be) and not yet resolved: (event, slot, iteration).
    pending: Vec<(u32, u32, u32)>,
    /// The streams of the events, lane `k` being `streams[k - 1]`.
    streams: Vec<Stream>,
    /// Per-stream iteration starts on the device: (iteration, lane, mark), not yet released.
    stream_marks: Vec<(u32, u32, u64)>,
    /// The route tables descriptors point to (kept alive here; boxed so that their addresses
    /// stay put when the vector grows).
    #[allow(clippy::vec_box)]
    routes: Vec<Box<Routes>>,
    /// Kernel attribution (`PROF_KERNELS`).
    kernels: kernels::Attribution,
    /// Resolved samples, per event.
    resolved: Vec<Resolved>,
    /// Selected probes not seen yet; they stay in learning state.
    late: Vec<usize>,
    finished: bool,
    /// The results are on disk.
    written: bool,
    /// Results whose write failed, kept to try once more at the end.
    unwritten: Option<Box<profiler_format::Profile>>,
    /// `cuProfilerStop` was called.
    capture_stopped: bool,
    /// Bytes reserved for samples so far.
    sample_bytes: usize,
    /// Events left out because their storage would pass the budget.
    events_over_budget: usize,
    warned_budget: bool,
}

/// One profiling run.
#[derive(Debug)]
pub struct Session {
    config: Config,
    clock: ActiveClock,
    /// The device whose streams time the runs that name one (CUDA, or a simulated one).
    device: Option<Box<dyn Device>>,
    /// NVTX ranges are pushed (`PROF_NVTX=1` and the device has NVTX).
    nvtx: bool,
    /// Some probe has hooks (NVTX, or `PROF_SYNC` of 2 or more): selected probes are never
    /// fully off while the session runs.
    hooked: bool,
    /// Kernel activity is being gathered (`PROF_KERNELS=1`, while measuring).
    kernels_on: AtomicBool,
    linear: bool,
    events: Box<[OnceLock<Event>]>,
    armed_event: AtomicU32,
    cur_slot: AtomicU32,
    cur_iter: AtomicU32,
    learning: AtomicBool,
    /// `trace` mode with no warmup: iteration 0 both learns the events and is measured (its
    /// runs are timed on the learning path and stored when the events are made).
    measure_first: bool,
    done: AtomicBool,
    /// Median of an empty measurement: what every sample includes besides the code measured.
    floor_ns: u64,
    control: Mutex<Control>,
    learner: Mutex<Learner>,
    /// Serializes writes of the results (the end's and `continuous` mode's background ones),
    /// holding the generation last written so that an older profile never replaces a newer.
    written_generation: Mutex<u64>,
    /// A background write is under way (`continuous` mode skips a window rather than queue).
    background_writing: AtomicBool,
    /// A background write failed (said once).
    background_failed: AtomicBool,
}

/// The stream of `lane` (0: none).
pub(crate) fn lane_stream(streams: &[Stream], lane: u32) -> Option<&Stream> {
    streams.get((lane as usize).checked_sub(1)?)
}

/// Locks, shrugging off poisoning: a panic elsewhere must not take the profiler down with it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

thread_local! {
    /// The runs open on this thread during warmup, innermost last, as learner keys.
    static OPEN: std::cell::RefCell<Vec<Key>> = const { std::cell::RefCell::new(Vec::new()) };
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
    pub(crate) fn new(
        config: Config,
        clock: ActiveClock,
        device: Option<Box<dyn Device>>,
    ) -> Session {
        let reg = registry();
        for entry in reg.iter() {
            entry.desc.reset();
        }
        let selected: Vec<usize> = if config.mode == Mode::Off {
            Vec::new()
        } else {
            (0..reg.len())
                .filter(|&i| reg.entry(i).selected_by(&config.filter))
                .collect()
        };
        // One merged event per selected probe and lane beyond the bound, and room for probes
        // registered while the session runs.
        let capacity = config.max_events as usize + selected.len() + RUNTIME_RESERVE;
        let measure_first = config.mode == Mode::Trace && config.warmup == 0;
        let learning = config.mode != Mode::Off && (config.warmup > 0 || measure_first);
        let control = Control {
            selected: selected.clone(),
            iter_marks: vec![clock.mark()],
            late: if learning {
                Vec::new()
            } else {
                selected.clone()
            },
            ..Control::default()
        };
        let nvtx = match &device {
            Some(device) if config.nvtx && config.mode != Mode::Off => {
                let ranges: Vec<crate::device::RangeInfo> = reg
                    .iter()
                    .map(|e| crate::device::RangeInfo {
                        name: e.desc.info.name.to_owned(),
                        layer: e.desc.info.layer.map(str::to_owned),
                        phase: e.desc.info.phase.map(str::to_owned),
                    })
                    .collect();
                device.set_ranges(&ranges)
            }
            _ => false,
        };
        let hooked = device.is_some() && (nvtx || config.sync >= 2);
        Session {
            floor_ns: clock.empty_measurement_ns(),
            device,
            nvtx,
            hooked,
            kernels_on: AtomicBool::new(false),
            linear: clock.is_linear(),
            learner: Mutex::new(Learner::new(config.max_events)),
            config,
            clock,
            events: (0..capacity).map(|_| OnceLock::new()).collect(),
            armed_event: AtomicU32::new(NONE),
            cur_slot: AtomicU32::new(0),
            cur_iter: AtomicU32::new(0),
            learning: AtomicBool::new(learning),
            measure_first,
            done: AtomicBool::new(false),
            control: Mutex::new(control),
            written_generation: Mutex::new(0),
            background_writing: AtomicBool::new(false),
            background_failed: AtomicBool::new(false),
        }
    }

    /// The configuration this session runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How many registered probes the filter selected.
    pub fn selected_count(&self) -> usize {
        lock(&self.control).selected.len()
    }

    fn desc(&self, entry: usize) -> &'static Descriptor {
        registry().entry(entry).desc
    }

    /// Whether runs that name a stream are timed on a device.
    #[inline]
    pub(crate) fn has_device(&self) -> bool {
        self.device.is_some()
    }

    /// The hooks a run of `desc` opens.
    fn hooks_for(&self, desc: &Descriptor, nests: bool) -> u8 {
        let mut hooks = 0;
        let sync = self.config.sync;
        if sync >= 3 || (sync == 2 && desc.info.phase.is_some()) {
            hooks |= HOOK_SYNC;
        }
        // NVTX ranges are a per-thread stack: an `async fn` may end on another thread.
        if self.nvtx && nests {
            hooks |= HOOK_NVTX;
        }
        hooks
    }

    /// The state of a selected probe that is not measured: `HOOK` when its runs have hooks.
    fn idle_state(&self, entry: usize) -> u32 {
        if self.hooked && self.hooks_for(self.desc(entry), true) != 0 {
            HOOK
        } else {
            OFF
        }
    }

    /// A probe was registered at run time (`registry` index `entry`): if the filter selects it,
    /// it joins this session, learned with the others during warmup, or scheduled after them
    /// (as a probe first seen late) after warmup.
    pub(crate) fn adopt(&self, entry: usize) {
        if self.config.mode == Mode::Off || self.is_done() {
            return;
        }
        let e = registry().entry(entry);
        if !e.selected_by(&self.config.filter) {
            return;
        }
        let mut c = lock(&self.control);
        if c.finished || c.written || c.selected.contains(&entry) {
            return;
        }
        c.selected.push(entry);
        if !self.learning.load(Relaxed) {
            c.late.push(entry);
        }
        e.desc.state.store(LEARN, Release);
    }

    /// Puts every selected probe in learning state.
    fn arm_initial(&self) {
        for &entry in &lock(&self.control).selected {
            self.desc(entry).state.store(LEARN, Release);
        }
    }

    /// True once the schedule is complete.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Relaxed)
    }

    // ---- the slow path of a probe (called from probe.rs) ----

    /// A run of `desc` starts; returns the measurement if this run is the armed event (or a
    /// guard that only closes hooks).
    #[inline]
    pub(crate) fn start_run(
        &'static self,
        desc: &'static Descriptor,
        state: u32,
        nests: bool,
        stream: Option<Stream>,
    ) -> Option<Armed> {
        let hooks = if self.hooked {
            self.hooks_for(desc, nests)
        } else {
            0
        };
        if let (Some(device), true) = (&self.device, hooks != 0) {
            if hooks & HOOK_SYNC != 0 {
                device.synchronize();
            }
            if hooks & HOOK_NVTX != 0 {
                device.range_push(desc.index.load(Relaxed));
            }
        }
        match self.start_measure(desc, state, nests, stream, hooks) {
            Some(armed) => Some(armed),
            None if hooks != 0 => Some(Armed::bare(self, HOOKS_ONLY, hooks)),
            None => None,
        }
    }

    #[inline]
    fn start_measure(
        &'static self,
        desc: &'static Descriptor,
        state: u32,
        nests: bool,
        stream: Option<Stream>,
        hooks: u8,
    ) -> Option<Armed> {
        if state == HOOK {
            return None;
        }
        if state != ARMED {
            // Learning. During warmup the cold path notes the run and its parent; after warmup
            // a probe not seen yet is only counted, lock-free, and picked up at `step()`.
            if !self.learning.load(Relaxed) {
                desc.calls.fetch_add(1, Relaxed);
                return None;
            }
            let entry = desc.index.load(Relaxed) as usize;
            let parent = OPEN.with(|open| open.borrow().last().copied());
            let mut learner = lock(&self.learner);
            let (lane, occ) = match stream {
                Some(stream) => {
                    let lane = learner.lane_of(stream);
                    (lane, learner.next_occurrence(entry, lane))
                }
                None => (0, desc.calls.fetch_add(1, Relaxed)),
            };
            let key = learner.observe(entry, lane, occ, parent);
            drop(learner);
            if !nests {
                return None;
            }
            OPEN.with(|open| open.borrow_mut().push(key));
            let mut armed = Armed::bare(self, LEARNING, hooks);
            if self.measure_first && lane == 0 {
                // Timed, after the learning work, as an armed run would be.
                armed.slot = CAPTURE;
                armed.start = self.clock.mark();
            }
            return Some(armed);
        }
        let route = stream.and_then(|s| desc.route(s));
        let event = match route {
            Some(route) => route.next_event(),
            None => desc.event_for(desc.calls.fetch_add(1, Relaxed)),
        };
        if event == NONE
            || (self.config.mode != Mode::Trace && event != self.armed_event.load(Relaxed))
        {
            return None;
        }
        let iter = self.cur_iter.load(Relaxed);
        let mut hooks = hooks;
        let (start, dstart, at) = match self.device.as_deref() {
            // The CPU-only path: nothing more than before streams existed.
            None => (self.clock.mark(), NO_MARK, Stream::new(0, 0)),
            Some(device) => {
                // Tags are a per-thread stack: an `async fn` may end on another thread.
                if nests && self.kernels_on.load(Relaxed) {
                    device.kernels_push(kernels::tag(event, iter));
                    hooks |= HOOK_KERNELS;
                }
                let on_device = route.filter(|_| {
                    self.events
                        .get(event as usize)
                        .and_then(OnceLock::get)
                        .is_some_and(|ev| ev.store.samples.has_device())
                });
                let start = self.clock.mark();
                match on_device {
                    Some(route) => (start, device.mark_on(route.stream), route.stream),
                    None => (start, NO_MARK, Stream::new(0, 0)),
                }
            }
        };
        Some(Armed {
            session: self,
            event,
            slot: self.cur_slot.load(Relaxed),
            iter,
            start,
            dstart,
            stream: at,
            hooks,
        })
    }

    /// A measured run ends: store its marks, and close its hooks.
    #[inline]
    pub(crate) fn finish_run(&self, armed: &Armed) {
        if armed.event == LEARNING || armed.event == HOOKS_ONLY {
            self.discard_run(armed);
            return;
        }
        let device = self.device.as_deref();
        let dstop = match device {
            Some(device) if armed.dstart != NO_MARK => device.mark_on(armed.stream),
            _ => NO_MARK,
        };
        if let (Some(device), true) = (device, armed.hooks & HOOK_SYNC != 0) {
            device.synchronize();
        }
        let stop = self.clock.mark();
        if let Some(event) = self
            .events
            .get(armed.event as usize)
            .and_then(OnceLock::get)
        {
            event.store.record(
                armed.slot,
                armed.iter,
                (armed.start, stop),
                (armed.dstart, dstop),
                self.linear,
            );
        }
        self.close_hooks(armed.hooks & !HOOK_SYNC);
    }

    /// A run ends without a sample: warmup's nesting, a discarded guard, or hooks only.
    pub(crate) fn discard_run(&self, armed: &Armed) {
        if armed.event == LEARNING {
            let stop = (armed.slot == CAPTURE).then(|| self.clock.mark());
            let key = OPEN.with(|open| open.borrow_mut().pop());
            if let (Some(stop), Some(key)) = (stop, key) {
                lock(&self.learner)
                    .first_runs
                    .push((key, armed.start, stop));
            }
        }
        if let (Some(device), true) = (&self.device, armed.dstart != NO_MARK) {
            device.release(armed.dstart);
        }
        self.close_hooks(armed.hooks);
    }

    fn close_hooks(&self, hooks: u8) {
        let Some(device) = self.device.as_deref() else {
            return;
        };
        if hooks & HOOK_KERNELS != 0 {
            device.kernels_pop();
        }
        if hooks & HOOK_SYNC != 0 {
            device.synchronize();
        }
        if hooks & HOOK_NVTX != 0 {
            device.range_pop();
        }
    }
}
