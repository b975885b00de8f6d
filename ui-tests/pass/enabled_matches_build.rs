// The UI programs run in the build the test was started in: with `enable`, the annotations
// register descriptors; without it, none exist. `tests/ui.rs` says which to expect.
use profiler_core::{probe, profiled};

#[profiled(layer = "ui", phase = "fwd")]
fn annotated() -> u32 {
    let _p = probe!("inner", layer = "ui");
    7
}

fn main() {
    assert_eq!(annotated(), 7);
    let expected = std::env::var("PROFILER_UI_EXPECT_ENABLED").expect("set by tests/ui.rs");
    let registered = profiler_core::probes().len();
    match expected.as_str() {
        "1" => assert_eq!(
            registered, 2,
            "the enabled build registers both annotations"
        ),
        _ => assert_eq!(registered, 0, "the disabled build registers nothing"),
    }
}
