// The errors of the work keys (`flops`, `bytes`, `shape`), one per annotation, in one file so
// that they build once: each is reported at its token.
use profiler_core::{probe, profiled};

#[profiled(layer = "mlp", bytes = fn)]
fn not_an_expression(n: u64) -> u64 {
    n
}

#[profiled(flops = "2 * m * n * k")]
fn string_count(m: u64, n: u64, k: u64) -> u64 {
    m * n * k
}

#[profiled(layer = "mlp", flop = 2 * n)]
fn misspelt_key(n: u64) -> u64 {
    n
}

#[profiled(layer = "mlp", shape = "32x512")]
fn string_shape(n: u64) -> u64 {
    n
}

#[profiled(layer = "mlp", shape = 1.5)]
fn float_shape(n: u64) -> u64 {
    n
}

fn main() {
    let n = 4u64;
    let _p = probe!("matmul", flops = 2 * n, bytes = 8 * n, flops = n);
    let _q = probe!("lookup", shape = (n, 2), shape = n);
    not_an_expression(1);
    string_count(1, 2, 3);
    misspelt_key(1);
    string_shape(1);
    float_shape(1);
}
