use profiler_core::profiled;

trait Module {
    #[profiled(layer = "mlp")]
    fn forward(&self) -> u32;
}

fn main() {}
