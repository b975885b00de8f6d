use profiler_core::profiled;

const SOME_CONST: &str = "mlp";

#[profiled(layer = SOME_CONST)]
fn forward() {}

fn main() {
    forward();
    let _ = SOME_CONST;
}
