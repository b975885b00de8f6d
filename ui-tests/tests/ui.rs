//! Compile-time tests of the macros: what must compile and run (`pass/`, this package's
//! examples) and what must not, with the expected diagnostics (`fail/*.stderr`, through trybuild).
//!
//! The same files pass in the enabled build (`cargo test -p profiler-ui-tests --features enable`)
//! and the disabled one (`cargo test -p profiler-ui-tests`): argument validation, and so every
//! error message, is the same in both. trybuild checks the programs that must fail with this
//! package's features (none by default, so only the macros are built for it: see its
//! `Cargo.toml`); the programs that must run, in the build profiler-core has here (in
//! `cargo test --workspace`, with `enable`, which other packages turn on). Regenerate the
//! `.stderr` files with `TRYBUILD=overwrite`.

// With `cuda`, `stream = <expr>` must name a stream (`pass/stream_key.rs` uses a type of its
// own, which only the builds without `cuda` accept, never evaluating it): the UI tests run in
// the enabled and disabled builds, and the `cuda` build's stream handling is tested in
// `profiler-core/tests/device.rs`.
#![cfg(not(feature = "cuda"))]

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn what_must_not_compile_fails_with_its_message() {
    // trybuild builds the crates again in a project of its own, which does not take this
    // workspace's `[profile.dev] debug = false`. With only programs that must fail it runs
    // `cargo check`, so nothing is code-generated or linked there.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    let t = trybuild::TestCases::new();
    t.compile_fail("fail/*.rs");
}

/// The programs of `pass/`: each is an example of this package, built by `cargo test` in this
/// build (with or without `enable`), and must run to a successful exit.
#[test]
fn what_must_compile_runs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("pass");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("ui-tests/pass")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 20, "the programs of pass/: {names:?}");
    // Where the programs write if they start a session (`#[profiler_core::main]`).
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-pass");
    std::fs::create_dir_all(&scratch).unwrap();
    // Every program is looked up (and, if one is stale, all built) before any runs.
    let exes: Vec<PathBuf> = names.iter().map(|name| example(name)).collect();
    let mut failed = Vec::new();
    for (name, exe) in names.iter().zip(&exes) {
        let out = Command::new(exe)
            .current_dir(&scratch)
            .env("PROFILER_UI_EXPECT_ENABLED", expected_enabled())
            .env("PROF_OUT", scratch.join(format!("{name}.json")))
            .env_remove("PROF_MODE")
            .env_remove("PROF_FILTER")
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
        if !out.status.success() {
            failed.push(format!(
                "{name}: {}\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "programs of pass/ failed:\n{}",
        failed.join("\n")
    );
}

/// `pass/enabled_matches_build.rs` checks that the programs really run in this build.
fn expected_enabled() -> &'static str {
    if profiling_compiled_in() {
        "1"
    } else {
        "0"
    }
}

/// Whether profiler-core was built with `enable` here: this package's own feature does not say
/// (in a workspace build, other packages turn it on in profiler-core), the registry does.
fn profiling_compiled_in() -> bool {
    #[profiler_core::profiled(layer = "ui")]
    fn registered_when_enabled() {}
    registered_when_enabled();
    !profiler_core::probes().is_empty()
}

/// The example `name` that `cargo test` built beside this test, or that this builds now: when it
/// is missing or older than its source, as when only this test target was asked for
/// (`cargo test --test ui`, which builds no example; `cargo test --test ui --examples` does).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("pass/{name}.rs"));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if modified(&path) < modified(&source) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "profiler-ui-tests", "--examples"]);
        // As this test was built (the examples of a workspace build have profiling compiled in).
        if profiling_compiled_in() {
            cmd.args(["--features", "enable"]);
        }
        if profile_dir.ends_with("release") {
            cmd.arg("--release");
        }
        assert!(
            cmd.status().unwrap().success(),
            "building the programs of pass/ failed"
        );
    }
    assert!(
        path.exists(),
        "{} was not built: is pass/{name}.rs declared as an [[example]] in ui-tests/Cargo.toml?",
        path.display()
    );
    path
}
