use profiler_core::probe;

fn main() {
    let _p = probe!();
}
