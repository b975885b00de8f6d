//! End to end: `candle-mlp` trained on a short schedule, as a user runs it, then its
//! `prof.json` and `prof report` on it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh directory for one test's output.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("candle-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `candle-mlp` in `dir` with a small model (fast in a debug build), a short schedule
/// (`PROF_WARMUP=2`, `PROF_REPEAT=3`), `vars` and `args`.
fn run(dir: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_candle-mlp"));
    cmd.current_dir(dir)
        .args(["--inputs", "32", "--hidden", "64", "--batch", "32"])
        .args(["--classes", "8", "--log-every", "5"])
        .args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("PROF_") || k == "RANK" {
            cmd.env_remove(k);
        }
    }
    cmd.env("PROF_WARMUP", "2").env("PROF_REPEAT", "3");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "candle-mlp failed: {}\n{}",
        out.status,
        stderr(&out)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The mean losses of the first and of the last iterations, from the program's last line.
fn first_and_last_loss(stdout: &str) -> (f64, f64) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("trained "))
        .unwrap_or_else(|| panic!("no `trained` line in:\n{stdout}"));
    let numbers: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.trim_end_matches(',').parse().ok())
        .filter(|x: &f64| x.fract() != 0.0)
        .collect();
    assert_eq!(numbers.len(), 2, "two losses in {line:?}");
    (numbers[0], numbers[1])
}

