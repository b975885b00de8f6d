//! One profiling run: its configuration, clock, events and the state the schedule keeps.
//!
//! The hot path (`probes/timer.rs`) reaches a session only for probes the schedule has armed, hooked
//! or is learning. The stages of the schedule (`schedule/`) extend [`Session`] with learning,
//! planning and arming; beside this file: `step.rs` (the end of each iteration, resolution, the
//! end of the run), `results.rs` (what was stored, as a [`Profile`](crate::Profile)),
//! `windows.rs` (`continuous` mode's windows), `writer.rs` (its writer thread), `kernels.rs`
//! (kernel attribution), `trace_records.rs` (`trace` mode's records, from the threads' buffers to the
//! events), `warmup_records.rs` (the records of `trace` mode's learning iterations, to the learner)
//! `step_memory.rs` (the devices' memory at each step) and `on_demand.rs` (`continuous` mode's
//! traces taken on demand).

pub(crate) mod kernels;
pub(crate) mod on_demand;
mod results;
mod step;
mod step_memory;
mod trace_records;
mod warmup_records;
mod windows;
mod writer;

use std::sync::atomic::{
    AtomicBool, AtomicPtr,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};
use std::sync::Mutex;

pub(crate) use crate::sync::lock;

pub(crate) use crate::instrument::clock::ActiveClock;
use crate::instrument::device::Device;
use crate::measure::Measuring;
use crate::register::descriptor::State;
use crate::register::registry::registry;
use crate::schedule::{Hooks, Plan, Schedule, SessionMode};
use crate::select::config::Config;
use crate::store::buffer::{Buffers, CHUNK_BYTES};
use crate::store::samples::Resolved;

/// Cold-path state, behind one lock, by the stage that owns it.
#[derive(Debug, Default)]
pub(crate) struct Control {
    /// The schedule's cold-path state.
    pub(crate) plan: Plan,
    /// Where each iteration began, and `continuous` mode's windows.
    pub(crate) iterations: Iterations,
    /// The samples between their stores and the results.
    pub(crate) samples: Samples,
    /// What the device adds: stream marks, kernels, memory, the focused capture.
    pub(crate) device: DeviceState,
    /// `trace` mode's records on their way to the events.
    pub(crate) trace: TraceState,
    /// `continuous` mode's traces taken on demand.
    pub(crate) on_demand: on_demand::OnDemand,
    /// How the run ended.
    pub(crate) end: EndState,
}

/// Where each iteration began, and `continuous` mode's windows.
#[derive(Debug, Default)]
pub(crate) struct Iterations {
    /// `marks[i]` is the mark at which iteration `base + i` began; one more than completed.
    pub(crate) marks: Vec<u64>,
    /// The iteration `marks[0]` began: 0, except in `continuous` mode, where marks older than
    /// the current window (and than any pending sample) are dropped.
    pub(crate) base: u32,
    /// `continuous` mode: windows closed so far (handed to the writer).
    pub(crate) windows_closed: u64,
    /// `continuous` mode: the first iteration of the window now running.
    pub(crate) window_first: u32,
}

/// The samples between their stores and the results.
#[derive(Debug, Default)]
pub(crate) struct Samples {
    /// Slots written (or about to be) and not yet resolved: (event, slot, iteration).
    pub(crate) pending: Vec<(u32, u32, u32)>,
    /// Resolved samples, per event.
    pub(crate) resolved: Vec<Resolved>,
}

/// What the device adds.
#[derive(Debug, Default)]
pub(crate) struct DeviceState {
    /// Per-stream iteration starts on the device: (iteration, lane, mark), not yet released.
    pub(crate) stream_marks: Vec<(u32, u32, u64)>,
    /// Kernel attribution (`PROF_KERNELS`).
    pub(crate) kernels: kernels::Attribution,
    /// The memory in use on each device in use, at each step.
    pub(crate) step_memory: step_memory::StepMemory,
    /// `cuProfilerStop` was called.
    pub(crate) capture_stopped: bool,
}

/// `trace` mode's records on their way to the events.
#[derive(Debug, Default)]
pub(crate) struct TraceState {
    /// The records drained so far after warmup.
    pub(crate) records: trace_records::Traced,
    /// The learning iterations': runs carried to the next, and the first iteration's.
    pub(crate) warmup: warmup_records::WarmupRecords,
}

