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
//!   or system call. With [`Alloc`](crate::Alloc) installed it adds a few thread-local writes
//!   before the start mark and after the stop mark (the run's memory figures); so do runs in
//!   `trace` mode then, which take this path. On a stream it adds two device marks (events
//!   from a pool reserved at the plan), two reads of the device's memory in use (before the
//!   start marks and after the stop marks, so that neither time includes them; for CUDA a
//!   driver call each, see [`Device::memory_used`](crate::instrument::device::Device::memory_used)) and,
//!   with hooks on, the NVTX push/pop and synchronizations asked for.
//!
//! A probe in learning state goes to `schedule/learn.rs` (`sample` mode) or records its runs
//! (`trace` mode); everything else (planning, arming at `step()`, resolution, output) is the cold
//! path.

use std::sync::atomic::Ordering::Relaxed;

use crate::instrument::device::{AsStream, Stream};
use crate::measure::Run;
use crate::register::descriptor::{Descriptor, State};
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
        !matches!(self.run, Run::None)
    }

    /// Ends the measurement now (the same as dropping the guard).
    #[inline(always)]
    pub fn stop(self) {}

    /// Ends the measurement without keeping a sample.
    #[inline(always)]
    pub fn discard(mut self) {
        match std::mem::replace(&mut self.run, Run::None) {
            Run::None => {}
            // The run still counts as an occurrence, so that the runs after it keep theirs.
            Run::Recorded(r) => r.at.end_recorded(&r, tag::DISCARD),
            // Learning still needs to know that the run ended, for nesting.
            Run::Learning(l) => l.at.end_learning(&l, tag::DISCARD),
            // Warmup still needs to know that the run ended, for nesting; hooks close, and a
            // device mark goes back to its pool.
            Run::Armed(armed) => armed.at.discard_run(&armed),
        }
    }
}

impl ProbeGuard {
    /// The measuring half of the drop, kept out of line so that the unarmed drop inlines to one
    /// test of a value already in a register. Each kind of run ends in a function of its own,
    /// called last, so that this one needs no stack frame and the recorded run's end only the
    /// registers it uses.
    #[inline(never)]
    fn finish(&self) {
        match &self.run {
            Run::None => {}
            Run::Recorded(r) => r.at.end_recorded(r, 0),
            Run::Learning(l) => l.at.end_learning(l, 0),
            Run::Armed(armed) => armed.at.finish_armed(armed),
        }
    }
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
/// the others to the one that sorts them out (whose stack frame is larger).
#[inline(always)]
pub fn enter(desc: &'static Descriptor) -> ProbeGuard {
    let raw = desc.state.raw(Relaxed);
    if raw == State::Off as u32 {
        return ProbeGuard::inert();
    }
    if raw == State::Recorded as u32 {
        return enter_recorded(desc);
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
    // A recorded run of an `async fn` (`enter` sends its own there directly).
    if raw == State::Recorded as u32 && stream.is_none() {
        return enter_recorded(desc);
    }
    let state = State::from_raw(raw);
    match current() {
        Some(session) => {
            let at = &session.measuring;
            let stream = stream.filter(|_| at.has_device());
            ProbeGuard::of(at.start_run(desc, state, nests, stream, work))
        }
        None => ProbeGuard::inert(),
    }
}

/// A recorded run starts: the start mark is all it takes.
#[inline(never)]
fn enter_recorded(desc: &'static Descriptor) -> ProbeGuard {
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
        if inner.is_recording() {
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
    state == State::Armed as u32
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
