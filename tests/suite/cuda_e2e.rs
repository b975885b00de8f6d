//! End to end in a `cuda` build on the machine at hand: without a CUDA driver (CI), the CUDA
//! example fails with one clear line and a non-zero status, and an ordinary program says once
//! that it times on the CPU and otherwise behaves as a build without `cuda`. With a driver, the
//! no-driver checks report that they were skipped.
#![cfg(feature = "cuda")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

fn example(name: &str) -> PathBuf {
    common::example(name, &["cuda"])
}

fn has_driver() -> bool {
    // SAFETY: only tries to open the driver library by its usual names.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

fn skipped(test: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED (a CUDA driver is present; this checks the machine without one): {test}"
    );
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prof-cuda-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(exe: &Path, dir: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.current_dir(dir).args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("PROF_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn the_cuda_example_fails_cleanly_without_a_gpu() {
    if has_driver() {
        return skipped("the_cuda_example_fails_cleanly_without_a_gpu");
    }
    let dir = scratch("mlp");
    let out = run(&example("cuda_mlp"), &dir, &[], &["--iters", "5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains("no CUDA GPU available"), "stderr: {err}");
    assert!(!err.contains("panicked"), "stderr: {err}");
    assert!(!dir.join("prof.json").exists());
}

#[test]
fn without_a_driver_a_cuda_build_says_so_once_and_times_on_the_cpu() {
    if has_driver() {
        return skipped("without_a_driver_a_cuda_build_says_so_once_and_times_on_the_cpu");
    }
    let dir = scratch("dlrm");
    let vars = [
        ("PROF_WARMUP", "2"),
        ("PROF_REPEAT", "2"),
        ("PROF_FILTER", "layer=top_mlp"),
        ("PROF_NVTX", "1"),
        ("PROF_SYNC", "3"),
        ("PROF_KERNELS", "1"),
        ("PROF_CAPTURE", "1"),
    ];
    let out = run(
        &example("dlrm"),
        &dir,
        &vars,
        &["--batch", "8", "--iters", "200"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {err}");
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("timing on the CPU clock"))
        .collect();
    assert_eq!(notes.len(), 1, "stderr: {err}");
    assert!(notes[0].contains("no CUDA driver"), "{}", notes[0]);
    assert!(!err.contains("panicked"), "stderr: {err}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("prof.json")).unwrap()).unwrap();
    assert_eq!(json["complete"], true);
    assert_eq!(json["run"]["clock"], "cpu");
    let events = json["events"].as_array().unwrap();
    assert!(!events.is_empty());
    for e in events {
        assert!(e["stream"].is_null() && e["device"].is_null() && e.get("gpu").is_none());
        assert_eq!(e["samples_ns"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn a_bad_cuda_variable_is_an_error_before_training() {
    let dir = scratch("bad");
    let out = run(
        &example("dlrm"),
        &dir,
        &[("PROF_SYNC", "4")],
        &["--iters", "5"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        err.contains("PROF_SYNC") && err.contains("3 (around every probe)"),
        "{err}"
    );
}
