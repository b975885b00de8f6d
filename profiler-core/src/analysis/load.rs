//! Reading `prof.json` back, with a clear message for every way the input can be wrong.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::error::Category;

use crate::output::json::{Profile, SCHEMA};

/// Why a profile could not be used. Its `Display` names the file, the problem and the fix.
#[derive(Debug)]
pub enum LoadError {
    /// The file does not exist.
    Missing(PathBuf),
    /// The file could not be read.
    Io(PathBuf, std::io::Error),
    /// The file ends in the middle of the JSON (an interrupted write or copy).
    Truncated(PathBuf),
    /// The file is not JSON.
    NotJson(PathBuf, serde_json::Error),
    /// The JSON is not a profiler-core profile of a schema this build reads.
    Schema(PathBuf, Option<String>),
    /// The JSON has the right schema name but not the right shape.
    Invalid(PathBuf, String),
    /// The profile holds no event.
    NoEvents(PathBuf),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Missing(p) => write!(
                f,
                "error: {}: no such file\n  = help: pass the prof.json a profiled run wrote \
                 (PROF_OUT sets where)",
                p.display()
            ),
            LoadError::Io(p, e) => write!(f, "error: cannot read {}: {e}", p.display()),
            LoadError::Truncated(p) => write!(
                f,
                "error: {}: the JSON ends early (the file is truncated)\n  = help: the run that \
                 wrote it may have been killed; profiles are written atomically, so check that \
                 the file was copied whole",
                p.display()
            ),
            LoadError::NotJson(p, e) => write!(
                f,
                "error: {}: not JSON (line {}, column {}: {e})\n  = help: pass a prof.json \
                 written by profiler-core",
                p.display(),
                e.line(),
                e.column()
            ),
            LoadError::Schema(p, found) => match found {
                Some(found) => write!(
                    f,
                    "error: {}: schema `{found}` is not one this tool reads (expected \
                     `{SCHEMA}`)\n  = help: use the prof tool of the profiler-core version that \
                     wrote the file",
                    p.display()
                ),
                None => write!(
                    f,
                    "error: {}: not a profiler-core profile (no \"schema\": \"{SCHEMA}\" field)",
                    p.display()
                ),
            },
            LoadError::Invalid(p, why) => write!(
                f,
                "error: {}: not a valid {SCHEMA} profile: {why}",
                p.display()
            ),
            LoadError::NoEvents(p) => write!(
                f,
                "error: {}: the profile holds no event\n  = help: the run measured nothing: \
                 check its PROF_FILTER with --list-probes, and that it called \
                 profiler_core::step() past the warmup",
                p.display()
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads and checks a profile; a profile without events is an error.
pub fn load_profile(path: impl AsRef<Path>) -> Result<Profile, LoadError> {
    let path = path.as_ref();
    let text = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing(path.to_path_buf()),
        _ => LoadError::Io(path.to_path_buf(), e),
    })?;
    parse_profile(&text, path)
}

/// Parses and checks the bytes of a profile; `path` is used in messages.
pub fn parse_profile(bytes: &[u8], path: &Path) -> Result<Profile, LoadError> {
    let owned = || path.to_path_buf();
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| match e.classify() {
            Category::Eof => LoadError::Truncated(owned()),
            Category::Io => LoadError::Io(owned(), std::io::Error::other(e.to_string())),
            _ => LoadError::NotJson(owned(), e),
        })?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => return Err(LoadError::Schema(owned(), Some(other.to_owned()))),
        None => return Err(LoadError::Schema(owned(), None)),
    }
    let profile: Profile =
        serde_json::from_value(value).map_err(|e| LoadError::Invalid(owned(), e.to_string()))?;
    for e in &profile.events {
        let n = e.samples_ns.len();
        if e.offsets_ns.len() != n || e.sample_iters.len() != n {
            return Err(LoadError::Invalid(
                owned(),
                format!(
                    "event `{}` (occurrence {}) has {n} samples_ns but {} offsets_ns and {} \
                     sample_iters",
                    e.id,
                    e.occurrence,
                    e.offsets_ns.len(),
                    e.sample_iters.len()
                ),
            ));
        }
    }
    if profile.events.is_empty() {
        return Err(LoadError::NoEvents(owned()));
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Profile, LoadError> {
        parse_profile(text.as_bytes(), Path::new("p.json"))
    }

    const GOOD: &str = r#"{"schema":"profiler-core/prof/v1","complete":true,
      "run":{"program":"t","pid":1,"host":"h","rank":0,"mode":"sample","filter":"",
             "warmup":1,"repeat":2,"clock":"cpu"},
      "iterations":{"count":3,"wall_ns":[5,6,7]},
      "events":[{"id":"a::f","name":"f","layer":null,"phase":"fwd","kind":"fn","module":"a",
        "file":"a.rs","line":1,"occurrence":0,"order":0,"device":null,"stream":null,
        "samples_ns":[1,2],"offsets_ns":[0,0],"sample_iters":[1,2],
        "stats":{"count":2,"mean_ns":2,"median_ns":2,"min_ns":1,"max_ns":2,"stddev_ns":1,"p90_ns":2}}]}"#;

    #[test]
    fn each_kind_of_bad_input_has_its_message() {
        assert!(parse(GOOD).is_ok());
        let cut = &GOOD[..GOOD.len() / 2];
        assert!(matches!(parse(cut), Err(LoadError::Truncated(_))));
        assert!(matches!(parse("hello"), Err(LoadError::NotJson(..))));
        let other = GOOD.replace("prof/v1", "prof/v9");
        let e = parse(&other).unwrap_err();
        assert!(e.to_string().contains("profiler-core/prof/v9"), "{e}");
        assert!(matches!(parse("{}"), Err(LoadError::Schema(_, None))));
        let broken = GOOD.replace("\"offsets_ns\":[0,0]", "\"offsets_ns\":[0]");
        assert!(parse(&broken)
            .unwrap_err()
            .to_string()
            .contains("offsets_ns"));
        let missing = GOOD.replace("\"complete\":true,", "");
        assert!(parse(&missing)
            .unwrap_err()
            .to_string()
            .contains("complete"));
        let empty = GOOD[..GOOD.find("\"events\"").unwrap()].to_owned() + "\"events\":[]}";
        assert!(matches!(parse(&empty), Err(LoadError::NoEvents(_))));
        let e = load_profile("/nonexistent/prof.json").unwrap_err();
        assert!(matches!(e, LoadError::Missing(_)), "{e}");
    }
}
