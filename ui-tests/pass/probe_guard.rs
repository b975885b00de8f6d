use profiler_core::{probe, ProbeGuard};

fn assert_send_sync<T: Send + Sync>() {}

const _: fn() = assert_send_sync::<ProbeGuard>;

fn backward(grads: &mut [f32]) -> f32 {
    let _p = probe!("allreduce", layer = "mlp", phase = "bwd");
    let _q = probe!("bare");
    let _r = probe!("trailing_comma", layer = "mlp",);
    grads.iter().sum()
}

fn main() {
    assert_eq!(backward(&mut [1.0, 2.0]), 3.0);

    let guard: ProbeGuard = probe!("methods", phase = "fwd");
    let _recording: bool = guard.is_recording();
    guard.stop();
    let guard = probe!("discarded");
    guard.discard();

    // A guard can move to another thread.
    let guard = probe!("moved");
    std::thread::spawn(move || drop(guard)).join().unwrap();

    // In a closure.
    let f = |x: u32| {
        let _p = probe!("closure", layer = "cl");
        x + 1
    };
    assert_eq!(f(1), 2);
    assert_eq!((0..3).map(|i| probe!("map" => { i * 2 })).sum::<u32>(), 6);

    // The same probe, in a loop, across iterations.
    for _ in 0..3 {
        let _p = probe!("loop", layer = "l", phase = "fwd");
        profiler_core::step();
    }
    assert!(!profiler_core::finished());
}
