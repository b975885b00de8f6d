use profiler_core::profiled;

#[profiled(layer = "mlp")]
struct Layer {
    width: usize,
}

fn main() {
    let _ = Layer { width: 1 }.width;
}
