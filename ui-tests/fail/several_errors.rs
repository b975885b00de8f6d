use profiler_core::profiled;

// Every problem of one annotation is reported together.
#[profiled(layr = "x", layer = 1, phase = "a b", phase = "bwd", name = "")]
fn forward() {}

fn main() {
    forward();
}