/// How the run ended.
#[derive(Debug, Default)]
pub(crate) struct EndState {
    pub(crate) finished: bool,
    /// The results are on disk.
    pub(crate) written: bool,
    /// Results whose write failed, kept to try once more at the end.
    pub(crate) unwritten: Option<Box<profiler_format::Profile>>,
}

/// One profiling run.
#[derive(Debug)]
pub struct Session {
    pub(crate) config: Config,
    /// What the hot path is given: the schedule, the clock, the device, the buffers.
    pub(crate) measuring: Measuring,
    pub(crate) done: AtomicBool,
    /// Median of an empty measurement: what every sample includes besides the code measured.
    pub(crate) floor_ns: u64,
    pub(crate) control: Mutex<Control>,
    /// Serializes writes of the results (the end's and `continuous` mode's writer's),
    /// holding the generation last written so that an older profile never replaces a newer.
    pub(crate) written_generation: Mutex<u64>,
    /// `continuous` mode: what the writer made of the closed windows.
    pub(crate) archive: Mutex<writer::Archive>,
    /// `continuous` mode: the queue to the writer thread.
    pub(crate) writer: writer::Handoff,
    /// `continuous` mode: traces taken on demand, waiting for the writer thread.
    pub(crate) traces: Mutex<std::collections::VecDeque<on_demand::Taken>>,
    /// `continuous` mode: what the writer last saw of the control file (`PROF_CONTROL`).
    pub(crate) control_watch: Mutex<on_demand::ControlWatch>,
    /// A background write failed (said once).
    pub(crate) background_failed: AtomicBool,
    /// More probes were registered at run time than `PROF_MAX_PROBES` leaves room for (said
    /// once).
    pub(crate) too_many_runtime: AtomicBool,
    /// How many probes the registry held when the session started: those were selected (or
    /// not) then; a later one is adopted when it registers.
    pub(crate) registered_at_start: usize,
}

static CURRENT: AtomicPtr<Session> = AtomicPtr::new(std::ptr::null_mut());

/// What a thread that handed a full chunk over does with the `held` chunks waiting: the
/// running session's cold path ([`Session::handed_over`]); the hot path reaches it through
/// [`Measuring::hand_over`].
fn hand_over(held: usize) {
    if let Some(session) = current() {
        session.handed_over(held);
    }
}

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

/// Keeps the first `max` selected probes (in registration order) and says how many are left
/// out: each probe that takes part may reserve sample storage (up to a merged event's
/// reservoir), so their number bounds the memory and the cost of a step.
fn cap_probes(selected: &mut Vec<usize>, max: usize) {
    if selected.len() <= max {
        return;
    }
    eprintln!(
        "profiler-core: warning: the filter selects {} probes; the first {max} take part and \
         the other {} are not measured (PROF_MAX_PROBES={max}: raise it, or narrow PROF_FILTER)",
        selected.len(),
        selected.len() - max
    );
    selected.truncate(max);
}

impl Session {
    /// A session measuring as `mode` says over the registered probes that `config.filter`
    /// selects.
    pub(crate) fn new(
        config: Config,
        mode: SessionMode,
        clock: ActiveClock,
        device: Option<Box<dyn Device>>,
    ) -> Session {
        let reg = registry();
        for entry in reg.iter() {
            entry.desc.state.store(State::Off, Relaxed);
        }
        let registered_at_start = reg.len();
        let mut selected: Vec<usize> = (0..registered_at_start)
            .filter(|&i| reg.entry(i).selected_by(&config.filter))
            .collect();
        cap_probes(&mut selected, config.max_probes as usize);
        let hooks = Self::hooks(&config, device.as_deref());
        let schedule = Schedule::new(&config, mode, hooks, clock.is_linear());
        let learning = schedule.learning.load(Relaxed);
        let origin = clock.mark();
        let control = Control {
            plan: Plan {
                selected: selected.clone(),
                late: if learning {
                    Vec::new()
                } else {
                    selected.clone()
                },
                origin,
                ..Plan::default()
            },
            iterations: Iterations {
                marks: vec![origin],
                ..Iterations::default()
            },
            ..Control::default()
        };
        // The records waiting in the threads' buffers may take a quarter of the sample budget.
        let max_chunks = (config.sample_budget_bytes / 4 / CHUNK_BYTES).max(8);
        let control_watch = on_demand::ControlWatch::at_start(config.control.as_deref());
        let plain = Measuring::is_plain(&schedule, device.as_deref());
        Session {
            floor_ns: clock.empty_measurement_ns(),
            measuring: Measuring {
                plain,
                schedule,
                buffers: Buffers::new(max_chunks),
                device,
                kernels_on: AtomicBool::new(false),
                linear: clock.is_linear(),
                clock,
                hand_over,
            },
            config,
            done: AtomicBool::new(false),
            control: Mutex::new(control),
            written_generation: Mutex::new(0),
            archive: Mutex::default(),
            writer: writer::Handoff::default(),
            traces: Mutex::default(),
            control_watch: Mutex::new(control_watch),
            background_failed: AtomicBool::new(false),
            too_many_runtime: AtomicBool::new(false),
            registered_at_start,
        }
    }

