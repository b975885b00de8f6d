//! See where each training iteration's time goes, layer by layer and phase by phase, with almost
//! no overhead.
//!
//! Annotate layer functions with [`#[profiled]`](profiled) and drop [`probe!`] points inside
//! functions. After a warmup that learns the order of the events, the profiler measures **one
//! event per iteration** (after HugeCTR's inline profiler), so its cost never piles up. Without
//! the `enable` feature every annotation is the original code: release binaries carry nothing.
//!
//! ```no_run
//! use profiler_core::{probe, profiled};
//!
//! #[profiled(layer = "mlp", phase = "fwd")]
//! fn forward(x: &[f32]) -> f32 {
//!     x.iter().sum()
//! }
//!
//! #[profiler_core::main]
//! fn main() {
//!     let batch = vec![1.0f32; 1024];
//!     for _ in 0..10_000 {
//!         let y = forward(&batch);
//!         let _p = probe!("update", layer = "mlp", phase = "update");
//!         std::hint::black_box(y);
//!         drop(_p);
//!         profiler_core::step(); // end of one iteration
//!         if profiler_core::finished() {
//!             break;
//!         }
//!     }
//! }
//! ```
//!
//! Run it with `--features profiler-core/enable`, and `PROF_FILTER="layer=mlp"` to select
//! probes; the results go to `prof.json` and a summary to stderr. `--list-probes` lists every
//! probe.
//!
//! The documentation beyond the API is in the repository's `docs/` folder (rustdoc cannot link
//! to files outside the crate, so here are their paths):
//!
//! - `docs/guide.md`: annotating code (runtime probes, `tracing` spans, candle), running (the
//!   schedule, the modes, filters), reading the reports, continuous mode, GPU, multi-rank runs;
//! - `docs/reference.md`: every `PROF_*` variable, the `PROF_FILTER` grammar, `--list-probes`,
//!   the `prof` commands, `prof.json` field by field, limits; `docs/overhead.md`: what the
//!   profiler costs, measured;
//! - `docs/architecture.md`: the pipeline, the crates, the layout of this crate's modules, the
//!   hot path, the tests.
//!
//! The root holds what a training program uses: the macros, [`step`], [`finished`], [`init`]
//! and its guard, [`probes`], `snapshot` and `Profile`, and the configuration made in code
//! (`Config`, `Filter`, `init_with`). Beyond it: `format` (the types of `prof.json`), `device`
//! (streams and the `Device` trait a GPU backend implements) and `testing` (clocks whose time
//! the test sets). All but the first four and the macros exist with the `enable` feature only.
#![warn(missing_docs)]

/// The Rust examples of `docs/guide.md`, compiled (and, where they start no session, run) as
/// doc tests, so that the guide cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide.md")]
pub struct GuideExamples;

/// The Rust examples of the repository's `README.md`, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;

/// Measures each call of a function.
///
/// Keys (string literals): `name` (default: the function's name), `layer`, `phase`; `stream =
/// <expr>` is accepted for CUDA streams and ignored without the `cuda` feature. Works on free
/// functions, methods, trait-impl methods, generic, `unsafe` and `async` functions and
/// functions returning `impl Trait`. Early returns, `?` and panics end the measurement; an
/// `async fn` is measured from its first poll to its completion, and a future dropped before
/// completing records nothing.
///
/// ```
/// #[profiler_core::profiled(layer = "embedding", phase = "fwd")]
/// fn lookup(table: &[f32], id: usize) -> f32 {
///     table[id]
/// }
/// # assert_eq!(lookup(&[1.0, 2.0], 1), 2.0);
/// ```
pub use profiler_macros::profiled;

/// Measures from here to the end of the scope (guard form) or one block (block form).
///
/// ```
/// use profiler_core::probe;
/// fn backward(grads: &mut [f32]) -> f32 {
///     let _p = probe!("allreduce", layer = "mlp", phase = "bwd"); // until the end of scope
///     let norm = probe!("norm", layer = "mlp", phase = "bwd" => {
///         grads.iter().map(|g| g * g).sum::<f32>()           // the block's value is returned
///     });
///     norm
/// }
/// # assert_eq!(backward(&mut [3.0, 4.0]), 25.0);
/// ```
///
/// The guard form returns a [`ProbeGuard`]. The first argument is the probe's name; the keys
/// are those of [`#[profiled]`](profiled).
///
/// A probe measures at run time: the guard form in a `const fn` does not compile, in either
/// build (the guard has a destructor, which a `const fn` cannot run):
///
/// ```compile_fail
/// struct Cfg(u32);
/// const fn new() -> Cfg {
///     let _p = profiler_core::probe!("cfg_new");
///     Cfg(1)
/// }
/// # let _ = new().0;
/// ```
pub use profiler_macros::probe;

