// An unbound guard is only the `must_use` warning (it measures nothing useful, but compiles; the
// warning itself is checked by `fail/unbound_guard.rs`). Allowed here so that the workspace's
// `clippy -D warnings`, which builds this program as an example, passes.
use profiler_core::probe;

#[allow(unused_must_use)]
fn main() {
    probe!("unbound", layer = "l");
}
