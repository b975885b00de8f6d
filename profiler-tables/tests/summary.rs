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

/// The committed dlrm trace profile, its first event given 2 FLOPs and 1 byte per nanosecond of
/// each sample, run against `peak`.
fn with_work(peak: serde_json::Value) -> Profile {
    let text =
        std::fs::read_to_string(data("../profiler-cli/tests/data/trace/dlrm-trace.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let e = &mut v["events"][0];
    let ns: Vec<u64> = e["samples_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    e["work"] = serde_json::json!({
        "flops": ns.iter().map(|n| 2 * n).collect::<Vec<_>>(),
        "bytes": ns,
    });
    v["run"]["peak"] = peak;
    serde_json::from_value(v).unwrap()
}

/// The summary's work line names the peak in a few words (its figures, its source, the first
/// sentence of how it was had): `prof report` keeps the whole description, which `prof peak`
/// makes a paragraph long. A peak of 1e308 is a short figure, not 300 digits.
#[test]
fn the_summary_names_the_peak_briefly() {
    let detail = format!(
        "CPU, 2 threads, each pinned to a CPU of its own. FLOP/s: matrixmultiply {}",
        "and so on, ".repeat(60)
    );
    let profile = with_work(serde_json::json!({
        "schema": "profiler-core/peak/v1", "flops": 2.4e10, "bytes": 1.2e10,
        "source": "measured", "detail": detail, "host": "h"
    }));
    let text = summary::summary(&profile, "prof.json");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("work:"))
        .unwrap_or_else(|| panic!("no work line:\n{text}"));
    assert!(line.chars().count() < 250, "{line}");
    assert!(
        line.contains("peak 24.0GFLOP/s, 12.0GB/s (measured: CPU, 2 threads, each pinned to a CPU of its own; `prof report` gives the rest)"),
        "{line}"
    );
    let given = with_work(serde_json::json!({
        "schema": "profiler-core/peak/v1", "flops": 1e308,
        "source": "given", "detail": "PROF_PEAK_FLOPS=1e308", "host": ""
    }));
    let text = summary::summary(&given, "prof.json");
    assert!(
        text.contains("peak 1.00e308FLOP/s, no B/s (given: PROF_PEAK_FLOPS=1e308)"),
        "{text}"
    );
    let digits = text
        .split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap();
    assert!(digits < 12, "{text}");
}

/// Names that would act on a terminal (ESC sequences, BEL, a line break) are shown as visible
/// escapes in the summary the program prints on stderr, in the table and in its sentences (the
/// noisy events, the breakdown), and a line break in a name adds no line.
#[test]
fn the_summary_shows_control_characters_in_names_as_escapes() {
    let text = std::fs::read_to_string(data(CASES[0].0)).unwrap();
    let evil = "\u{1b}[2J\u{7}\n!";
    let named = |tail: &str| -> Profile {
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for e in v["events"].as_array_mut().unwrap() {
            for key in ["name", "id", "layer", "phase"] {
                if let Some(s) = e[key].as_str() {
                    e[key] = format!("{s}{tail}").into();
                }
            }
        }
        serde_json::from_value(v).unwrap()
    };
    let shown = summary::summary(&named(evil), "prof.json");
    let clean = summary::summary(&named("____"), "prof.json");
    let raw: Vec<char> = shown
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect();
    assert!(raw.is_empty(), "{raw:?} in\n{shown}");
    assert!(shown.contains("\\e[2J\\u{7}\\n!"), "{shown}");
    assert_eq!(shown.lines().count(), clean.lines().count(), "{shown}");
}

/// What the summary and `prof report` are built from comes from one call: the rows, their
/// breakdown, the work line in full (the report's) and brief (the summary's, which prints it),
/// and the device memory, each as computed on its own from the rows in execution order.
#[test]
fn one_call_makes_the_rows_and_what_comes_of_them() {
    use profiler_tables::rows::{device_usage, profile_rows};
    use profiler_tables::tables::profile_tables;
    let profile = with_work(serde_json::json!({
        "schema": "profiler-core/peak/v1", "flops": 2.4e10, "bytes": 1.2e10,
        "source": "measured", "detail": "CPU. More.", "host": "h"
    }));
    let tables = profile_tables(&profile, 0.25, 0.05);
    let rows = profile_rows(&profile, 0.25, 0.05);
    let breakdown = profiler_tables::breakdown::breakdown(&profile, &rows);
    assert_eq!(format!("{:?}", tables.breakdown), format!("{breakdown:?}"));
    let mut in_order = rows.events.clone();
    in_order.sort_by_key(|r| r.order);
    let line = |definitions| {
        profiler_tables::tables::work_line(
            &in_order,
            rows.iteration.mean_ns,
            profile.run.peak.as_ref(),
            definitions,
        )
    };
    assert_eq!(tables.work, line(true));
    assert_eq!(tables.work_brief, line(false));
    let brief = tables.work_brief.as_deref().expect("a work line");
    assert!(summary::summary(&profile, "prof.json").contains(brief));
    assert_eq!(tables.device_memory, device_usage(&profile));
    assert_eq!(format!("{:?}", tables.rows), format!("{rows:?}"));
}
