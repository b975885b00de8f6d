// An unbound guard is only the `must_use` warning (it measures nothing useful, but compiles).
use profiler_core::probe;

fn main() {
    probe!("unbound", layer = "l");
}
