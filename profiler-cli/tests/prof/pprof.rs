//! `prof pprof`, `prof flame --cpu` and the CPU-sample rows of `prof report` (issue 38), on
//! `tests/data/cli/sampled.json`: a run of `examples/cpu_layers.rs` at `PROF_CPU_SAMPLE=1000`
//! (layer `a` runs `f` and `g`, layer `b` runs `h`, the helper thread's layer `helper` runs
//! `k`, and `outside` runs in no event).
//!
//! The pprof profile is decoded twice: by the messages `prof pprof` encodes with, and, when
//! `go` is on PATH, by `go tool pprof -raw` (Go's own reader of profile.proto). Without `go`
//! that half is skipped with a note, unless `PROF_REQUIRE_GO=1`, which makes it a failure (CI
//! sets it and installs Debian's `golang-go`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use profiler_analysis::cpu::proto;
use prost::Message;

use crate::common::{self, prof};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn scratch(name: &str) -> PathBuf {
    common::target_scratch("pprof", name)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The decoded profile of `sampled.json`, and where it was written (a scratch folder `name` of
/// its own: the tests run in parallel).
fn pprof_of_sample(name: &str, extra: &[&str]) -> (proto::PprofProfile, PathBuf) {
    let out = scratch(name).join("profile.pb.gz");
    let file = data("tests/data/cli/sampled.json");
    let mut args = vec!["pprof", file.to_str().unwrap(), "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let run = prof(&args);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&out).unwrap())
        .read_to_end(&mut raw)
        .expect("gzip");
    (
        proto::PprofProfile::decode(raw.as_slice()).expect("profile.proto"),
        out,
    )
}

/// Each sample's labels, as (key, value) strings.
fn labels(p: &proto::PprofProfile, s: &proto::Sample) -> Vec<(String, String)> {
    s.label
        .iter()
        .map(|l| {
            (
                p.string_table[l.key as usize].clone(),
                p.string_table[l.str as usize].clone(),
            )
        })
        .collect()
}

/// The name of a sample's sampled function.
fn leaf(p: &proto::PprofProfile, s: &proto::Sample) -> String {
    let location = &p.location[(s.location_id[0] - 1) as usize];
    let function = &p.function[(location.line[0].function_id - 1) as usize];
    p.string_table[function.name as usize].clone()
}

#[test]
fn pprof_labels_every_sample_with_its_event() {
    let (p, _) = pprof_of_sample("labels", &[]);
    assert_eq!(p.string_table[0], "");
    let types: Vec<&str> = p
        .sample_type
        .iter()
        .map(|t| p.string_table[t.r#type as usize].as_str())
        .collect();
    assert_eq!(types, ["samples", "cpu"]);
    assert_eq!(p.period, 1_000_000, "1000 Hz: a sample per ms of CPU time");
    let mut seen = 0;
    for s in &p.sample {
        let labels = labels(&p, s);
        let layer = labels
            .iter()
            .find(|(k, _)| k == "layer")
            .map(|(_, v)| v.as_str());
        let expected = match leaf(&p, s).as_str() {
            "cpu_layers::f" | "cpu_layers::g" => Some("a"),
            "cpu_layers::h" => Some("b"),
            "cpu_layers::k" => Some("helper"),
            _ => None,
        };
        assert_eq!(layer, expected, "{labels:?}");
        assert!(labels.iter().any(|(k, v)| k == "rank" && v == "0"));
        if expected.is_some() {
            assert!(labels.iter().any(|(k, _)| k == "event"));
            seen += 1;
        }
        assert_eq!(s.value[1], s.value[0] * p.period);
    }
    assert!(seen >= 4, "samples in f, g, h and k");
}

#[test]
fn pprof_filter_keeps_one_layer() {
    let (p, _) = pprof_of_sample("filter", &["--filter", "layer=a"]);
    assert!(!p.sample.is_empty());
    for s in &p.sample {
        assert!(["cpu_layers::f", "cpu_layers::g"].contains(&leaf(&p, s).as_str()));
    }
}

#[test]
fn go_tool_pprof_reads_the_profile() {
    let go = Command::new("go").arg("version").output();
    if !go.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var_os("PROF_REQUIRE_GO").is_none(),
            "PROF_REQUIRE_GO is set but `go` is not on PATH"
        );
        eprintln!("note: `go` is not on PATH: go tool pprof not run (apt-get install golang-go)");
        return;
    }
    let (_, path) = pprof_of_sample("go", &[]);
    let home = scratch("gohome");
    let run = Command::new("go")
        .args(["tool", "pprof", "-top", "-tagfocus", "layer=a"])
        .arg(&path)
        .env("HOME", &home)
        .env("PPROF_TMPDIR", &home)
        .output()
        .expect("go tool pprof runs");
    let out = text(&run.stdout);
    assert!(run.status.success(), "{}{}", out, text(&run.stderr));
    assert!(
        out.contains("cpu_layers::f") && out.contains("cpu_layers::g"),
        "{out}"
    );
    assert!(
        !out.contains("cpu_layers::h"),
        "layer b's function under layer=a: {out}"
    );
}

#[test]
fn flame_cpu_puts_the_stacks_under_their_events() {
    let out = scratch("flame");
    let folded = out.join("cpu.folded");
    let file = data("tests/data/cli/sampled.json");
    let run = prof(&[
        "flame",
        "--cpu",
        "--folded",
        file.to_str().unwrap(),
        "-o",
        folded.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let lines = std::fs::read_to_string(&folded).unwrap();
    for line in lines.lines() {
        let (stack, _) = line.rsplit_once(' ').unwrap();
        let root = stack.split(';').next().unwrap();
        if stack.ends_with("cpu_layers::f") || stack.ends_with("cpu_layers::g") {
            assert_eq!(root, "a/fwd/layer_a", "{line}");
        }
        if stack.ends_with("cpu_layers::outside") {
            assert_eq!(root, "(no event)", "{line}");
        }
    }
    let svg = out.join("cpu.svg");
    let run = prof(&[
        "flame",
        "--cpu",
        "--filter",
        "layer=b",
        file.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("cpu_layers::h") && !svg.contains("cpu_layers::f"));
}

#[test]
fn report_lists_the_top_functions_of_each_event() {
    let file = data("tests/data/cli/sampled.json");
    let run = prof(&["report", file.to_str().unwrap()]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let out = text(&run.stdout);
    let at = out.find("CPU samples:").expect("a CPU samples section");
    let section = &out[at..];
    // Each event's line, then its functions, indented further.
    let lines: Vec<&str> = section.lines().collect();
    let a = lines
        .iter()
        .position(|l| l.trim_start().starts_with("a/fwd/layer_a"))
        .expect("layer a's event");
    let functions: Vec<&str> = lines[a + 1..]
        .iter()
        .take_while(|l| l.starts_with("    "))
        .copied()
        .collect();
    assert!(
        functions.iter().any(|l| l.ends_with("cpu_layers::f"))
            && functions.iter().any(|l| l.ends_with("cpu_layers::g"))
            && !functions.iter().any(|l| l.ends_with("cpu_layers::h")),
        "{section}"
    );
}

#[test]
fn a_profile_without_samples_is_told_so() {
    let out = scratch("none").join("p.pb.gz");
    let file = data("tests/data/cli/batch32.json");
    let run = prof(&["pprof", file.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        text(&run.stderr).contains("has no CPU samples"),
        "{}",
        text(&run.stderr)
    );
    assert!(!out.exists(), "nothing written");
}

/// A filter that keeps no sampled event is an error for `prof pprof` as for `prof flame --cpu`
/// (before, pprof wrote an empty profile and exited 0); a profile whose samples hold no stack
/// is told so, not as a filter that matched nothing (before: "--filter  matches no sampled
/// event" without a filter).
#[test]
fn filters_that_keep_nothing_and_empty_samples_are_told_apart() {
    let file = data("tests/data/cli/sampled.json");
    let dir = scratch("keeps-nothing");
    let out = dir.join("p.pb.gz");
    for args in [
        vec!["pprof", file.to_str().unwrap(), "-o", out.to_str().unwrap()],
        vec![
            "flame",
            "--cpu",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    ] {
        let mut args = args;
        args.extend(["--filter", "layer=nonexistent"]);
        let run = prof(&args);
        let err = text(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: --filter layer=nonexistent matches no sampled event"),
            "{err}"
        );
    }
    assert!(!out.exists());
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    v["cpu_samples"]["stacks"] = serde_json::json!([]);
    v["cpu_samples"]["timeline"] = serde_json::Value::Null;
    let empty = dir.join("empty.json");
    std::fs::write(&empty, serde_json::to_vec(&v).unwrap()).unwrap();
    let svg = dir.join("e.svg");
    // `prof pprof` too: before, it wrote an empty profile and exited 0.
    for (command, output) in [("flame", &svg), ("pprof", &out)] {
        let mut args = vec![
            command,
            empty.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
        ];
        if command == "flame" {
            args.insert(1, "--cpu");
        }
        let run = prof(&args);
        let err = text(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("holds CPU samples but no sampled stack"),
            "{err}"
        );
        assert!(!output.exists(), "{args:?}");
    }
    // A filter on a key the samples do not know is refused as such, not as matching nothing
    // (and `kind!=fn` no longer keeps every stack).
    for filter in ["module=cpu_layers", "kind!=fn", "layer=a&file=x.rs"] {
        for command in ["pprof", "flame"] {
            let mut args = vec![command, file.to_str().unwrap(), "-o", out.to_str().unwrap()];
            if command == "flame" {
                args.insert(1, "--cpu");
            }
            args.extend(["--filter", filter]);
            let run = prof(&args);
            let err = text(&run.stderr);
            assert_eq!(run.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains("the CPU samples know each event's name, id, layer and phase, not"),
                "{args:?}: {err}"
            );
            assert!(!out.exists(), "{args:?}");
        }
    }
}
