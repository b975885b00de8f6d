//! The `prof` binary as a user runs it: each command on real profiles of the dlrm example
//! (`tests/data/cli/`, made with PROF_WARMUP=3 PROF_REPEAT=8), and bad input of every kind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cli")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prof-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn prof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prof"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstderr: {}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn report_in_every_format() {
    let file = data("batch32.json");
    let table = ok(&prof(&["report", p(&file)]));
    for word in ["linear_forward", "top_backward", "median", "p90", "self"] {
        assert!(table.contains(word), "{word} missing:\n{table}");
    }
    let grouped = ok(&prof(&[
        "report",
        p(&file),
        "--group-by",
        "layer,phase",
        "--sort",
        "total",
    ]));
    assert!(grouped.contains("top_mlp/bwd"), "{grouped}");
    let csv = ok(&prof(&["report", p(&file), "--format", "csv"]));
    let header = csv.lines().next().unwrap();
    assert!(header.contains("median_ns"), "{header}");
    let json: Value =
        serde_json::from_str(&ok(&prof(&["report", p(&file), "--format", "json"]))).unwrap();
    assert_eq!(json["events"].as_array().unwrap().len(), 25);
    let md = ok(&prof(&["report", p(&file), "--format", "markdown"]));
    assert!(
        md.lines().any(|l| l.starts_with("|") && l.contains("---")),
        "{md}"
    );
}

#[test]
fn diff_of_the_same_build_says_no_regression_and_a_slowed_layer_is_named() {
    let (a, b) = (data("batch32.json"), data("batch32-rerun.json"));
    let out = prof(&["diff", p(&a), p(&b), "--fail-on-regression"]);
    let report = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report}\n{}",
        text(&out.stderr)
    );

    // Make one layer's backward pass 40% slower in a copy of the first run: the same machine
    // state, so only that change can show.
    let dir = scratch("diff");
    let mut slowed: Value = serde_json::from_slice(&std::fs::read(&a).unwrap()).unwrap();
    for e in slowed["events"].as_array_mut().unwrap() {
        if e["name"] == "top_backward" {
            for s in e["samples_ns"].as_array_mut().unwrap() {
                *s = Value::from((s.as_f64().unwrap() * 1.4) as u64);
            }
        }
    }
    let slow = dir.join("slow.json");
    std::fs::write(&slow, serde_json::to_vec(&slowed).unwrap()).unwrap();
    let out = prof(&[
        "diff",
        p(&a),
        p(&slow),
        "--fail-on-regression",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let diff: Value = serde_json::from_slice(&out.stdout).unwrap();
    let regressed: Vec<&str> = diff["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["verdict"] == "regressed")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(regressed, ["top_backward"]);
    // Without --fail-on-regression the status stays 0.
    let out = prof(&["diff", p(&a), p(&slow)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("top_backward"));
}

#[test]
fn scale_merge_trace_and_html_write_their_outputs() {
    let dir = scratch("outputs");
    let out = ok(&prof(&[
        "scale",
        p(&data("batch32.json")),
        p(&data("batch64.json")),
        "--param",
        "batch=32,64",
    ]));
    assert!(out.contains("batch"), "{out}");

    let merged = dir.join("merged.json");
    let out = ok(&prof(&[
        "merge",
        p(&data("batch32.json")),
        p(&data("rank1.json")),
        "-o",
        p(&merged),
    ]));
    assert!(out.contains("straggler"), "{out}");
    let m: Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(m["ranks"], serde_json::json!([0, 1]));

    let trace = dir.join("trace.json.gz");
    ok(&prof(&["trace", p(&data("batch32.json")), "-o", p(&trace)]));
    let mut json = String::new();
    use std::io::Read;
    flate2_read(&trace).read_to_string(&mut json).unwrap();
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert!(!doc["traceEvents"].as_array().unwrap().is_empty());

    let html = dir.join("report.html");
    ok(&prof(&[
        "html",
        p(&data("batch32.json")),
        "--diff",
        p(&data("batch32-rerun.json")),
        "-o",
        p(&html),
    ]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"));
}

fn flate2_read(path: &Path) -> impl std::io::Read {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "not gzip");
    flate2::read::GzDecoder::new(std::io::Cursor::new(bytes))
}

/// Missing file, not JSON, another schema, truncated file, empty events, bad options, an
/// unwritable output: each a clear message and status 2, never a panic.
#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = scratch("bad");
    let good = std::fs::read_to_string(data("batch32.json")).unwrap();
    let write = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        path
    };
    let not_json = write("not.json", "this is not json\n");
    let other = write(
        "other.json",
        &good.replace("profiler-core/prof/v1", "other/v3"),
    );
    let truncated = write("cut.json", &good[..good.len() / 3]);
    let mut empty: Value = serde_json::from_str(&good).unwrap();
    empty["events"] = Value::Array(vec![]);
    let empty = write("empty.json", &empty.to_string());
    let missing = dir.join("missing.json");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["report".into(), p(&missing).into()], "no such file"),
        (vec!["report".into(), p(&not_json).into()], "not JSON"),
        (vec!["report".into(), p(&other).into()], "other/v3"),
        (vec!["report".into(), p(&truncated).into()], "truncated"),
        (vec!["report".into(), p(&empty).into()], "no event"),
        (
            vec![
                "diff".into(),
                p(&empty).into(),
                p(&data("batch32.json")).into(),
            ],
            "no event",
        ),
        (
            vec![
                "html".into(),
                p(&not_json).into(),
                "-o".into(),
                p(&dir.join("x.html")).into(),
            ],
            "not JSON",
        ),
        (
            vec![
                "trace".into(),
                p(&data("batch32.json")).into(),
                "-o".into(),
                "/nonexistent-dir/t.json".into(),
            ],
            "cannot write",
        ),
        (
            vec![
                "scale".into(),
                p(&data("batch32.json")).into(),
                p(&data("batch64.json")).into(),
                "--param".into(),
                "batch=32".into(),
            ],
            "one value per file",
        ),
        (
            vec![
                "scale".into(),
                p(&data("batch32.json")).into(),
                p(&data("batch64.json")).into(),
                "--param".into(),
                "32,64".into(),
            ],
            "NAME=",
        ),
        (
            vec![
                "report".into(),
                p(&data("batch32.json")).into(),
                "--sort".into(),
                "speed".into(),
            ],
            "speed",
        ),
        (
            vec![
                "diff".into(),
                p(&data("batch32.json")).into(),
                p(&data("batch32.json")).into(),
                "--threshold".into(),
                "lots".into(),
            ],
            "lots",
        ),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = prof(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(expected),
            "{args:?}: expected {expected:?} in:\n{err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(!dir.join("x.html").exists());
}
