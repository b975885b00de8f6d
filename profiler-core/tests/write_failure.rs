//! A final write that fails: the summary says nothing was written, the write is tried once
//! more at the end, and the exit status says whether the results were saved.
//!
//! Each case runs in a child process (this test binary run again with `PROF_TEST_CASE`), since
//! a failed write ends the process with status 1.
#![cfg(feature = "enable")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use profiler_core::{profiled, Config, Mode};

#[profiled(layer = "l", phase = "fwd")]
fn layer() {
    std::hint::black_box((0..100u64).sum::<u64>());
}

fn config(out: &Path, exit: bool) -> Config {
    Config {
        mode: Mode::Sample,
        warmup: 2,
        repeat: 3,
        out: out.display().to_string(),
        exit,
        ..Config::default()
    }
}

/// What the child does, by case. `dir` holds the output; it is removed to make writes fail.
fn child(case: &str, dir: &Path) {
    let out = dir.join("prof.json");
    let guard = profiler_core::init_with(config(&out, case == "exit"), None).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    // 2 warmup + 3 measured iterations complete the schedule: its write fails.
    for _ in 0..6 {
        layer();
        profiler_core::step();
    }
    if case == "recovers" {
        std::fs::create_dir_all(dir).unwrap();
    }
    println!("main is ending");
    drop(guard);
}

fn run_case(case: &str) -> (Output, PathBuf) {
    let dir =
        std::env::temp_dir().join(format!("prof-write-failure-{}-{case}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_entry",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("PROF_TEST_CASE", case)
        .env("PROF_TEST_DIR", &dir)
        .output()
        .unwrap();
    (out, dir)
}

/// The entry point of the child processes; does nothing in a normal test run.
#[test]
fn child_entry() {
    if let (Ok(case), Ok(dir)) = (
        std::env::var("PROF_TEST_CASE"),
        std::env::var("PROF_TEST_DIR"),
    ) {
        child(&case, Path::new(&dir));
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn results_that_cannot_be_written_say_so_and_make_the_exit_status_1() {
    let (out, dir) = run_case("lost");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // The summary does not point at a file that was never written.
    assert!(err.contains("cannot write the results to"), "{err}");
    assert!(err.contains("NOTHING WAS WRITTEN"), "{err}");
    assert!(!err.contains("results in "), "{err}");
    // The end of the program tried once more, and said the results are lost.
    assert!(err.contains("nothing was saved"), "{err}");
    assert!(err.contains("exiting with status 1"), "{err}");
    // The program's own code ran to the end of main first.
    assert!(text(&out.stdout).contains("main is ending"));
    assert!(!dir.join("prof.json").exists());
}

#[test]
fn a_failed_write_is_tried_again_at_the_end() {
    let (out, dir) = run_case("recovers");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("NOTHING WAS WRITTEN"), "{err}");
    assert!(
        err.contains("written at the end, after the earlier failure"),
        "{err}"
    );
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("prof.json")).unwrap()).unwrap();
    assert_eq!(p["complete"], true);
    assert_eq!(p["events"][0]["samples_ns"].as_array().unwrap().len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn prof_exit_with_a_failed_write_exits_1_not_0() {
    let (out, _) = run_case("exit");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("could not be written; exiting with status 1"),
        "{err}"
    );
    assert!(!text(&out.stdout).contains("main is ending"));
}
