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

impl Peak {
    /// Reads a `peak.json`'s text: its schema must be [`PEAK_SCHEMA`], and it must give at
    /// least one figure, each a positive, finite rate. The error says what is wrong.
    pub fn parse(text: &str) -> Result<Peak, String> {
        let peak: Peak = serde_json::from_str(text).map_err(|e| format!("not a peak.json: {e}"))?;
        if peak.schema != PEAK_SCHEMA {
            return Err(format!(
                "schema {:?}, expected {PEAK_SCHEMA:?}",
                peak.schema
            ));
        }
        let bad = |v: Option<f64>| v.is_some_and(|v| !(v.is_finite() && v > 0.0));
        if bad(peak.flops) || bad(peak.bytes) {
            return Err("a figure that is not a positive, finite rate".to_owned());
        }
        if peak.flops.is_none() && peak.bytes.is_none() {
            return Err("neither `flops` nor `bytes` is given".to_owned());
        }
        Ok(peak)
    }

    /// Reads and checks the `peak.json` at `path` ([`Peak::parse`]).
    pub fn load(path: &std::path::Path) -> Result<Peak, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
        Peak::parse(&text)
    }
}
