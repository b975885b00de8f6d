//! The hot path: descriptor state and the guard that measures one call.
//!
//! Cost, as the benchmark in `benches/hot_path.rs` measures it:
//! - unarmed probe (the case for every probe but one in `sample` mode): one relaxed atomic load
//!   of [`Descriptor::state`] and a branch on entry, and a branch on the guard's drop;
//! - armed probe: one `fetch_add` (the occurrence count), two clock reads, and three relaxed
//!   stores into sample storage reserved when the schedule was built. No allocation, lock,
//!   hashing, string work or system call.
//!
//! Everything else (learning the events during warmup, arming, resolution, output) is the cold
//! path in `session.rs`.

use std::sync::atomic::{
    AtomicPtr, AtomicU32,
    Ordering::{Acquire, Relaxed},
};

use crate::device::{AsStream, Stream, NO_MARK};
use crate::session::Session;

/// The probe takes no part: the fast path returns an inert guard.
pub(crate) const OFF: u32 = 0;
/// Warmup (or a selected probe not seen yet): the slow path learns order and occurrences.
pub(crate) const LEARN: u32 = 1;
/// One of this probe's events is measured in the current iteration.
pub(crate) const ARMED: u32 = 2;
/// Nothing is measured, but the hooks apply (an NVTX range, `PROF_SYNC` around the run).
pub(crate) const HOOK: u32 = 3;
/// No event: an index that means "none".
pub(crate) const NONE: u32 = u32::MAX;
/// The event of a guard opened during warmup: it measures nothing, but its drop tells the
/// learner that the run ended (so that nested runs learn their parent).
pub(crate) const LEARNING: u32 = u32::MAX - 1;
/// The event of a guard that measures nothing and only closes its hooks.
pub(crate) const HOOKS_ONLY: u32 = u32::MAX - 2;

/// Hook bits of a guard: an NVTX range was pushed.
pub(crate) const HOOK_NVTX: u8 = 1;
/// Hook bits of a guard: synchronize the device when the run ends.
pub(crate) const HOOK_SYNC: u8 = 2;
/// Hook bits of a guard: a kernel-attribution tag was pushed.
pub(crate) const HOOK_KERNELS: u8 = 4;

/// Whether a descriptor comes from `#[profiled]` or `probe!`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A function annotated with `#[profiled]`.
    Fn,
    /// A `probe!` point.
    Probe,
    /// A probe registered at run time ([`RuntimeProbe`](crate::RuntimeProbe)).
    Runtime,
    /// A `tracing` span, through the bridge (feature `tracing`).
    Span,
}

impl Kind {
    /// The name used in `prof.json`, the listing and `PROF_FILTER` (`fn`, `probe`, `runtime` or
    /// `span`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Fn => "fn",
            Kind::Probe => "probe",
            Kind::Runtime => "runtime",
            Kind::Span => "span",
        }
    }
}

/// What an annotation knows at compile time.
#[derive(Debug)]
pub struct StaticInfo {
    /// The probe's name (the function's name by default).
    pub name: &'static str,
    /// The `layer` key, if given.
    pub layer: Option<&'static str>,
    /// The `phase` key, if given.
    pub phase: Option<&'static str>,
    /// Function or probe.
    pub kind: Kind,
    /// `module_path!()` at the annotation.
    pub module: &'static str,
    /// `file!()` at the annotation.
    pub file: &'static str,
    /// `line!()` at the annotation.
    pub line: u32,
    /// Returns the type name of an item declared inside the annotated function, from which the
    /// function's full path is derived at start-up.
    pub anchor: fn() -> &'static str,
}

/// One annotation site: its static description and its run-time state.
///
/// The schedule arms and disarms a probe by storing into `state`; the hot path only loads it.
#[derive(Debug)]
pub struct Descriptor {
    pub(crate) info: StaticInfo,
    /// `OFF`, `LEARN` or `ARMED`.
    pub(crate) state: AtomicU32,
    /// Runs of this probe started in the current iteration (counted while not `OFF`).
    pub(crate) calls: AtomicU32,
    /// Index of this probe's first event in the session's event table.
    pub(crate) first_event: AtomicU32,
    /// How many per-occurrence events this probe has.
    pub(crate) events: AtomicU32,
    /// The event later occurrences fold into, or `NONE`.
    pub(crate) merged_event: AtomicU32,
    /// The events of this probe's runs on streams, when it ran on any during warmup (owned by
    /// the session, which is never freed), else null.
    pub(crate) routes: AtomicPtr<Routes>,
    /// The probe's index in the registry, set when a session starts.
    pub(crate) index: AtomicU32,
}

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
        let occ = self.calls.fetch_add(1, Relaxed);
        if occ < self.events {
            self.first_event + occ
        } else {
            self.merged_event
        }
    }
}

impl Descriptor {
    /// A descriptor in its initial (unarmed) state. Used by the macros' generated statics.
    pub const fn new(info: StaticInfo) -> Descriptor {
        Descriptor {
            info,
            state: AtomicU32::new(OFF),
            calls: AtomicU32::new(0),
            first_event: AtomicU32::new(NONE),
            events: AtomicU32::new(0),
            merged_event: AtomicU32::new(NONE),
            routes: AtomicPtr::new(std::ptr::null_mut()),
            index: AtomicU32::new(0),
        }
    }

