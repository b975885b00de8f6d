//! Helpers shared by the `prof` command-line tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A fresh directory for one test's output, never another test's: the modules of this binary
/// share its process, and two of them may ask for the same name.
pub fn scratch(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("prof-cli-{}-{n}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh directory `name` of the module `module` under the target directory (for outputs too
/// large for the system's temporary directory, and kept there after a failure to look at).
pub fn target_scratch(module: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(module)
        .join(name);
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

/// The interpreter for a Python check that a test drives (HolisticTraceAnalysis, Perfetto's
/// protos): `$var` if set and not empty, else `python3`, when `checker --probe` succeeds with
/// it. Otherwise `None`, after a note on stderr of what is missing (`what`) and how to install it
/// (`packages`), or a panic when `$require` is `1` (as in CI).
pub fn python_tool(
    var: &str,
    checker: &Path,
    what: &str,
    packages: &str,
    require: &str,
) -> Option<String> {
    let python = std::env::var(var)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into());
    let why = match Command::new(&python).arg(checker).arg("--probe").output() {
        Ok(out) if out.status.success() => return Some(python),
        Ok(out) => String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
            .to_string(),
        Err(e) => format!("cannot run {python}: {e}"),
    };
    let msg = format!(
        "{what} cannot be imported by `{python}` ({why}); install with `{python} -m pip install \
         {packages}` or set {var} to an interpreter that has it"
    );
    if std::env::var(require).as_deref() == Ok("1") {
        panic!("{require}=1: {msg}");
    }
    eprintln!("{what} check skipped: {msg}");
    None
}
