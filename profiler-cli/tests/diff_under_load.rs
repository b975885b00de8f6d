//! `prof diff` on a busy machine: real runs of the examples, some of them made while CPU-hog
//! threads (one per core) keep every core busy for the whole run, compared as CI compares them.
//!
//! For each program (`waits`, whose layers are timed busy-waits, and `dlrm`, a real model), six
//! runs: two quiet, two loaded, one quiet with one layer 20% slower, one loaded with that layer
//! 75% slower. Then:
//! - A/A quiet, A/A with one run loaded, A/A with both loaded: no event regressed or improved,
//!   and `--fail-on-regression` exits 0;
//! - the layer 20% slower, quiet: that layer regressed, no other event;
//! - the layer 75% slower, its run loaded: that layer regressed, no other event, and
//!   `--fail-on-regression` exits 1.
//!
//! The runs load the machine on purpose, so the tests of this file run one at a time. How often
//! each verdict comes out over many trials is measured by `scripts/diff_acceptance.py` (README).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

mod common;
use common::{prof, scratch};

/// The tests of this file load the machine: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Threads that keep every core busy until dropped.
struct Hogs {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Hogs {
    fn start() -> Hogs {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..cores)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..1000 {
                            x = std::hint::black_box(x.wrapping_mul(6364136223846793005) + 1);
                        }
                    }
                })
            })
            .collect();
        Hogs { stop, threads }
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The example `name` of the root package, built now if `cargo test` did not build it.
fn example(name: &str) -> PathBuf {
    let prof = PathBuf::from(env!("CARGO_BIN_EXE_prof"));
    let dir = prof.parent().unwrap();
    let path = dir.join("examples").join(name);
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
            .args(["build", "-p", "profiler-suite", "--example", name]);
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "building {name} failed");
    }
    path
}

/// One run of `program` with `args`, loaded or not, written to `dir/name.json`.
fn run(program: &Path, dir: &Path, name: &str, loaded: bool, args: &[&str]) -> PathBuf {
    let out = dir.join(format!("{name}.json"));
    let mut cmd = Command::new(program);
    cmd.current_dir(dir).args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("PROF_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("PROF_OUT", &out);
    if program.ends_with("waits") {
        cmd.env("PROF_REPEAT", "30");
    }
    let hogs = loaded.then(Hogs::start);
    let output = cmd.output().unwrap();
    drop(hogs);
    assert!(
        output.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// `prof diff --fail-on-regression --format json` of two runs, and its exit status.
fn diff(before: &Path, after: &Path) -> (Value, Option<i32>, String) {
    let args = |format: &str| -> Vec<String> {
        vec![
            "diff".into(),
            before.display().to_string(),
            after.display().to_string(),
            "--fail-on-regression".into(),
            "--format".into(),
            format.into(),
        ]
    };
    let run = |format: &str| -> Output {
        let args = args(format);
        prof(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let json = run("json");
    let table = run("table");
    assert_eq!(json.status.code(), table.status.code());
    let value = serde_json::from_slice(&json.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&json.stderr));
    });
    let text = String::from_utf8_lossy(&table.stdout).into_owned();
    (value, json.status.code(), text)
}

/// The events of a diff that were called regressed or improved, as `name#occurrence verdict`.
fn named(diff: &Value) -> Vec<String> {
    diff["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["verdict"] == "regressed" || e["verdict"] == "improved")
        .map(|e| {
            let name = e["name"].as_str().unwrap_or("?");
            let verdict = e["verdict"].as_str().unwrap_or("?");
            format!("{name}#{} {verdict}", e["occurrence"])
        })
        .collect()
}

/// The six runs of a program and the five comparisons of the module documentation; `slow20`
/// and `slow75` are the arguments that slow down the layer whose event is `target`.
fn judge(program: &str, slow20: &[&str], slow75: &[&str], target: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let exe = example(program);
    let dir = scratch(&format!("load-{program}"));
    let q1 = run(&exe, &dir, "quiet1", false, &[]);
    let q2 = run(&exe, &dir, "quiet2", false, &[]);
    let l1 = run(&exe, &dir, "loaded1", true, &[]);
    let l2 = run(&exe, &dir, "loaded2", true, &[]);
    let s20 = run(&exe, &dir, "slow20", false, slow20);
    let s75 = run(&exe, &dir, "slow75-loaded", true, slow75);

    for (what, before, after) in [
        ("A/A quiet", &q1, &q2),
        ("A/A, after loaded", &q1, &l1),
        ("A/A, before loaded", &l2, &q2),
        ("A/A, both loaded", &l1, &l2),
    ] {
        let (d, status, text) = diff(before, after);
        assert!(
            named(&d).is_empty(),
            "{program} {what}: {:?}\n{text}",
            named(&d)
        );
        assert_eq!(status, Some(0), "{program} {what}:\n{text}");
    }
    for (what, before, after, status) in [
        ("20% slower, quiet", &q1, &s20, None),
        ("75% slower, after loaded", &q1, &s75, Some(1)),
    ] {
        let (d, code, text) = diff(before, after);
        let expected = format!("{target}#0 regressed");
        assert_eq!(named(&d), [expected], "{program} {what}:\n{text}");
        if status.is_some() {
            assert_eq!(code, status, "{program} {what}:\n{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn waits_under_load() {
    judge(
        "waits",
        &["--slow", "forward=1.2"],
        &["--slow", "forward=1.75"],
        "forward",
    );
}

#[test]
fn dlrm_under_load() {
    judge(
        "dlrm",
        &["--slow", "top_mlp", "--slow-by", "20"],
        &["--slow", "top_mlp", "--slow-by", "75"],
        "top_backward",
    );
}
