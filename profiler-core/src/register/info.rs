//! What the listing and [`probes`](crate::probes) say about one probe.

/// A registered probe, as `--list-probes=json` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "enable", derive(serde::Serialize))]
pub struct ProbeInfo {
    /// Unique id: the function's full path (plus `::name` for a probe), `.2`, `.3`... on clashes.
    pub id: String,
    /// The probe's name.
    pub name: &'static str,
    /// The `layer` key, or `None`.
    pub layer: Option<&'static str>,
    /// The `phase` key, or `None`.
    pub phase: Option<&'static str>,
    /// `fn` or `probe`.
    pub kind: &'static str,
    /// `module_path!()` of the annotation.
    pub module: &'static str,
    /// Source file of the annotation.
    pub file: &'static str,
    /// Source line of the annotation.
    pub line: u32,
    /// Whether the active `PROF_FILTER` selects it.
    pub selected: bool,
}
