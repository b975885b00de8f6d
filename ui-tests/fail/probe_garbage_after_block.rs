use profiler_core::probe;

fn main() {
    let v = probe!("sum", layer = "mlp" => { 1 + 2 } extra);
    let _ = v;
}
