//! `prof advise` as a user runs it: text and JSON on recorded dlrm profiles, several ranks,
//! `--top`, and bad input (status 2, a clear message, never a panic).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;
use common::{prof, scratch};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cli")
        .join(name)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = prof(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn text_then_json_then_top() {
    let file = data("batch32.json");
    let text = ok(&["advise", p(&file)]);
    assert!(text.starts_with("prof advise: dlrm, sample mode"), "{text}");
    assert!(text.contains("  1. up to "), "{text}");
    assert!(
        text.contains("   evidence: ") && text.contains("   try: "),
        "{text}"
    );
    assert!(
        text.contains("examples/dlrm.rs:"),
        "file:line in the evidence: {text}"
    );

    let json: Value = serde_json::from_str(&ok(&["advise", p(&file), "--json"])).unwrap();
    let findings = json["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    let mut last = f64::INFINITY;
    for f in findings {
        for key in ["id", "title", "at_stake_ns", "evidence", "try"] {
            assert!(f.get(key).is_some(), "{key} in {f}");
        }
        let stake = f["at_stake_ns"].as_f64().unwrap();
        assert!(stake <= last, "ordered by time at stake");
        last = stake;
    }
    let one: Value =
        serde_json::from_str(&ok(&["advise", p(&file), "--json", "--top", "1"])).unwrap();
    assert_eq!(one["findings"].as_array().unwrap().len(), 1);
    assert_eq!(one["findings"][0], findings[0]);
}

#[test]
fn several_ranks_add_the_straggler() {
    let text = ok(&["advise", p(&data("batch32.json")), p(&data("rank1.json"))]);
    assert!(text.contains("straggler: rank "), "{text}");
    assert!(text.contains("2 ranks"), "{text}");
}

/// Two inputs that say the same rank: `prof merge` numbers the ranks by position, and the
/// header names the rank judged as the straggler finding does (before: "judged on rank 0"
/// beside "straggler: rank 1", of one profile), with merge's warning in the text and the JSON.
#[test]
fn ranks_given_twice_are_named_as_merge_numbers_them_and_warned_of() {
    let dir = scratch("advise-ranks");
    let mut slow: Value =
        serde_json::from_str(&std::fs::read_to_string(data("batch32.json")).unwrap()).unwrap();
    for w in slow["iterations"]["wall_ns"].as_array_mut().unwrap() {
        *w = Value::from(w.as_u64().unwrap() * 3);
    }
    let slow_path = dir.join("slow.json");
    std::fs::write(&slow_path, slow.to_string()).unwrap();
    let (a, b) = (data("batch32.json"), data("batch32.json"));
    let args = ["advise", p(&a), p(&slow_path), p(&b)];
    let text = ok(&args);
    assert!(
        text.contains("judged on rank 1, the slowest") && text.contains("straggler: rank 1 "),
        "{text}"
    );
    assert!(
        text.contains("  warning: inputs 1 and 2 both say rank 0"),
        "{text}"
    );
    let json: Value = serde_json::from_str(&ok(&[&args[..], &["--json"]].concat())).unwrap();
    assert_eq!(json["rank"], 1);
    assert!(json["warnings"][0]
        .as_str()
        .unwrap()
        .contains("both say rank 0"));
}

#[test]
fn bad_input_exits_2() {
    let dir = scratch("advise");
    let not_json = dir.join("not.json");
    std::fs::write(&not_json, "not json\n").unwrap();
    let good = data("batch32.json");
    for (args, says) in [
        (vec!["advise", "/nonexistent-dir/p.json"], "no such file"),
        (vec!["advise", p(&not_json)], "not JSON"),
        (vec!["advise", p(&good), "--top", "0"], "--top"),
        (vec!["advise", p(&good), "--top", "x"], "--top"),
        (
            vec!["advise", p(&good), "--cv-threshold=-1"],
            "--cv-threshold",
        ),
        (vec!["advise"], "FILES"),
    ] {
        let out = prof(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error:"), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?} should say {says}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same findings in `prof report` (its section, and `advice` in JSON) and on the HTML page
/// (its data, which the "What to do about it" card draws, and the page without JavaScript).
#[test]
fn report_and_html_carry_the_same_findings() {
    let file = data("batch32.json");
    let advice: Value = serde_json::from_str(&ok(&["advise", p(&file), "--json"])).unwrap();
    let report: Value =
        serde_json::from_str(&ok(&["report", p(&file), "--format", "json"])).unwrap();
    assert_eq!(report["advice"], advice["findings"]);
    let table = ok(&["report", p(&file)]);
    let first = &advice["findings"][0];
    assert!(table.contains("what to do about it (1 finding"), "{table}");
    assert!(
        table.contains(&format!("  {}: ", first["id"].as_str().unwrap())),
        "{table}"
    );

    let dir = scratch("advise-html");
    let page = dir.join("report.html");
    ok(&["html", p(&file), "-o", p(&page)]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("\"advice\":[{"),
        "the page's data has the findings"
    );
    assert!(html.contains("renderAdvice"));
    assert!(
        html.contains("<li>up to 4.4µs/iter: too-noisy: "),
        "noscript list"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--peak`: the rules on FLOP/s judge against the given peak. `top_backward` made to count
/// 1 MFLOP a run (about 13 GFLOP/s at its 74µs): far below a peak of 1 PFLOP/s, so
/// `compute-below-peak` fires with `--peak`, and is silent without a peak.
#[test]
fn peak_brings_the_rules_on_the_peak() {
    let dir = scratch("advise-peak");
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(data("batch32.json")).unwrap()).unwrap();
    for e in v["events"].as_array_mut().unwrap() {
        if e["name"] == "top_backward" {
            let n = e["samples_ns"].as_array().unwrap().len();
            e["work"] = serde_json::json!({ "flops": vec![1_000_000u64; n] });
        }
    }
    let file = dir.join("work.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let peak = dir.join("peak.json");
    std::fs::write(
        &peak,
        r#"{"schema": "profiler-core/peak/v1", "flops": 1e15, "source": "given"}"#,
    )
    .unwrap();
    let ids = |args: &[&str]| -> Vec<String> {
        let v: Value = serde_json::from_str(&ok(args)).unwrap();
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let without = ids(&["advise", p(&file), "--json"]);
    assert!(
        !without.iter().any(|i| i == "compute-below-peak"),
        "{without:?}"
    );
    let with = ids(&["advise", p(&file), "--json", "--peak", p(&peak)]);
    assert!(with.iter().any(|i| i == "compute-below-peak"), "{with:?}");
    let out = prof(&["advise", p(&file), "--peak", p(&dir.join("missing.json"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: --peak"));
    let _ = std::fs::remove_dir_all(&dir);
}
