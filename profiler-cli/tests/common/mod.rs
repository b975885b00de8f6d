//! Helpers shared by the `prof` command-line tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A fresh directory for one test's output.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prof-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the `prof` binary with `args`.
pub fn prof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prof"))
        .args(args)
        .output()
        .unwrap()
}

/// A copy of the profile `source` with event `name`'s samples `factor` times longer (its stats
/// following, as prof checks that they agree), written to `dest`: the same machine state, so
/// only that change can show.
pub fn slowed_copy(source: &Path, name: &str, factor: f64, dest: &Path) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(source).unwrap()).unwrap();
    let scaled = |s: &Value| Value::from((s.as_f64().unwrap() * factor) as u64);
    for e in v["events"].as_array_mut().unwrap() {
        if e["name"] == name {
            for s in e["samples_ns"].as_array_mut().unwrap() {
                *s = scaled(s);
            }
            for key in [
                "mean_ns",
                "median_ns",
                "min_ns",
                "max_ns",
                "stddev_ns",
                "p90_ns",
            ] {
                e["stats"][key] = scaled(&e["stats"][key]);
            }
        }
    }
    std::fs::write(dest, serde_json::to_vec(&v).unwrap()).unwrap();
}