/// On `fn main`: reads and validates the `PROF_*` variables before the body runs, handles
/// `--list-probes`, and writes the results when `main` returns. Also on `fn main() -> Result<..>`
/// and stacked with `#[tokio::main]`. Equivalent to `let _guard = profiler_core::init();` as the
/// first statement.
pub use profiler_macros::main;

/// `eprintln!` that never panics. The profiler speaks on the training process's stderr, which
/// may be a pipe whose reader is gone (a launcher that died, `prof ab` stopped by Ctrl-C):
/// `eprintln!` panics there, and a warning (or the signal thread's one line before it writes
/// the results) must not end the job or lose its results.
#[cfg(feature = "enable")]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

// The stages, each a folder, in the order in which they build on one another: a stage imports
// only from the stages above it (profiler-core/tests/layout.rs checks it; docs/architecture.md
// draws the pipeline).
//
// select      PROF_FILTER and the other variables, parsed once
// register    the sites' descriptors, numbered at start-up, and the filter applied to them
// instrument  what is read: clocks, devices (GPU streams), the counting allocator
// store       storage reserved when the schedule is built: sample slots, trace buffers
// schedule    warmup learns the events; the plan; each step() arms the next event
// measure     what the hot path is given, and the armed and recorded halves of a run
// output      where results go and how they are written (atomically)
// session     the run: step(), the cold half of measuring, results, the writer thread
// start       init, --list-probes, signals
// probes      what annotations call: the guard (the hot path), runtime probes, tracing spans
#[cfg(feature = "enable")]
mod select;

mod register;
pub use register::info::ProbeInfo;
pub use register::work::{Count, WorkKeys};

mod instrument;
pub use instrument::alloc::Alloc;
#[cfg(feature = "enable")]
pub use instrument::device;

#[cfg(feature = "enable")]
mod store;
#[cfg(feature = "enable")]
pub use store::shape::{Dims, Shape};

#[cfg(feature = "enable")]
mod schedule;

#[cfg(feature = "enable")]
mod measure;

#[cfg(feature = "enable")]
mod output;

#[cfg(feature = "enable")]
mod session;

#[cfg(feature = "enable")]
mod start;

#[cfg(feature = "enable")]
mod probes;

#[cfg(feature = "enable")]
mod sample;

/// `prof.json`'s types ([`Profile`] and its parts), as [`snapshot`] returns them: the
/// `profiler-format` crate.
#[cfg(feature = "enable")]
pub use profiler_format as format;
#[cfg(feature = "enable")]
pub use profiler_format::Profile;
#[cfg(feature = "enable")]
mod sync;
#[cfg(feature = "enable")]
pub mod testing;

#[cfg(feature = "enable")]
pub use enabled_api::*;

#[cfg(feature = "enable")]
mod enabled_api {
    pub use crate::instrument::clock::{Clock, CpuClock, Reading};
    use crate::instrument::device::Device;
    #[cfg(feature = "tracing")]
    pub use crate::probes::bridge::TracingBridge;
    pub use crate::probes::runtime::RuntimeProbe;
    pub use crate::probes::timer::ProbeGuard;
    pub use crate::sample::{open_event, open_layer, sample_this_thread, OpenEvent, OpenLayer};
    pub use crate::select::config::{Config, ConfigError, DelayAmount, Mode, SampleClock};
    pub use crate::start::startup::{publish_open_events, InitGuard};
    pub use profiler_format::filter::{Filter, FilterError, Key};

    /// Marks the end of one training iteration. Cheap once the schedule is complete (an atomic
    /// load and a branch).
    #[inline]
    pub fn step() {
        match crate::session::current() {
            Some(session) => {
                if !session.is_done() {
                    session.step();
                }
            }
            None => crate::start::startup::listing_step(),
        }
    }

    /// True once the schedule is complete (in `trace` mode: after `PROF_WARMUP + PROF_REPEAT`
    /// iterations). A training loop can stop there.
    #[inline]
    pub fn finished() -> bool {
        crate::session::current().is_some_and(|s| s.is_done())
    }

    /// Reads and validates the `PROF_*` variables, handles `--list-probes`, and starts
    /// profiling; the returned guard writes the results when dropped. What
    /// [`#[profiler_core::main]`](crate::main) does first. A bad variable is reported on stderr
    /// and the process exits with status 2.
    pub fn init() -> InitGuard {
        crate::start::startup::init()
    }

    /// Starts profiling with a configuration made in code and, optionally, another clock (tests
    /// use [`testing::FakeClock`](crate::testing::FakeClock)). Returns the error instead of exiting. A session already running is
    /// replaced.
    pub fn init_with(
        config: Config,
        clock: Option<Box<dyn Clock>>,
    ) -> Result<InitGuard, ConfigError> {
        crate::start::startup::start(config, clock, None)
    }