    /// The route of runs on `stream`, if warmup saw this probe run there.
    #[inline]
    pub(crate) fn route(&self, stream: Stream) -> Option<&Route> {
        // SAFETY: a non-null pointer comes from a `Box<Routes>` owned by a session, and
        // sessions are never freed.
        let routes = unsafe { self.routes.load(Acquire).as_ref()? };
        routes.0.iter().find(|r| r.stream == stream)
    }

    /// The compile-time facts of this annotation.
    pub fn info(&self) -> &StaticInfo {
        &self.info
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

    /// Puts the run-time state back to unarmed, for a new session.
    pub(crate) fn reset(&self) {
        self.state.store(OFF, Relaxed);
        self.calls.store(0, Relaxed);
        self.first_event.store(NONE, Relaxed);
        self.events.store(0, Relaxed);
        self.merged_event.store(NONE, Relaxed);
        self.routes.store(std::ptr::null_mut(), Relaxed);
    }
}

/// Submitted to `inventory` by every annotation.
pub struct Registration(pub &'static Descriptor);

inventory::collect!(Registration);

/// A measurement in progress, created only on the armed path.
#[derive(Debug)]
pub(crate) struct Armed {
    pub(crate) session: &'static Session,
    pub(crate) event: u32,
    /// Where the sample goes in the event's storage, fixed when the run started.
    pub(crate) slot: u32,
    /// The iteration the run started in.
    pub(crate) iter: u32,
    pub(crate) start: u64,
    /// The device mark at the start, or `NO_MARK` for a run timed on the CPU only.
    pub(crate) dstart: u64,
    /// The stream the run is timed on.
    pub(crate) stream: Stream,
    /// `HOOK_*` bits: what to undo when the run ends.
    pub(crate) hooks: u8,
}

impl Armed {
    /// A guard of `session` with no measurement.
    pub(crate) fn bare(session: &'static Session, event: u32, hooks: u8) -> Armed {
        Armed {
            session,
            event,
            slot: 0,
            iter: 0,
            start: 0,
            dstart: NO_MARK,
            stream: Stream::new(0, 0),
            hooks,
        }
    }
}

/// Measures from its creation until it is dropped (see [`probe!`](crate::probe)).
///
/// In a build without `enable` this is a zero-sized type with the same methods and auto traits.
#[must_use = "a probe measures until its guard is dropped; bind it with `let _p = probe!(..)`"]
#[derive(Debug)]
pub struct ProbeGuard {
    armed: Option<Armed>,
}

impl ProbeGuard {
    /// A guard that measures nothing.
    #[inline(always)]
    pub const fn inert() -> ProbeGuard {
        ProbeGuard { armed: None }
    }

    /// True when this guard is taking a sample.
    #[inline(always)]
    pub fn is_recording(&self) -> bool {
        self.armed.is_some()
    }

    /// Ends the measurement now (the same as dropping the guard).
    #[inline(always)]
    pub fn stop(self) {}

    /// Ends the measurement without keeping a sample.
    #[inline(always)]
    pub fn discard(mut self) {
        if let Some(armed) = self.armed.take() {
            // Warmup still needs to know that the run ended, for nesting; hooks close, and a
            // device mark goes back to its pool.
            armed.session.discard_run(&armed);
        }
    }
}

impl ProbeGuard {
    /// The armed half of the drop, kept out of line so that the unarmed drop inlines to one
    /// test of a value already in a register.
    #[inline(never)]
    fn finish(&self) {
        if let Some(armed) = &self.armed {
            armed.session.finish_run(armed);
        }
    }
}

impl Drop for ProbeGuard {
    #[inline(always)]
    fn drop(&mut self) {
        if self.armed.is_some() {
            self.finish();
        }
    }
}

/// Starts a measurement of `desc`. The whole unarmed cost is this load and branch.
#[inline(always)]
pub fn enter(desc: &'static Descriptor) -> ProbeGuard {
    let state = desc.state.load(Relaxed);
    if state == OFF {
        return ProbeGuard::inert();
    }
    enter_slow(desc, state, true, None)
}

/// The state of `desc` when it takes part (anything but off): the unarmed cost of a probe that
/// names a stream is this load and branch, and its stream expression is evaluated only past it.
#[inline(always)]
pub fn active(desc: &'static Descriptor) -> Option<u32> {
    let state = desc.state.load(Relaxed);
    if state == OFF {
        None
    } else {
        Some(state)
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

/// `nests`: whether the run ends on the thread it started on, so that the learner may take it
/// as the parent of runs that start inside it (not so for an `async fn`, which may move).
#[inline(never)]
fn enter_slow(
    desc: &'static Descriptor,
    state: u32,
    nests: bool,
    stream: Option<Stream>,
) -> ProbeGuard {
    match crate::session::current() {
        Some(session) => {
            let stream = stream.filter(|_| session.has_device());
            ProbeGuard {
                armed: session.start_run(desc, state, nests, stream),
            }
        }
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
        if let Some(armed) = self.inner.armed.take() {
            armed.session.finish_run(&armed);
        }
    }
}

impl Drop for AsyncGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // Dropped before completion (cancelled, or a panic inside a poll): no sample, but the
        // hooks still close and a device mark goes back to its pool.
        if let Some(armed) = self.inner.armed.take() {
            armed.session.discard_run(&armed);
        }
    }
}

/// Starts the measurement of an `async fn` at its first poll.
#[inline(always)]
pub fn enter_async(desc: &'static Descriptor) -> AsyncGuard {
    let state = desc.state.load(Relaxed);
    let inner = if state == OFF {
        ProbeGuard::inert()
    } else {
        enter_slow(desc, state, false, None)
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
