//! Kernel activity records through CUPTI (`PROF_KERNELS`): every kernel's device time, tied to
//! the measured run that launched it by an external correlation id.
//!
//! CUPTI hands records over in buffers it asks for and gives back through two callbacks that
//! carry no user pointer, so the gathered records live in a process-wide static.

use std::ffi::{c_char, CStr};
use std::mem::offset_of;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

use cudarc::cupti::sys::{
    self, CUptiResult, CUpti_ActivityKind as Kind, CUpti_ExternalCorrelationKind as ExternalKind,
};

use crate::device::{Correlation, KernelActivity};

/// Every CUPTI entry point this module calls.
const SYMBOLS: &[&str] = &[
    "cuptiActivityRegisterCallbacks",
    "cuptiActivityEnable",
    "cuptiActivityDisable",
    "cuptiActivityFlushAll",
    "cuptiActivityGetNextRecord",
    "cuptiActivityPushExternalCorrelationId",
    "cuptiActivityPopExternalCorrelationId",
];

/// The kinds enabled while kernels are recorded: the kernels themselves, the API calls that
/// launch them (external correlation records are only emitted for API records) and the
/// external correlations.
const KINDS: [Kind; 4] = [
    Kind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    Kind::CUPTI_ACTIVITY_KIND_DRIVER,
    Kind::CUPTI_ACTIVITY_KIND_RUNTIME,
    Kind::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
];

