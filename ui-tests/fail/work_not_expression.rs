use profiler_core::profiled;

#[profiled(layer = "mlp", bytes = fn)]
fn forward(n: u64) -> u64 {
    n
}

fn main() {
    forward(1);
}