    /// The hooks selected probes open: NVTX ranges (registered now, once) and
    /// synchronizations, when a device is there.
    fn hooks(config: &Config, device: Option<&dyn Device>) -> Hooks {
        let nvtx = match device {
            Some(device) if config.nvtx => {
                let ranges: Vec<crate::instrument::device::RangeInfo> = registry()
                    .iter()
                    .map(|e| crate::instrument::device::RangeInfo {
                        name: e.desc.info.name.to_owned(),
                        layer: e.desc.info.layer.map(str::to_owned),
                        phase: e.desc.info.phase.map(str::to_owned),
                    })
                    .collect();
                device.set_ranges(&ranges)
            }
            _ => false,
        };
        Hooks {
            sync: config.sync,
            nvtx,
            any: device.is_some() && (nvtx || config.sync >= 2),
        }
    }

    /// The configuration this session runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How many registered probes the filter selected.
    pub fn selected_count(&self) -> usize {
        lock(&self.control).plan.selected.len()
    }

    /// A probe was registered at run time (`registry` index `entry`): if the filter selects it,
    /// it joins this session, learned with the others during warmup, or scheduled after them
    /// (as a probe first seen late) after warmup.
    pub(crate) fn adopt(&self, entry: usize) {
        if self.is_done() {
            return;
        }
        let e = registry().entry(entry);
        // A probe registered before the session started was selected (or not) then.
        if entry < self.registered_at_start || !e.selected_by(&self.config.filter) {
            return;
        }
        let mut c = lock(&self.control);
        if c.end.finished || c.end.written {
            return;
        }
        let max = self.config.max_probes as usize;
        let no_room = entry >= self.measuring.schedule.routes.len();
        if no_room || c.plan.selected.len() >= max {
            drop(c);
            if !self.too_many_runtime.swap(true, Relaxed) {
                let name = profiler_tables::table_text::clip(e.desc.info.name, 80);
                if no_room {
                    // The routes were sized at start-up for `max` registrations after it,
                    // selected or not: those the filter leaves out used the room up.
                    eprintln!(
                        "profiler-core: warning: probe `{name}` and any registered after it are \
                         not measured: a run has room for PROF_MAX_PROBES={max} probes \
                         registered after start-up, selected or not, and {} were (raise \
                         PROF_MAX_PROBES, or register the probes before start-up)",
                        entry - self.registered_at_start
                    );
                } else {
                    eprintln!(
                        "profiler-core: warning: probe `{name}` and any registered after it are \
                         not measured: PROF_MAX_PROBES={max} probes take part in a run, those \
                         registered while it runs included (raise PROF_MAX_PROBES, or narrow \
                         PROF_FILTER)"
                    );
                }
            }
            return;
        }
        c.plan.selected.push(entry);
        if !self.measuring.schedule.learning.load(Relaxed) {
            c.plan.late.push(entry);
        }
        e.desc.state.store(State::Learn, Release);
    }

    /// Puts every selected probe in learning state.
    fn arm_initial(&self) {
        for &entry in &lock(&self.control).plan.selected {
            self.measuring
                .schedule
                .desc(entry)
                .state
                .store(State::Learn, Release);
        }
    }

    /// True once the schedule is complete.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Relaxed)
    }
}
