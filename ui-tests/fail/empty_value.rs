use profiler_core::profiled;

#[profiled(name = "")]
fn forward() {}

fn main() {
    forward();
}
