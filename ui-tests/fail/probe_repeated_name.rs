use profiler_core::probe;

fn main() {
    let _p = probe!("allreduce", name = "allreduce2", layer = "mlp");
}
