// `#[profiler_core::main]` stacked with `#[tokio::main]`, outside it.
use profiler_core::profiled;

#[profiled(layer = "io", phase = "fwd")]
async fn fetch(x: u32) -> u32 {
    tokio::task::yield_now().await;
    x + 1
}

#[profiler_core::main]
#[tokio::main(flavor = "current_thread")]
async fn main() {
    for i in 0..3 {
        assert_eq!(fetch(i).await, i + 1);
        profiler_core::step();
    }
}
