//! The end-of-run summary of known profiles, exactly: each one's text is kept beside it
//! (`tests/data/summary/*.txt`), so that a change of the summary's columns or wording shows.
//! `PROF_BLESS=1 cargo test -p profiler-tables --test summary` writes the texts anew.

use std::path::{Path, PathBuf};

use profiler_format::Profile;
use profiler_tables::summary;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The profiles, and the name of each one's text.
const CASES: [(&str, &str); 5] = [
    ("../profiler-cli/tests/data/cli/batch32.json", "sample"),
    (
        "../profiler-cli/tests/data/cli/continuous-slow.json",
        "continuous",
    ),
    ("../profiler-cli/tests/data/trace/dlrm-trace.json", "trace"),
    ("../profiler-cli/tests/data/html/before.json", "html-before"),
    ("tests/data/summary/memory.json", "memory"),
];

#[test]
fn summaries_of_known_profiles_are_as_kept() {
    let bless = std::env::var_os("PROF_BLESS").is_some();
    for (file, name) in CASES {
        let text = std::fs::read_to_string(data(file)).unwrap();
        let profile: Profile = serde_json::from_str(&text).unwrap();
        let written = summary::summary(&profile, "prof.json") + "\n";
        let unwritten = summary::summary_unwritten(&profile, "prof.json") + "\n";
        for (kind, got) in [("written", written), ("unwritten", unwritten)] {
            let kept = data(&format!("tests/data/summary/{name}-{kind}.txt"));
            if bless {
                std::fs::write(&kept, &got).unwrap();
                continue;
            }
            let want = std::fs::read_to_string(&kept)
                .unwrap_or_else(|e| panic!("{}: {e}", kept.display()));
            assert_eq!(got, want, "{name} ({kind}) differs from {}", kept.display());
        }
    }
}
