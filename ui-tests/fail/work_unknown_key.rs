use profiler_core::profiled;

#[profiled(layer = "mlp", flop = 2 * n)]
fn forward(n: u64) -> u64 {
    n
}

fn main() {
    forward(1);
}
