//! NVTX ranges for the probes (`PROF_NVTX`): one domain, one category per layer, one
//! registered message and colour per probe, all built once so that a push only indexes a table.

// The FFI types keep the C headers' names, so that the header test (`headers.rs`) can spell
// them in C as they are.
#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;

use super::loader::{api, Library};
use crate::instrument::device::RangeInfo;

/// The NVTX domain every range goes to.
const DOMAIN: &str = "profiler-core";

/// `nvtxDomainHandle_t`: an opaque pointer.
pub(crate) type nvtxDomainHandle_t = *mut c_void;
/// `nvtxStringHandle_t`: an opaque pointer.
pub(crate) type nvtxStringHandle_t = *mut c_void;

/// `nvtxMessageValue_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union nvtxMessageValue_t {
    pub(crate) ascii: *const c_char,
    pub(crate) unicode: *const u32,
    pub(crate) registered: nvtxStringHandle_t,
}

/// `nvtxEventAttributes_t` (version 3 of the structure, `nvtxEventAttributes_v2`); the payload
/// union, never used here, as its 64-bit member.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct nvtxEventAttributes_t {
    pub(crate) version: u16,
    pub(crate) size: u16,
    pub(crate) category: u32,
    pub(crate) colorType: i32,
    pub(crate) color: u32,
    pub(crate) payloadType: i32,
    pub(crate) reserved0: i32,
    pub(crate) payload: u64,
    pub(crate) messageType: i32,
    pub(crate) message: nvtxMessageValue_t,
}

/// `NVTX_VERSION`: the version of the attribute structure.
pub(crate) const NVTX_VERSION: u16 = 3;
/// `NVTX_COLOR_ARGB`.
pub(crate) const NVTX_COLOR_ARGB: i32 = 1;
/// `NVTX_PAYLOAD_UNKNOWN`.
pub(crate) const NVTX_PAYLOAD_UNKNOWN: i32 = 0;
/// `NVTX_MESSAGE_UNKNOWN`.
pub(crate) const NVTX_MESSAGE_UNKNOWN: i32 = 0;
/// `NVTX_MESSAGE_TYPE_ASCII`.
pub(crate) const NVTX_MESSAGE_TYPE_ASCII: i32 = 1;
/// `NVTX_MESSAGE_TYPE_REGISTERED`.
pub(crate) const NVTX_MESSAGE_TYPE_REGISTERED: i32 = 3;

api! {
    /// Every NVTX entry point this module calls.
    struct Api {
        domain_create = "nvtxDomainCreateA": fn(*const c_char) -> nvtxDomainHandle_t;
        name_category = "nvtxDomainNameCategoryA":
            fn(nvtxDomainHandle_t, u32, *const c_char) -> ();
        register_string = "nvtxDomainRegisterStringA":
            fn(nvtxDomainHandle_t, *const c_char) -> nvtxStringHandle_t;
        range_push = "nvtxDomainRangePushEx":
            fn(nvtxDomainHandle_t, *const nvtxEventAttributes_t) -> c_int;
        range_pop = "nvtxDomainRangePop": fn(nvtxDomainHandle_t) -> c_int;
    }
}

/// The names the NVTX library is looked for by: NVTX 2's `libnvToolsExt` (CUDA 12 toolkits and
/// earlier), then the NVTX 3 interop library that exports the same C API (what the
/// `nvidia-nvtx` packages ship; NVTX 3 itself is header-only).
pub(crate) const LIBRARY_NAMES: &[&str] = &[
    "libnvToolsExt.so",
    "libnvToolsExt.so.1",
    "libnvtx3interop.so",
    "libnvtx3interop.so.1",
];

/// Forward passes: green.
pub(crate) const FWD: u32 = 0xFF2C_A02C;
/// Backward passes: red.
pub(crate) const BWD: u32 = 0xFFD6_2728;
/// Optimizer updates: blue.
pub(crate) const UPDATE: u32 = 0xFF1F_77B4;
/// No phase: grey.
pub(crate) const NO_PHASE: u32 = 0xFF7F_7F7F;
/// Other phases: picked from this palette by a stable hash of the phase.
pub(crate) const PALETTE: [u32; 6] = [
    0xFFFF_7F0E, // orange
    0xFF94_67BD, // purple
    0xFF8C_564B, // brown
    0xFFE3_77C2, // pink
    0xFFBC_BD22, // olive
    0xFF17_BECF, // cyan
];

