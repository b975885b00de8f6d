//! The CUDA device (feature `cuda`): CUDA events recorded on the profiled streams, NVTX ranges,
//! focused capture and CUPTI kernel records, all through `cudarc` with the libraries loaded at
//! run time.
//!
//! Nothing here needs a CUDA toolkit to build. At run time [`CudaDevice::open`] fails with one
//! line when there is no driver or no device (the core then times on the CPU); NVTX and CUPTI
//! are optional on top of it. Every library is checked before its first call, since `cudarc`
//! panics when it cannot load one; no CUDA failure panics, it loses the measurement instead.
//!
//! Marks are events taken from a fixed pool per stream, prepared on the cold path by
//! [`Device::prepare`](crate::instrument::device::Device::prepare) in the primary context of the stream's device
//! (the context `cudarc`'s `CudaContext::new` retains, where its streams live).

mod cupti;
mod driver;
#[cfg(test)]
mod headers;
mod loader;
mod nvtx;
#[cfg(test)]
mod nvtx_tool;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{sys, CudaContext};

use crate::instrument::clock::{Clock, Reading};
use crate::instrument::device::{
    decode_mark, encode_mark, AsStream, Correlation, Device, KernelActivity, Pool, RangeInfo,
    Stream, NO_MARK,
};

/// The most streams one device times; streams beyond it are warned about and never timed.
const MAX_STREAMS: usize = 64;
/// Device ordinals below this have their memory read ([`Device::memory_used`]).
const MAX_DEVICES: usize = 64;
/// The fewest events reserved per stream.
const MIN_EVENTS: usize = 8;
/// The most events reserved per stream, whatever `prepare` asks.
const MAX_EVENTS: usize = 1 << 16;

/// What the CUDA device does beyond timing.
#[derive(Clone, Copy, Debug, Default)]
pub struct CudaOptions {
    /// Emit an NVTX range per measured run (`PROF_NVTX`), for Nsight Systems.
    pub nvtx: bool,
    /// Record kernel activity with CUPTI (`PROF_KERNELS`), to attribute kernels to events.
    pub kernels: bool,
}

/// A CUDA event handle that can be shared between threads.
#[derive(Debug)]
struct Event(sys::CUevent);

// SAFETY: a CUevent is an opaque driver handle; the driver API may be called with it from any
// thread. The pool hands each event to one mark at a time.
unsafe impl Send for Event {}
// SAFETY: as for `Send`: only the handle value is shared, the driver synchronizes internally.
unsafe impl Sync for Event {}

/// A stream's events, in the primary context of the stream's device.
#[derive(Debug)]
struct StreamEvents {
    stream: Stream,
    pool: Pool<Event>,
    /// The primary context the events were created in (kept retained by `Writer::contexts`).
    ctx: Ctx,
    /// The stream's id in the results ([`Device::stream_id`]), found when the stream was
    /// prepared: the results are also written at the end, after the program has destroyed its
    /// streams, and a destroyed handle must not reach the driver.
    id: u64,
}

/// A context handle that can be shared between threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ctx(sys::CUcontext);

// SAFETY: a CUcontext is an opaque driver handle, usable from any thread; the contexts named
// here stay retained by the device (through `cudarc`'s `CudaContext`) for its lifetime.
unsafe impl Send for Ctx {}
// SAFETY: as for `Send`.
unsafe impl Sync for Ctx {}

/// What only `prepare` changes, under a lock.
#[derive(Debug, Default)]
struct Writer {
    /// The primary context of each device seen, retained for the device's lifetime.
    contexts: Vec<(u32, Arc<CudaContext>)>,
    /// How many entries of `CudaDevice::streams` are filled (always a prefix).
    filled: usize,
}

/// Warnings printed at most once each.
#[derive(Clone, Copy)]
#[repr(u32)]
enum Once {
    TooManyStreams = 1,
    Context = 1 << 1,
    Events = 1 << 2,
    ForeignContext = 1 << 3,
    Capture = 1 << 4,
    Kernels = 1 << 5,
    Settle = 1 << 6,
}

