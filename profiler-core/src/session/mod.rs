//! One profiling run: its configuration, clock, events and the state the schedule keeps.
//!
//! The hot path (`timer.rs`) reaches a session only for probes the schedule has armed, hooked
//! or is learning. The stages of the schedule (`schedule/`) extend [`Session`] with learning,
//! planning and arming; beside this file: `step.rs` (the end of each iteration, resolution, the
//! end of the run), `results.rs` (what was stored, as a [`Profile`](crate::Profile)),
//! `windows.rs` (`continuous` mode) and `kernels.rs` (kernel attribution).

pub(crate) mod kernels;
mod results;
mod step;
mod windows;

use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};
use std::sync::{Mutex, OnceLock};

pub(crate) use crate::sync::lock;

pub(crate) use crate::clock::ActiveClock;
use crate::config::{Config, Mode};
use crate::descriptor::{Descriptor, State};
use crate::device::{Device, Stream};
use crate::record::{Resolved, Store};
use crate::registry::registry;
use crate::schedule::{Key, Learner, ProbeRoute, Routes, NONE};

/// Events (and routing tables) kept free for probes registered while a session runs.
const RUNTIME_RESERVE: usize = 1024;

/// A scheduled event and its storage.
#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) entry: usize,
    /// 0 (no stream), or 1 + the index of the stream in `Control::streams`.
    pub(crate) lane: u32,
    pub(crate) occurrence: u32,
    pub(crate) order: u32,
    /// The learner key of the run that contained this one, if any.
    pub(crate) parent: Option<Key>,
    pub(crate) store: Store,
}

/// Cold-path state, behind one lock.
#[derive(Debug, Default)]
pub(crate) struct Control {
    /// The registry indices of the probes the filter selects (runtime probes join as they are
    /// registered).
    pub(crate) selected: Vec<usize>,
    /// `iter_marks[i]` is the mark at which iteration `iter_base + i` began; one more than
    /// completed.
    pub(crate) iter_marks: Vec<u64>,
    /// The iteration `iter_marks[0]` began: 0, except in `continuous` mode, where marks older
    /// than the current window (and than any pending sample) are dropped.
    pub(crate) iter_base: u32,
    /// `continuous` mode: the windows closed and kept, oldest first, and the last one's
    /// samples (what `events` shows).
    pub(crate) windows: std::collections::VecDeque<profiler_format::Window>,
    /// `continuous` mode: windows closed so far (kept or dropped).
    pub(crate) windows_closed: u64,
    /// `continuous` mode: the first iteration of the window now running.
    pub(crate) window_first_iter: u32,
    /// `continuous` mode: the resolved samples of the last closed window, per event.
    pub(crate) shown: Option<Vec<Resolved>>,
    /// When `continuous` mode last handed results to the background writer.
    pub(crate) last_background_write: Option<std::time::Instant>,
    /// Iterations in which something was armed, after warmup.
    pub(crate) armed_iterations: u64,
    /// Event indices in execution order.
    pub(crate) schedule: Vec<u32>,
    /// Events allocated in `Session::events`.
    pub(crate) allocated: usize,
    /// Events armed in the iteration now running.
    pub(crate) armed: Vec<u32>,
    /// The probe armed in `sample` mode.
    pub(crate) armed_entry: Option<usize>,
    /// Slots written (or about to be) and not yet resolved: (event, slot, iteration).
    pub(crate) pending: Vec<(u32, u32, u32)>,
    /// The streams of the events, lane `k` being `streams[k - 1]`.
    pub(crate) streams: Vec<Stream>,
    /// Per-stream iteration starts on the device: (iteration, lane, mark), not yet released.
    pub(crate) stream_marks: Vec<(u32, u32, u64)>,
    /// The route tables descriptors point to (kept alive here; boxed so that their addresses
    /// stay put when the vector grows).
    #[allow(clippy::vec_box)]
    pub(crate) routes: Vec<Box<Routes>>,
    /// Kernel attribution (`PROF_KERNELS`).
    pub(crate) kernels: kernels::Attribution,
    /// Resolved samples, per event.
    pub(crate) resolved: Vec<Resolved>,
    /// Selected probes not seen yet; they stay in learning state.
    pub(crate) late: Vec<usize>,
    pub(crate) finished: bool,
    /// The results are on disk.
    pub(crate) written: bool,
    /// Results whose write failed, kept to try once more at the end.
    pub(crate) unwritten: Option<Box<profiler_format::Profile>>,
    /// `cuProfilerStop` was called.
    pub(crate) capture_stopped: bool,
    /// Bytes reserved for samples so far.
    pub(crate) sample_bytes: usize,
    /// Events left out because their storage would pass the budget.
    pub(crate) events_over_budget: usize,
    pub(crate) warned_budget: bool,
}