/// The ARGB colour of a range of this phase.
pub(crate) fn phase_colour(phase: Option<&str>) -> u32 {
    let Some(phase) = phase else {
        return NO_PHASE;
    };
    match phase.to_ascii_lowercase().as_str() {
        "fwd" | "forward" => FWD,
        "bwd" | "backward" => BWD,
        "update" | "opt" | "optim" | "optimizer" | "optimiser" => UPDATE,
        other => {
            // FNV-1a: stable across runs and builds, unlike the standard library's hasher.
            let hash = other.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            PALETTE[(hash % PALETTE.len() as u64) as usize]
        }
    }
}

/// Distinct layers in order of first appearance; a range's category is its layer's index
/// plus one (0 means no category).
pub(crate) fn categories(ranges: &[RangeInfo]) -> (Vec<&str>, Vec<u32>) {
    let mut layers: Vec<&str> = Vec::new();
    let ids = ranges
        .iter()
        .map(|range| match range.layer.as_deref() {
            None => 0,
            Some(layer) => {
                let index = match layers.iter().position(|l| *l == layer) {
                    Some(index) => index,
                    None => {
                        layers.push(layer);
                        layers.len() - 1
                    }
                };
                u32::try_from(index + 1).unwrap_or(0)
            }
        })
        .collect();
    (layers, ids)
}

/// A C string for NVTX: interior NUL bytes (which a C string cannot hold) are dropped.
fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "")).unwrap_or_default()
}

/// The prebuilt ranges. The attribute structures point at registered strings owned by the
/// NVTX library, or at the `CString`s kept here.
struct Ranges {
    attributes: Vec<nvtxEventAttributes_t>,
    /// Pushed for an index that was never registered, so that pushes and pops stay paired.
    fallback: nvtxEventAttributes_t,
    /// The ASCII messages the attributes may point at; never read, only kept alive.
    _messages: Vec<CString>,
}

// SAFETY: the raw pointers in the attributes point at data that is never mutated after
// `set_ranges` (the `CString`s owned here, whose heap buffers do not move when the struct
// does, and strings registered with, and owned by, the NVTX library for the process's
// lifetime). Sharing read-only pointers between threads is sound.
unsafe impl Send for Ranges {}
// SAFETY: as for `Send`: the structure is immutable once built.
unsafe impl Sync for Ranges {}

/// The NVTX state of a device: the domain, and the ranges once registered.
pub(crate) struct Nvtx {
    api: Api,
    /// `nvtxDomainHandle_t` as an integer, so that the struct is `Send + Sync`. Null (0) when
    /// no tool is attached: NVTX then treats every call as a no-op.
    domain: usize,
    ranges: OnceLock<Ranges>,
}

impl std::fmt::Debug for Nvtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvtx")
            .field("domain", &format_args!("{:#x}", self.domain))
            .field(
                "ranges",
                &self.ranges.get().map_or(0, |r| r.attributes.len()),
            )
            .finish()
    }
}

/// An event attribute structure with a colour and a category, without a message.
fn attributes(category: u32, colour: u32) -> nvtxEventAttributes_t {
    nvtxEventAttributes_t {
        // NVTX_VERSION and NVTX_EVENT_ATTRIB_STRUCT_SIZE, as the headers' macros set them.
        version: NVTX_VERSION,
        size: std::mem::size_of::<nvtxEventAttributes_t>() as u16,
        category,
        colorType: NVTX_COLOR_ARGB,
        color: colour,
        payloadType: NVTX_PAYLOAD_UNKNOWN,
        reserved0: 0,
        payload: 0,
        messageType: NVTX_MESSAGE_UNKNOWN,
        message: nvtxMessageValue_t {
            ascii: std::ptr::null(),
        },
    }
}

/// The NVTX library and its entry points, loaded once per process.
fn load() -> Result<Api, String> {
    static LOADED: OnceLock<Result<(Library, Api), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let lib = Library::open("the NVTX library (libnvToolsExt)", LIBRARY_NAMES)?;
            let api = Api::load(&lib)?;
            Ok((lib, api))
        })
        .as_ref()
        .map(|(_, api)| *api)
        .map_err(Clone::clone)
}

impl Nvtx {
    /// Loads NVTX and creates the domain.
    pub(crate) fn open() -> Result<Nvtx, String> {
        let api = load()?;
        let name = c_string(DOMAIN);
        // SAFETY: resolved with the headers' type; `name` is a valid C string that NVTX copies
        // (or ignores when no tool is attached).
        let domain = unsafe { (api.domain_create)(name.as_ptr()) };
        Ok(Nvtx {
            api,
            domain: domain as usize,
            ranges: OnceLock::new(),
        })
    }

    fn domain(&self) -> nvtxDomainHandle_t {
        self.domain as nvtxDomainHandle_t
    }

