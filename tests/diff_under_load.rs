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
//! The runs load the machine on purpose, so the tests of this file run one at a time. Each case
//! passes when one of [`TRIALS`] trials on fresh runs gives the expected verdicts; how often each
//! verdict comes out over many trials is measured by `scripts/diff_acceptance.py` (docs/overhead.md).
//! A change is looked for while the machine is steady: when two quiet runs of an attempt disagree
//! or one is disturbed (a busy spell of the shared machine, not the hogs), the attempt is no trial
//! and is made again.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

mod common;
use common::scratch;

/// The `prof` binary of this build (built now if `cargo test` did not build it).
fn prof(args: &[&str]) -> Output {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let path = dir.join(format!("prof{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "profiler-cli"]);
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "building prof failed");
    }
    Command::new(path).args(args).output().unwrap()
}

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

/// What a comparison must find: nothing (an A/A pair), or the `target` event regressed and no
/// other event, with `--fail-on-regression`'s exit status when it is given.
#[derive(Clone, Copy)]
enum Expect<'a> {
    Nothing,
    Regressed(&'a str, Option<i32>),
}

/// Why a comparison's result is not what `expect` says, if it is not.
fn wrong(diff: &Value, status: Option<i32>, expect: Expect) -> Option<String> {
    let named = named(diff);
    match expect {
        Expect::Nothing if !named.is_empty() => Some(format!("named {named:?}")),
        Expect::Nothing if status != Some(0) => Some(format!("exit status {status:?}")),
        Expect::Regressed(target, _) if named != [format!("{target}#0 regressed")] => {
            Some(format!("named {named:?}, not only {target}#0 regressed"))
        }
        Expect::Regressed(_, Some(code)) if status != Some(code) => {
            Some(format!("exit status {status:?}, not {code}"))
        }
        _ => None,
    }
}

/// Trials per case: a case passes when one of them gives the expected verdicts. Each verdict is
/// a statistical statement about two runs of a shared machine, so a trial can be unlucky (one
/// of the runs disturbed by something else on the machine in the slowed layer's window, which
/// makes its change unreadable; `scripts/diff_acceptance.py` measures how often), and such
/// disturbances come in spells: a trial that fails is made again on fresh runs after a pause.
/// A broken comparison fails every trial.
const TRIALS: usize = 5;

/// Attempts per case that may be voided because the machine was not steady (3 s apart, each
/// a few seconds of runs: a busy spell of up to about four minutes).
const MAX_VOIDED: usize = 40;

/// Two quiet runs agree when the events moved together by at most this much (shift), and
/// moved alike to within it (spread): 5%, where two runs on a steady machine agree to within 1%.
const STEADY: f64 = 0.05;

/// The comparisons of the module documentation on `program`; `slow20` and `slow75` are the
/// arguments that slow down the layer whose event is `target`. The runs of the first trial are
/// shared between the cases; a case that fails is tried again on fresh runs.
fn judge(program: &str, slow20: &[&str], slow75: &[&str], target: &str) {
    if !cfg!(feature = "enable") {
        eprintln!("SKIPPED: the examples are built without profiling here (nothing to compare)");
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let exe = common::example(program, &[]);
    let dir = scratch(&format!("load-{program}"));
    // (name, loaded, arguments) of a run; the first trial's runs are made once and shared.
    type Kind<'a> = (&'static str, bool, &'a [&'a str]);
    let (quiet, loaded): (Kind, Kind) = (("quiet", false, &[]), ("loaded", true, &[]));
    let cases: [(&str, Kind, Kind, Expect); 6] = [
        ("A/A quiet", quiet, quiet, Expect::Nothing),
        ("A/A, after loaded", quiet, loaded, Expect::Nothing),
        ("A/A, before loaded", loaded, quiet, Expect::Nothing),
        ("A/A, both loaded", loaded, loaded, Expect::Nothing),
        (
            "20% slower, quiet",
            quiet,
            ("slow20", false, slow20),
            Expect::Regressed(target, None),
        ),
        (
            "75% slower, after loaded",
            quiet,
            ("slow75-loaded", true, slow75),
            Expect::Regressed(target, Some(1)),
        ),
    ];
    let mut made = std::collections::HashMap::new();
    let mut get = |(name, load, args): Kind, side: &str, attempt: usize| -> PathBuf {
        // The cases share the runs of one kind made for their attempt of the same number (the
        // two sides of an A/A pair get runs of their own): each attempt of a case compares
        // runs no earlier attempt of it used.
        let key = format!("{name}-{side}-{attempt}");
        made.entry(key.clone())
            .or_insert_with(|| run(&exe, &dir, &key, load, args))
            .clone()
    };
    for (what, before, after, expect) in cases {
        let mut failures = Vec::new();
        // Runs are keyed by attempt: the trials and those voided for want of quiet.
        let (mut attempt, mut voided) = (0, 0);
        let mut trial = 0;
        while trial < TRIALS {
            let b = get(before, "b", attempt);
            let a = get(after, if before.0 == after.0 { "a" } else { "b" }, attempt);
            let (d, status, text) = diff(&b, &a);
            // A change is looked for while the machine is steady: two quiet runs of this attempt
            // agree (neither disturbed, the events moved together within STEADY), and the runs
            // compared that are meant quiet were not disturbed. The shared machine has busy
            // spells (other jobs, memory bandwidth that comes and goes for minutes); an attempt
            // made in one is no trial: fresh runs after a pause. The hogs run only in runs
            // marked loaded, and the A/A cases are judged whatever the machine did.
            if matches!(expect, Expect::Regressed(..)) {
                let (check, _, _) = diff(&get(quiet, "b", attempt), &get(quiet, "a", attempt));
                let mut unsteady: Vec<String> = ["before", "after"]
                    .into_iter()
                    .filter(|side| check["runs"][side]["disturbed"] == true)
                    .map(|side| format!("quiet A/A: {side} disturbed"))
                    .collect();
                for key in ["shift", "spread"] {
                    let v = check["machine"][key].as_f64().unwrap_or(0.0);
                    if v.abs() > STEADY {
                        unsteady.push(format!("quiet A/A: machine {key} {:.1}%", 100.0 * v));
                    }
                }
                unsteady.extend(
                    [("before", before), ("after", after)]
                        .into_iter()
                        .filter(|(side, (_, loaded, _))| {
                            !loaded && d["runs"][side]["disturbed"] == true
                        })
                        .map(|(side, _)| format!("{side} meant quiet but disturbed")),
                );
                attempt += 1;
                if !unsteady.is_empty() {
                    voided += 1;
                    eprintln!("{program} {what}: machine unsteady ({unsteady:?}); runs made again");
                    assert!(
                        voided <= MAX_VOIDED,
                        "{program} {what}: in {voided} attempts the machine was never \
                         steady (two quiet runs disagreed, or one was disturbed): no trial made"
                    );
                    std::thread::sleep(std::time::Duration::from_secs(3));
                    continue;
                }
            } else {
                attempt += 1;
            }
            trial += 1;
            match wrong(&d, status, expect) {
                None => break,
                Some(why) => {
                    eprintln!("{program} {what}, trial {trial}: {why}\n{text}");
                    failures.push(why);
                    std::thread::sleep(std::time::Duration::from_secs(2));
                }
            }
        }
        assert!(
            failures.len() < TRIALS,
            "{program} {what}: every one of {TRIALS} trials was wrong: {failures:?}"
        );
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
