//! Compile-time tests of the macros: what must compile (`pass/`) and what must not, with
//! the expected diagnostics (`fail/*.stderr`).
//!
//! The same files pass in the enabled build (`cargo test -p profiler-ui-tests`) and the disabled one
//! (`cargo test -p profiler-ui-tests --no-default-features`): argument validation, and so every error
//! message, is the same in both. Regenerate the `.stderr` files with `TRYBUILD=overwrite`.

// With `cuda`, `stream = <expr>` must name a stream (`pass/stream_key.rs` uses a type of its
// own, which only the builds without `cuda` accept, never evaluating it): the UI tests run in
// the enabled and disabled builds, and the `cuda` build's stream handling is tested in
// `profiler-core/tests/device.rs`.
#[cfg(not(feature = "cuda"))]
#[test]
fn ui() {
    // `pass/enabled_matches_build.rs` checks that the programs really run in this build.
    std::env::set_var(
        "PROFILER_UI_EXPECT_ENABLED",
        if cfg!(feature = "enable") { "1" } else { "0" },
    );
    // trybuild builds the crates again in a project of its own, which does not take this
    // workspace's `[profile.dev] debug = false`: without debug info its build is about 15 s
    // shorter on a fresh 2-core clone (the variable reaches only the cargo trybuild runs).
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
}
