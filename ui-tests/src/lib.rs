//! The compile-time tests of `profiler-core`'s macros (`tests/ui.rs`): `pass/` holds programs
//! that must compile and run, `fail/` programs that must not, with the compiler's expected output.
//!
//! This library target is empty on purpose: trybuild builds the programs against the package
//! under test, and through it carries the `enable` feature, so that they are checked with
//! profiling compiled in and out.
