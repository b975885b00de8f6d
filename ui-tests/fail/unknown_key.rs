use profiler_core::profiled;

#[profiled(layr = "x")]
fn forward() {}

fn main() {
    forward();
}
