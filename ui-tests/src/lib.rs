//! The compile-time tests of `profiler-core`'s macros (`tests/ui.rs`): `pass/` holds programs
//! that must compile and run (this package's examples), `fail/` programs that must not, with the
//! compiler's expected output (checked by trybuild).
//!
//! This library target is empty on purpose: the examples and trybuild's project are built against
//! this package, and through it carry the `enable` feature, so that the programs are checked with
//! profiling compiled in and out.
