//! Thin helpers over the CUDA driver API (`cudarc::driver::sys`), loaded at run time.
//!
//! `cudarc` loads each entry point on its first call and panics when the library or the symbol
//! is missing, so [`check_driver`] runs before anything else: it makes sure `libcuda` loads and
//! exports every function this backend calls unconditionally. After it succeeds, those calls
//! cannot hit that panic; the optional ones are guarded by [`Optional`].

use std::ptr;
use std::sync::OnceLock;

use cudarc::driver::sys::{self, CUresult};

use super::loader::Library;

/// `cuEventElapsedTime`'s type (its `_v2` has the same).
pub(crate) type EventElapsed =
    unsafe extern "C" fn(*mut f32, sys::CUevent, sys::CUevent) -> CUresult;

/// The names `cuEventElapsedTime` goes by, preferred first: `_v2` (drivers of CUDA 12.8 and
/// later; the only one in CUDA 13's headers), then the original (every older driver). Resolved
/// by this crate rather than called through `cudarc`, whose bindings name only one of the two
/// (which one depends on the CUDA version the build picked), so that any build runs on old and
/// new drivers alike.
pub(crate) const EVENT_ELAPSED: [&str; 2] = ["cuEventElapsedTime_v2", "cuEventElapsedTime"];

/// Every driver function this backend (and `cudarc`'s `CudaContext::new`, which it uses to
/// retain primary contexts) calls unconditionally.
pub(crate) const REQUIRED: &[&str] = &[
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventQuery",
    "cuStreamGetCtx",
    "cuGetErrorString",
    "cuMemGetInfo_v2",
];

/// The optional driver functions [`Optional`] looks for: `cuStreamGetId`, then the two of
/// `profiler`.
pub(crate) const OPTIONAL: [&str; 3] = ["cuStreamGetId", "cuProfilerStart", "cuProfilerStop"];

/// What the driver library offers beyond [`REQUIRED`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Optional {
    /// `cuStreamGetId` (CUDA 12.0 and later).
    pub stream_get_id: bool,
    /// `cuProfilerStart` and `cuProfilerStop`.
    pub profiler: bool,
}

/// The names the driver library is opened by to check it: the driver installs
/// `libcuda.so.1`; the plain name may be a toolkit's link stub, so it comes second.
pub(crate) const DRIVER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];

/// The driver library, opened once by this crate's loader to check it, and never panics:
/// `cudarc`'s own `is_culib_present` exists only when it loads the driver at run time. `cudarc`
/// calls the `libcuda` it finds itself, the plain name first: where that is a toolkit's stub,
/// `cuInit` fails with `CUDA_ERROR_STUB_LIBRARY`, said with its fix ([`check_driver`]).
pub(crate) fn driver_library() -> Result<&'static Library, String> {
    static DRIVER: OnceLock<Result<Library, String>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            Library::open("libcuda", DRIVER_NAMES)
                .map_err(|_| "no CUDA driver: libcuda.so could not be loaded".to_owned())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Loads the driver, checks its entry points, initializes it and counts the devices; gives
/// what it offers beyond [`REQUIRED`] and its `cuEventElapsedTime`.
pub(crate) fn check_driver() -> Result<(Optional, EventElapsed), String> {
    let lib = driver_library()?;
    if let Some(missing) = REQUIRED.iter().find(|name| !lib.has(name)) {
        return Err(format!(
            "the CUDA driver is too old: libcuda does not export {missing}"
        ));
    }
    let elapsed = EVENT_ELAPSED
        .iter()
        // SAFETY: both names have this type in the headers (checked by `headers.rs`).
        .find_map(|name| unsafe { lib.get::<EventElapsed>(name) }.ok())
        .ok_or_else(|| {
            format!(
                "the CUDA driver is too old: libcuda does not export {}",
                EVENT_ELAPSED[1]
            )
        })?;
    // SAFETY: the symbol exists (checked above); cuInit takes flags, 0 is the only valid value.
    let r = unsafe { sys::cuInit(0) };
    if r != CUresult::CUDA_SUCCESS {
        if r == CUresult::CUDA_ERROR_NO_DEVICE {
            return Err("no CUDA device".to_owned());
        }
        return Err(init_failed(r));
    }
    let mut count: std::ffi::c_int = 0;
    // SAFETY: `count` is a valid out-pointer; the driver is initialized.
    let r = unsafe { sys::cuDeviceGetCount(&mut count) };
    if r != CUresult::CUDA_SUCCESS {
        return Err(format!("cuDeviceGetCount failed: {}", describe(r)));
    }
    if count <= 0 {
        return Err("no CUDA device".to_owned());
    }
    let optional = Optional {
        stream_get_id: lib.has(OPTIONAL[0]),
        profiler: OPTIONAL[1..].iter().all(|name| lib.has(name)),
    };
    Ok((optional, elapsed))
}

/// Why `cuInit` failed, with the fix where it is known: a CUDA toolkit's stub `libcuda.so`
/// (for linking, not running) found first on the library path, as `cudarc` looks for the plain
/// name before the driver's `libcuda.so.1`.
fn init_failed(r: CUresult) -> String {
    format!("cuInit failed: {}{}", describe(r), init_help(r))
}

/// What [`init_failed`] adds to the driver's words for `r`: the fix, where it is known.
fn init_help(r: CUresult) -> &'static str {
    if r == CUresult::CUDA_ERROR_STUB_LIBRARY {
        "; the libcuda.so loaded is a CUDA toolkit's stub (a `stubs` folder on LD_LIBRARY_PATH): \
         take that folder off LD_LIBRARY_PATH so that the driver's library is found"
    } else {
        ""
    }
}

