//! Known functions inside known layers, for the CPU sampler (`PROF_CPU_SAMPLE`, issue 38):
//! layer `a` runs `f` and `g`, which do the same arithmetic 3:1 (`f` three times the rounds of
//! `g`); layer `b` runs `h`; a helper thread runs `k` in its own layer, `helper`; between the
//! layers the loop runs `outside`, in no event. Each function calls nothing, so the samples in
//! it are its own. `scripts/cpu-sample-check.sh` runs it and checks the tags and the shares.
//!
//! The truth the shares are checked against is measured, not assumed: 3:1 of work is 3:1 of
//! time only if a round costs `f` what it costs `g` (the two are the same code at different
//! addresses). The loop reads its thread's CPU clock around each call of `f` and `g` and prints,
//! at the end, `truth: f F g G` (each one's share of the CPU time the two used) on stderr.
//!
//! Each iteration scales all the rounds by the same pseudo-random factor (0.5 to 1.5), so that
//! the loop's period cannot lock onto the kernel's tick, at which CPU timers are checked (a
//! loop whose period divides the tick would be sampled at the same few points of it).
//!
//! `cpu_layers SECONDS` runs for that long (2 s by default); `cpu_layers --iters N` runs N
//! iterations instead (`scripts/cpu-sample-overhead.sh`: the same work with and without
//! sampling). Either prints `loop: N iterations, W s wall, C s of the main thread's CPU` at the
//! end, the loop alone (neither start-up nor the writing of the results).
//!
//! ```text
//! PROF_CPU_SAMPLE=1000 PROF_WARMUP=2 PROF_REPEAT=100000 cargo run --release --example cpu_layers -- 10
//! ```

use std::cell::Cell;
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

thread_local! {
    /// This thread's scale of the rounds for the current iteration, in thousandths.
    static SCALE: Cell<u64> = const { Cell::new(1000) };
    /// CPU time spent in `f` and in `g`, in nanoseconds.
    static SPENT: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// `n` rounds scaled by this iteration's factor.
fn scaled(n: u64) -> u64 {
    n * SCALE.with(Cell::get) / 1000
}

/// A new pseudo-random factor for the next iteration, from `state` (xorshift).
fn rescale(state: &mut u64) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    SCALE.with(|s| s.set(500 + *state % 1001));
}

/// The calling thread's CPU time, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    // SAFETY: `now` is written by the call.
    let now = unsafe {
        let mut now: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now);
        now
    };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

#[profiled(layer = "a", phase = "fwd")]
fn layer_a() -> u64 {
    let n = scaled(ROUNDS);
    let t0 = thread_cpu_ns();
    let x = black_box(f(black_box(3 * n)));
    let t1 = thread_cpu_ns();
    let y = black_box(g(black_box(n)));
    let t2 = thread_cpu_ns();
    SPENT.with(|s| {
        let (tf, tg) = s.get();
        s.set((tf + (t1 - t0), tg + (t2 - t1)));
    });
    x ^ y
}

#[profiled(layer = "b", phase = "fwd")]
fn layer_b() -> u64 {
    black_box(h(black_box(2 * scaled(ROUNDS))))
}

#[profiled(layer = "helper")]
fn helper_layer() -> u64 {
    black_box(k(black_box(scaled(ROUNDS))))
}

#[profiler_core::main]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // A number of iterations, or a deadline.
    let (iters, seconds) = match args.first().map(String::as_str) {
        Some("--iters") => {
            let n = args.get(1).and_then(|s| s.parse().ok());
            let Some(n) = n else {
                eprintln!("cpu_layers: --iters needs a number of iterations, e.g. --iters 1000");
                std::process::exit(2);
            };
            (Some(n), f64::INFINITY)
        }
        Some(s) => match s.parse::<f64>() {
            Ok(seconds) if seconds >= 0.0 => (None, seconds),
            _ => {
                eprintln!("cpu_layers: {s:?} is not a number of seconds; usage: cpu_layers [SECONDS | --iters N]");
                std::process::exit(2);
            }
        },
        None => (None, 2.0),
    };
    let start = Instant::now();
    let start_cpu = thread_cpu_ns();
    let deadline = start + Duration::from_secs_f64(seconds.min(1e9));
    static DONE: AtomicBool = AtomicBool::new(false);
    let helper = std::thread::Builder::new()
        .name("helper".into())
        .spawn(|| {
            let mut x = 0;
            let mut state = 0x2545_f491_4f6c_dd1d;
            while !DONE.load(Relaxed) {
                rescale(&mut state);
                x ^= helper_layer();
            }
            x
        })
        .expect("a helper thread");
    let mut x = 0;
    let mut state = 0x9e37_79b9_7f4a_7c15;
    let mut done: u64 = 0;
    while iters.map_or(Instant::now() < deadline, |n| done < n) {
        done += 1;
        rescale(&mut state);
        x ^= layer_a();
        x ^= layer_b();
        x ^= black_box(outside(black_box(scaled(ROUNDS / 2))));
        profiler_core::step();
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = (thread_cpu_ns() - start_cpu) as f64 / 1e9;
    DONE.store(true, Relaxed);
    black_box(x ^ helper.join().expect("the helper thread"));
    eprintln!("loop: {done} iterations, {wall:.6} s wall, {cpu:.6} s of the main thread's CPU");
    let (tf, tg) = SPENT.with(Cell::get);
    let total = (tf + tg).max(1) as f64;
    eprintln!(
        "truth: f {:.4} g {:.4} (shares of the {:.3} s of CPU time f and g used)",
        tf as f64 / total,
        tg as f64 / total,
        total / 1e9
    );
}
