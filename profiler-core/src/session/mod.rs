//! One profiling run: its configuration, what it measures with ([`Measuring`]), and the
//! modes and services that make its results, each a component in a file of its own that owns
//! its part of the cold-path state ([`Control`]) and is given what else it needs:
//!
//! - `measured.rs`: what the cold path gathered (the plan, the iteration marks, the samples,
//!   the device's part in `device.rs`: stream marks, capture, `kernels.rs`, `step_memory.rs`),
//!   and the resolution of samples;
//! - `warmup_records.rs`: `trace` mode's learning iterations, from the records to the learner;
//! - `trace_records.rs`: `trace` mode's measured records, to the events;
//! - `windows.rs`: `continuous` mode's windows, closed and handed to `writer.rs`, the writer
//!   thread; `on_demand.rs`: its traces taken on demand;
//! - `metrics.rs`: `PROF_METRICS`, the windows served to Prometheus as they are written;
//! - `results.rs`: what was stored, as a [`Profile`](crate::Profile).
//!
//! `Session` itself is this file (start-up, probes adopted at run time) and `step.rs` (the end
//! of each iteration, as one pipeline over the components, and the end of the run). The hot
//! path (`probes/timer.rs`) reaches a session only for probes the schedule has armed, hooked or
//! is learning.

pub(crate) mod device;
pub(crate) mod kernels;
mod measured;
mod metrics;
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
use crate::schedule::{Hooks, Schedule, SessionMode};
use crate::select::config::Config;
use crate::store::buffer::{Buffers, CHUNK_BYTES};
use measured::Measured;
use on_demand::{OnDemand, Outbox};
use results::Results;
use trace_records::{Traced, FOLD_AT};
use warmup_records::WarmupRecords;
use windows::Windows;
use writer::Writer;

/// Cold-path state, behind one lock: what was gathered, and each component's own part.
#[derive(Debug, Default)]
pub(crate) struct Control {
    /// The plan, the iteration marks, the samples, the device's part.
    measured: Measured,
    /// `trace` mode's learning iterations' records.
    warmup: WarmupRecords,
    /// `trace` mode's measured records on their way to the events.
    traced: Traced,
    /// `continuous` mode's windows.
    windows: Windows,
    /// `continuous` mode's traces taken on demand.
    on_demand: OnDemand,
    /// How the run ended.
    end: EndState,
}

impl Control {
    /// After warmup: `trace` mode's records, drained from the buffers into the events
    /// ([`Traced::fold`]).
    fn fold_records(&mut self, m: &Measuring, settle: bool) {
        let run = &mut self.measured;
        let marks = (&run.iterations.marks[..], run.iterations.base);
        self.traced.fold(m, marks, &mut run.samples.pending, settle);
    }
}

/// How the run ended.
#[derive(Debug, Default)]
struct EndState {
    /// The schedule is complete.
    finished: bool,
    /// The results are on disk.
    written: bool,
    /// Results whose write failed, kept to try once more at the end.
    unwritten: Option<Box<profiler_format::Profile>>,
    /// A signal is ending the process: the device is waited for only so long
    /// ([`SIGNAL_SETTLE`]).
    signal: bool,
}

/// How long the results written on a signal wait for the device's work: a device that never
/// finishes (a collective whose peer died) must not turn the signal into a hang, the results
/// lost when the launcher's SIGKILL follows.
pub(crate) const SIGNAL_SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

impl EndState {
    /// The schedule is complete or the results are written: nothing more is measured.
    fn over(&self) -> bool {
        self.finished || self.written
    }
}

/// One profiling run.
#[derive(Debug)]
pub struct Session {
    /// The run's configuration.
    pub(crate) config: Config,
    /// What the hot path is given: the schedule, the clock, the device, the buffers.
    pub(crate) measuring: Measuring,
    /// True once the schedule is complete, or the run ended.
    pub(crate) done: AtomicBool,
    /// Median of an empty measurement: what every sample includes besides the code measured.
    floor_ns: u64,
    /// The cold-path state, behind one lock.
    control: Mutex<Control>,
    /// `continuous` mode: the writer thread, and what it made of the closed windows.
    writer: Writer,
    /// `continuous` mode: traces taken on demand, waiting for the writer thread.
    traces: Outbox,
    /// `continuous` mode: the Prometheus endpoint (`PROF_METRICS`), if one is served.
    metrics: Option<metrics::Metrics>,
    /// More probes were registered at run time than `PROF_MAX_PROBES` leaves room for (said
    /// once).
    too_many_runtime: AtomicBool,
    /// How many probes the registry held when the session started: those were selected (or
    /// not) then; a later one is adopted when it registers.
    registered_at_start: usize,
    /// The process that started the session: a process forked from it (a data-loading worker)
    /// holds a copy of the session, which writes nothing (the results are the parent's).
    pid: u32,
}

