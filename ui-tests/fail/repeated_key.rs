use profiler_core::profiled;

#[profiled(layer = "a", phase = "fwd", layer = "b")]
fn forward() {}

fn main() {
    forward();
}
