//! The examples and the end-to-end and zero-overhead tests of `profiler-core` (the UI tests of
//! the macros are the package `ui-tests/`).
//!
//! The user documentation is the repository's `README.md` and `docs/` (`guide.md`,
//! `reference.md`, `overhead.md`, `architecture.md`); `tests/suite/readme.rs` checks that the README's
//! first profile is what the `dlrm` example prints.