static CURRENT: AtomicPtr<Session> = AtomicPtr::new(std::ptr::null_mut());

/// Set in a process forked from this one (a data-loading worker) by the fork's child handler
/// ([`forked_child`]): its copy of the session is inert.
static FORKED: AtomicBool = AtomicBool::new(false);

/// The child's side of a `fork`: no session runs there. Its copy of the session is the
/// parent's, whose results the child never writes; and a lock that one of the profiler's
/// threads (the writer, the signal thread) held at the fork stays held for ever in the child,
/// where those threads do not exist: a `step()` or the end of `main` that took it would hang the
/// worker. So no session is current in the child: its probes are inert, `step()` is the
/// listing's no-op and `finished()` is false, as in a build without profiling; and the end its
/// guard still calls on the copy writes nothing and takes no lock ([`forked`]). Only atomic stores: async-signal-safe, as a fork handler must be.
#[cfg(unix)]
extern "C" fn forked_child() {
    FORKED.store(true, Relaxed);
    CURRENT.store(std::ptr::null_mut(), Release);
}

/// Whether this process is a fork of the one that started the session.
pub(crate) fn forked() -> bool {
    FORKED.load(Relaxed)
}

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
    #[cfg(unix)]
    {
        static AT_FORK: std::sync::Once = std::sync::Once::new();
        // SAFETY: pthread_atfork(3) with no prepare or parent handler and a child handler that
        // only stores atomics (async-signal-safe).
        AT_FORK.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(forked_child));
        });
    }
    let leaked: &'static Session = Box::leak(Box::new(session));
    let old = CURRENT.swap(leaked as *const Session as *mut Session, AcqRel);
    // SAFETY: as in `current`.
    if let Some(old) = unsafe { old.as_ref() } {
        old.done.store(true, Relaxed);
    }
    leaked.writer.serve(leaked);
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
    say!(
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
        let control = Control {
            measured: Measured::starting(clock.mark(), selected, learning),
            ..Control::default()
        };
        // The records waiting in the threads' buffers may take a quarter of the sample budget.
        let max_chunks = (config.sample_budget_bytes / 4 / CHUNK_BYTES).max(8);
        let traces = Outbox::at_start(config.control.as_deref());
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
            writer: Writer::default(),
            traces,
            metrics: None,
            too_many_runtime: AtomicBool::new(false),
            registered_at_start,
            pid: std::process::id(),
        }
    }

    /// Binds `PROF_METRICS` and starts serving it, before the program's body runs: a bind
    /// failure is an error (exit 2) unless `PROF_METRICS_OPTIONAL=1`.
    pub(crate) fn serve_metrics(&mut self) -> Result<(), crate::select::config::ConfigError> {
        self.metrics = metrics::Metrics::start(&self.config)?;
        Ok(())
    }

    /// A profile of the windows was made to be written: the endpoint serves the same numbers;
    /// `last`: the run's final write, whose drift is judged whenever it was last judged (the
    /// endpoint serves it until the process exits).
    fn publish_metrics(&self, profile: &profiler_format::Profile, last: bool) {
        if let Some(metrics) = &self.metrics {
            metrics.publish(profile, &self.writer.calls(&self.measuring), last);
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
        let on_device = device.is_some() && (nvtx || config.sync >= 2);
        Hooks {
            sync: config.sync,
            nvtx,
            device: on_device,
            // A delay is a hook too (`schedule/delay.rs`).
            any: on_device || config.delay.is_some(),
        }
    }

    /// The configuration this session runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How many registered probes the filter selected.
    pub fn selected_count(&self) -> usize {
        lock(&self.control).measured.plan.selected.len()
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
        if entry < self.registered_at_start {
            return;
        }
        if !e.selected_by(&self.config.filter) {
            // Delayed all the same when the delay's filter selects it.
            if let Some(delay) = &self.measuring.schedule.delay {
                if delay.adopt(entry) {
                    e.desc.state.store(State::Hook, Release);
                }
            }
            return;
        }
        if let Some(delay) = &self.measuring.schedule.delay {
            delay.adopt(entry);
        }
        let mut c = lock(&self.control);
        if c.end.over() {
            return;
        }
        let max = self.config.max_probes as usize;
        let no_room = entry >= self.measuring.schedule.routes.len();
        if no_room || c.measured.plan.selected.len() >= max {
            drop(c);
            if !self.too_many_runtime.swap(true, Relaxed) {
                let name = profiler_tables::table_text::clip(e.desc.info.name, 80);
                if no_room {
                    // The routes were sized at start-up for `max` registrations after it,
                    // selected or not: those the filter leaves out used the room up.
                    say!(
                        "profiler-core: warning: probe `{name}` and any registered after it are \
                         not measured: a run has room for PROF_MAX_PROBES={max} probes \
                         registered after start-up, selected or not, and {} were (raise \
                         PROF_MAX_PROBES, or register the probes before start-up)",
                        entry - self.registered_at_start
                    );
                } else {
                    say!(
                        "profiler-core: warning: probe `{name}` and any registered after it are \
                         not measured: PROF_MAX_PROBES={max} probes take part in a run, those \
                         registered while it runs included (raise PROF_MAX_PROBES, or narrow \
                         PROF_FILTER)"
                    );
                }
            }
            return;
        }
        c.measured.plan.selected.push(entry);
        if !self.measuring.schedule.learning.load(Relaxed) {
            c.measured.plan.late.push(entry);
        }
        e.desc.state.store(State::Learn, Release);
    }

    /// Puts every selected probe in learning state, and every other delayed probe in hooked
    /// state (its runs are delayed, never measured).
    fn arm_initial(&self) {
        let schedule = &self.measuring.schedule;
        if let Some(delay) = &schedule.delay {
            for entry in delay.entries() {
                schedule.desc(entry).state.store(State::Hook, Release);
            }
        }
        for &entry in &lock(&self.control).measured.plan.selected {
            schedule.desc(entry).state.store(State::Learn, Release);
        }
    }

    /// True once the schedule is complete.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Relaxed)
    }

    /// A thread handed a full chunk over and `held` wait: past [`FOLD_AT`] (and after warmup,
    /// whose records are kept whole until `step()`), it folds them into the events itself.
    #[cold]
    pub(crate) fn handed_over(&self, held: usize) {
        if held < FOLD_AT || self.measuring.schedule.learning.load(Relaxed) {
            return;
        }
        let mut c = lock(&self.control);
        if !c.end.over() {
            c.fold_records(&self.measuring, false);
        }
    }

    /// How many iterations' device memory readings are kept.
    pub(crate) fn device_memory_kept(&self) -> usize {
        lock(&self.control).measured.device.step_memory.kept()
    }

    /// Runs `f` under the session's lock (tests only: see `__private::while_session_locked`).
    pub(crate) fn while_locked(&self, f: impl FnOnce()) {
        let _held = lock(&self.control);
        f();
    }

    /// Renumbers the iterations so that the last one completed is `last` (tests only: see
    /// `__private::renumber_iterations`).
    pub(crate) fn renumber_iterations(&self, last: u32) {
        let mut c = lock(&self.control);
        let iterations = &mut c.measured.iterations;
        let held = (iterations.marks.len() as u32).saturating_sub(1);
        iterations.base = last.saturating_sub(held);
    }

    /// What this session's profiles are made with.
    fn results(&self) -> Results<'_> {
        Results {
            config: &self.config,
            measuring: &self.measuring,
            floor_ns: self.floor_ns,
        }
    }
}

