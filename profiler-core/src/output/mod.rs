//! Outputs: `prof.json` (written atomically) and the summary on stderr.

pub mod json;

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed, then
/// renamed over the target, so a reader never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "prof.json".into());
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(feature = "enable")]
/// Writes the profile to `path` and the summary to stderr. A failure is reported on stderr
/// with the path and the reason; the program goes on.
pub fn emit(profile: &json::Profile, path: &Path, print_summary: bool) -> bool {
    let text = match serde_json::to_vec_pretty(profile) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("profiler-core: error: cannot encode the results: {e}");
            return false;
        }
    };
    let written = match write_atomic(path, &text) {
        Ok(()) => true,
        Err(e) => {
            eprintln!(
                "profiler-core: error: cannot write the results to {}: {e} (the program goes on)",
                path.display()
            );
            false
        }
    };
    if print_summary {
        eprintln!(
            "{}",
            crate::analysis::report::summary(profile, &path.display().to_string())
        );
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("prof-out-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(names.len(), 1);
        let bad = dir.join("missing").join("p.json");
        assert!(write_atomic(&bad, b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
