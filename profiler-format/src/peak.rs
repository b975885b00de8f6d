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

/// A `peak.json` is a few hundred bytes; anything past this is not one.
const MAX_PEAK_BYTES: u64 = 1 << 20;

/// Reads and checks a `peak.json` (as `prof peak` writes it): JSON, schema [`PEAK_SCHEMA`], a
/// `source`, and at least one of `flops` and `bytes`, each a positive, finite number.
///
/// The error is one line for people, starting with the path: the file is missing or not a
/// regular file, is not JSON (with the line and column), has another schema (a `prof.json`
/// given by mistake, say), lacks a field, or gives a figure that is zero, negative or not a
/// number. Only a regular file is read (a FIFO or a device is refused before anything is read),
/// and at most 1 MiB of it.
///
/// ```no_run
/// let peak = profiler_format::peak::load_peak("peak.json".as_ref())?;
/// if let Some(flops) = peak.flops {
///     println!("MFU against {:.1} GFLOP/s ({})", flops / 1e9, peak.source);
/// }
/// # Ok::<(), String>(())
/// ```
pub fn load_peak(path: &std::path::Path) -> Result<Peak, String> {
    use std::io::Read;
    let shown = crate::write::shorten(&path.display().to_string(), 200);
    let file = crate::read::open_regular(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{shown}: no such file"),
        _ => format!("{shown}: {e}"),
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_PEAK_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{shown}: {e}"))?;
    if bytes.len() as u64 > MAX_PEAK_BYTES {
        return Err(format!(
            "{shown}: more than 1 MiB, not a peak.json (prof peak writes a few hundred bytes)"
        ));
    }
    parse_peak(&bytes).map_err(|e| format!("{shown}: {e}"))
}

/// Parses and checks the text of a `peak.json`, as [`load_peak`] does (its messages without
/// the path).
pub fn parse_peak(bytes: &[u8]) -> Result<Peak, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the file is empty, not a peak.json (write one with `prof peak`)".into());
    }
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let Some(object) = value.as_object() else {
        return Err("not a peak.json: the JSON is not an object".into());
    };
    match object.get("schema") {
        Some(serde_json::Value::String(s)) if s == PEAK_SCHEMA => {}
        Some(serde_json::Value::String(s)) => {
            return Err(format!(
                "schema `{s}`, not `{PEAK_SCHEMA}`: not a peak.json (write one with `prof peak`)"
            ))
        }
        Some(other) => return Err(format!("`schema` is {other}, not `{PEAK_SCHEMA}`")),
        None => {
            return Err(format!(
                "no `schema` field: not a peak.json (its schema is `{PEAK_SCHEMA}`)"
            ))
        }
    }
    let peak: Peak = serde_path_to_error::deserialize(value).map_err(|e| {
        let at = e.path().to_string();
        if at == "." {
            e.inner().to_string()
        } else {
            format!("`{at}`: {}", e.inner())
        }
    })?;
    peak.check_figures()?;
    Ok(peak)
}

impl Peak {
    /// Its figures are peaks: each given one a positive, finite number, and at least one
    /// given. Checked in a `peak.json` and in a profile's `run.peak` alike.
    pub fn check_figures(&self) -> Result<(), String> {
        for (name, figure) in [("flops", self.flops), ("bytes", self.bytes)] {
            if let Some(v) = figure {
                if !(v.is_finite() && v > 0.0) {
                    // -1e308 as such, not as 309 digits.
                    let shown = if v.abs() >= 1e16 {
                        format!("{v:e}")
                    } else {
                        v.to_string()
                    };
                    return Err(format!(
                        "`{name}` is {shown}: a peak is a positive number (per second)"
                    ));
                }
            }
        }
        if self.flops.is_none() && self.bytes.is_none() {
            return Err("neither `flops` nor `bytes`: the file gives no peak".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("peak-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_peak_json_loads() {
        let peak = Peak {
            schema: PEAK_SCHEMA.into(),
            flops: Some(1.5e11),
            bytes: Some(2.0e10),
            source: "measured".into(),
            detail: "sgemm".into(),
            host: "node7".into(),
        };
        let path = write("good.json", &serde_json::to_string(&peak).unwrap());
        assert_eq!(load_peak(&path).unwrap(), peak);
        // One figure is enough.
        let only = r#"{"schema":"profiler-core/peak/v1","bytes":1e10,"source":"given"}"#;
        assert_eq!(parse_peak(only.as_bytes()).unwrap().flops, None);
    }

    /// A peak is read back as `prof peak` wrote it, to the last bit: in a `peak.json` and in a
    /// profile's `run.peak` (serde_json's exact float parsing, `float_roundtrip`).
    #[test]
    fn figures_round_trip_exactly() {
        let figures = [
            23677369823.420494,
            1.0000000000000002,
            1e23,
            2.2250738585072014e-308,
            1.7976931348623157e308,
            0.1 + 0.2,
        ];
        for flops in figures {
            let peak = Peak {
                schema: PEAK_SCHEMA.into(),
                flops: Some(flops),
                bytes: Some(flops / 3.0),
                source: "measured".into(),
                detail: String::new(),
                host: String::new(),
            };
            let text = serde_json::to_string_pretty(&peak).unwrap();
            let back = parse_peak(text.as_bytes()).unwrap();
            assert_eq!(
                back.flops.map(f64::to_bits),
                Some(flops.to_bits()),
                "{text}"
            );
            assert_eq!(back.bytes.map(f64::to_bits), Some((flops / 3.0).to_bits()));
        }
        // As the issue saw it: the text written, read back.
        let text =
            r#"{"schema":"profiler-core/peak/v1","flops":23677369823.420494,"source":"measured"}"#;
        let peak = parse_peak(text.as_bytes()).unwrap();
        assert_eq!(peak.flops, Some(23677369823.420494));
        assert!(serde_json::to_string(&peak)
            .unwrap()
            .contains("\"flops\":23677369823.420494"));
    }

    #[test]
    fn a_bad_peak_json_is_told_what_is_wrong() {
        let cases = [
            ("", "empty"),
            ("{\"schema\": ", "not JSON"),
            ("[1, 2]", "not an object"),
            (
                r#"{"schema":"profiler-core/prof/v1"}"#,
                "schema `profiler-core/prof/v1`",
            ),
            (r#"{"flops":1}"#, "no `schema`"),
            (
                r#"{"schema":"profiler-core/peak/v1","flops":1e9}"#,
                "source",
            ),
            (
                r#"{"schema":"profiler-core/peak/v1","flops":"fast","source":"given"}"#,
                "`flops`",
            ),
            (
                r#"{"schema":"profiler-core/peak/v1","flops":-1e9,"source":"given"}"#,
                "`flops` is -1000000000",
            ),
            (
                r#"{"schema":"profiler-core/peak/v1","bytes":0,"source":"given"}"#,
                "`bytes` is 0",
            ),
            (
                r#"{"schema":"profiler-core/peak/v1","source":"given"}"#,
                "neither",
            ),
        ];
        for (text, wanted) in cases {
            let e = parse_peak(text.as_bytes()).unwrap_err();
            assert!(e.contains(wanted), "{text:?}: {e}");
        }
        let path = write("bad.json", "{\"schema\": 1}");
        let e = load_peak(&path).unwrap_err();
        assert!(e.starts_with(&path.display().to_string()), "{e}");
        let e = load_peak("/no/such/peak.json".as_ref()).unwrap_err();
        assert!(e.contains("no such file"), "{e}");
        let e = load_peak("/dev/null".as_ref()).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
