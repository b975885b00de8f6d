//! Devices with streams (CUDA, or the simulated device of the tests): what the core needs from a
//! GPU beyond a [`Clock`]. The plumbing a program that times its own device, or a new backend,
//! needs; a program that only annotates code never names it.
//!
//! A [`Device`] is a [`Clock`] whose marks are recorded *on a stream* ([`Device::mark_on`]): a
//! CUDA event recorded into the stream's queue, whose time is known only once the device has
//! passed it, so readings are [`Reading::Pending`](crate::Reading::Pending) until then. The core
//! never waits on the hot path; it asks again at each `step()`, and settles at the end.
//!
//! Everything here is independent of CUDA, so that the schedule's handling of streams is tested
//! with [`SimDevice`](crate::testing::SimDevice); the CUDA implementation (feature `cuda`) implements the
//! same traits.

mod pool;
pub(crate) mod sim;

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "cuda")]
pub use cuda::{CudaDevice, CudaOptions};
pub use pool::{decode_mark, encode_mark, Pool};

use crate::instrument::clock::Clock;
use crate::select::config::Config;

/// The device of this build's backend, opened for `config`; `None` (with one line on stderr
/// saying why) when there is none. The one place the core meets a backend: a new one is a
/// folder here, a Cargo feature, and a line below.
pub(crate) fn open(config: &Config) -> Option<Box<dyn Device>> {
    #[cfg(feature = "cuda")]
    return cuda::open(config);
    #[cfg(not(feature = "cuda"))]
    {
        warn_device_variables(config);
        None
    }
}

/// Without a device backend the device variables are accepted (so that one job script serves
/// every build) but said to do nothing.
#[cfg(not(feature = "cuda"))]
fn warn_device_variables(config: &Config) {
    let set: Vec<&str> = ["PROF_NVTX", "PROF_CAPTURE", "PROF_SYNC", "PROF_KERNELS"]
        .iter()
        .copied()
        .filter(|var| match *var {
            "PROF_NVTX" => config.nvtx,
            "PROF_CAPTURE" => config.capture,
            "PROF_SYNC" => config.sync > 0,
            _ => config.kernels,
        })
        .collect();
    if !set.is_empty() {
        say!(
            "profiler-core: warning: {} ha{} no effect: this program was built without the \
             `cuda` feature of profiler-core",
            set.join(", "),
            if set.len() == 1 { "s" } else { "ve" }
        );
    }
}

/// A mark that could not be taken (the stream's event pool was exhausted, the stream was never
/// prepared, or the device failed): any reading that involves it is
/// [`Reading::Lost`](crate::Reading::Lost).
pub const NO_MARK: u64 = u64::MAX;

/// A device stream as the profiler sees it: an opaque handle (for CUDA, the `CUstream` pointer)
/// and the ordinal of the device it belongs to. Both are part of an event's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stream {
    handle: u64,
    device: u32,
}

impl Stream {
    /// A stream with this handle on this device.
    pub const fn new(handle: u64, device: u32) -> Stream {
        Stream { handle, device }
    }

    /// The opaque handle (for CUDA, the `CUstream` pointer as an integer).
    pub const fn handle(&self) -> u64 {
        self.handle
    }

    /// The device ordinal.
    pub const fn device(&self) -> u32 {
        self.device
    }
}

/// What `#[profiled(stream = <expr>)]` and `probe!(.., stream = <expr>)` accept: anything that
/// names a stream. With the `cuda` feature this includes `cudarc`'s `CudaStream`, through a
/// reference or an `Arc`.
#[diagnostic::on_unimplemented(
    message = "`stream = ...` must name a device stream, and `{Self}` does not",
    label = "not a stream",
    note = "pass a cudarc `CudaStream` (by reference or `Arc`), or a `profiler_core::device::Stream`"
)]
pub trait AsStream {
    /// The stream this value names.
    fn as_stream(&self) -> Stream;
}

impl AsStream for Stream {
    #[inline(always)]
    fn as_stream(&self) -> Stream {
        *self
    }
}

impl<T: AsStream + ?Sized> AsStream for &T {
    #[inline(always)]
    fn as_stream(&self) -> Stream {
        (**self).as_stream()
    }
}

impl<T: AsStream + ?Sized> AsStream for &mut T {
    #[inline(always)]
    fn as_stream(&self) -> Stream {
        (**self).as_stream()
    }
}

impl<T: AsStream + ?Sized> AsStream for std::sync::Arc<T> {
    #[inline(always)]
    fn as_stream(&self) -> Stream {
        (**self).as_stream()
    }
}

impl<T: AsStream + ?Sized> AsStream for Box<T> {
    #[inline(always)]
    fn as_stream(&self) -> Stream {
        (**self).as_stream()
    }
}

/// A probe as an NVTX range: registered once, pushed by index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeInfo {
    /// The range's message: the probe's name.
    pub name: String,
    /// The probe's layer (the NVTX category).
    pub layer: Option<String>,
    /// The probe's phase (the range's colour).
    pub phase: Option<String>,
}

