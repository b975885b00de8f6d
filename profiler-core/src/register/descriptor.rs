//! The descriptor: what one annotation site is (its compile-time facts) and its run-time state,
//! the only thing the hot path reads before deciding to do nothing.
//!
//! Each `#[profiled]` function and `probe!` point owns a `static` [`Descriptor`] and submits it
//! to `inventory`; the registry numbers them at start-up. The schedule (`schedule/`) moves a
//! descriptor between [`State`]s; where its runs go once armed is the schedule's business too
//! (its routing table, indexed by [`Descriptor::index`]).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Whether the open events are published (CPU sampling on, `sample/open.rs`): every state is
/// stored with [`PUBLISHED`] then.
static TAGGING: AtomicBool = AtomicBool::new(false);

/// The bit every stored state carries while the open events are published (CPU sampling on):
/// no state is then equal to the values the fast paths test ([`State::Off`],
/// [`State::Recorded`], [`State::Armed`]), so that every run leaves them for the general entry,
/// which publishes it, and with publication off those paths test nothing for it.
pub(crate) const PUBLISHED: u32 = 16;

/// The states' raw values, to match a loaded state against without converting it first (the
/// hot path's entries, [`State::from_raw`]).
pub(crate) mod values {
    use super::State;

    pub(crate) const OFF: u32 = State::Off as u32;
    pub(crate) const LEARN: u32 = State::Learn as u32;
    pub(crate) const HOOK: u32 = State::Hook as u32;
    pub(crate) const TRACED: u32 = State::Traced as u32;
    pub(crate) const ARMED: u32 = State::Armed as u32;
    pub(crate) const RECORDED: u32 = State::Recorded as u32;
}

/// The bit of [`State::Armed`], which no other state has, published or not.
pub(crate) const ARMED_BIT: u32 = State::Armed as u32;

// No state but `Armed` has its bit, and none reaches `PUBLISHED`'s.
const _: () = {
    let others = [
        State::Off,
        State::Learn,
        State::Hook,
        State::Recorded,
        State::Traced,
    ];
    let mut i = 0;
    while i < others.len() {
        assert!(others[i] as u32 & ARMED_BIT == 0);
        assert!((others[i] as u32) < PUBLISHED);
        i += 1;
    }
    assert!((State::Armed as u32) < PUBLISHED);
};

/// Whether the open events are published (CPU sampling on).
#[inline(always)]
pub(crate) fn tagging() -> bool {
    TAGGING.load(Ordering::Relaxed)
}

/// Starts or ends the publication of the open events (`sample/open.rs`); returns whether it
/// was on.
pub(crate) fn set_tagging(on: bool) -> bool {
    TAGGING.swap(on, Ordering::SeqCst)
}

/// The run-time state of a probe: what its next run does.
///
/// The values are chosen so that `Armed` is the only one with bit 2: a probe with keys finds
/// out whether to evaluate them with one test, whether the open events are published or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum State {
    /// Takes no part: the fast path returns an inert guard.
    Off = 0,
    /// Warmup (or a selected probe not seen yet): the slow path learns order and occurrences.
    Learn = 1,
    /// One of this probe's events is measured in the current iteration.
    Armed = 4,
    /// Nothing is measured, but the hooks apply (an NVTX range, `PROF_SYNC` around the run, the
    /// delay of `PROF_DELAY` after it).
    Hook = 2,
    /// `trace` mode: every run is measured and recorded into its thread's buffer; which event
    /// it belongs to is worked out at `step()`.
    Recorded = 8,
    /// `trace` mode, for a probe whose runs cannot be recorded (timed on a stream, with hooks,
    /// its memory counted, or a clock whose marks are not one time line): every run is measured
    /// on the armed path, as [`State::Armed`]'s are, but its `flops`, `bytes` and `shape`
    /// expressions are not evaluated (`trace` mode keeps no work).
    Traced = 3,
}

impl State {
    /// The state a raw value stands for ([`PUBLISHED`] aside).
    #[inline(always)]
    pub(crate) fn from_raw(raw: u32) -> State {
        match raw & !PUBLISHED {
            values::OFF => State::Off,
            values::LEARN => State::Learn,
            values::HOOK => State::Hook,
            values::TRACED => State::Traced,
            values::ARMED => State::Armed,
            _ => State::Recorded,
        }
    }
}

/// A [`State`] behind an atomic: the schedule stores, the hot path loads.
#[derive(Debug)]
pub struct AtomicState(AtomicU32);

impl AtomicState {
    /// A state cell holding `state`.
    pub const fn new(state: State) -> AtomicState {
        AtomicState(AtomicU32::new(state as u32))
    }

    /// The state's raw value: what the hot path tests against `State::Off as u32`, so that the
    /// unarmed cost stays one load and one comparison; [`State::from_raw`] makes the typed value
    /// past that test.
    #[inline(always)]
    pub(crate) fn raw(&self, order: Ordering) -> u32 {
        self.0.load(order)
    }

    /// Sets the state (cold path: the schedule), with [`PUBLISHED`] while the open events are
    /// published (CPU sampling on).
    #[inline]
    pub(crate) fn store(&self, state: State, order: Ordering) {
        let published = if tagging() { PUBLISHED } else { 0 };
        self.0.store(state as u32 | published, order);
    }

    /// Adds [`PUBLISHED`] to the state (publication starts).
    pub(crate) fn tag(&self) {
        self.0.fetch_or(PUBLISHED, Ordering::Relaxed);
    }

    /// Takes [`PUBLISHED`] off the state (publication ends).
    pub(crate) fn untag(&self) {
        self.0.fetch_and(!PUBLISHED, Ordering::Relaxed);
    }
}

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
    /// Which work keys the annotation has: bit 1 for `flops`, bit 2 for `bytes`, bit 4 for
    /// `shape` (0: none). The plan reserves a slot of work (or shape) per sample only for an
    /// event whose probe has one.
    pub work: u8,
    /// Returns the type name of an item declared inside the annotated function, from which the
    /// function's full path is derived at start-up.
    pub anchor: fn() -> &'static str,
}

pub use super::work::{WORK_BYTES, WORK_FLOPS, WORK_SHAPE};

/// One annotation site: its static description and its run-time state.
///
/// The schedule arms and disarms a probe by storing into `state`; the hot path only loads it.
#[derive(Debug)]
pub struct Descriptor {
    pub(crate) info: StaticInfo,
    /// What the probe's next run does.
    pub(crate) state: AtomicState,
    /// The probe's index in the registry, set when a session starts; the schedule's tables are
    /// indexed by it.
    pub(crate) index: AtomicU32,
}

impl Descriptor {
    /// A descriptor in its initial (unarmed) state. Used by the macros' generated statics.
    pub const fn new(info: StaticInfo) -> Descriptor {
        Descriptor {
            info,
            state: AtomicState::new(State::Off),
            index: AtomicU32::new(0),
        }
    }

    /// The compile-time facts of this annotation.
    pub fn info(&self) -> &StaticInfo {
        &self.info
    }
}

/// Submitted to `inventory` by every annotation.
pub struct Registration(pub &'static Descriptor);

inventory::collect!(Registration);
