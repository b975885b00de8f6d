use profiler_core::probe;

fn main() {
    let v = probe!("all reduce" => { 1 + 2 });
    let _: u32 = v;
}
