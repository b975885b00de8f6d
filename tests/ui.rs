//! Compile-time tests of the macros: what must compile (`ui-tests/pass`) and what must not, with
//! the expected diagnostics (`ui-tests/fail/*.stderr`).
//!
//! The same files pass in the enabled build (`cargo test --test ui`) and the disabled one
//! (`cargo test --no-default-features --test ui`): argument validation, and so every error
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
    let t = trybuild::TestCases::new();
    t.pass("ui-tests/pass/*.rs");
    t.compile_fail("ui-tests/fail/*.rs");
}
