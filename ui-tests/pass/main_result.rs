use profiler_core::profiled;

#[profiled(layer = "io", phase = "load")]
fn parse(s: &str) -> Result<u32, std::num::ParseIntError> {
    s.parse()
}

#[profiler_core::main]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = parse("3")?;
    for _ in 0..n {
        profiler_core::step();
    }
    if n == 0 {
        return Err("no iterations".into());
    }
    Ok(())
}
