//! `prof whatif`'s plumbing, deterministically: its "program" is a shell command that copies one
//! of two made-up profiles to the `PROF_OUT` it is given, chosen by the `PROF_DELAY` it sees
//! (and fails unless `PROF_DELAY_FILTER` is the filter asked for). The delayed profile's
//! iterations are 0.5 ms longer and it asked for 1 ms per iteration, so the answer is exactly
//! 0.5; nothing is timed.
#![cfg(unix)]

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;
use common::{prof, scratch};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cli")
        .join(name)
}

/// `batch32.json` with every iteration `extra_ns` longer and `run.delay` as a run with
/// `PROF_DELAY=amount` writes it, `injected_ns` per iteration (`None`: no `run.delay`).
fn made_up(dir: &Path, name: &str, extra_ns: u64, delay: Option<(&str, u64)>) -> PathBuf {
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(data("batch32.json")).unwrap()).unwrap();
    for w in v["iterations"]["wall_ns"].as_array_mut().unwrap() {
        *w = Value::from(w.as_u64().unwrap() + extra_ns);
    }
    // The iterations delayed: every one after the first step() (the first, from start-up to
    // it, is not).
    let count = v["iterations"]["count"].as_u64().unwrap() - 1;
    if let Some((amount, per_iteration)) = delay {
        v["run"]["delay"] = serde_json::json!({
            "filter": "name=dense",
            "amount": amount,
            // No run delayed when none asked for any (its probes never ran).
            "calls": if per_iteration == 0 { 0 } else { count },
            "requested_ns": per_iteration * count,
            // The spins overran by a quarter (a thread that lost the processor before their
            // end): the slope is per unit of delay asked for.
            "injected_ns": per_iteration * count * 5 / 4,
        });
    }
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    path
}

/// The program: copies `base` when `PROF_DELAY` is 0, `delayed` otherwise.
fn program(base: &Path, delayed: &Path) -> Vec<String> {
    let script = format!(
        "test \"$PROF_DELAY_FILTER\" = name=dense || exit 1; if [ \"$PROF_DELAY\" = 0 ]; then \
         cp {} \"$PROF_OUT\"; else cp {} \"$PROF_OUT\"; fi",
        base.display(),
        delayed.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

fn whatif(dir: &Path, extra: &[&str], program: &[String]) -> std::process::Output {
    let runs = dir.join("runs");
    let mut args = vec![
        "whatif",
        "--filter",
        "name=dense",
        "--delay",
        "1ms",
        "--dir",
        runs.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend(program.iter().map(String::as_str));
    prof(&args)
}

#[test]
fn reports_the_change_per_unit_of_delay_with_its_interval() {
    let dir = scratch("whatif");
    let base = made_up(&dir, "base.json", 0, Some(("0", 0)));
    let delayed = made_up(&dir, "delayed.json", 500_000, Some(("1ms", 1_000_000)));
    let out = whatif(&dir, &["-n", "6", "--json"], &program(&base, &delayed));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Every round the same: the interval is exact, and the rounds stop at the fewest (5).
    assert_eq!(v["rounds"], 5, "{v}\n{err}");
    assert!(
        err.contains("prof whatif: resolved after 5 rounds"),
        "{err}"
    );
    assert_eq!(v["per_unit"], 0.5, "{v}");
    assert_eq!(
        (v["ci_low"].as_f64(), v["ci_high"].as_f64()),
        (Some(0.5), Some(0.5))
    );
    assert_eq!(v["reading"], "partly hidden");
    assert_eq!(v["delay_per_iteration_ns"], 1e6);
    assert_eq!(v["injected_per_iteration_ns"], 1.25e6);
    assert_eq!(v["per_round"].as_array().unwrap().len(), 5);
    // Each round ran both sides, each into its own file.
    for k in 0..5 {
        for side in ["base", "delayed"] {
            assert!(
                dir.join(format!("runs/{side}-{k}.json")).is_file(),
                "{side}-{k}"
            );
        }
    }
    let out = whatif(&dir, &["-n", "2"], &program(&base, &delayed));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(text.contains("change per unit of delay 0.50"), "{text}");
    assert!(text.contains("partly hidden"), "{text}");
    assert!(text.contains("Coz's argument"), "{text}");
}

#[test]
fn bad_input_is_an_error_that_says_what_to_do() {
    let dir = scratch("whatif-bad");
    let base = made_up(&dir, "base.json", 0, Some(("0", 0)));
    let delayed = made_up(&dir, "delayed.json", 0, Some(("1ms", 1_000_000)));
    let good = program(&base, &delayed);
    let cases = [
        ("name=dense", "fast", "--delay `fast` is not a delay"),
        ("name=dense", "0", "above 0"),
        ("name=dense", "0.4ns", "less than a nanosecond"),
        ("name=dense", "0.0009us", "less than a nanosecond"),
        ("layer=(", "1ms", "--filter"),
    ];
    for (filter, delay, message) in cases {
        let runs = dir.join("runs");
        let mut args = vec!["whatif", "--filter", filter, "--delay", delay];
        args.extend(["--dir", runs.to_str().unwrap(), "--"]);
        args.extend(good.iter().map(String::as_str));
        let out = prof(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{filter} {delay}: {err}");
        assert!(err.contains(message), "{filter} {delay}: {err}");
        // Checked before anything runs.
        assert!(!runs.exists(), "{filter} {delay}");
    }
    // A program whose profile has no run.delay was not built with a profiler that delays.
    let old = made_up(&dir, "old.json", 0, None);
    let out = whatif(&dir, &["-n", "2"], &program(&old, &old));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("recorded no run.delay"), "{err}");
    // A delayed run that injected nothing: its probes never ran.
    let none = made_up(&dir, "none.json", 0, Some(("1ms", 0)));
    let out = whatif(&dir, &["-n", "2"], &program(&base, &none));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("asked for no delay"), "{err}");
    assert!(err.contains("must run inside the iterations"), "{err}");
    // Runs delayed, each by less than a nanosecond (a share of very short runs): the message
    // says so, not that the probes never ran.
    let mut v: Value = serde_json::from_slice(&std::fs::read(&none).unwrap()).unwrap();
    v["run"]["delay"]["calls"] = Value::from(31);
    v["run"]["delay"]["amount"] = Value::from("0.001%");
    let rounded = dir.join("rounded.json");
    std::fs::write(&rounded, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = whatif(&dir, &["-n", "2"], &program(&base, &rounded));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("its 31 delayed runs' delays round to 0ns"),
        "{err}"
    );
}
