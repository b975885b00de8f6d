use profiler_core::profiled;

#[profiled(layer = "ffi", phase = "fwd")]
extern "C" fn callback(x: i32) -> i32 {
    x + 1
}

#[profiled]
pub extern "C" fn public_callback() {}

fn main() {
    let f: extern "C" fn(i32) -> i32 = callback;
    assert_eq!(f(1), 2);
    public_callback();
}
