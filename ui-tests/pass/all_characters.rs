use profiler_core::{probe, profiled};

#[profiled(
    name = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz.0123456789:/-",
    layer = "a/b:c.d-e_f",
    phase = "Z9"
)]
fn everything() -> u32 {
    1
}

#[profiled(name = "-", layer = ".", phase = "::")]
fn punctuation_only() {}

#[profiled(name = "0")]
fn digit_name() {}

fn main() {
    let _p = probe!("mlp.fc1/weight:grad-2_x", layer = "L_1", phase = "bwd/all");
    assert_eq!(everything(), 1);
    punctuation_only();
    digit_name();
}
