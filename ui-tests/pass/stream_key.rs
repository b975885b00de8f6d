// `stream = <expr>` in the builds without `cuda`, where the expression is never evaluated nor
// type-checked as a stream: here it names a type of this program's own. The `cuda` build's
// stream handling is tested in `profiler-core/tests/device.rs`, and there this program is empty.
#[cfg(not(feature = "cuda"))]
mod program {
    use profiler_core::{probe, profiled};

    struct Stream(u32);

    struct Layer {
        stream: Stream,
    }

    impl Layer {
        // Never evaluated without `cuda`: the expression may even name `self`.
        #[profiled(layer = "gpu", phase = "fwd", stream = &self.stream)]
        fn forward(&self) -> u32 {
            self.stream.0
        }
    }

    #[profiled(stream = Stream(0), layer = "gpu")]
    fn free() {}

    pub fn main() {
        let s = Stream(7);
        let _p = probe!("copy", layer = "gpu", stream = &s);
        let v = probe!("kernel", stream = &s, phase = "fwd" => { s.0 + 1 });
        assert_eq!(v, 8);
        assert_eq!(Layer { stream: Stream(3) }.forward(), 3);
        free();
    }
}

fn main() {
    #[cfg(not(feature = "cuda"))]
    program::main();
}
