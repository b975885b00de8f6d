//! Helpers shared by the `prof` command-line tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

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
