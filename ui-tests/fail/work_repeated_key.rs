use profiler_core::probe;

fn main() {
    let n = 4u64;
    let _p = probe!("matmul", flops = 2 * n, bytes = 8 * n, flops = n);
}
