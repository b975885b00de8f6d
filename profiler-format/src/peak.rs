//! What the machine can do at best: its achievable peak FLOP/s and memory bandwidth, measured by
//! `prof peak` (written as `peak.json`) or given by the user (`PROF_PEAK_FLOPS`), against which
//! achieved rates and MFU are reported. A profile carries the one it was run with in
//! `run.peak`.

use serde::{Deserialize, Serialize};

/// The schema of a `peak.json` written by `prof peak`.
pub const PEAK_SCHEMA: &str = "profiler-core/peak/v1";

/// A machine's achievable peak.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    /// [`PEAK_SCHEMA`] in a `peak.json`; the same inside `run.peak`.
    pub schema: String,
    /// Floating-point operations per second at best (`None`: not measured, not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops: Option<f64>,
    /// Bytes per second of memory bandwidth at best (`None`: not measured, not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<f64>,
    /// `measured` (by `prof peak`) or `given` (by the user: `PROF_PEAK_FLOPS`,
    /// `PROF_PEAK_BYTES`); reports label MFU with it.
    pub source: String,
    /// How the figures were obtained: the kernels, sizes, threads and spread of a measurement,
    /// or the variables that gave them.
    #[serde(default)]
    pub detail: String,
    /// The host the peak was measured on (empty when given).
    #[serde(default)]
    pub host: String,
}
