//! `prof report` on a profile whose events count their work: the rates' columns, and `--peak`
//! overriding the profile's `run.peak` (a bad file is an error, status 2).

use crate::common;

use std::path::Path;

use common::{prof, scratch};
use serde_json::Value;

/// The committed dlrm trace profile, its first event given 2 FLOPs and 1 byte per nanosecond of
/// each sample (2 GFLOP/s, 1 GB/s exactly).
fn with_work(dest: &Path) -> String {
    with_work_from("tests/data/trace/dlrm-trace.json", dest)
}

/// [`with_work`] of the committed profile at `source` (relative to this crate).
fn with_work_from(source: &str, dest: &Path) -> String {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let mut v: Value = serde_json::from_slice(&std::fs::read(source).unwrap()).unwrap();
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
    // The name a slice shows (a method's with its type).
    let name = profiler_format::identity::display_name(
        e["id"].as_str().unwrap(),
        e["name"].as_str().unwrap(),
    )
    .into_owned();
    std::fs::write(dest, v.to_string()).unwrap();
    name
}

#[test]
fn report_shows_rates_and_peak_overrides_run_peak() {
    let dir = scratch("work");
    let file = dir.join("prof.json");
    with_work(&file);
    let out = prof(&["report", file.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("FLOP/s") && table.contains("2.00G"),
        "{table}"
    );
    assert!(table.contains("no peak known"), "{table}");

    let peak = dir.join("peak.json");
    std::fs::write(
        &peak,
        r#"{"schema":"profiler-core/peak/v1","flops":4e9,"bytes":1e10,"source":"measured",
            "detail":"test","host":"h"}"#,
    )
    .unwrap();
    let out = prof(&[
        "report",
        file.to_str().unwrap(),
        "--peak",
        peak.to_str().unwrap(),
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 2 GFLOP/s of 4: 50%; 2 FLOP/B, above the ridge point 4e9 / 1e10 = 0.4: compute-bound.
    assert!(
        table.contains("50.0%") && table.contains("compute"),
        "{table}"
    );
    assert!(table.contains("(measured: test)"), "{table}");

    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"schema":"profiler-core/prof/v1","source":"x"}"#).unwrap();
    let out = prof(&[
        "report",
        file.to_str().unwrap(),
        "--peak",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--peak") && err.contains("schema"), "{err}");
}

#[test]
fn trace_slices_carry_the_median_work() {
    // A `sample` mode profile: its slices are each event's average run (a profile with work
    // is always one: `trace` mode keeps no work).
    let dir = scratch("work-trace");
    let file = dir.join("prof.json");
    let name = with_work_from("tests/data/cli/batch32.json", &file);
    let trace = dir.join("trace.json");
    let out = prof(&[
        "trace",
        file.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let profile: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let mut ns: Vec<u64> = profile["events"][0]["samples_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    ns.sort_unstable();
    let median = ns[ns.len() / 2];
    let spans: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == name.as_str() && e["args"]["flops"].is_u64())
        .collect();
    assert!(!spans.is_empty(), "no {name} slice with flops");
    for s in spans {
        assert_eq!(s["args"]["flops"], 2 * median);
        assert_eq!(s["args"]["bytes"], median);
    }
}

#[test]
fn an_event_with_shapes_is_split_by_shape_in_report_and_trace() {
    let dir = scratch("work-shapes");
    let file = dir.join("prof.json");
    let name = with_work_from("tests/data/cli/batch32.json", &file);
    // Samples alternate between two shapes, and every fifth is of a shape past the bound.
    let mut v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let n = v["events"][0]["samples_ns"].as_array().unwrap().len();
    let sample_shapes: Vec<Value> = (0..n)
        .map(|i| match i {
            i if i % 5 == 4 => Value::Null,
            i => Value::from(i % 2),
        })
        .collect();
    v["events"][0]["shapes"] = serde_json::json!({
        "values": ["32x512, 512x1024", "64x512, 512x1024"],
        "sample_shapes": sample_shapes,
        "others": 3,
    });
    std::fs::write(&file, v.to_string()).unwrap();
    let f = file.to_str().unwrap();

    let out = prof(&["report", f]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let section = table
        .split("by input shape")
        .nth(1)
        .unwrap_or_else(|| panic!("no shape section: {table}"));
    let lines: Vec<&str> = section.lines().take_while(|l| !l.is_empty()).collect();
    // The title's rest, the headers, two shapes and the others.
    assert_eq!(lines.len(), 5, "{section}");
    assert!(lines[2].contains(&name) && lines[2].contains("32x512, 512x1024"));
    assert!(lines[3].contains("64x512, 512x1024"));
    assert!(lines[4].contains("others (3 shapes)"), "{section}");
    // Each shape's own rate: 2 FLOPs per ns in every sample.
    assert!(lines[2].contains("2.00G"), "{section}");

    let out = prof(&["report", f, "--format", "json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["shapes"].is_array())
        .expect("a row with shapes");
    let counts: Vec<u64> = row["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["samples"].as_u64().unwrap())
        .collect();
    assert_eq!(counts.iter().sum::<u64>(), n as u64);
    assert_eq!(counts[2], (n / 5) as u64);

    // CSV: one `shape` row per shape, its samples and its own rate.
    let out = prof(&["report", f, "--format", "csv"]);
    let csv = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |h: &str| header.iter().position(|x| *x == h).unwrap();
    let shape_rows: Vec<Vec<String>> = csv
        .lines()
        .filter(|l| l.starts_with("shape,"))
        .map(split_csv)
        .collect();
    assert_eq!(shape_rows.len(), 3, "{csv}");
    assert_eq!(shape_rows[0][col("shape")], "32x512, 512x1024");
    assert_eq!(shape_rows[2][col("shape")], "others");
    assert_eq!(shape_rows[2][col("events")], "3");
    assert_eq!(shape_rows[0][col("flops_per_s")], "2000000000");
    let samples: u64 = shape_rows
        .iter()
        .map(|r| r[col("samples")].parse::<u64>().unwrap())
        .sum();
    assert_eq!(samples, n as u64);

    let out = prof(&["report", f, "--format", "markdown"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("| 32x512, 512x1024 |"), "{md}");

    let trace = dir.join("trace.json");
    let out = prof(&["trace", f, "-o", trace.to_str().unwrap()]);
    assert!(out.status.success());
    let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let shapes: Vec<&str> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["args"]["shapes"].as_str())
        .collect();
    assert!(!shapes.is_empty(), "no slice with shapes");
    assert!(
        shapes
            .iter()
            .all(|s| s.starts_with("32x512, 512x1024 (") && s.contains("; 3 other shapes (")),
        "{shapes:?}"
    );
}

/// The fields of one CSV line (quoted fields may hold commas).
fn split_csv(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}
