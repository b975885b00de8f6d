//! NVTX ranges for the probes (`PROF_NVTX`): one domain, one category per layer, one
//! registered message and colour per probe, all built once so that a push only indexes a table.

use std::ffi::CString;
use std::sync::OnceLock;

use cudarc::nvtx::sys as nvtx;

use crate::device::RangeInfo;

/// The NVTX domain every range goes to.
const DOMAIN: &str = "profiler-core";

/// Every NVTX entry point this module calls.
pub(crate) const SYMBOLS: &[&str] = &[
    "nvtxDomainCreateA",
    "nvtxDomainNameCategoryA",
    "nvtxDomainRegisterStringA",
    "nvtxDomainRangePushEx",
    "nvtxDomainRangePop",
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
    attributes: Vec<nvtx::nvtxEventAttributes_t>,
    /// Pushed for an index that was never registered, so that pushes and pops stay paired.
    fallback: nvtx::nvtxEventAttributes_t,
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
fn attributes(category: u32, colour: u32) -> nvtx::nvtxEventAttributes_t {
    nvtx::nvtxEventAttributes_t {
        // NVTX_VERSION and NVTX_EVENT_ATTRIB_STRUCT_SIZE, as `cudarc`'s own NVTX wrapper sets
        // them.
        version: 3,
        size: std::mem::size_of::<nvtx::nvtxEventAttributes_t>() as u16,
        category,
        colorType: nvtx::nvtxColorType_t::NVTX_COLOR_ARGB as i32,
        color: colour,
        payloadType: nvtx::nvtxPayloadType_t::NVTX_PAYLOAD_UNKNOWN as i32,
        reserved0: 0,
        payload: nvtx::nvtxEventAttributes_v2_payload_t { ullValue: 0 },
        messageType: nvtx::nvtxMessageType_t::NVTX_MESSAGE_UNKNOWN as i32,
        message: nvtx::nvtxMessageValue_t {
            ascii: std::ptr::null(),
        },
    }
}

impl Nvtx {
    /// Loads NVTX and creates the domain.
    pub(crate) fn open() -> Result<Nvtx, String> {
        super::driver::nvtx_has(SYMBOLS)?;
        let name = c_string(DOMAIN);
        // SAFETY: the library exports the symbol (checked above); `name` is a valid C string
        // that NVTX copies (or ignores when no tool is attached).
        let domain = unsafe { nvtx::nvtxDomainCreateA(name.as_ptr()) };
        Ok(Nvtx {
            domain: domain as usize,
            ranges: OnceLock::new(),
        })
    }

    fn domain(&self) -> nvtx::nvtxDomainHandle_t {
        self.domain as nvtx::nvtxDomainHandle_t
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
            // SAFETY: symbols checked at `open`; `name` is a valid C string that NVTX copies.
            unsafe {
                nvtx::nvtxDomainNameCategoryA(domain, (index + 1) as u32, name.as_ptr());
            }
        }
        let mut messages = Vec::new();
        let mut attribute_table = Vec::with_capacity(ranges.len());
        for (range, category) in ranges.iter().zip(category_ids) {
            let mut attr = attributes(category, phase_colour(range.phase.as_deref()));
            let name = c_string(&range.name);
            // SAFETY: symbols checked at `open`; `name` is a valid C string that NVTX copies
            // into a registration it owns.
            let registered = unsafe { nvtx::nvtxDomainRegisterStringA(domain, name.as_ptr()) };
            if registered.is_null() {
                // No tool attached (or it does not register strings): point at our own copy,
                // whose heap buffer stays put when the `CString` moves into `messages`.
                attr.messageType = nvtx::nvtxMessageType_t::NVTX_MESSAGE_TYPE_ASCII as i32;
                attr.message = nvtx::nvtxMessageValue_t {
                    ascii: name.as_ptr(),
                };
                messages.push(name);
            } else {
                attr.messageType = nvtx::nvtxMessageType_t::NVTX_MESSAGE_TYPE_REGISTERED as i32;
                attr.message = nvtx::nvtxMessageValue_t { registered };
            }
            attribute_table.push(attr);
        }
        let unknown = c_string("profiler-core");
        let mut fallback = attributes(0, NO_PHASE);
        fallback.messageType = nvtx::nvtxMessageType_t::NVTX_MESSAGE_TYPE_ASCII as i32;
        fallback.message = nvtx::nvtxMessageValue_t {
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
        // SAFETY: symbols checked at `open`; `attr` is a fully initialized attribute structure
        // whose message pointer stays valid for the device's lifetime.
        unsafe {
            nvtx::nvtxDomainRangePushEx(self.domain(), attr);
        }
    }

    /// Closes the innermost range of this thread, if ranges were registered (so that a pop
    /// without a push is never sent).
    #[inline]
    pub(crate) fn pop(&self) {
        if self.ranges.get().is_none() {
            return;
        }
        // SAFETY: symbols checked at `open`.
        unsafe {
            nvtx::nvtxDomainRangePop(self.domain());
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
