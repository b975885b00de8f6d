use profiler_core::profiled;

#[profiled(layer = "a")]
#[profiled(layer = "b")]
fn twice() {}

fn main() {
    twice();
}
