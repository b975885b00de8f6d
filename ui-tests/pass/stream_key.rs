// `stream = <expr>` in the builds without `cuda`, where the expression is never evaluated nor
// type-checked as a stream: here it names a type of this program's own. The `cuda` build's
// stream handling is tested in `profiler-core/tests/device.rs`, and there this program is empty.
#[cfg(not(feature = "cuda"))]
// A parameter named only in `stream` is still used in the builds that never evaluate it (else
// `-D warnings` fails them).
#[deny(unused_variables)]
mod program {
    use profiler_core::{probe, profiled};
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

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

    #[profiled(layer = "gpu", stream = stream)]
    fn launch(stream: &Stream, n: usize) -> usize {
        n
    }

    impl Layer {
        // `s` named by the expression, `stream` only as a field: only `s` is referenced.
        #[profiled(stream = &s.stream)]
        fn launch_on(&self, s: &Layer, n: u32) -> u32 {
            self.stream.0 + n
        }
    }

    #[profiled(stream = (stream, 0).0, flops = n)]
    async fn launch_async(stream: &Stream, n: usize) -> usize {
        n
    }

    pub fn main() {
        let s = Stream(7);
        let _p = probe!("copy", layer = "gpu", stream = &s);
        let v = probe!("kernel", stream = &s, phase = "fwd" => { s.0 + 1 });
        assert_eq!(v, 8);
        assert_eq!(Layer { stream: Stream(3) }.forward(), 3);
        free();
        assert_eq!(launch(&s, 2), 2);
        let layer = Layer { stream: Stream(1) };
        assert_eq!(layer.launch_on(&layer, 1), 2);
        let mut cx = Context::from_waker(Waker::noop());
        let future = pin!(launch_async(&s, 5));
        assert_eq!(future.poll(&mut cx), Poll::Ready(5));
    }
}

fn main() {
    #[cfg(not(feature = "cuda"))]
    program::main();
}
