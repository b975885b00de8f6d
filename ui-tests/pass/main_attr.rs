use profiler_core::{probe, profiled};

#[profiled(layer = "mlp", phase = "fwd")]
fn forward(x: u32) -> u32 {
    x + 1
}

/// Doc comments are kept on `main` too.
#[profiler_core::main]
fn main() {
    #![allow(unused_mut)]
    let mut total = 0;
    for i in 0..5 {
        total += forward(i);
        let _p = probe!("update", layer = "mlp", phase = "update");
        profiler_core::step();
        if profiler_core::finished() {
            break;
        }
    }
    assert!(total > 0);
    let _ = profiler_core::probes();
}
