// `#[profiler_core::main]` stacked with `#[tokio::main]`, inside it, on a `Result` main.
use profiler_core::profiled;

#[profiled(layer = "io", phase = "fwd")]
async fn fetch(x: u32) -> Result<u32, std::num::ParseIntError> {
    tokio::task::yield_now().await;
    Ok("1".parse::<u32>()? + x)
}

#[tokio::main(flavor = "current_thread")]
#[profiler_core::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(fetch(1).await?, 2);
    profiler_core::step();
    Ok(())
}
