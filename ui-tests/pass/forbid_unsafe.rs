#![forbid(unsafe_code)]

use profiler_core::{probe, profiled};

#[profiled(layer = "safe", phase = "fwd")]
fn forward(x: u32) -> u32 {
    let _p = probe!("inner", layer = "safe", phase = "fwd");
    x + probe!("block", layer = "safe" => { 1 })
}

#[profiled]
async fn later() -> u32 {
    2
}

fn main() {
    assert_eq!(forward(1), 2);
    drop(later());
}
