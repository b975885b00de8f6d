//! The timer: the guard that measures one run, where the hot path begins; the armed and recorded
//! halves of a run are in `measure/`, on what the session gave the hot path ([`Measuring`](crate::measure::Measuring)).
//!
//! Cost, as the benchmark in `benches/hot_path.rs` measures it:
//! - unarmed probe (the case for every probe but one in `sample` mode): one relaxed atomic load
//!   of the descriptor's [`State`] and a branch on entry, and a branch on the guard's drop;
//! - recorded probe (`trace` mode, [`State::Recorded`]): the load of the running session, two
//!   clock reads, and a 16-byte record written into this thread's buffer (`store/buffer.rs`;
//!   `measure/recorded.rs`) with one
//!   release store of its position: no lock, allocation or shared read-modify-write. Which
//!   event a run is (its occurrence in the iteration) is worked out at `step()` from the start
//!   marks. The learning iterations of `trace` mode record the same way, with the run's
//!   nesting depth in the record;
//! - armed probe (`sample` mode; `measure/armed.rs`): the routing-table lookup and one
//!   `fetch_add` (the occurrence count), two clock reads, and three relaxed stores into sample
//!   storage reserved when the schedule was planned. No allocation, lock, hashing, string work
//!   or system call. In a plain session (no device, hooks or `Alloc`) a probe without stream or
//!   keys takes the lean pair `enter_armed` and `Measuring::finish_sampled`, which test nothing
//!   else; every other armed run the general `enter_slow`, `start_run` and `finish_armed`.
//!   With [`Alloc`](crate::Alloc) installed it adds a few thread-local writes
//!   before the start mark and after the stop mark (the run's memory figures); so do runs in
//!   `trace` mode then, which take this path. On a stream it adds two device marks (events
//!   from a pool reserved at the plan), two reads of the device's memory in use (before the
//!   start marks and after the stop marks, so that neither time includes them; for CUDA a
//!   driver call each, see [`Device::memory_used`](crate::instrument::device::Device::memory_used)) and,
//!   with hooks on, the NVTX push/pop and synchronizations asked for.
//!
//! A probe `PROF_DELAY_FILTER` selects (`schedule/delay.rs`, `measure/delay.rs`) leaves the fast path as a hooked
//! probe does ([`State::Hook`] between its measured runs): its runs take the general path and
//! end in the delay's spin, after the stop mark. Other probes keep the paths above; a session
//! with a delay is not plain, so its armed runs take the general path.
//!
//! A probe in learning state goes to `schedule/learn.rs` (`sample` mode) or records its runs
//! (`trace` mode); everything else (planning, arming at `step()`, resolution, output) is the cold
//! path.
//!
//! CPU sampling (`PROF_CPU_SAMPLE`, `sample/`): while it is on, every probe's state carries
//! [`PUBLISHED`], so that no run takes the fast paths above (the unarmed test included, which
//! is unchanged): each goes to the general entry, which pushes it on its thread's stack of
//! open events (`sample/open.rs`: thread-local stores, no allocation, lock or system call) and
//! makes it a `*Tagged` kind of [`Run`] (`Tagged` alone for a probe that takes no part), whose
//! end pops it. With sampling off, no path tests anything for it (`docs/overhead.md` has the
//! counts).

use std::sync::atomic::Ordering::Relaxed;

use crate::instrument::device::{AsStream, Stream};
use crate::measure::Run;
use crate::register::descriptor::{values, Descriptor, State, ARMED_BIT, PUBLISHED};
pub use crate::register::work::Count;
use crate::session::current;
use crate::store::buffer::tag;
/// Measures from its creation until it is dropped (see [`probe!`](crate::probe)).
///
/// In a build without `enable` this is a zero-sized type with the same methods and auto traits.
#[must_use = "a probe measures until its guard is dropped; bind it with `let _p = probe!(..)`"]
#[derive(Debug)]
pub struct ProbeGuard {
    run: Run,
}

impl ProbeGuard {
    /// A guard that measures nothing.
    #[inline(always)]
    pub const fn inert() -> ProbeGuard {
        ProbeGuard { run: Run::None }
    }

    const fn of(run: Run) -> ProbeGuard {
        ProbeGuard { run }
    }