/// One profiling run.
#[derive(Debug)]
pub struct Session {
    pub(crate) config: Config,
    pub(crate) clock: ActiveClock,
    /// The device whose streams time the runs that name one (CUDA, or a simulated one).
    pub(crate) device: Option<Box<dyn Device>>,
    /// NVTX ranges are pushed (`PROF_NVTX=1` and the device has NVTX).
    pub(crate) nvtx: bool,
    /// Some probe has hooks (NVTX, or `PROF_SYNC` of 2 or more): selected probes are never
    /// fully off while the session runs.
    pub(crate) hooked: bool,
    /// Kernel activity is being gathered (`PROF_KERNELS=1`, while measuring).
    pub(crate) kernels_on: AtomicBool,
    pub(crate) linear: bool,
    pub(crate) events: Box<[OnceLock<Event>]>,
    /// Where each probe's runs go, by registry index (room for probes registered later).
    pub(crate) routes: Box<[ProbeRoute]>,
    pub(crate) armed_event: AtomicU32,
    pub(crate) cur_slot: AtomicU32,
    pub(crate) cur_iter: AtomicU32,
    pub(crate) learning: AtomicBool,
    /// `trace` mode with no warmup: iteration 0 both learns the events and is measured (its
    /// runs are timed on the learning path and stored when the events are made).
    pub(crate) measure_first: bool,
    pub(crate) done: AtomicBool,
    /// Median of an empty measurement: what every sample includes besides the code measured.
    pub(crate) floor_ns: u64,
    pub(crate) control: Mutex<Control>,
    pub(crate) learner: Mutex<Learner>,
    /// Serializes writes of the results (the end's and `continuous` mode's background ones),
    /// holding the generation last written so that an older profile never replaces a newer.
    pub(crate) written_generation: Mutex<u64>,
    /// A background write is under way (`continuous` mode skips a window rather than queue).
    pub(crate) background_writing: AtomicBool,
    /// A background write failed (said once).
    pub(crate) background_failed: AtomicBool,
    /// More probes were registered at run time than there is room for (said once).
    pub(crate) too_many_runtime: AtomicBool,
}

/// The stream of `lane` (0: none).
pub(crate) fn lane_stream(streams: &[Stream], lane: u32) -> Option<&Stream> {
    streams.get((lane as usize).checked_sub(1)?)
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
            entry.desc.state.store(State::Off, Relaxed);
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
            routes: (0..reg.len() + RUNTIME_RESERVE)
                .map(|_| ProbeRoute::default())
                .collect(),
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
            too_many_runtime: AtomicBool::new(false),
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

    pub(crate) fn desc(&self, entry: usize) -> &'static Descriptor {
        registry().entry(entry).desc
    }

    /// Where probe `entry`'s runs go. Every selected probe has one (`adopt` refuses a probe
    /// beyond the room reserved).
    pub(crate) fn route(&self, entry: usize) -> &ProbeRoute {
        &self.routes[entry]
    }

    /// Whether runs that name a stream are timed on a device.
    #[inline]
    pub(crate) fn has_device(&self) -> bool {
        self.device.is_some()
    }

    /// The state of a selected probe that is not measured: `HOOK` when its runs have hooks.
    pub(crate) fn idle_state(&self, entry: usize) -> State {
        if self.hooked && self.hooks_for(self.desc(entry), true) != 0 {
            State::Hook
        } else {
            State::Off
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
        if entry >= self.routes.len() {
            if !self.too_many_runtime.swap(true, Relaxed) {
                eprintln!(
                    "profiler-core: warning: more than {RUNTIME_RESERVE} probes were registered \
                     while this session runs; the later ones are not measured"
                );
            }
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
        e.desc.state.store(State::Learn, Release);
    }

    /// Puts every selected probe in learning state.
    fn arm_initial(&self) {
        for &entry in &lock(&self.control).selected {
            self.desc(entry).state.store(State::Learn, Release);
        }
    }

    /// True once the schedule is complete.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Relaxed)
    }
}