/// One kernel execution, as the device's activity records report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelActivity {
    /// The launch's correlation id (joins the kernel to the API call that launched it).
    pub correlation: u32,
    /// The kernel's (mangled) name.
    pub name: String,
    /// Start on the device's time line, in nanoseconds.
    pub start_ns: u64,
    /// End on the device's time line, in nanoseconds.
    pub end_ns: u64,
    /// Device ordinal.
    pub device: u32,
    /// Stream id (the same numbering as [`Device::stream_id`]).
    pub stream: u64,
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Block dimensions.
    pub block: [u32; 3],
}

/// A launch made while the profiler had pushed the external id `external`: how a kernel is tied
/// to the measured run that launched it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Correlation {
    /// The launch's correlation id.
    pub correlation: u32,
    /// The id the profiler pushed ([`Device::kernels_push`]).
    pub external: u64,
}

/// A device: a clock with streams, plus the hooks behind `PROF_SYNC`, `PROF_NVTX`,
/// `PROF_CAPTURE` and `PROF_KERNELS`, and its memory in use. Every method but `mark_on`,
/// `range_push`, `range_pop`, `kernels_push` and `kernels_pop` runs on the cold path, and
/// `memory_used` on both (see there).
///
/// Marks are taken with [`Device::mark_on`]; [`Clock::elapsed`] answers `Pending` until both
/// marks have completed on the device and `Lost` for [`NO_MARK`]; [`Clock::release`] returns a
/// mark's event to its pool.
pub trait Device: Clock + std::fmt::Debug {
    /// The streams whose events will be measured, each with the most marks that may be in
    /// flight on it at once: reserve a bounded pool of events per stream. Called after warmup,
    /// before any `mark_on`; may be called again with more streams.
    fn prepare(&self, streams: &[(Stream, usize)]);

    /// A timestamp taken on a device stream: for a GPU, an event recorded into the stream's
    /// queue, whose time is known once the device reaches it; [`NO_MARK`] when none could be
    /// taken (a pool exhausted, a stream not prepared). Hot path: no allocation, lock or
    /// system call beyond the device's own.
    fn mark_on(&self, stream: Stream) -> u64;

    /// The number written as the event's `stream` in `prof.json` (for CUDA, the stream's id as
    /// CUPTI and Nsight number it). Asked whenever results are written, the last time after
    /// the program may have destroyed the stream: a device finds it when the stream is
    /// prepared.
    fn stream_id(&self, stream: Stream) -> u64 {
        stream.handle()
    }

    /// The bytes of memory in use on device `device` (the ordinal of [`Stream::device`]), or
    /// `None` when the device cannot say (the default). For CUDA: `cuMemGetInfo`'s total less
    /// free, in the device's primary context: every allocation on the device, of this process
    /// and of others, and the contexts' own.
    ///
    /// Called at each `step()` for every device in use (one a run was seen on a stream of), and
    /// on the armed path of a run timed on a stream, once before its start marks and once after
    /// its stop marks, so that neither its CPU nor its device time includes the call. Unlike the
    /// rest of that path it is a driver call that may enter the kernel: it must not allocate or
    /// lock, and should be as cheap as the device allows.
    fn memory_used(&self, device: u32) -> Option<u64> {
        let _ = device;
        None
    }

    /// Marks that could not be taken because a pool was exhausted or a call failed.
    fn lost_marks(&self) -> u64 {
        0
    }

    /// Waits for all work queued on every device seen so far (`PROF_SYNC`).
    fn synchronize(&self) {}

    /// As [`Clock::settle`], but waits at most `limit`: a signal is ending the process, and
    /// the device may never finish (a collective whose peer died), so the results are written
    /// without what is still pending rather than not at all. `false` when it gave up.
    fn settle_within(&self, limit: std::time::Duration) -> bool {
        let _ = limit;
        self.settle();
        true
    }

    /// Registers the NVTX ranges, once, before any `range_push`. Returns false when NVTX is not
    /// available (the caller then never pushes).
    fn set_ranges(&self, ranges: &[RangeInfo]) -> bool {
        let _ = ranges;
        false
    }

    /// Opens the range registered at `index`.
    fn range_push(&self, index: u32) {
        let _ = index;
    }

    /// Closes the innermost range opened on this thread.
    fn range_pop(&self) {}

    /// Starts (`true`) or stops the focused capture (`cuProfilerStart` / `cuProfilerStop`).
    fn capture(&self, on: bool) {
        let _ = on;
    }

    /// Turns the kernel activity records on or off. Returns false when they are not available.
    fn kernels_enable(&self, on: bool) -> bool {
        let _ = on;
        false
    }

    /// From now until [`Device::kernels_pop`], launches on this thread are tagged `external`.
    fn kernels_push(&self, external: u64) {
        let _ = external;
    }

    /// Ends the innermost tag pushed on this thread.
    fn kernels_pop(&self) {}

    /// Moves the activity records gathered so far into `kernels` and `correlations`.
    fn drain_kernels(
        &self,
        kernels: &mut Vec<KernelActivity>,
        correlations: &mut Vec<Correlation>,
    ) {
        let _ = (kernels, correlations);
    }
}