#[test]
fn help_and_bad_arguments() {
    let out = Command::new(env!("CARGO_BIN_EXE_candle-mlp"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(stdout(&out).contains("--tracing"), "{}", stdout(&out));
    let out = Command::new(env!("CARGO_BIN_EXE_candle-mlp"))
        .args(["--iters", "zero"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--iters"), "{}", stderr(&out));
}

/// Without profiling compiled in the program trains for `--iters` and writes nothing.
#[cfg(not(feature = "profile"))]
#[test]
fn disabled_build_trains_and_writes_nothing() {
    let dir = scratch("disabled");
    let out = run(&dir, &[], &["--iters", "30", "--tracing"]);
    let (first, last) = first_and_last_loss(&stdout(&out));
    assert!(last < first, "the loss fell: {first} -> {last}");
    assert!(stdout(&out).contains("trained 30 iterations"));
    assert!(!dir.join("prof.json").exists());
}

#[cfg(feature = "profile")]
mod profiled {
    use super::*;
    use serde_json::Value;

    fn read_json(path: &Path) -> Value {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    }

    fn events(prof: &Value) -> &Vec<Value> {
        prof["events"].as_array().unwrap()
    }

    /// The events of `prof` with this name, kind and layer.
    fn find<'a>(prof: &'a Value, name: &str, kind: &str, layer: &str) -> Vec<&'a Value> {
        events(prof)
            .iter()
            .filter(|e| e["name"] == name && e["kind"] == kind && e["layer"] == layer)
            .collect()
    }

    /// Every event measured its `PROF_REPEAT` samples, each with what its run allocated
    /// (the example installs `profiler_core::Alloc`): candle's tensors are allocated in
    /// every layer's forward pass.
    fn assert_measured(prof: &Value) {
        assert_eq!(prof["complete"], true);
        assert_eq!(prof["schema"], "profiler-core/prof/v2");
        for e in events(prof) {
            assert_eq!(e["samples_ns"].as_array().unwrap().len(), 3, "{e}");
            assert!(e["stats"]["median_ns"].as_u64().unwrap() > 0, "{e}");
            let allocs = e["memory"]["allocs"].as_array().unwrap();
            assert_eq!(allocs.len(), 3, "{e}");
            if e["phase"] == "fwd" {
                assert!(allocs.iter().all(|a| a.as_u64().unwrap() > 0), "{e}");
            }
        }
    }

    /// The work of a linear layer's forward on `[32, k]` inputs (the batch of `run`) with `[n,
    /// k]` weights and a bias, in f32: 2·m·n·k FLOPs; inputs, weights, bias and output bytes.
    fn linear_work(k: u64, n: u64) -> (u64, u64) {
        let m = 32;
        (2 * m * n * k, 4 * (m * k + n * k + n + m * n))
    }

    /// `e` counts `(flops, bytes)` in each of its 3 samples.
    fn assert_work(e: &Value, (flops, bytes): (u64, u64)) {
        assert_eq!(e["work"]["flops"], serde_json::json!(vec![flops; 3]), "{e}");
        assert_eq!(e["work"]["bytes"], serde_json::json!(vec![bytes; 3]), "{e}");
    }

    /// The `prof` binary of the main workspace's profiler-cli, in the profile this test was
    /// built in: built (or found up to date) by cargo in that workspace's own target directory,
    /// and its path taken from cargo's messages.
    fn prof_binary() -> PathBuf {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let exe = std::env::current_exe().unwrap();
        let release = exe.parent().unwrap().parent().unwrap().ends_with("release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.arg("build")
            .arg("--manifest-path")
            .arg(root.join("Cargo.toml"))
            .args([
                "-p",
                "profiler-cli",
                "--bin",
                "prof",
                "--message-format=json",
            ])
            .stderr(std::process::Stdio::inherit());
        if release {
            cmd.arg("--release");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "building prof failed");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "prof")
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo did not report prof's executable")
    }

    /// (a) and (b): the annotated modules and the runtime-named blocks, each measured; the
    /// loss falls; `prof report` names every layer.
    #[test]
    fn annotations_and_runtime_probes_time_every_layer() {
        let dir = scratch("layers");
        let out = run(&dir, &[], &[]);
        let prof = read_json(&dir.join("prof.json"));
        assert_measured(&prof);

        // (a) #[profiled] on the modules' forwards and on loss, backward and update.
        for (name, layer, phase) in [
            ("forward", "input", "fwd"),
            ("forward", "head", "fwd"),
            ("loss", "head", "loss"),
        ] {
            let found = find(&prof, name, "fn", layer);
            assert_eq!(found.len(), 1, "{name} {layer}");
            assert_eq!(found[0]["phase"], phase);
        }
        for (name, phase) in [("backward", "bwd"), ("update", "update")] {
            let found: Vec<_> = events(&prof)
                .iter()
                .filter(|e| e["name"] == name && e["kind"] == "fn")
                .collect();
            assert_eq!(found.len(), 1, "{name}");
            assert_eq!(found[0]["phase"], phase);
            assert_eq!(found[0]["layer"], Value::Null);
        }
        assert_eq!(find(&prof, "make_batch", "probe", "data").len(), 1);

        // (b) Timed: one runtime probe per block, named at run time, in model order.
        let blocks: Vec<_> = events(&prof)
            .iter()
            .filter(|e| e["kind"] == "runtime")
            .collect();
        let names: Vec<_> = blocks.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["layers.0", "layers.1"]);
        for e in &blocks {
            assert_eq!(e["id"], e["name"]);
            assert_eq!(e["layer"], "hidden");
            assert_eq!(e["phase"], "fwd");
            assert_eq!(e["occurrence"], 0);
        }
        let order = |e: &Value| e["order"].as_u64().unwrap();
        let input = find(&prof, "forward", "fn", "input")[0];
        let head = find(&prof, "forward", "fn", "head")[0];
        assert!(order(input) < order(blocks[0]) && order(blocks[1]) < order(head));

        // No tracing subscriber was installed: no spans.
        assert!(events(&prof).iter().all(|e| e["kind"] != "span"));

        // Work: each linear layer's matmul, through the `flops` and `bytes` keys of (a) and
        // the runtime probes of (b) (`--inputs 32 --hidden 64 --classes 8`); nothing else.
        assert_work(input, linear_work(32, 64));
        assert_work(head, linear_work(64, 8));
        // Their `shape` keys: the input's dims and the weights' ([out, in]), one shape each.
        for (e, shape) in [(input, "32x32, 64x32"), (head, "32x64, 8x64")] {
            assert_eq!(e["shapes"]["values"], serde_json::json!([shape]), "{e}");
        }
        for e in &blocks {
            assert_work(e, linear_work(64, 64));
        }
        for e in events(&prof) {
            let counts = e["kind"] == "runtime" || (e["kind"] == "fn" && e["phase"] == "fwd");
            assert_eq!(e.get("work").is_some(), counts, "{e}");
        }

        let (first, last) = first_and_last_loss(&stdout(&out));
        assert!(last < first, "the loss fell: {first} -> {last}");

        let report = Command::new(prof_binary())
            .arg("report")
            .arg(dir.join("prof.json"))
            .output()
            .unwrap();
        assert!(report.status.success(), "{}", stderr(&report));
        let text = stdout(&report);
        for word in [
            "layers.0", "layers.1", "input", "head", "hidden", "backward", "update",
        ] {
            assert!(text.contains(word), "`{word}` in the report:\n{text}");
        }
        // FLOP/s per layer: a column, and a figure (not `-`) on each block's row.
        assert!(
            text.contains("FLOP/s"),
            "a FLOP/s column in the report:\n{text}"
        );
        for block in ["layers.0", "layers.1"] {
            let row = text
                .lines()
                .find(|l| l.contains(block))
                .unwrap_or_else(|| panic!("no {block} row:\n{text}"));
            assert!(
                row.split_whitespace()
                    .any(|w| w.ends_with('M') || w.ends_with('G')),
                "a FLOP/s figure on the {block} row: {row}\n{text}"
            );
        }
    }

    /// (c) With `--tracing`, the `linear` and `layer_norm` spans of each block are probes:
    /// one event per occurrence (block), nested in that block's runtime probe.
    #[test]
    fn tracing_spans_become_probes() {
        let dir = scratch("spans");
        run(&dir, &[], &["--tracing"]);
        let prof = read_json(&dir.join("prof.json"));
        assert_measured(&prof);
        for name in ["layer_norm", "linear"] {
            let spans = find(&prof, name, "span", "hidden");
            let occurrences: Vec<_> = spans.iter().map(|e| e["occurrence"].clone()).collect();
            assert_eq!(occurrences, [0, 1], "{name}");
            for e in spans {
                assert_eq!(e["phase"], "fwd");
                assert_eq!(e["module"], "candle_mlp::traced");
                // The `linear` span's `flops` and `bytes` fields count its matmul; the norm
                // counts nothing.
                if name == "linear" {
                    assert_work(e, linear_work(64, 64));
                    // Its shape fields: the batch of 32 by 64 inputs, to 64 outputs.
                    assert_eq!(
                        e["shapes"]["values"],
                        serde_json::json!(["32x64x64"]),
                        "{e}"
                    );
                } else {
                    assert!(e.get("work").is_none(), "{e}");
                }
            }
        }
        // Each span runs inside its block's runtime probe.
        let order = |name: &str, kind: &str, occurrence: u64| {
            events(&prof)
                .iter()
                .find(|e| e["name"] == name && e["kind"] == kind && e["occurrence"] == occurrence)
                .unwrap()["order"]
                .as_u64()
                .unwrap()
        };
        assert!(order("layers.0", "runtime", 0) < order("linear", "span", 0));
        assert!(order("linear", "span", 0) < order("layers.1", "runtime", 0));
        assert!(order("layers.1", "runtime", 0) < order("linear", "span", 1));
    }

    /// `--bwd-layers`: every layer's backward steps measured as `<layer>/bwd` (kind `runtime`,
    /// phase `bwd`) beside its `<layer>/fwd`, first run in the reverse of the forward's order,
    /// inside the annotated `backward`.
    #[test]
    fn bwd_layers_time_each_layers_backward() {
        let dir = scratch("bwd-layers");
        run(&dir, &[], &["--bwd-layers"]);
        let prof = read_json(&dir.join("prof.json"));
        assert_measured(&prof);
        let order = |name: &str, kind: &str| {
            events(&prof)
                .iter()
                .find(|e| e["name"] == name && e["kind"] == kind)
                .unwrap_or_else(|| panic!("no {kind} event {name}"))["order"]
                .as_u64()
                .unwrap()
        };
        let layers = ["input", "layers.0", "layers.1", "head"];
        for layer in layers {
            for phase in ["fwd", "bwd"] {
                let name = format!("{layer}/{phase}");
                let found = find(&prof, &name, "runtime", layer);
                assert_eq!(found.len(), 1, "{name}");
                assert_eq!(found[0]["phase"], phase, "{name}");
            }
        }
        let bwd: Vec<u64> = layers
            .iter()
            .rev()
            .map(|l| order(&format!("{l}/bwd"), "runtime"))
            .collect();
        assert!(order("backward", "fn") < bwd[0], "{bwd:?}");
        assert!(bwd.windows(2).all(|w| w[0] < w[1]), "{bwd:?}");
        assert!(bwd[3] < order("update", "fn"), "{bwd:?}");
    }

    /// PROF_FILTER selects runtime probes and spans by kind and name, and nothing else runs.
    #[test]
    fn filter_selects_runtime_probes_and_spans() {
        let dir = scratch("filter");
        run(
            &dir,
            &[(
                "PROF_FILTER",
                "kind=runtime&name=layers.1 | kind=span&name=linear",
            )],
            &["--tracing"],
        );
        let prof = read_json(&dir.join("prof.json"));
        assert_measured(&prof);
        let got: Vec<_> = events(&prof)
            .iter()
            .map(|e| format!("{}#{}", e["name"].as_str().unwrap(), e["occurrence"]))
            .collect();
        // In execution order: block 0's linear runs before block 1 starts.
        assert_eq!(got, ["linear#0", "layers.1#0", "linear#1"]);
    }

    /// `--list-probes=warmup-json`: the program runs its warmup, then lists every probe seen so
    /// far, the runtime probes and the spans included (plain `--list-probes` runs before them).
    #[test]
    fn the_listing_after_warmup_has_runtime_probes_and_spans() {
        let dir = scratch("list-warmup");
        let out = run(&dir, &[], &["--tracing", "--list-probes=warmup-json"]);
        // The program prints its own first line before the warmup; the listing follows.
        let text = stdout(&out);
        let json = &text[text.find("\n[").map_or(0, |i| i + 1)..];
        let probes: Value = serde_json::from_str(json)
            .unwrap_or_else(|e| panic!("not a JSON listing ({e}): {text}"));
        let probes = probes.as_array().unwrap();
        let kinds: Vec<&str> = probes.iter().map(|p| p["kind"].as_str().unwrap()).collect();
        for kind in ["fn", "probe", "runtime", "span"] {
            assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
        }
        assert!(probes
            .iter()
            .any(|p| p["id"] == "layers.1" && p["selected"] == true));
        assert!(probes
            .iter()
            .any(|p| p["name"] == "linear" && p["kind"] == "span" && p["layer"] == "hidden"));
        // Nothing was measured or written, and the training stopped after the warmup.
        assert!(!dir.join("prof.json").exists());
        let plain = run(&dir, &[], &["--tracing", "--list-probes=json"]);
        let plain: Value = serde_json::from_slice(&plain.stdout)
            .unwrap_or_else(|e| panic!("not a JSON listing ({e}): {}", stdout(&plain)));
        assert!(plain
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["kind"] != "span"));
    }
}
