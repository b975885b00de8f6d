//! The examples and the end-to-end, UI and zero-overhead tests of `profiler-core`.
//!
//! The user documentation is the repository's `README.md` and `docs/` (`guide.md`,
//! `reference.md`, `overhead.md`, `architecture.md`); `tests/readme.rs` checks that the README's
//! first profile is what the `dlrm` example prints.
//!
//! This library target is empty on purpose: it lets trybuild carry the `enable` feature to the
//! programs under `ui-tests/`, so that they are checked in the enabled build too.