    /// True when this guard is taking a sample.
    #[inline(always)]
    pub fn is_recording(&self) -> bool {
        !matches!(self.run, Run::None | Run::Tagged)
    }

    /// True when dropping this guard does something: it takes a sample, or it closes the
    /// event it published (CPU sampling on). What holds a guard for a span keeps these.
    #[inline(always)]
    pub(crate) fn is_open(&self) -> bool {
        !matches!(self.run, Run::None)
    }

    /// Ends the measurement now (the same as dropping the guard).
    #[inline(always)]
    pub fn stop(self) {}

    /// Ends the measurement without keeping a sample.
    #[inline(always)]
    pub fn discard(mut self) {
        let run = std::mem::replace(&mut self.run, Run::None);
        if matches!(
            run,
            Run::RecordedTagged(_) | Run::LearningTagged(_) | Run::ArmedTagged(_)
        ) {
            crate::sample::open::pop();
        }
        match run {
            Run::None => {}
            // The run still counts as an occurrence, so that the runs after it keep theirs.
            Run::Recorded(r) | Run::RecordedTagged(r) => r.at.end_recorded(&r, tag::DISCARD),
            // Learning still needs to know that the run ended, for nesting.
            Run::Learning(l) | Run::LearningTagged(l) => l.at.end_learning(&l, tag::DISCARD),
            // Warmup still needs to know that the run ended, for nesting; hooks close, and a
            // device mark goes back to its pool.
            Run::Armed(armed) | Run::ArmedTagged(armed) => armed.at.discard_run(&armed),
            // No hooks, memory or device mark to close: the occurrence was counted at entry.
            Run::Sampled(_) => {}
            Run::Tagged => crate::sample::open::pop(),
        }
    }
}

impl ProbeGuard {
    /// The measuring half of the drop, kept out of line so that the unarmed drop inlines to one
    /// test of a value already in a register. Each kind of run ends in a function of its own,
    /// called last, so that this one needs no stack frame and the recorded run's end only the
    /// registers it uses.
    ///
    /// A run published as its thread's open event (CPU sampling on) is one of the `*Tagged`
    /// kinds, whose end also closes the event: the others test nothing for it.
    #[inline(never)]
    fn finish(&self) {
        match &self.run {
            Run::None => {}
            Run::Recorded(r) => r.at.end_recorded(r, 0),
            Run::Sampled(run) => run.at.finish_sampled(run),
            Run::Learning(l) => l.at.end_learning(l, 0),
            Run::Armed(armed) => armed.at.finish_armed(armed),
            Run::RecordedTagged(_) | Run::LearningTagged(_) | Run::ArmedTagged(_) | Run::Tagged => {
                finish_tagged(&self.run)
            }
        }
    }
}

/// [`ProbeGuard::finish`] for a run published as its thread's open event (CPU sampling on): it
/// ends as its kind does, then closes the event. Out of line, so that `finish` ends every other
/// kind with a jump and keeps no stack frame.
#[inline(never)]
fn finish_tagged(run: &Run) {
    match run {
        Run::RecordedTagged(r) => r.at.end_recorded(r, 0),
        Run::LearningTagged(l) => l.at.end_learning(l, 0),
        Run::ArmedTagged(armed) => armed.at.finish_armed(armed),
        _ => {}
    }
    crate::sample::open::pop();
}

/// While the open events are published: `desc` opens on this thread (unless its run may move
/// between threads), and a run that measures nothing still gets a guard whose drop closes it.
/// Kept out of line, so that with publication off the paths that start runs pay one load and
/// a branch for it.
#[inline(never)]
fn published(
    desc: &'static Descriptor,
    nests: bool,
    start: impl FnOnce() -> ProbeGuard,
) -> ProbeGuard {
    if !nests {
        return start();
    }
    crate::sample::open::push(desc);
    let mut guard = start();
    let run = match std::mem::replace(&mut guard.run, Run::None) {
        Run::None => Run::Tagged,
        Run::Recorded(r) => Run::RecordedTagged(r),
        Run::Learning(l) => Run::LearningTagged(l),
        Run::Armed(a) => Run::ArmedTagged(a),
        // Not met: a session with CPU sampling is never plain (no `Sampled` runs), and the
        // others are made here. The event closes now, so that the stack stays balanced.
        run => {
            crate::sample::open::pop();
            run
        }
    };
    ProbeGuard::of(run)
}

