use profiler_core::profiled;

#[profiled(layer = "mlp")]
fn café() {}

fn main() {
    café();
}
