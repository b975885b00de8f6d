//! Known functions inside known layers, for the CPU sampler (`PROF_CPU_SAMPLE`, issue 38):
//! layer `a` runs `f` and `g`, which do the same arithmetic 3:1 (`f` three times the rounds of
//! `g`); layer `b` runs `h`; a helper thread runs `k` in its own layer, `helper`; between the
//! layers the loop runs `outside`, in no event. Each function calls nothing, so the samples in
//! it are its own. `scripts/cpu-sample-check.sh` runs it and checks the tags and the shares.
//!
//! ```text
//! PROF_CPU_SAMPLE=1000 PROF_WARMUP=2 PROF_REPEAT=100000 cargo run --release --example cpu_layers -- 10
//! ```

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use profiler_core::profiled;

/// Rounds of `g`'s arithmetic per iteration (`f` runs three times as many).
const ROUNDS: u64 = 200_000;

/// `n` rounds of arithmetic, calling nothing.
macro_rules! work {
    ($name:ident, $seed:expr) => {
        #[inline(never)]
        fn $name(n: u64) -> u64 {
            let mut x: u64 = $seed;
            let mut i = 0;
            while i < n {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i) ^ (x >> 7);
                i += 1;
            }
            x
        }
    };
}

work!(f, 1);
work!(g, 2);
work!(h, 3);
work!(k, 4);
work!(outside, 5);

#[profiled(layer = "a", phase = "fwd")]
fn layer_a() -> u64 {
    black_box(f(black_box(3 * ROUNDS))) ^ black_box(g(black_box(ROUNDS)))
}

#[profiled(layer = "b", phase = "fwd")]
fn layer_b() -> u64 {
    black_box(h(black_box(2 * ROUNDS)))
}

#[profiled(layer = "helper")]
fn helper_layer() -> u64 {
    black_box(k(black_box(ROUNDS)))
}

#[profiler_core::main]
fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    static DONE: AtomicBool = AtomicBool::new(false);
    let helper = std::thread::Builder::new()
        .name("helper".into())
        .spawn(|| {
            let mut x = 0;
            while !DONE.load(Relaxed) {
                x ^= helper_layer();
            }
            x
        })
        .expect("a helper thread");
    let mut x = 0;
    while Instant::now() < deadline {
        x ^= layer_a();
        x ^= layer_b();
        x ^= black_box(outside(black_box(ROUNDS / 2)));
        profiler_core::step();
    }
    DONE.store(true, Relaxed);
    black_box(x ^ helper.join().expect("the helper thread"));
}