/// A run of a probe that takes no part while the open events are published: it only opens
/// and closes its event.
#[inline]
fn enter_tagged(desc: &'static Descriptor, nests: bool) -> ProbeGuard {
    if !nests {
        return ProbeGuard::inert();
    }
    crate::sample::open::push(desc);
    ProbeGuard::of(Run::Tagged)
}

impl Drop for ProbeGuard {
    #[inline(always)]
    fn drop(&mut self) {
        if !matches!(self.run, Run::None) {
            self.finish();
        }
    }
}

/// Starts a measurement of `desc`. The whole unarmed cost is this load and branch; past it, a
/// recorded run (`trace` mode) goes straight to the small function that takes its start mark,
/// an armed run to the one that starts it (lean in a plain session), the others to the one that
/// sorts them out (whose stack frame is larger).
#[inline(always)]
pub fn enter(desc: &'static Descriptor) -> ProbeGuard {
    let raw = desc.state.raw(Relaxed);
    if raw == State::Off as u32 {
        return ProbeGuard::inert();
    }
    if raw == State::Recorded as u32 {
        return enter_recorded(desc);
    }
    if raw == State::Armed as u32 {
        return enter_armed(desc);
    }
    enter_slow(desc, raw, true, None)
}

/// The raw state of `desc` when it takes part (anything but off): the unarmed cost of a probe that
/// names a stream is this load and branch, and its stream expression is evaluated only past it.
#[inline(always)]
pub fn active(desc: &'static Descriptor) -> Option<u32> {
    let raw = desc.state.raw(Relaxed);
    if raw == State::Off as u32 {
        None
    } else {
        Some(raw)
    }
}

/// Starts a measurement of `desc`, in state `state` (from [`active`]), whose work runs on
/// `stream`.
#[inline(never)]
pub fn enter_on<S: AsStream + ?Sized>(
    desc: &'static Descriptor,
    state: u32,
    stream: &S,
) -> ProbeGuard {
    enter_slow(desc, state, true, Some(stream.as_stream()))
}

/// `raw`: the descriptor's state as loaded, made a [`State`] only here, past the unarmed test
/// (converting it before the test costs the unarmed path two instructions). `nests`: whether
/// the run ends on the thread it started on, so that the learner may take it as the parent of
/// runs that start inside it (not so for an `async fn`, which may move).
#[inline(never)]
fn enter_slow(
    desc: &'static Descriptor,
    raw: u32,
    nests: bool,
    stream: Option<Stream>,
) -> ProbeGuard {
    enter_slow_with(desc, raw, nests, stream, None)
}

/// [`enter_slow`]'s body, inlined into it (with no work, so that a probe without keys runs the
/// code it ran before they existed) and into the `*_work` entries, which hand the run's `work`
/// over to be stored before the start mark.
#[inline(always)]
fn enter_slow_with(
    desc: &'static Descriptor,
    raw: u32,
    nests: bool,
    stream: Option<Stream>,
    work: Option<&Work>,
) -> ProbeGuard {
    // The states as the schedule stores them (a recorded run here is an `async fn`'s: `enter`
    // sends its own to `enter_recorded` directly); any other value carries [`PUBLISHED`]. The
    // published runs leave by the default arm, so that with publication off this match is the
    // comparisons it was before it existed.
    let state = match raw {
        values::OFF => State::Off,
        values::LEARN => State::Learn,
        values::HOOK => State::Hook,
        values::TRACED => State::Traced,
        values::ARMED => State::Armed,
        values::RECORDED if stream.is_none() => return enter_recorded(desc),
        values::RECORDED => State::Recorded,
        _ => return enter_published(desc, raw & !PUBLISHED, nests, stream.as_ref(), work),
    };
    start_state(desc, state, nests, stream, work)
}

