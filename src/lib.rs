//! The examples and the end-to-end, UI and zero-overhead tests of `profiler-core`.
//!
//! This library target is empty on purpose: it lets trybuild carry the `enable` feature to the
//! programs under `ui-tests/`, so that they are checked in the enabled build too.
