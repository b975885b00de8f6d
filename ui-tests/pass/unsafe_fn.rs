use profiler_core::profiled;

/// # Safety
/// `p` must be valid for reads.
#[profiled(layer = "raw", phase = "fwd")]
unsafe fn read(p: *const u32) -> u32 {
    unsafe { *p }
}

struct S;

impl S {
    /// # Safety
    /// None needed; checks `unsafe fn` methods.
    #[profiled]
    unsafe fn method(&self) -> u8 {
        7
    }
}

fn main() {
    let x = 5u32;
    assert_eq!(unsafe { read(&x) }, 5);
    assert_eq!(unsafe { S.method() }, 7);
}
