use profiler_core::profiled;

#[profiled(phase = "fwd!")]
fn forward() {}

fn main() {
    forward();
}