/// A run while the open events are published (CPU sampling on): in state `raw` (without
/// [`PUBLISHED`]), it opens its event and starts as it would have.
#[inline(never)]
fn enter_published(
    desc: &'static Descriptor,
    raw: u32,
    nests: bool,
    stream: Option<&Stream>,
    work: Option<&Work>,
) -> ProbeGuard {
    if raw == State::Off as u32 {
        return enter_tagged(desc, nests);
    }
    // The stream comes by reference, so that the entries with publication off pass `None` in
    // a register only on their way here.
    let stream = stream.copied();
    published(desc, nests, || {
        if raw == State::Recorded as u32 && stream.is_none() {
            return start_recorded(desc);
        }
        start_state(desc, State::from_raw(raw), nests, stream, work)
    })
}

/// A run in `state` starts on the general path (the session's [`start_run`](crate::measure::Measuring::start_run)).
#[inline(always)]
fn start_state(
    desc: &'static Descriptor,
    state: State,
    nests: bool,
    stream: Option<Stream>,
    work: Option<&Work>,
) -> ProbeGuard {
    match current() {
        Some(session) => {
            let at = &session.measuring;
            let stream = stream.filter(|_| at.has_device());
            ProbeGuard::of(at.start_run(desc, state, nests, stream, work))
        }
        None => ProbeGuard::inert(),
    }
}

/// An armed run starts. In a plain session (no device, hooks or memory counting) it is a
/// [`Sampled`](crate::measure::Sampled) run, whose start and end are a few loads, the two marks
/// and the sample's stores; elsewhere it takes the general path, which handles them.
#[inline(never)]
fn enter_armed(desc: &'static Descriptor) -> ProbeGuard {
    match current() {
        Some(session) if session.measuring.plain => {
            ProbeGuard::of(session.measuring.start_sampled(desc))
        }
        Some(_) => enter_slow(desc, State::Armed as u32, true, None),
        None => ProbeGuard::inert(),
    }
}

/// A recorded run starts: the start mark is all it takes.
#[inline(never)]
fn enter_recorded(desc: &'static Descriptor) -> ProbeGuard {
    start_recorded(desc)
}

/// A recorded run's start mark.
#[inline(always)]
fn start_recorded(desc: &'static Descriptor) -> ProbeGuard {
    match current() {
        Some(session) => ProbeGuard::of(session.measuring.start_recorded(desc)),
        None => ProbeGuard::inert(),
    }
}

/// The guard of an `async fn`: keeps a sample only when the future completes.
#[derive(Debug)]
pub struct AsyncGuard {
    inner: ProbeGuard,
}

impl AsyncGuard {
    /// A guard that measures nothing.
    #[inline(always)]
    pub fn inert() -> AsyncGuard {
        AsyncGuard {
            inner: ProbeGuard::inert(),
        }
    }

    /// The future completed: keep the sample.
    #[inline(always)]
    pub fn complete(mut self) {
        let inner = std::mem::replace(&mut self.inner, ProbeGuard::inert());
        drop(inner);
    }
}

impl Drop for AsyncGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // Dropped before completion (cancelled, or a panic inside a poll): no sample, but the
        // hooks still close and a device mark goes back to its pool.
        let inner = std::mem::replace(&mut self.inner, ProbeGuard::inert());
        if inner.is_open() {
            inner.discard();
        }
    }
}

/// Starts the measurement of an `async fn` at its first poll.
#[inline(always)]
pub fn enter_async(desc: &'static Descriptor) -> AsyncGuard {
    let raw = desc.state.raw(Relaxed);
    let inner = if raw == State::Off as u32 {
        ProbeGuard::inert()
    } else {
        enter_slow(desc, raw, false, None)
    };
    AsyncGuard { inner }
}

/// [`enter_async`] for an `async fn` whose work runs on `stream`, in state `state` (from
/// [`active`]).
#[inline(never)]
pub fn enter_async_on<S: AsStream + ?Sized>(
    desc: &'static Descriptor,
    state: u32,
    stream: &S,
) -> AsyncGuard {
    AsyncGuard {
        inner: enter_slow(desc, state, false, Some(stream.as_stream())),
    }
}

pub use crate::measure::{shape_of, Dims, Work, NO_WORK};

/// Whether a probe in raw state `state` (from [`active`]) has an event armed in this iteration:
/// the only runs whose `flops`, `bytes` and `shape` expressions are evaluated.
#[inline(always)]
pub fn is_armed(state: u32) -> bool {
    // Armed, whether or not the open events are published (CPU sampling on): no other state
    // has the bit, so that this is one test, as the comparison was before publication.
    state & ARMED_BIT != 0
}