/// Size of each activity buffer handed to CUPTI.
const BUFFER_SIZE: usize = 8 << 20;
/// CUPTI requires activity buffers aligned to 8 bytes.
const BUFFER_ALIGN: usize = 8;
/// Records kept between two drains, per kind; beyond it they are counted and dropped, so that a
/// run that never drains cannot grow without bound.
const MAX_GATHERED: usize = 1 << 21;
/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`: also flush buffers that are not full yet.
const FLUSH_FORCED: u32 = 1;

/// Raw values of the record kinds read (compared as integers: a record of a kind this build
/// does not know must not be turned into the Rust enum).
const KIND_KERNEL: u32 = Kind::CUPTI_ACTIVITY_KIND_KERNEL as u32;
const KIND_CONCURRENT_KERNEL: u32 = Kind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32;
const KIND_EXTERNAL_CORRELATION: u32 = Kind::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION as u32;
const EXTERNAL_CUSTOM0: u32 = ExternalKind::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 as u32;

/// The prefix that every kernel record (`CUpti_ActivityKernel4` to `CUpti_ActivityKernel10`)
/// shares, with plain integers in place of the enums.
#[repr(C)]
#[derive(Clone, Copy)]
struct KernelRecord {
    kind: u32,
    cache_config: u8,
    shared_memory_config: u8,
    registers_per_thread: u16,
    partitioned_global_cache_requested: u32,
    partitioned_global_cache_executed: u32,
    start: u64,
    end: u64,
    completed: u64,
    device_id: u32,
    context_id: u32,
    stream_id: u32,
    grid: [i32; 3],
    block: [i32; 3],
    static_shared_memory: i32,
    dynamic_shared_memory: i32,
    local_memory_per_thread: u32,
    local_memory_total: u32,
    correlation_id: u32,
    grid_id: i64,
    name: *const c_char,
}

/// `CUpti_ActivityExternalCorrelation`, with plain integers in place of the enums.
#[repr(C)]
#[derive(Clone, Copy)]
struct ExternalCorrelationRecord {
    kind: u32,
    external_kind: u32,
    external_id: u64,
    correlation_id: u32,
    reserved: u32,
}

// The prefixes above must match the layouts of the structures `cudarc` generated from the
// CUPTI headers.
const _: () = {
    type K = sys::CUpti_ActivityKernel9;
    assert!(offset_of!(KernelRecord, start) == offset_of!(K, start));
    assert!(offset_of!(KernelRecord, end) == offset_of!(K, end));
    assert!(offset_of!(KernelRecord, device_id) == offset_of!(K, deviceId));
    assert!(offset_of!(KernelRecord, stream_id) == offset_of!(K, streamId));
    assert!(offset_of!(KernelRecord, grid) == offset_of!(K, gridX));
    assert!(offset_of!(KernelRecord, grid) + 8 == offset_of!(K, gridZ));
    assert!(offset_of!(KernelRecord, block) == offset_of!(K, blockX));
    assert!(offset_of!(KernelRecord, block) + 8 == offset_of!(K, blockZ));
    assert!(offset_of!(KernelRecord, correlation_id) == offset_of!(K, correlationId));
    assert!(offset_of!(KernelRecord, name) == offset_of!(K, name));
    assert!(std::mem::size_of::<KernelRecord>() <= std::mem::size_of::<K>());
    type E = sys::CUpti_ActivityExternalCorrelation;
    assert!(offset_of!(ExternalCorrelationRecord, external_kind) == offset_of!(E, externalKind));
    assert!(offset_of!(ExternalCorrelationRecord, external_id) == offset_of!(E, externalId));
    assert!(offset_of!(ExternalCorrelationRecord, correlation_id) == offset_of!(E, correlationId));
    assert!(std::mem::size_of::<ExternalCorrelationRecord>() == std::mem::size_of::<E>());
};

/// Records gathered by the buffer callbacks, waiting for `drain_kernels`.
struct Gathered {
    kernels: Vec<KernelActivity>,
    correlations: Vec<Correlation>,
    /// Records dropped because the vectors were full.
    dropped: u64,
}

static GATHERED: Mutex<Gathered> = Mutex::new(Gathered {
    kernels: Vec::new(),
    correlations: Vec::new(),
    dropped: 0,
});

fn gathered() -> std::sync::MutexGuard<'static, Gathered> {
    // A panic while holding the lock cannot leave the vectors inconsistent: keep going.
    GATHERED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn buffer_layout() -> Option<std::alloc::Layout> {
    std::alloc::Layout::from_size_align(BUFFER_SIZE, BUFFER_ALIGN).ok()
}

/// CUPTI asks for a buffer to fill.
///
/// # Safety
/// Called by CUPTI with valid out-pointers.
unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_num_records: *mut usize,
) {
    let (ptr, len) = match buffer_layout() {
        // SAFETY: the layout has a non-zero size.
        Some(layout) => (unsafe { std::alloc::alloc(layout) }, BUFFER_SIZE),
        None => (std::ptr::null_mut(), 0),
    };
    let len = if ptr.is_null() { 0 } else { len };
    // SAFETY: CUPTI passes valid out-pointers; a null buffer tells it to drop records.
    unsafe {
        if !buffer.is_null() {
            *buffer = ptr;
        }
        if !size.is_null() {
            *size = len;
        }
        if !max_num_records.is_null() {
            *max_num_records = 0; // as many as fit
        }
    }
}

/// CUPTI gives back a buffer holding `valid_size` bytes of records.
///
/// # Safety
/// Called by CUPTI with a buffer that `buffer_requested` allocated.
unsafe extern "C" fn buffer_completed(
    _context: cudarc::driver::sys::CUcontext,
    _stream_id: u32,
    buffer: *mut u8,
    _size: usize,
    valid_size: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut kernels = Vec::new();
    let mut correlations = Vec::new();
    let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
    loop {
        // SAFETY: `buffer` holds `valid_size` bytes of records written by CUPTI; `record` is
        // null at first, then the previous record, as the function requires.
        let r = unsafe { sys::cuptiActivityGetNextRecord(buffer, valid_size, &mut record) };
        if r != CUptiResult::CUPTI_SUCCESS || record.is_null() {
            break; // CUPTI_ERROR_MAX_LIMIT_REACHED: no more records; anything else: give up
        }
        // SAFETY: `record` points at a record inside the buffer, which starts with its kind
        // as a 32-bit integer; read as an integer, so an unknown kind is harmless.
        let kind = unsafe { (record as *const u32).read_unaligned() };
        match kind {
            KIND_KERNEL | KIND_CONCURRENT_KERNEL => {
                // SAFETY: kernel records are at least as large as the prefix (checked against
                // `CUpti_ActivityKernel9` at compile time; every version since 4 shares it).
                let k = unsafe { (record as *const KernelRecord).read_unaligned() };
                let name = if k.name.is_null() {
                    String::new()
                } else {
                    // SAFETY: CUPTI's kernel name is a NUL-terminated string that stays valid
                    // at least until the buffer is given back; it is copied here.
                    unsafe { CStr::from_ptr(k.name) }
                        .to_string_lossy()
                        .into_owned()
                };
                let dims = |d: [i32; 3]| d.map(|v| u32::try_from(v).unwrap_or(0));
                kernels.push(KernelActivity {
                    correlation: k.correlation_id,
                    name,
                    start_ns: k.start,
                    end_ns: k.end,
                    device: k.device_id,
                    stream: u64::from(k.stream_id),
                    grid: dims(k.grid),
                    block: dims(k.block),
                });
            }
            KIND_EXTERNAL_CORRELATION => {
                // SAFETY: an external correlation record has exactly this layout (checked
                // against `CUpti_ActivityExternalCorrelation` at compile time).
                let c = unsafe { (record as *const ExternalCorrelationRecord).read_unaligned() };
                if c.external_kind == EXTERNAL_CUSTOM0 {
                    correlations.push(Correlation {
                        correlation: c.correlation_id,
                        external: c.external_id,
                    });
                }
            }
            _ => {}
        }
    }
    if let Some(layout) = buffer_layout() {
        // SAFETY: `buffer` was allocated by `buffer_requested` with this same layout, and CUPTI
        // is done with it.
        unsafe { std::alloc::dealloc(buffer, layout) };
    }
    if kernels.is_empty() && correlations.is_empty() {
        return;
    }
    let mut g = gathered();
    let room = MAX_GATHERED.saturating_sub(g.kernels.len());
    g.dropped += kernels.len().saturating_sub(room) as u64;
    g.kernels.extend(kernels.into_iter().take(room));
    let room = MAX_GATHERED.saturating_sub(g.correlations.len());
    g.dropped += correlations.len().saturating_sub(room) as u64;
    g.correlations.extend(correlations.into_iter().take(room));
}

/// Loads CUPTI and registers the buffer callbacks, once per process.
fn register() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            super::driver::cupti_has(SYMBOLS)?;
            // SAFETY: the symbols exist (checked above); the callbacks have the signatures
            // CUPTI expects and live for the whole process.
            let r = unsafe {
                sys::cuptiActivityRegisterCallbacks(Some(buffer_requested), Some(buffer_completed))
            };
            if r == CUptiResult::CUPTI_SUCCESS {
                Ok(())
            } else {
                Err(format!("cuptiActivityRegisterCallbacks failed: {r:?}"))
            }
        })
        .clone()
}

/// The CUPTI state of a device.
#[derive(Debug)]
pub(crate) struct Cupti {
    /// Whether the activity kinds are enabled now.
    enabled: AtomicBool,
    /// Whether `cuptiGetStreamIdEx` is exported.
    stream_ids: bool,
    /// Whether a warning about dropped records was printed.
    warned_dropped: AtomicBool,
}

impl Cupti {
    /// Loads CUPTI and registers the callbacks; activity collection stays off until
    /// [`Cupti::enable`].
    pub(crate) fn open() -> Result<Cupti, String> {
        register()?;
        Ok(Cupti {
            enabled: AtomicBool::new(false),
            stream_ids: super::driver::cupti_has(&["cuptiGetStreamIdEx"]).is_ok(),
            warned_dropped: AtomicBool::new(false),
        })
    }

    /// Turns the activity kinds on (`Err` says why they could not be) or off (and flushes).
    pub(crate) fn enable(&self, on: bool) -> Result<(), String> {
        if on {
            for (i, kind) in KINDS.iter().enumerate() {
                // SAFETY: symbols checked at `open`.
                let r = unsafe { sys::cuptiActivityEnable(*kind) };
                if r != CUptiResult::CUPTI_SUCCESS {
                    for enabled in &KINDS[..i] {
                        // SAFETY: symbols checked at `open`.
                        let _ = unsafe { sys::cuptiActivityDisable(*enabled) };
                    }
                    return Err(format!("cuptiActivityEnable({kind:?}) failed: {r:?}"));
                }
            }
            self.enabled.store(true, Relaxed);
        } else {
            if !self.enabled.swap(false, Relaxed) {
                return Ok(());
            }
            for kind in KINDS {
                // SAFETY: symbols checked at `open`.
                let _ = unsafe { sys::cuptiActivityDisable(kind) };
            }
            // SAFETY: symbols checked at `open`; the callbacks run before it returns.
            let _ = unsafe { sys::cuptiActivityFlushAll(FLUSH_FORCED) };
        }
        Ok(())
    }

    /// Tags the launches of this thread with `external` until [`Cupti::pop`].
    #[inline]
    pub(crate) fn push(&self, external: u64) {
        // SAFETY: symbols checked at `open`.
        let _ = unsafe {
            sys::cuptiActivityPushExternalCorrelationId(
                ExternalKind::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                external,
            )
        };
    }

    /// Ends the innermost tag of this thread.
    #[inline]
    pub(crate) fn pop(&self) {
        let mut last = 0u64;
        // SAFETY: symbols checked at `open`; `last` is a valid out-pointer.
        let _ = unsafe {
            sys::cuptiActivityPopExternalCorrelationId(
                ExternalKind::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                &mut last,
            )
        };
    }

    /// The id CUPTI gives `stream` (of context `ctx`) in its records, if it can tell.
    pub(crate) fn stream_id(
        &self,
        ctx: cudarc::driver::sys::CUcontext,
        handle: u64,
    ) -> Option<u64> {
        if !self.stream_ids {
            return None;
        }
        // CU_STREAM_PER_THREAD is the per-thread default stream.
        let per_thread = u8::from(handle == 2);
        let mut id = 0u32;
        // SAFETY: the symbol exists (checked at `open`); `ctx` is a retained context; the
        // stream handle is validated by CUPTI; `id` is a valid out-pointer.
        let r = unsafe {
            sys::cuptiGetStreamIdEx(
                ctx,
                handle as usize as cudarc::driver::sys::CUstream,
                per_thread,
                &mut id,
            )
        };
        (r == CUptiResult::CUPTI_SUCCESS).then_some(u64::from(id))
    }

    /// Flushes the completed buffers and moves what was gathered out.
    pub(crate) fn drain(
        &self,
        kernels: &mut Vec<KernelActivity>,
        correlations: &mut Vec<Correlation>,
    ) {
        // SAFETY: symbols checked at `open`; the completion callback runs (and takes the lock)
        // before this returns, so the lock is not held here.
        let _ = unsafe { sys::cuptiActivityFlushAll(0) };
        let dropped = {
            let mut g = gathered();
            kernels.append(&mut g.kernels);
            correlations.append(&mut g.correlations);
            std::mem::take(&mut g.dropped)
        };
        if dropped > 0 && !self.warned_dropped.swap(true, Relaxed) {
            eprintln!(
                "profiler-core: warning: PROF_KERNELS: {dropped} kernel activity records were \
                 dropped (more than {MAX_GATHERED} gathered between two drains)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_prefixes_have_the_cupti_sizes() {
        assert_eq!(std::mem::size_of::<ExternalCorrelationRecord>(), 24);
        assert_eq!(offset_of!(KernelRecord, name), 104);
    }
}
