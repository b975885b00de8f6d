use profiler_core::profiled;

#[profiled(layer = "my layer")]
fn forward() {}

fn main() {
    forward();
}