/// A driver result as one short phrase: its name and, where the driver gives one, its
/// description.
pub(crate) fn describe(r: CUresult) -> String {
    let mut text: *const std::ffi::c_char = ptr::null();
    // SAFETY: only called once `check_driver` found `cuGetErrorString`; `text` is a valid
    // out-pointer, set to a static string owned by the driver or left null.
    let ok = unsafe { sys::cuGetErrorString(r, &mut text) } == CUresult::CUDA_SUCCESS;
    if ok && !text.is_null() {
        // SAFETY: the driver returned a NUL-terminated static string.
        let text = unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy();
        format!("{r:?} ({text})")
    } else {
        format!("{r:?}")
    }
}

/// Makes a context current on this thread for the guard's lifetime, then puts back the
/// context that was current before (possibly none). The cold path, and [`memory_used`] on the
/// armed path, where the context is normally current already (one `cuCtxGetCurrent`).
pub(crate) struct Bound {
    previous: Option<sys::CUcontext>,
}

impl Bound {
    /// Makes `ctx` current unless it already is. Failures are ignored: the calls that follow
    /// then report their own errors.
    pub(crate) fn new(ctx: sys::CUcontext) -> Bound {
        let mut current: sys::CUcontext = ptr::null_mut();
        // SAFETY: `current` is a valid out-pointer.
        let r = unsafe { sys::cuCtxGetCurrent(&mut current) };
        if r == CUresult::CUDA_SUCCESS && current == ctx {
            return Bound { previous: None };
        }
        // SAFETY: `ctx` is a primary context this device keeps retained (or null, which only
        // unbinds).
        let r = unsafe { sys::cuCtxSetCurrent(ctx) };
        if r == CUresult::CUDA_SUCCESS {
            Bound {
                previous: Some(current),
            }
        } else {
            Bound { previous: None }
        }
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            // SAFETY: `previous` was current on this thread when the guard was made (or null,
            // which unbinds); the caller's context is put back as it was.
            let _ = unsafe { sys::cuCtxSetCurrent(previous) };
        }
    }
}

/// Saves the current context and restores it when dropped, whatever was made current in
/// between (by `cudarc`'s `CudaContext::new`, which binds the context it retains).
pub(crate) struct Restore {
    previous: Option<sys::CUcontext>,
}

impl Restore {
    /// Remembers the context current on this thread now.
    pub(crate) fn new() -> Restore {
        let mut current: sys::CUcontext = ptr::null_mut();
        // SAFETY: `current` is a valid out-pointer.
        let r = unsafe { sys::cuCtxGetCurrent(&mut current) };
        Restore {
            previous: (r == CUresult::CUDA_SUCCESS).then_some(current),
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            let mut current: sys::CUcontext = ptr::null_mut();
            // SAFETY: `current` is a valid out-pointer.
            let r = unsafe { sys::cuCtxGetCurrent(&mut current) };
            if r != CUresult::CUDA_SUCCESS || current != previous {
                // SAFETY: `previous` was current on this thread before (or null, which unbinds).
                let _ = unsafe { sys::cuCtxSetCurrent(previous) };
            }
        }
    }
}

/// The context current on this thread, if any.
pub(crate) fn current_context() -> Option<sys::CUcontext> {
    let mut current: sys::CUcontext = ptr::null_mut();
    // SAFETY: `current` is a valid out-pointer.
    let r = unsafe { sys::cuCtxGetCurrent(&mut current) };
    (r == CUresult::CUDA_SUCCESS && !current.is_null()).then_some(current)
}

/// The context a stream was created in, or `None` for the special handles (the legacy and
/// per-thread default streams, which belong to whatever context is current) or on error.
pub(crate) fn stream_context(handle: u64) -> Option<sys::CUcontext> {
    if is_special_stream(handle) {
        return None;
    }
    let mut ctx: sys::CUcontext = ptr::null_mut();
    // SAFETY: `handle` is a stream handle the caller named; the driver validates it and
    // returns an error for a bad one. `ctx` is a valid out-pointer.
    let r = unsafe { sys::cuStreamGetCtx(handle as usize as sys::CUstream, &mut ctx) };
    (r == CUresult::CUDA_SUCCESS && !ctx.is_null()).then_some(ctx)
}

/// The null stream (0), `CU_STREAM_LEGACY` (1) and `CU_STREAM_PER_THREAD` (2): handles that
/// stand for the default stream of the current context.
pub(crate) fn is_special_stream(handle: u64) -> bool {
    handle <= 2
}

/// The bytes in use on the device of context `ctx`: `cuMemGetInfo`'s total less free (device
/// wide: every context's and every process's allocations), with `ctx` made current for the call
/// when it is not already. `None` when the driver fails.
pub(crate) fn memory_used(ctx: sys::CUcontext) -> Option<u64> {
    let _bound = Bound::new(ctx);
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: the symbol exists (checked by `check_driver`); both are valid out-pointers; the
    // driver answers for the current context, or fails without one.
    let r = unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) };
    (r == CUresult::CUDA_SUCCESS).then(|| total.saturating_sub(free) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toolkit's stub found before the driver is named, with the fix.
    #[test]
    fn a_stub_driver_is_named_with_its_fix() {
        // (`describe` asks the driver for its words: not here, without one.)
        let why = init_help(CUresult::CUDA_ERROR_STUB_LIBRARY);
        assert!(
            why.contains("stub") && why.contains("LD_LIBRARY_PATH"),
            "{why}"
        );
        assert_eq!(init_help(CUresult::CUDA_ERROR_UNKNOWN), "");
    }
}