/// Timing on CUDA streams with CUDA events, plus NVTX ranges, focused capture and CUPTI kernel
/// records.
///
/// Open it with [`CudaDevice::open`]; marks are taken with
/// [`Device::mark_on`](crate::instrument::device::Device::mark_on) on the streams given to
/// [`Device::prepare`](crate::instrument::device::Device::prepare).
pub struct CudaDevice {
    /// Filled in order by `prepare` (under `writer`), read without a lock by `mark_on`.
    streams: [OnceLock<StreamEvents>; MAX_STREAMS],
    writer: Mutex<Writer>,
    /// Marks lost to an unknown stream or a failed record (pool exhaustion is counted by
    /// the pools).
    lost: AtomicU64,
    optional: driver::Optional,
    /// `cuEventElapsedTime_v2` or `cuEventElapsedTime`, whichever the driver has.
    elapsed: driver::EventElapsed,
    nvtx: Option<nvtx::Nvtx>,
    cupti: Option<cupti::Cupti>,
    warned: AtomicU32,
    /// A bounded settle gave up waiting for the device ([`Device::settle_within`]).
    gave_up: AtomicBool,
    /// By device ordinal, once known: its retained primary context, or `None` when it could not
    /// be retained. Read without a lock by `memory_used` on the armed path.
    memory_contexts: [OnceLock<Option<Ctx>>; MAX_DEVICES],
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field(
                "streams",
                &self
                    .streams
                    .iter()
                    .map_while(OnceLock::get)
                    .collect::<Vec<_>>(),
            )
            .field("lost", &self.lost.load(Relaxed))
            .field("nvtx", &self.nvtx)
            .field("cupti", &self.cupti)
            .finish_non_exhaustive()
    }
}

fn warn(message: std::fmt::Arguments<'_>) {
    say!("profiler-core: warning: {message}");
}

/// The CUDA device for `config`, or `None` (with one line on stderr saying why) when there is
/// none: [`device::open`](super::open) in a `cuda` build.
pub(crate) fn open(config: &crate::select::config::Config) -> Option<Box<dyn Device>> {
    let options = CudaOptions {
        nvtx: config.nvtx,
        kernels: config.kernels,
    };
    match CudaDevice::open(options) {
        Ok(device) => Some(Box::new(device)),
        Err(why) => {
            say!("profiler-core: {why}; timing on the CPU clock");
            None
        }
    }
}

impl CudaDevice {
    /// Loads the CUDA driver, initializes it and checks that there is a device; with
    /// `options`, also loads NVTX and CUPTI.
    ///
    /// `Err` is one line saying why CUDA cannot be used (no driver, `cuInit` failed, no
    /// device). A missing or failing NVTX or CUPTI does not fail: it prints one warning and
    /// the matching hooks do nothing.
    pub fn open(options: CudaOptions) -> Result<CudaDevice, String> {
        let (optional, elapsed) = driver::check_driver()?;
        let nvtx = if options.nvtx {
            match nvtx::Nvtx::open() {
                Ok(nvtx) => Some(nvtx),
                Err(why) => {
                    warn(format_args!("PROF_NVTX is set but {why}; no NVTX ranges"));
                    None
                }
            }
        } else {
            None
        };
        let cupti = if options.kernels {
            match cupti::Cupti::open() {
                Ok(cupti) => Some(cupti),
                Err(why) => {
                    warn(format_args!(
                        "PROF_KERNELS is set but {why}; no kernel records"
                    ));
                    None
                }
            }
        } else {
            None
        };
        Ok(CudaDevice {
            streams: std::array::from_fn(|_| OnceLock::new()),
            writer: Mutex::new(Writer::default()),
            lost: AtomicU64::new(0),
            optional,
            elapsed,
            nvtx,
            cupti,
            warned: AtomicU32::new(0),
            gave_up: AtomicBool::new(false),
            memory_contexts: std::array::from_fn(|_| OnceLock::new()),
        })
    }

