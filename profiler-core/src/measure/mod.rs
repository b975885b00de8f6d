//! Measuring: what the hot path works on, and the armed and recorded halves of a run.
//!
//! A [`Measuring`] is what a session gives the hot path: the schedule (which event is armed,
//! the routes, the sample storage planned for each event), the clock, the device, and `trace`
//! mode's per-thread buffers. The guard of a probe (`probes/timer.rs`) holds a reference to it
//! and nothing of the session: the armed half (`armed.rs`) and the recorded half
//! (`recorded.rs`) read and write only what is here. The one way back to the session is
//! [`Measuring::hand_over`], the cold path a thread takes when its buffer's chunks pile up.
//!
//! Its cost is stated at the top of `probes/timer.rs`, where a run begins.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::instrument::clock::ActiveClock;
use crate::instrument::device::{Device, Stream, NO_MARK};
use crate::schedule::Schedule;
use crate::store::buffer::Buffers;

mod armed;
pub(crate) mod delay;
mod recorded;

pub use crate::store::shape::{shape_of, Dims};

/// A count the `flops` or `bytes` key did not give.
pub const NO_WORK: u64 = u64::MAX;

/// The work one run does, as its `flops` and `bytes` keys count it ([`NO_WORK`] for a key not
/// given), and the shape its `shape` key gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    /// Floating-point operations.
    pub flops: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// The run's input shape ([`Dims::EMPTY`] without a `shape` key).
    pub shape: Dims,
}

impl Work {
    /// No work counted (a run that is not measured).
    pub const NONE: Work = Work {
        flops: NO_WORK,
        bytes: NO_WORK,
        shape: Dims::EMPTY,
    };
}

/// What the hot path is given by its session.
#[derive(Debug)]
pub(crate) struct Measuring {
    /// The events, the probes' routes and what is armed.
    pub(crate) schedule: Schedule,
    pub(crate) clock: ActiveClock,
    /// The device whose streams time the runs that name one (CUDA, or a simulated one).
    pub(crate) device: Option<Box<dyn Device>>,
    /// Kernel activity is being gathered (`PROF_KERNELS=1`, while measuring).
    pub(crate) kernels_on: AtomicBool,
    /// The clock's marks are linear in time (differences are durations).
    pub(crate) linear: bool,
    /// `trace` mode: each thread's records of its runs.
    pub(crate) buffers: Buffers,
    /// The session's answer to a thread that handed a full chunk over and sees `held` waiting
    /// (the cold path: it may fold them into the events).
    pub(crate) hand_over: fn(usize),
    /// No device, no hooks and no memory counting ([`Measuring::is_plain`]): an armed run of
    /// a probe without stream or keys is a [`Sampled`] run, its marks and its slot and nothing
    /// else (`armed.rs`).
    pub(crate) plain: bool,
}

impl Measuring {
    /// Whether an armed run needs nothing but its two marks and its sample's stores: no device
    /// (no device marks, kernel tags or memory readings), no hooks (NVTX, `PROF_SYNC`) and no
    /// allocation counting ([`Alloc`](crate::Alloc) not installed). Fixed for a session's
    /// life.
    pub(crate) fn is_plain(schedule: &Schedule, device: Option<&dyn Device>) -> bool {
        device.is_none() && !schedule.hooks.any && !schedule.memory
    }

    /// Whether runs may be timed on a device's streams.
    pub(crate) fn has_device(&self) -> bool {
        self.device.is_some()
    }

    /// Whether a learning run records itself (`trace` mode on a linear clock, in warmup).
    #[inline]
    pub(crate) fn records_learning(&self) -> bool {
        self.schedule.records && self.schedule.learning.load(Relaxed)
    }
}

/// The tag of the kernels a run of `event` launches in iteration `iter` (never 0, which kernels
/// outside any measured run carry).
pub(crate) fn kernel_tag(event: u32, iter: u32) -> u64 {
    ((u64::from(event) + 1) << 32) | u64::from(iter)
}

/// The event of a guard opened during warmup: it measures nothing, but its drop tells the
/// learner that the run ended (so that nested runs learn their parent).
pub(crate) const LEARNING: u32 = u32::MAX - 1;
/// The event of a guard that measures nothing and only closes its hooks.
pub(crate) const HOOKS_ONLY: u32 = u32::MAX - 2;
/// The `slot` of a learning run that is also timed (`trace` mode without warmup).
pub(crate) const CAPTURE: u32 = u32::MAX;

/// A measurement in progress, created only on the armed path.
#[derive(Debug)]
pub(crate) struct Armed {
    pub(crate) at: &'static Measuring,
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
    /// A guard of `at` with no measurement.
    pub(crate) fn bare(at: &'static Measuring, event: u32, hooks: u8) -> Armed {
        Armed {
            at,
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

/// An armed run of a plain session ([`Measuring::plain`]) entered through
/// [`enter`](crate::probes::timer::enter): its start mark and where its sample goes, nothing
/// more. Its start and end are the lean functions of `armed.rs`; any other armed run is an
/// [`Armed`].
#[derive(Debug)]
pub(crate) struct Sampled {
    pub(crate) at: &'static Measuring,
    pub(crate) event: u32,
    /// Where the sample goes in the event's storage, fixed when the run started.
    pub(crate) slot: u32,
    /// The iteration the run started in.
    pub(crate) iter: u32,
    pub(crate) start: u64,
}

/// A run recorded into its thread's buffer (`trace` mode, after warmup).
#[derive(Debug)]
pub(crate) struct Recorded {
    pub(crate) at: &'static Measuring,
    start: u64,
    /// The probe's registry index ([`tag`](crate::store::buffer::tag)).
    tag: u32,
}

/// A run of a learning iteration of `trace` mode, recorded too: the cold path learns the events
/// from these records, and times the first iteration with them when there is no warmup.
#[derive(Debug)]
pub(crate) struct Learning {
    pub(crate) at: &'static Measuring,
    start: u64,
    /// The probe's index, `LEARN`, and the nesting depth (`ASYNC` for a run that may move
    /// between threads).
    tag: u32,
    /// The run's stream (lane), 0 for none.
    lane: u32,
    /// A run that may move: where it started ([`tag::origin`](crate::store::buffer::tag::origin)), 0 for nowhere known.
    origin: u32,
    /// The depth this run raised this thread's to (`None`: it does not nest).
    depth: Option<u32>,
    hooks: u8,
}

/// What a guard is doing.
#[derive(Debug)]
pub(crate) enum Run {
    /// Nothing is measured.
    None,
    /// A recorded run (`trace` mode).
    Recorded(Recorded),
    /// A run of a learning iteration of `trace` mode.
    Learning(Learning),
    /// An armed (or hooked, or warmup) run.
    Armed(Armed),
    /// An armed run of a plain session, entered without stream or keys.
    Sampled(Sampled),
    // The kinds of run published as their thread's open events (CPU sampling on) come last, so
    // that the others keep the discriminants they had before them: `ProbeGuard::finish` sends
    // these four on with one jump, and the others' ends compile as they did.
    /// A recorded run published as its thread's open event (CPU sampling on): its drop also
    /// closes the event.
    RecordedTagged(Recorded),
    /// A learning run published as its thread's open event.
    LearningTagged(Learning),
    /// An armed run published as its thread's open event.
    ArmedTagged(Armed),
    /// Nothing is measured, but the run is published as its thread's open event (CPU
    /// sampling on: `sample/open.rs`); its drop closes it.
    Tagged,
}