    /// Registers the categories, messages and colours once. Later calls change nothing.
    pub(crate) fn set_ranges(&self, ranges: &[RangeInfo]) {
        self.ranges.get_or_init(|| self.build(ranges));
    }

    fn build(&self, ranges: &[RangeInfo]) -> Ranges {
        let domain = self.domain();
        let (layers, category_ids) = categories(ranges);
        for (index, layer) in layers.iter().enumerate() {
            let name = c_string(layer);
            // SAFETY: resolved at `open`; `name` is a valid C string that NVTX copies.
            unsafe {
                (self.api.name_category)(domain, (index + 1) as u32, name.as_ptr());
            }
        }
        let mut messages = Vec::new();
        let mut attribute_table = Vec::with_capacity(ranges.len());
        for (range, category) in ranges.iter().zip(category_ids) {
            let mut attr = attributes(category, phase_colour(range.phase.as_deref()));
            let name = c_string(&range.name);
            // SAFETY: resolved at `open`; `name` is a valid C string that NVTX copies into a
            // registration it owns.
            let registered = unsafe { (self.api.register_string)(domain, name.as_ptr()) };
            if registered.is_null() {
                // No tool attached (or it does not register strings): point at our own copy,
                // whose heap buffer stays put when the `CString` moves into `messages`.
                attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
                attr.message = nvtxMessageValue_t {
                    ascii: name.as_ptr(),
                };
                messages.push(name);
            } else {
                attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
                attr.message = nvtxMessageValue_t { registered };
            }
            attribute_table.push(attr);
        }
        let unknown = c_string("profiler-core");
        let mut fallback = attributes(0, NO_PHASE);
        fallback.messageType = NVTX_MESSAGE_TYPE_ASCII;
        fallback.message = nvtxMessageValue_t {
            ascii: unknown.as_ptr(),
        };
        messages.push(unknown);
        Ranges {
            attributes: attribute_table,
            fallback,
            _messages: messages,
        }
    }

    /// Opens the range registered at `index` (hot path: one table look-up and the NVTX call).
    #[inline]
    pub(crate) fn push(&self, index: u32) {
        let Some(ranges) = self.ranges.get() else {
            return;
        };
        let attr = ranges
            .attributes
            .get(index as usize)
            .unwrap_or(&ranges.fallback);
        // SAFETY: resolved at `open`; `attr` is a fully initialized attribute structure whose
        // message pointer stays valid for the device's lifetime.
        unsafe {
            (self.api.range_push)(self.domain(), attr);
        }
    }

    /// Closes the innermost range of this thread, if ranges were registered (so that a pop
    /// without a push is never sent).
    #[inline]
    pub(crate) fn pop(&self) {
        if self.ranges.get().is_none() {
            return;
        }
        // SAFETY: resolved at `open`.
        unsafe {
            (self.api.range_pop)(self.domain());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(name: &str, layer: Option<&str>, phase: Option<&str>) -> RangeInfo {
        RangeInfo {
            name: name.to_owned(),
            layer: layer.map(str::to_owned),
            phase: phase.map(str::to_owned),
        }
    }

    #[test]
    fn colours_per_phase() {
        assert_eq!(phase_colour(Some("fwd")), FWD);
        assert_eq!(phase_colour(Some("forward")), FWD);
        assert_eq!(phase_colour(Some("bwd")), BWD);
        assert_eq!(phase_colour(Some("BWD")), BWD);
        assert_eq!(phase_colour(Some("update")), UPDATE);
        assert_eq!(phase_colour(Some("opt")), UPDATE);
        assert_eq!(phase_colour(Some("optimizer")), UPDATE);
        assert_eq!(phase_colour(None), NO_PHASE);
        let other = phase_colour(Some("allreduce"));
        assert!(PALETTE.contains(&other));
        assert_eq!(other, phase_colour(Some("allreduce")), "stable");
        // The palette is distinct from the fixed colours.
        for c in PALETTE {
            assert!(![FWD, BWD, UPDATE, NO_PHASE].contains(&c));
        }
    }

    #[test]
    fn categories_per_distinct_layer_from_one() {
        let ranges = [
            range("a", Some("emb"), Some("fwd")),
            range("b", Some("mlp"), Some("fwd")),
            range("c", None, None),
            range("d", Some("emb"), Some("bwd")),
        ];
        let (layers, ids) = categories(&ranges);
        assert_eq!(layers, ["emb", "mlp"]);
        assert_eq!(ids, [1, 2, 0, 1]);
    }

    #[test]
    fn c_strings_drop_interior_nul() {
        assert_eq!(c_string("a\0b").as_bytes(), b"ab");
    }
}
