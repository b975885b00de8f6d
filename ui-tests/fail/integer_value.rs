use profiler_core::profiled;

#[profiled(phase = 1)]
fn forward() {}

fn main() {
    forward();
}
