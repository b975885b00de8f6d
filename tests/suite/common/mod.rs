//! Helpers shared by the end-to-end tests: the `dlrm` example run as a user would.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The example binary that `cargo test` built next to this test (built now, with `features`,
/// if it is missing).
pub fn example(name: &str, features: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--example", name]);
        for feature in features {
            cmd.args(["--features", feature]);
        }
        if profile_dir.ends_with("release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "building {name} failed");
    }
    path
}

/// The `prof` tool that `cargo test --workspace` built beside the tests (built now if missing).
pub fn prof() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let path = profile_dir.join(format!("prof{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "profiler-cli", "--bin", "prof"]);
        if profile_dir.ends_with("release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "building prof failed");
    }
    path
}

/// The `dlrm` example.
pub fn dlrm() -> PathBuf {
    example("dlrm", &[])
}

/// A fresh directory for one test's output, never another test's: the modules of this binary
/// share its process, and two of them may ask for the same name.
pub fn scratch(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("prof-e2e-{}-{n}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the example in `dir` with a small, fast schedule plus `vars`.
pub fn run(dir: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(dlrm());
    cmd.current_dir(dir)
        .args(["--batch", "8", "--iters", "400"])
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
    cmd.output().unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Gives the child the default disposition of the signals the tests send: a test run started
/// in the background by a non-interactive shell (`cmd &`) inherits SIGINT ignored, and an
/// ignored signal is one the profiler rightly leaves alone.
#[cfg(unix)]
pub fn default_signals(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (signal(2)) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}
