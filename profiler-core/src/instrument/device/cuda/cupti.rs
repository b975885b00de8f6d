//! Kernel activity records through CUPTI (`PROF_KERNELS`): every kernel's device time, tied to
//! the measured run that launched it by an external correlation id.
//!
//! CUPTI hands records over in buffers it asks for and gives back through two callbacks that
//! carry no user pointer, so the gathered records live in a process-wide static.

// The FFI types keep the C headers' names, so that the header test (`headers.rs`) can spell
// them in C as they are.
#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys::{CUcontext, CUstream};

use super::loader::{api, Library};
use crate::instrument::device::{Correlation, KernelActivity};

/// `CUptiResult` (a C enum).
pub(crate) type CUptiResult = u32;
/// `CUpti_ActivityKind` (a C enum).
pub(crate) type CUpti_ActivityKind = u32;
/// `CUpti_ExternalCorrelationKind` (a C enum).
pub(crate) type CUpti_ExternalCorrelationKind = u32;

/// `CUpti_Activity`: the header every activity record starts with (8-byte aligned, as
/// `PACKED_ALIGNMENT` makes every record).
#[repr(C, align(8))]
pub(crate) struct CUpti_Activity {
    pub(crate) kind: CUpti_ActivityKind,
}

/// `CUpti_BuffersCallbackRequestFunc`: CUPTI asks for a buffer.
pub(crate) type CUpti_BuffersCallbackRequestFunc =
    Option<unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize)>;
/// `CUpti_BuffersCallbackCompleteFunc`: CUPTI gives a filled buffer back.
pub(crate) type CUpti_BuffersCallbackCompleteFunc =
    Option<unsafe extern "C" fn(CUcontext, u32, *mut u8, usize, usize)>;

/// The C signatures of the two callback types (return type, argument types), for the header
/// test; the Rust types above are what `register` passes.
#[cfg(test)]
pub(crate) const CALLBACKS: &[(&str, &str, &[&str])] = &[
    (
        "CUpti_BuffersCallbackRequestFunc",
        "()",
        &["*mut *mut u8", "*mut usize", "*mut usize"],
    ),
    (
        "CUpti_BuffersCallbackCompleteFunc",
        "()",
        &["CUcontext", "u32", "*mut u8", "usize", "usize"],
    ),
];

api! {
    /// Every CUPTI entry point this module calls unconditionally.
    struct Api {
        register_callbacks = "cuptiActivityRegisterCallbacks":
            fn(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) -> CUptiResult;
        enable = "cuptiActivityEnable": fn(CUpti_ActivityKind) -> CUptiResult;
        disable = "cuptiActivityDisable": fn(CUpti_ActivityKind) -> CUptiResult;
        flush_all = "cuptiActivityFlushAll": fn(u32) -> CUptiResult;
        next_record = "cuptiActivityGetNextRecord":
            fn(*mut u8, usize, *mut *mut CUpti_Activity) -> CUptiResult;
        push_external = "cuptiActivityPushExternalCorrelationId":
            fn(CUpti_ExternalCorrelationKind, u64) -> CUptiResult;
        pop_external = "cuptiActivityPopExternalCorrelationId":
            fn(CUpti_ExternalCorrelationKind, *mut u64) -> CUptiResult;
    }
}

api! {
    /// `cuptiActivityGetNumDroppedRecords`: how many records CUPTI dropped for a context and
    /// stream (its buffers full, or one it asked for declined).
    struct DroppedApi {
        dropped = "cuptiActivityGetNumDroppedRecords": fn(CUcontext, u32, *mut usize) -> CUptiResult;
    }
}

api! {
    /// `cuptiGetStreamIdEx` (CUDA 11.8 and later): the stream ids CUPTI puts in its records.
    struct StreamIdApi {
        stream_id = "cuptiGetStreamIdEx": fn(CUcontext, CUstream, u8, *mut u32) -> CUptiResult;
    }
}

/// The names the CUPTI library is looked for by, newest first (the packages and the toolkits
/// ship only the versioned name, `libcupti.so.12` or `.13`; a development install adds the
/// plain one).
pub(crate) const LIBRARY_NAMES: &[&str] = &[
    "libcupti.so",
    "libcupti.so.13",
    "libcupti.so.12",
    "libcupti.so.11",
];

