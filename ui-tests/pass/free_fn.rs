use profiler_core::profiled;

#[profiled]
fn plain() -> u32 {
    1
}

#[profiled(layer = "mlp", phase = "fwd")]
fn forward(x: &[f32]) -> f32 {
    x.iter().sum()
}

#[profiled(layer = "mlp")]
fn early(x: i32) -> i32 {
    if x < 0 {
        return 0;
    }
    x * 2
}

#[profiled(phase = "io")]
fn fallible(s: &str) -> Result<u32, std::num::ParseIntError> {
    let n: u32 = s.parse()?;
    Ok(n + 1)
}

fn main() {
    for _ in 0..3 {
        assert_eq!(plain(), 1);
        assert_eq!(forward(&[1.0, 2.0]), 3.0);
        assert_eq!(early(-1), 0);
        assert_eq!(early(2), 4);
        assert_eq!(fallible("41"), Ok(42));
        assert!(fallible("x").is_err());
        profiler_core::step();
    }
    assert!(!profiler_core::finished());
    let _ = profiler_core::probes();
}