    /// [`init_with`] and a device whose streams time the runs that name one: the simulated
    /// device of the tests ([`testing::SimDevice`](crate::testing::SimDevice)), or a
    /// [`device::CudaDevice`](crate::instrument::device) (feature `cuda`) opened by the
    /// program itself. ([`init`] opens the CUDA device on its own in a `cuda` build.)
    pub fn init_with_device(
        config: Config,
        clock: Option<Box<dyn Clock>>,
        device: Box<dyn Device>,
    ) -> Result<InitGuard, ConfigError> {
        crate::start::startup::start(config, clock, Some(device))
    }

    /// Every registered probe, in file and line order; `selected` tells what the running
    /// session's filter selects (all false when none runs).
    pub fn probes() -> Vec<crate::ProbeInfo> {
        let filter = crate::session::current().map(|s| &s.config().filter);
        crate::start::startup::list(filter)
    }

    /// The results so far, as `prof.json` would hold them, or `None` when no session runs.
    pub fn snapshot() -> Option<crate::Profile> {
        crate::session::current().map(|s| s.snapshot())
    }

    /// Renders a profile's summary table, as printed on stderr at the end.
    pub fn summary(profile: &crate::Profile) -> String {
        profiler_tables::summary::summary(profile, "prof.json")
    }
}

#[cfg(not(feature = "enable"))]
mod disabled;
#[cfg(not(feature = "enable"))]
pub use disabled::*;

/// Support for the macros' generated code. Not a public API.
#[doc(hidden)]
pub mod __private {
    #[cfg(feature = "enable")]
    pub use crate::probes::timer::{
        active, count, enter, enter_async, enter_async_on, enter_async_on_work, enter_async_work,
        enter_on, enter_on_work, enter_work, is_armed, shape_of, AsyncGuard, Count, Dims, Work,
        NO_WORK,
    };
    #[cfg(feature = "enable")]
    pub use crate::register::descriptor::{Descriptor, Kind, Registration, State, StaticInfo};
    #[cfg(feature = "enable")]
    pub use inventory;

    /// The guard of a probe that does not take part (for the stream form's unarmed branch).
    #[cfg(feature = "enable")]
    #[inline(always)]
    pub fn inert() -> crate::ProbeGuard {
        crate::ProbeGuard::inert()
    }

    /// Starts counting this thread's allocations as an armed run does (the allocator's
    /// benchmark measures the armed cost with it); returns whether counting started.
    #[cfg(feature = "enable")]
    pub fn alloc_begin() -> bool {
        crate::instrument::alloc::begin()
    }

    /// Ends what [`alloc_begin`] started; returns the bytes allocated meanwhile.
    #[cfg(feature = "enable")]
    pub fn alloc_end() -> u64 {
        crate::instrument::alloc::end().alloc_bytes
    }

    /// The async guard of a probe that does not take part.
    #[cfg(feature = "enable")]
    #[inline(always)]
    pub fn inert_async() -> AsyncGuard {
        AsyncGuard::inert()
    }

    /// The chunks the running session's record buffers have allocated, and the runs whose
    /// records they could not keep, so that tests can check that `trace` mode's memory stays
    /// bounded.
    #[cfg(feature = "enable")]
    pub fn record_buffers() -> Option<(usize, u64)> {
        let session = crate::session::current()?;
        Some((
            session.measuring.buffers.chunks(),
            session.measuring.buffers.dropped(),
        ))
    }

    /// How many iterations' device memory readings the running session keeps, so that tests
    /// can check that they stay bounded in `continuous` mode.
    #[cfg(feature = "enable")]
    pub fn device_memory_kept() -> Option<usize> {
        let session = crate::session::current()?;
        Some(session.device_memory_kept())
    }

    /// Renumbers the running session's iterations so that the last one completed is `last`,
    /// as if the run had gone on that long without a probe running: for the tests of the last
    /// iteration number a run counts to.
    #[cfg(feature = "enable")]
    pub fn renumber_iterations(last: u32) {
        if let Some(session) = crate::session::current() {
            session.renumber_iterations(last);
        }
    }

    /// Runs `f` while the running session's own lock (the one `step()` and the end take) is
    /// held, as the writer thread holds it for a moment each second: for the test of a fork
    /// made meanwhile (`tests/fork.rs`).
    #[cfg(feature = "enable")]
    pub fn while_session_locked(f: impl FnOnce()) {
        match crate::session::current() {
            Some(session) => session.while_locked(f),
            None => f(),
        }
    }

    /// The per-iteration run counter of the probe named `name`, so that the benchmark can
    /// re-arm one probe many times within one iteration.
    #[cfg(feature = "enable")]
    pub fn run_counter(name: &str) -> Option<&'static std::sync::atomic::AtomicU32> {
        let session = crate::session::current()?;
        let entry = crate::register::registry::registry()
            .iter()
            .position(|e| e.desc.info().name == name)?;
        session
            .measuring
            .schedule
            .routes
            .get(entry)
            .map(|route| &route.calls)
    }
}