    /// Prints a warning unless this kind was already warned about.
    fn warn_once(&self, kind: Once, message: std::fmt::Arguments<'_>) {
        if self.warned.fetch_or(kind as u32, Relaxed) & kind as u32 == 0 {
            warn(message);
        }
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, Writer> {
        // The writer's state stays consistent even if a panic interrupted a holder.
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The prepared streams, in order (lock-free).
    #[inline]
    fn prepared(&self) -> impl Iterator<Item = &StreamEvents> {
        self.streams.iter().map_while(OnceLock::get)
    }

    /// The pool of `stream` and its index (hot path: a linear scan, no lock).
    #[inline]
    fn find(&self, stream: Stream) -> Option<(usize, &StreamEvents)> {
        self.prepared()
            .enumerate()
            .find(|(_, entry)| entry.stream == stream)
    }

    /// The entry and event a mark names, if the mark is live.
    fn event_of(&self, mark: u64) -> Option<(&StreamEvents, sys::CUevent)> {
        let (pool, slot) = decode_mark(mark)?;
        let entry = self.streams.get(pool as usize)?.get()?;
        if !entry.pool.is_taken(slot) {
            return None;
        }
        Some((entry, entry.pool.get(slot)?.0))
    }

    /// The primary context of `device`, retained on first use.
    fn context(&self, writer: &mut Writer, device: u32) -> Result<Ctx, String> {
        if let Some((_, ctx)) = writer.contexts.iter().find(|(d, _)| *d == device) {
            return Ok(Ctx(ctx.cu_ctx()));
        }
        // `CudaContext::new` makes the context current on this thread: put back the caller's.
        let _restore = driver::Restore::new();
        let ctx = CudaContext::new(device as usize)
            .map_err(|e| format!("cannot retain the primary context of device {device}: {e}"))?;
        let handle = Ctx(ctx.cu_ctx());
        writer.contexts.push((device, ctx));
        if let Some(cell) = self.memory_contexts.get(device as usize) {
            let _ = cell.set(Some(handle));
        }
        Ok(handle)
    }

    /// Creates `n` timing events in `ctx`, or none.
    fn create_events(ctx: Ctx, n: usize) -> Result<Vec<Event>, String> {
        let _bound = driver::Bound::new(ctx.0);
        let mut events = Vec::with_capacity(n);
        for _ in 0..n {
            let mut event: sys::CUevent = std::ptr::null_mut();
            // SAFETY: `event` is a valid out-pointer; the context is current; the default
            // flags keep timing enabled.
            let r = unsafe {
                sys::cuEventCreate(&mut event, sys::CUevent_flags::CU_EVENT_DEFAULT as u32)
            };
            if r != sys::CUresult::CUDA_SUCCESS {
                for Event(e) in events {
                    // SAFETY: created above, never recorded, destroyed once.
                    let _ = unsafe { sys::cuEventDestroy_v2(e) };
                }
                return Err(format!("cuEventCreate failed: {}", driver::describe(r)));
            }
            events.push(Event(event));
        }
        Ok(events)
    }

    /// Prepares one stream (under the writer lock).
    fn prepare_one(&self, writer: &mut Writer, stream: Stream, in_flight: usize) {
        if self.prepared().any(|entry| entry.stream == stream) {
            return;
        }
        if writer.filled >= MAX_STREAMS {
            self.warn_once(
                Once::TooManyStreams,
                format_args!(
                    "more than {MAX_STREAMS} CUDA streams are profiled; the others are not timed"
                ),
            );
            return;
        }
        let ctx = match self.context(writer, stream.device()) {
            Ok(ctx) => ctx,
            Err(why) => {
                self.warn_once(
                    Once::Context,
                    format_args!("{why}; its streams are not timed"),
                );
                return;
            }
        };
        if let Some(owner) = driver::stream_context(stream.handle()) {
            if owner != ctx.0 {
                self.warn_once(
                    Once::ForeignContext,
                    format_args!(
                        "CUDA stream {:#x} is not in the primary context of device {}; it is \
                         not timed",
                        stream.handle(),
                        stream.device()
                    ),
                );
                return;
            }
        }
        let n = in_flight.clamp(MIN_EVENTS, MAX_EVENTS);
        match Self::create_events(ctx, n) {
            Ok(events) => {
                let entry = StreamEvents {
                    stream,
                    pool: Pool::new(events),
                    ctx,
                    id: self.resolve_stream_id(ctx, stream),
                };
                if let Err(entry) = self.streams[writer.filled].set(entry) {
                    // Unreachable: only this function fills entries, under the lock, in
                    // order. Do not leak the events if it ever happens.
                    Self::destroy(&entry);
                    return;
                }
                writer.filled += 1;
            }
            Err(why) => self.warn_once(
                Once::Events,
                format_args!(
                    "cannot create CUDA events for stream {:#x}: {why}; it is not timed",
                    stream.handle()
                ),
            ),
        }
    }

    /// Destroys a pool's events.
    fn destroy(entry: &StreamEvents) {
        let _bound = driver::Bound::new(entry.ctx.0);
        for Event(event) in entry.pool.items() {
            // SAFETY: created by `create_events` in this context, destroyed once (the pool is
            // being torn down). Destroying an event still pending on a stream is allowed: the
            // driver releases it once the stream passes it.
            let _ = unsafe { sys::cuEventDestroy_v2(*event) };
        }
    }

    /// CUPTI's id for the stream when kernel records are on (so that kernels join their
    /// events), else the driver's `cuStreamGetId`, else the handle. Called when the stream is
    /// prepared, while the program still holds it.
    fn resolve_stream_id(&self, ctx: Ctx, stream: Stream) -> u64 {
        if let Some(cupti) = &self.cupti {
            if let Some(id) = cupti.stream_id(ctx.0, stream.handle()) {
                return id;
            }
        }
        if !self.optional.stream_get_id {
            return stream.handle();
        }
        let _bound = driver::Bound::new(ctx.0);
        let mut id: std::ffi::c_ulonglong = 0;
        // SAFETY: the symbol exists (checked at open); `id` is a valid out-pointer; the stream
        // is being prepared, in use by the program, and the driver validates the handle.
        let r = unsafe { sys::cuStreamGetId(stream.handle() as usize as sys::CUstream, &mut id) };
        if r == sys::CUresult::CUDA_SUCCESS {
            id
        } else {
            stream.handle()
        }
    }

    /// The contexts this device retained.
    fn contexts(&self) -> Vec<Ctx> {
        self.writer()
            .contexts
            .iter()
            .map(|(_, ctx)| Ctx(ctx.cu_ctx()))
            .collect()
    }

    /// Synchronizes the device's contexts, or the current one if there are none.
    fn synchronize_contexts(&self) -> Result<(), String> {
        let contexts = self.contexts();
        if contexts.is_empty() {
            if driver::current_context().is_some() {
                // SAFETY: a context is current on this thread.
                let _ = unsafe { sys::cuCtxSynchronize() };
            }
            return Ok(());
        }
        synchronize_each(&contexts)
    }

    /// Whether the event completed: `Some(true)` yes, `Some(false)` not yet, `None` failed.
    fn query(event: sys::CUevent) -> Option<bool> {
        // SAFETY: `event` is a live event of this device's pools.
        match unsafe { sys::cuEventQuery(event) } {
            sys::CUresult::CUDA_SUCCESS => Some(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Some(false),
            _ => None,
        }
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        for entry in self.prepared() {
            Self::destroy(entry);
        }
        // The retained contexts are released when `writer` drops, after the events.
    }
}

impl Clock for CudaDevice {
    fn name(&self) -> &'static str {
        "cuda"
    }

    /// There is no stream to record on: every reading of it is lost.
    fn mark(&self) -> u64 {
        NO_MARK
    }

    fn elapsed(&self, start: u64, stop: u64) -> Reading {
        let (Some((entry, a)), Some((_, b))) = (self.event_of(start), self.event_of(stop)) else {
            return Reading::Lost;
        };
        let _bound = driver::Bound::new(entry.ctx.0);
        match (Self::query(b), Self::query(a)) {
            (Some(true), Some(true)) => {}
            (Some(_), Some(_)) => return Reading::Pending,
            _ => return Reading::Lost,
        }
        let mut ms = 0f32;
        // SAFETY: resolved at `open` with the headers' type; both events are live, completed
        // events of this device, recorded with timing; `ms` is a valid out-pointer.
        match unsafe { (self.elapsed)(&mut ms, a, b) } {
            sys::CUresult::CUDA_SUCCESS => Reading::Ready(ms_to_ns(ms)),
            sys::CUresult::CUDA_ERROR_NOT_READY => Reading::Pending,
            _ => Reading::Lost,
        }
    }

    fn is_linear(&self) -> bool {
        false
    }

    fn settle(&self) {
        if let Err(why) = self.synchronize_contexts() {
            self.warn_once(
                Once::Settle,
                format_args!("{why}; pending GPU timings are lost"),
            );
        }
    }

    fn release(&self, mark: u64) {
        if let Some((pool, slot)) = decode_mark(mark) {
            if let Some(entry) = self.streams.get(pool as usize).and_then(OnceLock::get) {
                entry.pool.release(slot);
            }
        }
    }
}

/// Synchronizes each of `contexts` (retained by the device), on this thread; the first failure.
fn synchronize_each(contexts: &[Ctx]) -> Result<(), String> {
    let mut result = Ok(());
    for ctx in contexts {
        let _bound = driver::Bound::new(ctx.0);
        // SAFETY: `ctx` is retained by the device and current on this thread.
        let r = unsafe { sys::cuCtxSynchronize() };
        if r != sys::CUresult::CUDA_SUCCESS && result.is_ok() {
            result = Err(format!("cuCtxSynchronize failed: {}", driver::describe(r)));
        }
    }
    result
}

/// Milliseconds (as `cuEventElapsedTime` gives them) to whole nanoseconds; negative and
/// non-finite values become 0.
fn ms_to_ns(ms: f32) -> u64 {
    let ns = (f64::from(ms) * 1e6).round();
    if ns.is_finite() && ns > 0.0 {
        ns as u64
    } else {
        0
    }
}

impl Device for CudaDevice {
    #[inline]
    fn mark_on(&self, stream: Stream) -> u64 {
        let Some((index, entry)) = self.find(stream) else {
            self.lost.fetch_add(1, Relaxed);
            return NO_MARK;
        };
        let Some(slot) = entry.pool.acquire() else {
            return NO_MARK; // counted by the pool
        };
        let Some(Event(event)) = entry.pool.get(slot) else {
            entry.pool.release(slot);
            self.lost.fetch_add(1, Relaxed);
            return NO_MARK;
        };
        let handle = stream.handle() as usize as sys::CUstream;
        // SAFETY: `event` is a live event of this stream's pool, created in the primary context
        // the stream belongs to; `handle` is the stream the caller named.
        let mut r = unsafe { sys::cuEventRecord(*event, handle) };
        if r == sys::CUresult::CUDA_ERROR_INVALID_CONTEXT {
            // No context is current on this thread (the driver needs one for the default
            // streams): bind the stream's, as a cudarc launch on it would, and try again.
            // SAFETY: the context is retained by this device; nothing was current.
            if unsafe { sys::cuCtxSetCurrent(entry.ctx.0) } == sys::CUresult::CUDA_SUCCESS {
                // SAFETY: as above.
                r = unsafe { sys::cuEventRecord(*event, handle) };
            }
        }
        if r != sys::CUresult::CUDA_SUCCESS {
            entry.pool.release(slot);
            self.lost.fetch_add(1, Relaxed);
            return NO_MARK;
        }
        encode_mark(index as u32, slot)
    }

    fn prepare(&self, streams: &[(Stream, usize)]) {
        let mut writer = self.writer();
        for &(stream, in_flight) in streams {
            self.prepare_one(&mut writer, stream, in_flight);
        }
    }

    /// The id found when the stream was prepared (the stream alive then); the handle for a
    /// stream that was not.
    fn stream_id(&self, stream: Stream) -> u64 {
        self.find(stream)
            .map_or(stream.handle(), |(_, entry)| entry.id)
    }

    /// `cuMemGetInfo_v2` in the primary context of `device`, found without a lock once
    /// retained. The armed path finds it so: the context of a stream's device is retained when
    /// the stream is prepared. A `step()` of the warmup, before any stream is prepared, retains
    /// it (under the lock); a context that cannot be retained is never tried again.
    fn memory_used(&self, device: u32) -> Option<u64> {
        let cell = self.memory_contexts.get(device as usize)?;
        let ctx = match cell.get() {
            Some(known) => (*known)?,
            None => {
                let ctx = self.context(&mut self.writer(), device).ok();
                let _ = cell.set(ctx);
                ctx?
            }
        };
        driver::memory_used(ctx.0)
    }

    fn lost_marks(&self) -> u64 {
        self.lost.load(Relaxed) + self.prepared().map(|e| e.pool.exhausted()).sum::<u64>()
    }

    fn synchronize(&self) {
        let _ = self.synchronize_contexts();
    }

    /// Synchronizes the device's contexts on a thread of its own and waits for it at most
    /// `limit`: every stream's work, the kernels of untimed streams too, without touching a
    /// stream handle the program may have destroyed. A device that did not finish is not waited
    /// for again (the second settle of the same end returns at once).
    fn settle_within(&self, limit: std::time::Duration) -> bool {
        if self.gave_up.load(Relaxed) {
            return false;
        }
        let contexts = self.contexts();
        let (done, wait) = std::sync::mpsc::channel();
        let started = std::thread::Builder::new()
            .name("profiler-settle".into())
            .spawn(move || {
                // The contexts stay retained: the device lives for the process (the session is
                // never dropped).
                let _ = synchronize_each(&contexts);
                let _ = done.send(());
            });
        if started.is_err() || wait.recv_timeout(limit).is_err() {
            self.gave_up.store(true, Relaxed);
            self.warn_once(
                Once::Settle,
                format_args!(
                    "the GPU had not finished its work {} s after the signal; the timings \
                     still pending on it are lost",
                    limit.as_secs()
                ),
            );
            return false;
        }
        true
    }

    fn set_ranges(&self, ranges: &[RangeInfo]) -> bool {
        match &self.nvtx {
            Some(nvtx) => {
                nvtx.set_ranges(ranges);
                true
            }
            None => false,
        }
    }

    #[inline]
    fn range_push(&self, index: u32) {
        if let Some(nvtx) = &self.nvtx {
            nvtx.push(index);
        }
    }

    #[inline]
    fn range_pop(&self) {
        if let Some(nvtx) = &self.nvtx {
            nvtx.pop();
        }
    }

    fn capture(&self, on: bool) {
        if !self.optional.profiler {
            self.warn_once(
                Once::Capture,
                format_args!("PROF_CAPTURE: the CUDA driver has no cuProfilerStart/Stop"),
            );
            return;
        }
        let contexts: Vec<sys::CUcontext> = self
            .writer()
            .contexts
            .iter()
            .map(|(_, ctx)| ctx.cu_ctx())
            .collect();
        let call = || {
            // SAFETY: the symbols exist (checked at open); a context is current (bound by the
            // caller, or the driver reports an error, which is only warned about).
            let r = unsafe {
                if on {
                    sys::cuProfilerStart()
                } else {
                    sys::cuProfilerStop()
                }
            };
            if r != sys::CUresult::CUDA_SUCCESS {
                let what = if on {
                    "cuProfilerStart"
                } else {
                    "cuProfilerStop"
                };
                self.warn_once(
                    Once::Capture,
                    format_args!("PROF_CAPTURE: {what} failed: {}", driver::describe(r)),
                );
            }
        };
        if contexts.is_empty() {
            call();
        }
        for ctx in contexts {
            let _bound = driver::Bound::new(ctx);
            call();
        }
    }

    fn kernels_enable(&self, on: bool) -> bool {
        let Some(cupti) = &self.cupti else {
            return false;
        };
        match cupti.enable(on) {
            Ok(()) => true,
            Err(why) => {
                self.warn_once(
                    Once::Kernels,
                    format_args!("PROF_KERNELS: {why}; no kernel records"),
                );
                false
            }
        }
    }

    #[inline]
    fn kernels_push(&self, external: u64) {
        if let Some(cupti) = &self.cupti {
            cupti.push(external);
        }
    }

    #[inline]
    fn kernels_pop(&self) {
        if let Some(cupti) = &self.cupti {
            cupti.pop();
        }
    }

    fn drain_kernels(
        &self,
        kernels: &mut Vec<KernelActivity>,
        correlations: &mut Vec<Correlation>,
    ) {
        if let Some(cupti) = &self.cupti {
            cupti.drain(kernels, correlations);
        }
    }
}

impl AsStream for cudarc::driver::CudaStream {
    /// The stream's `CUstream` handle and its context's device ordinal (two field reads).
    #[inline(always)]
    fn as_stream(&self) -> Stream {
        Stream::new(
            self.cu_stream() as usize as u64,
            self.context().ordinal() as u32,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_without_a_driver_is_an_error_not_a_panic() {
        if driver::driver_library().is_err() {
            let err = CudaDevice::open(CudaOptions::default()).unwrap_err();
            assert!(err.contains("no CUDA driver"), "{err}");
            assert!(!err.contains('\n'), "one line: {err}");
            let err = CudaDevice::open(CudaOptions {
                nvtx: true,
                kernels: true,
            })
            .unwrap_err();
            assert!(err.contains("no CUDA driver"), "{err}");
        }
    }

    #[test]
    fn milliseconds_to_nanoseconds() {
        assert_eq!(ms_to_ns(1.0), 1_000_000);
        assert_eq!(ms_to_ns(0.0015), 1_500);
        assert_eq!(ms_to_ns(-0.5), 0);
        assert_eq!(ms_to_ns(f32::NAN), 0);
        assert_eq!(ms_to_ns(f32::INFINITY), 0);
    }

    #[test]
    fn device_is_send_sync_static_debug() {
        fn check<T: Send + Sync + 'static + std::fmt::Debug>() {}
        check::<CudaDevice>();
    }

    #[test]
    fn every_warning_kind_has_its_own_bit() {
        let kinds = [
            Once::TooManyStreams,
            Once::Context,
            Once::Events,
            Once::ForeignContext,
            Once::Capture,
            Once::Kernels,
            Once::Settle,
        ];
        let mut all = 0u32;
        for k in kinds {
            assert_eq!((k as u32).count_ones(), 1);
            assert_eq!(all & k as u32, 0);
            all |= k as u32;
        }
    }
}