/// `CUPTI_SUCCESS`.
pub(crate) const CUPTI_SUCCESS: CUptiResult = 0;
/// `CUPTI_ACTIVITY_KIND_KERNEL`.
pub(crate) const KIND_KERNEL: CUpti_ActivityKind = 3;
/// `CUPTI_ACTIVITY_KIND_DRIVER`.
pub(crate) const KIND_DRIVER: CUpti_ActivityKind = 4;
/// `CUPTI_ACTIVITY_KIND_RUNTIME`.
pub(crate) const KIND_RUNTIME: CUpti_ActivityKind = 5;
/// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
pub(crate) const KIND_CONCURRENT_KERNEL: CUpti_ActivityKind = 10;
/// `CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION`.
pub(crate) const KIND_EXTERNAL_CORRELATION: CUpti_ActivityKind = 39;
/// `CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0`.
pub(crate) const EXTERNAL_CUSTOM0: CUpti_ExternalCorrelationKind = 3;
/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`: also flush buffers that are not full yet.
pub(crate) const FLUSH_FORCED: u32 = 1;

/// The kinds enabled while kernels are recorded: the kernels themselves, the API calls that
/// launch them (external correlation records are only emitted for API records) and the
/// external correlations.
const KINDS: [CUpti_ActivityKind; 4] = [
    KIND_CONCURRENT_KERNEL,
    KIND_DRIVER,
    KIND_RUNTIME,
    KIND_EXTERNAL_CORRELATION,
];

/// Size of each activity buffer handed to CUPTI.
const BUFFER_SIZE: usize = 8 << 20;
/// CUPTI requires activity buffers aligned to 8 bytes.
const BUFFER_ALIGN: usize = 8;
/// Records kept between two drains, per kind; beyond it they are counted and dropped, so that a
/// run that never drains cannot grow without bound.
const MAX_GATHERED: usize = 1 << 21;

/// The prefix that every kernel record (`CUpti_ActivityKernel4` and later, as many as the
/// headers have) shares, with plain integers in place of the enums. The header test checks
/// each field's offset against every version in the CUDA 12 and 13 headers.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct KernelRecord {
    pub(crate) kind: u32,
    pub(crate) cache_config: u8,
    pub(crate) shared_memory_config: u8,
    pub(crate) registers_per_thread: u16,
    pub(crate) partitioned_global_cache_requested: u32,
    pub(crate) partitioned_global_cache_executed: u32,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) completed: u64,
    pub(crate) device_id: u32,
    pub(crate) context_id: u32,
    pub(crate) stream_id: u32,
    pub(crate) grid: [i32; 3],
    pub(crate) block: [i32; 3],
    pub(crate) static_shared_memory: i32,
    pub(crate) dynamic_shared_memory: i32,
    pub(crate) local_memory_per_thread: u32,
    pub(crate) local_memory_total: u32,
    pub(crate) correlation_id: u32,
    pub(crate) grid_id: i64,
    pub(crate) name: *const c_char,
}

/// `CUpti_ActivityExternalCorrelation`, with plain integers in place of the enums.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ExternalCorrelationRecord {
    pub(crate) kind: u32,
    pub(crate) external_kind: u32,
    pub(crate) external_id: u64,
    pub(crate) correlation_id: u32,
    pub(crate) reserved: u32,
}

/// Records gathered by the buffer callbacks, waiting for `drain_kernels`.
struct Gathered {
    kernels: Vec<KernelActivity>,
    correlations: Vec<Correlation>,
    /// Records dropped because the vectors were full.
    dropped: u64,
    /// Records CUPTI dropped itself (`cuptiActivityGetNumDroppedRecords`: its buffers full, or
    /// one it asked for that could not be allocated).
    dropped_by_cupti: u64,
    /// Kernel records without timestamps (CUPTI could not time the kernel, or handed the
    /// record over before it completed): left out.
    untimed: u64,
}

static GATHERED: Mutex<Gathered> = Mutex::new(Gathered {
    kernels: Vec::new(),
    correlations: Vec::new(),
    dropped: 0,
    dropped_by_cupti: 0,
    untimed: 0,
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
    // Declined when null: CUPTI drops the records it had for it and counts them itself
    // (`cuptiActivityGetNumDroppedRecords`, read as each buffer comes back).
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
    context: CUcontext,
    stream_id: u32,
    buffer: *mut u8,
    _size: usize,
    valid_size: usize,
) {
    let mut kept = Kept::default();
    // Registered only once the library is loaded, so the table is there.
    let loaded = match LOADED.get() {
        Some(Ok(loaded)) => Some(loaded),
        _ => None,
    };
    if let Some(api) = loaded.and_then(|l| l.dropped) {
        let mut n = 0usize;
        // SAFETY: resolved with the headers' type; the context and stream id are the ones
        // CUPTI passed for this buffer; `n` is a valid out-pointer.
        if unsafe { (api.dropped)(context, stream_id, &mut n) } == CUPTI_SUCCESS {
            kept.dropped_by_cupti = n as u64;
        }
    }
    if buffer.is_null() {
        keep(kept);
        return;
    }
    if let Some(loaded) = loaded {
        let mut record: *mut CUpti_Activity = std::ptr::null_mut();
        loop {
            // SAFETY: `buffer` holds `valid_size` bytes of records written by CUPTI; `record`
            // is null at first, then the previous record, as the function requires.
            let r = unsafe { (loaded.api.next_record)(buffer, valid_size, &mut record) };
            if r != CUPTI_SUCCESS || record.is_null() {
                break; // CUPTI_ERROR_MAX_LIMIT_REACHED: no more records; anything else: give up
            }
            // SAFETY: `record` points at a record inside the buffer, which starts with its kind
            // as a 32-bit integer; read as an integer, so an unknown kind is harmless.
            let kind = unsafe { (record as *const u32).read_unaligned() };
            match kind {
                KIND_KERNEL | KIND_CONCURRENT_KERNEL => {
                    // SAFETY: kernel records are at least as large as the prefix, which every
                    // version since 4 shares (checked against the headers by `headers.rs`).
                    let k = unsafe { (record as *const KernelRecord).read_unaligned() };
                    match kernel_activity(&k) {
                        Some(kernel) => kept.kernels.push(kernel),
                        None => kept.untimed += 1,
                    }
                }
                KIND_EXTERNAL_CORRELATION => {
                    // SAFETY: an external correlation record has exactly this layout (checked
                    // against the headers by `headers.rs`).
                    let c =
                        unsafe { (record as *const ExternalCorrelationRecord).read_unaligned() };
                    if c.external_kind == EXTERNAL_CUSTOM0 {
                        kept.correlations.push(Correlation {
                            correlation: c.correlation_id,
                            external: c.external_id,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(layout) = buffer_layout() {
        // SAFETY: `buffer` was allocated by `buffer_requested` with this same layout, and CUPTI
        // is done with it.
        unsafe { std::alloc::dealloc(buffer, layout) };
    }
    keep(kept);
}

/// What one buffer gave.
#[derive(Default)]
struct Kept {
    kernels: Vec<KernelActivity>,
    correlations: Vec<Correlation>,
    dropped_by_cupti: u64,
    untimed: u64,
}

/// A kernel record as the device reports it; `None` for one without timestamps (both 0: CUPTI
/// could not time it; or an end before the start: a record handed over incomplete), which
/// would otherwise put the kernel at the start of the device's clock.
fn kernel_activity(k: &KernelRecord) -> Option<KernelActivity> {
    if k.start == 0 || k.end < k.start {
        return None;
    }
    let name = if k.name.is_null() {
        String::new()
    } else {
        // SAFETY: CUPTI's kernel name is a NUL-terminated string that stays valid at least
        // until the buffer is given back; it is copied here.
        unsafe { CStr::from_ptr(k.name) }
            .to_string_lossy()
            .into_owned()
    };
    let dims = |d: [i32; 3]| d.map(|v| u32::try_from(v).unwrap_or(0));
    Some(KernelActivity {
        correlation: k.correlation_id,
        name,
        start_ns: k.start,
        end_ns: k.end,
        device: k.device_id,
        stream: u64::from(k.stream_id),
        grid: dims(k.grid),
        block: dims(k.block),
    })
}

/// Adds a buffer's records to those gathered, up to the bound; the rest are counted as dropped.
fn keep(kept: Kept) {
    let Kept {
        kernels,
        correlations,
        dropped_by_cupti,
        untimed,
    } = kept;
    let mut g = gathered();
    g.dropped_by_cupti += dropped_by_cupti;
    g.untimed += untimed;
    let room = MAX_GATHERED.saturating_sub(g.kernels.len());
    g.dropped += kernels.len().saturating_sub(room) as u64;
    g.kernels.extend(kernels.into_iter().take(room));
    let room = MAX_GATHERED.saturating_sub(g.correlations.len());
    g.dropped += correlations.len().saturating_sub(room) as u64;
    g.correlations.extend(correlations.into_iter().take(room));
}

/// The CUPTI library and its entry points, loaded once per process.
#[derive(Debug)]
struct Loaded {
    /// Kept open for the process: the function pointers point into it.
    _lib: Library,
    api: Api,
    stream_ids: Option<StreamIdApi>,
    dropped: Option<DroppedApi>,
}

static LOADED: OnceLock<Result<Loaded, String>> = OnceLock::new();

/// Loads CUPTI and registers the buffer callbacks, once per process.
fn register() -> Result<&'static Loaded, String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    let loaded = LOADED
        .get_or_init(|| {
            let lib = Library::open("the CUPTI library (libcupti)", LIBRARY_NAMES)?;
            Ok(Loaded {
                api: Api::load(&lib)?,
                stream_ids: StreamIdApi::load(&lib).ok(),
                dropped: DroppedApi::load(&lib).ok(),
                _lib: lib,
            })
        })
        .as_ref()
        .map_err(Clone::clone)?;
    REGISTERED
        .get_or_init(|| {
            // SAFETY: the entry point was resolved with the type the headers declare; the
            // callbacks have the signatures CUPTI expects and live for the whole process.
            let r = unsafe {
                (loaded.api.register_callbacks)(Some(buffer_requested), Some(buffer_completed))
            };
            if r == CUPTI_SUCCESS {
                Ok(())
            } else {
                Err(format!("cuptiActivityRegisterCallbacks failed: error {r}"))
            }
        })
        .clone()?;
    Ok(loaded)
}

/// The CUPTI state of a device.
#[derive(Debug)]
pub(crate) struct Cupti {
    api: Api,
    /// `cuptiGetStreamIdEx`, where exported.
    stream_ids: Option<StreamIdApi>,
    /// Whether the activity kinds are enabled now.
    enabled: AtomicBool,
    /// Whether a warning about dropped records was printed.
    warned_dropped: AtomicBool,
}

impl Cupti {
    /// Loads CUPTI and registers the callbacks; activity collection stays off until
    /// [`Cupti::enable`].
    pub(crate) fn open() -> Result<Cupti, String> {
        let loaded = register()?;
        Ok(Cupti {
            api: loaded.api,
            stream_ids: loaded.stream_ids,
            enabled: AtomicBool::new(false),
            warned_dropped: AtomicBool::new(false),
        })
    }

    /// Turns the activity kinds on (`Err` says why they could not be) or off (and flushes).
    pub(crate) fn enable(&self, on: bool) -> Result<(), String> {
        if on {
            for (i, kind) in KINDS.iter().enumerate() {
                // SAFETY: resolved at `open` with the headers' type.
                let r = unsafe { (self.api.enable)(*kind) };
                if r != CUPTI_SUCCESS {
                    for enabled in &KINDS[..i] {
                        // SAFETY: as above.
                        let _ = unsafe { (self.api.disable)(*enabled) };
                    }
                    return Err(format!(
                        "cuptiActivityEnable(kind {kind}) failed: error {r}"
                    ));
                }
            }
            self.enabled.store(true, Relaxed);
        } else {
            if !self.enabled.swap(false, Relaxed) {
                return Ok(());
            }
            for kind in KINDS {
                // SAFETY: resolved at `open` with the headers' type.
                let _ = unsafe { (self.api.disable)(kind) };
            }
            // SAFETY: as above; the callbacks run before it returns.
            let _ = unsafe { (self.api.flush_all)(FLUSH_FORCED) };
        }
        Ok(())
    }

    /// Tags the launches of this thread with `external` until [`Cupti::pop`].
    #[inline]
    pub(crate) fn push(&self, external: u64) {
        // SAFETY: resolved at `open` with the headers' type.
        let _ = unsafe { (self.api.push_external)(EXTERNAL_CUSTOM0, external) };
    }

    /// Ends the innermost tag of this thread.
    #[inline]
    pub(crate) fn pop(&self) {
        let mut last = 0u64;
        // SAFETY: resolved at `open` with the headers' type; `last` is a valid out-pointer.
        let _ = unsafe { (self.api.pop_external)(EXTERNAL_CUSTOM0, &mut last) };
    }

    /// The id CUPTI gives `stream` (of context `ctx`) in its records, if it can tell.
    pub(crate) fn stream_id(&self, ctx: CUcontext, handle: u64) -> Option<u64> {
        let api = self.stream_ids?;
        // CU_STREAM_PER_THREAD is the per-thread default stream.
        let per_thread = u8::from(handle == 2);
        let mut id = 0u32;
        // SAFETY: resolved at `open` with the headers' type; `ctx` is a retained context; the
        // stream handle is validated by CUPTI; `id` is a valid out-pointer.
        let r = unsafe { (api.stream_id)(ctx, handle as usize as CUstream, per_thread, &mut id) };
        (r == CUPTI_SUCCESS).then_some(u64::from(id))
    }

    /// Flushes the completed buffers and moves what was gathered out.
    pub(crate) fn drain(
        &self,
        kernels: &mut Vec<KernelActivity>,
        correlations: &mut Vec<Correlation>,
    ) {
        // SAFETY: resolved at `open` with the headers' type; the completion callback runs (and
        // takes the lock) before this returns, so the lock is not held here.
        let _ = unsafe { (self.api.flush_all)(0) };
        let (dropped, by_cupti, untimed) = {
            let mut g = gathered();
            kernels.append(&mut g.kernels);
            correlations.append(&mut g.correlations);
            (
                std::mem::take(&mut g.dropped),
                std::mem::take(&mut g.dropped_by_cupti),
                std::mem::take(&mut g.untimed),
            )
        };
        if let Some(warning) = lost_records(dropped, by_cupti, untimed) {
            if !self.warned_dropped.swap(true, Relaxed) {
                say!("profiler-core: warning: PROF_KERNELS: {warning}");
            }
        }
    }
}

/// The warning for kernel records lost between two drains, if any were: kept out because the
/// vectors were full (`dropped`), dropped by CUPTI itself (`by_cupti`: records, or buffers it
/// could not get), or without timestamps (`untimed`). Kernels are then missing from the
/// events' kernel lists and sums.
fn lost_records(dropped: u64, by_cupti: u64, untimed: u64) -> Option<String> {
    let mut parts = Vec::new();
    if dropped > 0 {
        parts.push(format!(
            "{dropped} were dropped (more than {MAX_GATHERED} gathered between two drains)"
        ));
    }
    if by_cupti > 0 {
        parts.push(format!(
            "{by_cupti} were dropped by CUPTI (its buffers full, or one it asked for could not \
             be allocated)"
        ));
    }
    if untimed > 0 {
        parts.push(format!(
            "{untimed} came without timestamps (CUPTI could not time the kernel) and are left out"
        ));
    }
    (!parts.is_empty()).then(|| {
        format!(
            "kernel activity records were lost: {}; the kernel lists and sums miss them",
            parts.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    fn record(start: u64, end: u64) -> KernelRecord {
        KernelRecord {
            kind: KIND_CONCURRENT_KERNEL,
            cache_config: 0,
            shared_memory_config: 0,
            registers_per_thread: 0,
            partitioned_global_cache_requested: 0,
            partitioned_global_cache_executed: 0,
            start,
            end,
            completed: 0,
            device_id: 0,
            context_id: 1,
            stream_id: 7,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            static_shared_memory: 0,
            dynamic_shared_memory: 0,
            local_memory_per_thread: 0,
            local_memory_total: 0,
            correlation_id: 9,
            grid_id: 0,
            name: std::ptr::null(),
        }
    }

    /// A record without timestamps (0 and 0: CUPTI could not time the kernel) or ending before
    /// it starts is left out: kept, it put the kernel at the device clock's origin, and the
    /// run's projection became the clock's whole reading (about 1.7e18 ns).
    #[test]
    fn kernel_records_without_timestamps_are_left_out() {
        assert!(kernel_activity(&record(0, 0)).is_none());
        assert!(kernel_activity(&record(2_000, 1_000)).is_none());
        let k = kernel_activity(&record(1_000, 3_000)).expect("a timed kernel");
        assert_eq!(
            (k.start_ns, k.end_ns, k.correlation, k.stream),
            (1_000, 3_000, 9, 7)
        );
        assert_eq!(lost_records(0, 0, 0), None);
        let w = lost_records(0, 3, 2).unwrap();
        assert!(w.contains("3 were dropped by CUPTI") && w.contains("2 came without timestamps"));
    }

    #[test]
    fn record_prefixes_have_the_cupti_sizes() {
        assert_eq!(std::mem::size_of::<ExternalCorrelationRecord>(), 24);
        assert_eq!(offset_of!(KernelRecord, name), 104);
    }
}
