use profiler_core::profiled;

#[profiled(flops = "2 * m * n * k")]
fn forward(m: u64, n: u64, k: u64) -> u64 {
    m * n * k
}

fn main() {
    forward(1, 2, 3);
}
