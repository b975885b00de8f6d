//! How long the training thread spends in the `step()` that closes a `continuous`-mode window,
//! against an ordinary `step()`: an instrumented run, not a divan bench, because a window close
//! happens once per window (every events x `PROF_REPEAT` iterations) and whether it hands the
//! results to the writer depends on the wall clock (at most one write a second).
//!
//! Run with `cargo bench -p profiler-core --features enable --bench window_close`. The session is
//! shaped like the dlrm example's: 25 events (one probe site run 25 times per iteration),
//! `PROF_REPEAT=50` (a window every 1,250 iterations), `PROF_WINDOWS=100`. The bench first
//! closes 110 windows (so that 100 are kept, as in a long run), then times every `step()` with
//! `Instant` and reports four groups: the ordinary steps; the closes that come less than a
//! second after the previous write (nothing to write yet); the closes that come after a pause
//! of 1.1 s, so that a write is due (before the writer thread, the close itself built the
//! profile then); and, as their control, ordinary steps after the same pause (the pause alone
//! leaves the caches cold).
//!
//! Only the public API is used, so that the same file measures the code before and after a
//! change.

use std::hint::black_box;
use std::time::{Duration, Instant};

use profiler_core::{probe, Config, Filter, Mode};

const EVENTS: u32 = 25;
const REPEAT: u32 = 50;
const WARMUP: u32 = 2;
const WINDOW: u32 = EVENTS * REPEAT;

#[inline(never)]
fn site(x: u64) -> u64 {
    let _p = probe!("window_close_site", layer = "bench");
    black_box(x.wrapping_mul(3))
}

/// One iteration's probe runs, without its `step()`.
fn body() {
    for i in 0..u64::from(EVENTS) {
        site(black_box(i));
    }
}

/// Whether the `next`th `step()` (1 first) closes a window.
#[allow(clippy::manual_is_multiple_of)] // `is_multiple_of` is newer than the workspace's Rust 1.85
fn closes(next: u32) -> bool {
    next > WARMUP && (next - WARMUP) % WINDOW == 0
}

/// Runs iterations until the next `step()` closes a window (`done` steps so far), and that
/// iteration's probes.
fn to_the_close(done: &mut u32) {
    while !closes(*done + 1) {
        body();
        profiler_core::step();
        *done += 1;
    }
    body();
}

/// Median, 90th percentile and largest of `ns`, in microseconds.
fn describe(name: &str, ns: &mut [u64]) {
    ns.sort_unstable();
    let at = |q: f64| ns[((ns.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
    println!(
        "{name:<44} n={:>6}  median {:>8.2} µs  p90 {:>8.2} µs  max {:>8.2} µs  mean {:>8.2} µs",
        ns.len(),
        at(0.5),
        at(0.9),
        at(1.0),
        ns.iter().sum::<u64>() as f64 / ns.len() as f64 / 1e3
    );
}

fn timed_step(done: &mut u32) -> u64 {
    let start = Instant::now();
    profiler_core::step();
    let ns = start.elapsed().as_nanos() as u64;
    *done += 1;
    ns
}

fn main() {
    let out = std::env::temp_dir().join(format!("window-close-bench-{}.json", std::process::id()));
    let config = Config {
        filter: Filter::parse("name=window_close_site").unwrap(),
        mode: Mode::Continuous,
        warmup: WARMUP,
        repeat: REPEAT,
        windows: 100,
        out: out.display().to_string(),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, None).expect("bench session");
    let mut done = 0u32;
    for _ in 0..110 {
        to_the_close(&mut done);
        profiler_core::step();
        done += 1;
    }
    // Closes with nothing to write: many in less than a second.
    let (mut ordinary, mut quiet) = (Vec::new(), Vec::new());
    std::thread::sleep(Duration::from_millis(1100)); // the writes of the filling are done
    for _ in 0..60 {
        while !closes(done + 1) {
            body();
            ordinary.push(timed_step(&mut done));
        }
        body();
        quiet.push(timed_step(&mut done));
    }
    // Closes that come with a write due, and ordinary steps after the same pause.
    let (mut due, mut paused) = (Vec::new(), Vec::new());
    for _ in 0..12 {
        body();
        std::thread::sleep(Duration::from_millis(1100));
        paused.push(timed_step(&mut done));
        to_the_close(&mut done);
        std::thread::sleep(Duration::from_millis(1100));
        due.push(timed_step(&mut done));
    }
    drop(guard);
    let _ = std::fs::remove_file(&out);
    println!("continuous mode, {EVENTS} events x PROF_REPEAT={REPEAT}, 100 windows kept");
    describe("step(), no window closed", &mut ordinary);
    describe("step() closing a window, no write due", &mut quiet);
    describe("step() after a 1.1 s pause, no close", &mut paused);
    describe("step() after a 1.1 s pause closing a window", &mut due);
}
