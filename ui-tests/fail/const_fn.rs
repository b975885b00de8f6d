use profiler_core::profiled;

#[profiled(layer = "mlp")]
const fn size() -> usize {
    4
}

const N: usize = size();

fn main() {
    let _ = N;
}