/// The count of `value` (the macros wrap each `flops` and `bytes` expression in it).
#[inline(always)]
pub fn count<T: Count>(value: T) -> u64 {
    value.count()
}

/// [`enter`] for a probe with `flops`, `bytes` or `shape` keys, in state `state` (from
/// [`active`]); `work`: the keys' values, when [`is_armed`] (stored into the sample's slot
/// before the start mark, so that the measured time does not include it).
#[inline(never)]
pub fn enter_work(desc: &'static Descriptor, state: u32, work: &Work) -> ProbeGuard {
    enter_slow_with(desc, state, true, None, Some(work))
}

/// [`enter_on`] for a probe with `flops`, `bytes` or `shape` keys.
#[inline(never)]
pub fn enter_on_work<S: AsStream + ?Sized>(
    desc: &'static Descriptor,
    state: u32,
    stream: &S,
    work: &Work,
) -> ProbeGuard {
    enter_slow_with(desc, state, true, Some(stream.as_stream()), Some(work))
}

/// [`enter_async`] for an `async fn` with `flops`, `bytes` or `shape` keys.
#[inline(never)]
pub fn enter_async_work(desc: &'static Descriptor, state: u32, work: &Work) -> AsyncGuard {
    AsyncGuard {
        inner: enter_slow_with(desc, state, false, None, Some(work)),
    }
}

/// [`enter_async_on`] for an `async fn` with `flops`, `bytes` or `shape` keys.
#[inline(never)]
pub fn enter_async_on_work<S: AsStream + ?Sized>(
    desc: &'static Descriptor,
    state: u32,
    stream: &S,
    work: &Work,
) -> AsyncGuard {
    AsyncGuard {
        inner: enter_slow_with(desc, state, false, Some(stream.as_stream()), Some(work)),
    }
}

#[cfg(test)]
mod tests {
    //! Which path an armed run takes (issue 43): in a plain session (no device, hooks or
    //! memory counting) an armed probe entered by [`enter`] is a [`Run::Sampled`] run, the lean
    //! path, and stores the sample the general path stored; a session with a device keeps the
    //! general path ([`Run::Armed`]). The exact samples come from a fake clock.

    use std::sync::{Mutex, MutexGuard};

    use super::*;
    use crate::testing::{FakeClock, SimDevice};
    use crate::{Config, Filter, InitGuard, Mode, RuntimeProbe};

    /// The lib's tests share one process: one session at a time.
    fn serial() -> MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn config(name: &str, probe: &str, max_events: u32) -> Config {
        let dir = std::env::temp_dir().join(format!("prof-timer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Config {
            filter: Filter::parse(&format!("name={probe}")).unwrap(),
            mode: Mode::Sample,
            warmup: 1,
            repeat: 2,
            max_events,
            out: dir.join(format!("{name}.json")).display().to_string(),
            summary: false,
            ..Config::default()
        }
    }

    /// A session on `clock` (and `device`, when given).
    fn start(config: Config, clock: &FakeClock, device: Option<SimDevice>) -> InitGuard {
        let clock = Some(Box::new(clock.clone()) as Box<dyn crate::Clock>);
        match device {
            Some(device) => crate::init_with_device(config, clock, Box::new(device)),
            None => crate::init_with(config, clock),
        }
        .unwrap()
    }

    /// Which kind of run a guard holds (its `Debug` prints the whole session).
    fn path(guard: &ProbeGuard) -> &'static str {
        match guard.run {
            Run::None => "none",
            Run::Recorded(_) => "recorded",
            Run::RecordedTagged(_) => "recorded and published",
            Run::Learning(_) => "learning",
            Run::LearningTagged(_) => "learning and published",
            Run::ArmedTagged(_) => "armed and published",
            Run::Armed(_) => "armed",
            Run::Sampled(_) => "sampled",
            Run::Tagged => "tagged",
        }
    }

    /// The samples (ns) of `probe`'s events, by occurrence.
    fn samples(probe: &str) -> Vec<(u32, Vec<u64>)> {
        let profile = crate::snapshot().expect("a session runs");
        let mut events: Vec<_> = profile
            .events
            .iter()
            .filter(|e| e.name == probe)
            .map(|e| (e.occurrence, e.samples_ns.clone()))
            .collect();
        events.sort();
        events
    }

