// An unbound guard is the `unused_must_use` lint, a warning by default (see
// `pass/probe_unbound.rs`); denied, it is an error that tells how to bind the guard.
// The plain statement `probe!(..);` is not used here: rustc's `let _ = ...` suggestion for it
// differs between the builds (the enabled expansion is a block, and rustc suggests `..;;`).
#![deny(unused_must_use)]

use profiler_core::probe;

fn main() {
    (probe!("unbound", layer = "mlp"), 0);
}
