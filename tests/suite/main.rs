//! The root package's end-to-end tests, one binary: the examples run as programs (each module one
//! subject), the README's profile, and the zero-overhead check. One binary rather than one per
//! file: cargo runs test binaries one after another, so a long test (the fixture's two release
//! builds) held the second core idle; here the modules share the test threads. `roundtrip.rs` and
//! `thread_exit.rs` stay binaries of their own: each runs a profiling session in its own process,
//! and the registry of a binary is every probe compiled into it.
mod common;

mod cuda_e2e;
mod e2e;
mod hardening;
mod metrics;
mod on_demand;
mod peers_table;
mod readme;
mod zero_overhead;