    #[test]
    fn an_armed_run_of_a_plain_session_is_sampled() {
        let _serial = serial();
        let clock = FakeClock::new();
        let probe = RuntimeProbe::new("timer_lean", None, None);
        let _session = start(config("lean", "timer_lean", 4096), &clock, None);
        drop(probe.enter()); // warmup: learn the event
        crate::step(); // arm it
        for ns in [7, 9] {
            let guard = probe.enter();
            assert_eq!(
                path(&guard),
                "sampled",
                "an armed run of a plain session takes the lean path"
            );
            clock.advance(ns);
            drop(guard);
            crate::step();
        }
        assert_eq!(samples("timer_lean"), [(0, vec![7, 9])]);
    }

    #[test]
    fn a_sampled_run_of_a_merged_event_is_kept_in_its_reservoir() {
        let _serial = serial();
        let clock = FakeClock::new();
        let probe = RuntimeProbe::new("timer_lean_merged", None, None);
        // One event of its own; occurrences 1 and 2 fold into the probe's merged event.
        let _session = start(config("merged", "timer_lean_merged", 1), &clock, None);
        for _ in 0..3 {
            drop(probe.enter());
        }
        crate::step();
        let mut armed = 0;
        for iteration in 0..4 {
            for ns in [3, 5, 11] {
                let guard = probe.enter();
                armed += u32::from(path(&guard) == "sampled");
                clock.advance(ns + iteration);
                drop(guard);
            }
            crate::step();
        }
        // Two iterations for the event of its own (3 and 4 ns), two for the merged one
        // (7 and 13, 8 and 14 ns): every armed run was a sampled one.
        assert_eq!(armed, 2 + 2 * 2, "{:?}", samples("timer_lean_merged"));
        let events = samples("timer_lean_merged");
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0].1, [3, 4]);
        let mut merged = events[1].1.clone();
        merged.sort_unstable();
        assert_eq!(merged, [7, 8, 13, 14]);
    }

    /// A merged event's totals read while another thread adds a run: its count taken, its
    /// minimum not stored yet (and the reservoir a run ahead of the maximum). The extremes
    /// written still hold every sample: before, the minimum was `u64::MAX`'s nanoseconds,
    /// above every sample, and `prof` refused the file.
    #[test]
    fn a_merged_events_extremes_hold_its_samples_while_runs_are_added() {
        let _serial = serial();
        let clock = FakeClock::new();
        let probe = RuntimeProbe::new("timer_torn_merged", None, None);
        let _session = start(config("torn", "timer_torn_merged", 1), &clock, None);
        for _ in 0..3 {
            drop(probe.enter());
        }
        crate::step();
        for _ in 0..4 {
            for ns in [3, 5, 11] {
                let guard = probe.enter();
                clock.advance(ns);
                drop(guard);
            }
            crate::step();
        }
        let session = crate::session::current().expect("a session runs");
        let schedule = &session.measuring.schedule;
        let merged = (0..schedule.events.len() as u32)
            .filter_map(|e| schedule.event(e))
            .find_map(|e| e.store.totals.as_ref())
            .expect("a merged event");
        // As a reader between `count` and `min` of a first run would find them; the maximum as
        // if the reservoir got a run the totals have not counted.
        merged
            .min
            .store(u64::MAX, std::sync::atomic::Ordering::Relaxed);
        merged.max.store(1, std::sync::atomic::Ordering::Relaxed);
        let profile = crate::snapshot().expect("a session runs");
        let e = profile
            .events
            .iter()
            .find(|e| e.name == "timer_torn_merged" && e.merged)
            .expect("the merged event");
        assert!(!e.samples_ns.is_empty());
        for &s in &e.samples_ns {
            assert!(
                e.stats.min_ns <= s && s <= e.stats.max_ns,
                "{:?} {s}",
                e.stats
            );
        }
    }

    #[test]
    fn a_discarded_sampled_run_keeps_no_sample_and_counts_its_occurrence() {
        let _serial = serial();
        let clock = FakeClock::new();
        let probe = RuntimeProbe::new("timer_lean_discard", None, None);
        let _session = start(config("discard", "timer_lean_discard", 4096), &clock, None);
        drop(probe.enter());
        drop(probe.enter());
        crate::step();
        let mut taken = 0;
        for _ in 0..4 {
            let first = probe.enter();
            taken += u32::from(path(&first) == "sampled");
            clock.advance(2);
            first.discard();
            let second = probe.enter();
            taken += u32::from(path(&second) == "sampled");
            clock.advance(5);
            drop(second);
            crate::step();
        }
        // The first occurrence's two iterations kept nothing; the second's kept both.
        assert_eq!(taken, 4, "{:?}", samples("timer_lean_discard"));
        assert_eq!(
            samples("timer_lean_discard"),
            [(0, vec![]), (1, vec![5, 5])]
        );
    }

    #[test]
    fn a_session_with_a_device_keeps_the_general_path() {
        let _serial = serial();
        let clock = FakeClock::new();
        let probe = RuntimeProbe::new("timer_general", None, None);
        let _session = start(
            config("general", "timer_general", 4096),
            &clock,
            Some(SimDevice::new()),
        );
        drop(probe.enter());
        crate::step();
        let guard = probe.enter();
        assert_eq!(path(&guard), "armed");
        clock.advance(4);
        drop(guard);
        crate::step();
        assert_eq!(samples("timer_general"), [(0, vec![4])]);
    }

    /// With CPU sampling on, a measured run is published as its thread's open event and its
    /// end closes it: the armed run and the recorded run take their `*Tagged` kinds; an `async fn`'s run (it may move between threads) is not
    /// published and its end closes nothing.
    #[cfg(all(feature = "cpu-sample", target_os = "linux"))]
    #[test]
    fn measured_runs_are_published_and_closed_while_sampling() {
        let _serial = serial();
        let _one = crate::sample::cpu::one_sampler_at_a_time();
        for (mode, taken, name) in [
            (Mode::Sample, "armed and published", "timer_pub_armed"),
            (Mode::Trace, "recorded and published", "timer_pub_recorded"),
        ] {
            let clock = FakeClock::new();
            let probe = RuntimeProbe::new(name, None, None);
            let outer = RuntimeProbe::new("timer_pub_outer", None, None);
            let mut config = config(name, name, 4096);
            config.mode = mode;
            config.filter = Filter::parse(&format!("name={name}|name=timer_pub_outer")).unwrap();
            config.cpu_sample = Some(100);
            config.repeat = 100;
            let session = start(config, &clock, None);
            let open = || crate::open_event().map(|e| e.name);
            // Warmup, then the first measured iteration.
            let mut guard = probe.enter();
            for _ in 0..4 {
                if path(&guard) == taken {
                    break;
                }
                drop(guard);
                crate::step();
                guard = probe.enter();
            }
            assert_eq!(path(&guard), taken, "{mode:?}");
            assert_eq!(open(), Some(name), "{mode:?}");
            drop(guard);
            assert_eq!(open(), None, "{mode:?}: its end closes it");
            // An async run inside another run neither opens nor closes an event.
            let outer_guard = outer.enter();
            let inner = enter_async(probe.desc);
            assert_eq!(open(), Some("timer_pub_outer"), "{mode:?}");
            inner.complete();
            assert_eq!(
                open(),
                Some("timer_pub_outer"),
                "{mode:?}: the async end closed nothing"
            );
            drop(outer_guard);
            assert_eq!(open(), None, "{mode:?}");
            crate::step();
            drop(session);
            let guard = probe.enter();
            assert!(
                matches!(path(&guard), "none" | "recorded"),
                "{mode:?}: publication ended with the session"
            );
        }
    }

    /// A signal ends a run whose device never finishes its work (a collective whose peer
    /// died): the results are written after waiting for the device only so long, the run still
    /// pending on it lost. Before, the settle before the last write (and the one before the
    /// kernel records are flushed) waited for ever, and the launcher's SIGKILL took the results.
    #[test]
    fn a_signal_does_not_wait_for_ever_on_a_device_that_never_finishes() {
        let _serial = serial();
        let clock = FakeClock::new();
        let sim = SimDevice::new();
        let probe = RuntimeProbe::new("timer_hung", None, None);
        let mut config = config("hung", "timer_hung", 4096);
        config.kernels = true;
        let out = std::path::PathBuf::from(&config.out);
        let _ = std::fs::remove_file(&out);
        let _session = start(config, &clock, Some(sim.clone()));
        let stream = Stream::new(0x160, 0);
        let run = || {
            let state = active(probe.desc).expect("the probe takes part");
            let guard = enter_on(probe.desc, state, &stream);
            clock.advance(40);
            sim.launch(stream, 1_000, "allreduce");
            drop(guard);
        };
        run(); // warmup
        crate::step();
        run(); // armed: its stop mark is never reached
        sim.hang();
        let session = crate::session::current().expect("a session runs");
        assert!(session.end_on_signal(), "the results are written");
        assert!(out.exists());
        let log = sim.log();
        assert!(log.contains(&"settle within".to_owned()), "{log:?}");
    }

    /// The occurrence counts restart at each `step()` only once the iteration and slot of the
    /// iteration armed are stored: a run on another thread that takes an occurrence from the
    /// restarted count then reads them (the count's restart is a release, its increment an
    /// acquire). Restarted first, such a run could read the previous iteration's slot, which
    /// that `step()` had just read and cleared, and its sample was lost (a worker's event kept
    /// 250 to 298 of 300).
    #[test]
    fn the_counts_restart_after_the_iteration_and_slot_are_stored() {
        let _serial = serial();
        let clock = FakeClock::new();
        let probe = RuntimeProbe::new("timer_restart", None, None);
        let mut config = config("restart", "timer_restart", 4096);
        config.repeat = 3;
        let _session = start(config, &clock, None);
        drop(probe.enter()); // warmup
        crate::schedule::arm::tests::record_resets();
        for _ in 0..3 {
            crate::step();
            drop(probe.enter());
        }
        // The learning iteration's restart, then iterations 1, 2 and 3 armed, in slots 0, 1
        // and 2 of the event's 3 (restarted first, these read (0, 0), (1, 0), (2, 1)).
        let seen = crate::schedule::arm::tests::reset_seen();
        assert!(seen.ends_with(&[(1, 0), (2, 1), (3, 2)]), "{seen:?}");
    }

    /// A clock whose next mark can be made to go back in time, as the later `step()` of two
    /// threads sees when the other took its mark first but the lock second.
    #[derive(Debug, Default)]
    struct Rewound {
        now: std::sync::atomic::AtomicU64,
        back: std::sync::atomic::AtomicBool,
    }

    impl crate::Clock for std::sync::Arc<Rewound> {
        fn name(&self) -> &'static str {
            "rewound"
        }
        fn mark(&self) -> u64 {
            use std::sync::atomic::Ordering::SeqCst;
            if self.back.swap(false, SeqCst) {
                return self.now.load(SeqCst) - 500;
            }
            self.now.fetch_add(1_000, SeqCst) + 1_000
        }
        fn elapsed(&self, start: u64, stop: u64) -> crate::instrument::clock::Reading {
            crate::instrument::clock::Reading::Ready(stop.saturating_sub(start))
        }
    }

    /// An iteration's mark earlier than the one before (two threads calling `step()` at once)
    /// is taken as that one: the marks stay sorted, the iteration is 0 long and the next one
    /// as long as it was. Before, the marks went out of order and the next iteration took the
    /// time back (1.5 µs here).
    #[test]
    fn iteration_marks_never_go_back() {
        let _serial = serial();
        let clock = std::sync::Arc::new(Rewound::default());
        let _probe = RuntimeProbe::new("timer_rewound", None, None);
        let mut config = config("rewound", "timer_rewound", 4096);
        config.mode = Mode::Trace;
        config.warmup = 1;
        config.repeat = 10;
        let _session = crate::init_with(config, Some(Box::new(clock.clone()))).unwrap();
        for _ in 0..3 {
            crate::step();
        }
        clock.back.store(true, std::sync::atomic::Ordering::SeqCst);
        crate::step();
        crate::step();
        let profile = crate::snapshot().expect("a session runs");
        let walls = &profile.iterations.wall_ns;
        assert_eq!(walls[walls.len() - 2..], [0, 1_000], "{walls:?}");
    }
}
