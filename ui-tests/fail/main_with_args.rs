#[profiler_core::main(x)]
fn main() {}