/// The writer thread serves the session: between its looks at the queue it reads the control
/// file and writes the traces on demand handed over; it writes the latest windows as
/// [`Results`] makes them.
impl writer::Served for Session {
    fn config(&self) -> &Config {
        &self.config
    }

    fn measuring(&self) -> &Measuring {
        &self.measuring
    }

    fn between_looks(&self) {
        if let Some(request) = self.traces.look(&self.config) {
            let line = {
                let mut c = lock(&self.control);
                let c = &mut *c;
                if c.end.over() {
                    None
                } else {
                    c.on_demand
                        .ask(request, &self.measuring, &c.measured.iterations)
                }
            };
            if let Some(line) = line {
                on_demand::name_start(&self.config, &line);
            }
        }
        self.traces.write_queued(&self.results());
    }

    fn publish(&self, profile: &profiler_format::Profile) {
        self.publish_metrics(profile, false);
    }

    fn latest(&self) -> Option<(profiler_format::Profile, u64)> {
        let c = lock(&self.control);
        if c.end.written {
            return None;
        }
        let archive = self.writer.archive_now(&self.config, &self.measuring);
        let shown = archive.shown.as_ref()?;
        let results = self.results();
        let live = results.live(&c.measured, shown);
        drop(c);
        Some((
            results.assemble(&archive, live, false),
            archive.generation(),
        ))
    }
}
