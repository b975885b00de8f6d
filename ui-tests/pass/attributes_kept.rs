use profiler_core::profiled;

/// Doc comments are kept.
#[profiled(layer = "attrs")]
#[inline]
#[must_use]
fn documented() -> u32 {
    1
}

#[allow(clippy::needless_return, clippy::mixed_attributes_style)]
#[profiled]
#[inline(never)]
#[allow(dead_code, non_snake_case)]
fn Shouting() -> u32 {
    #![allow(unused)]
    let unused = 3;
    return 2;
}

#[profiled]
#[deprecated = "checks that attributes after the annotation are kept"]
fn old() {}

#[profiled]
#[track_caller]
fn caller_line() -> u32 {
    std::panic::Location::caller().line()
}

fn main() {
    assert_eq!(documented(), 1);
    assert_eq!(Shouting(), 2);
    #[allow(deprecated)]
    old();
    assert_eq!(caller_line(), line!());
}
