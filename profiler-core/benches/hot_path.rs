//! The cost of the hot path, against the baselines it must be compared with.
//!
//! Run with `cargo bench -p profiler-core --features enable --bench hot_path`. docs/overhead.md quotes
//! the medians, as nanoseconds and as ratios: the probes' to the raw pair of clock reads (case
//! 4) and the unarmed probe's to the relaxed load and branch (case 2), taken within one run.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::Instant;

use divan::Bencher;
use profiler_core::{probe, Config, CpuClock, Filter, Mode};

fn main() {
    divan::main();
}

#[inline(never)]
fn bare(x: u64) -> u64 {
    x.wrapping_mul(3)
}

/// 1. A call of a non-inlined function: the unit of the ratios.
#[divan::bench]
fn a_bare_call(b: Bencher) {
    b.bench(|| bare(black_box(7)));
}

static FLAG: AtomicU32 = AtomicU32::new(0);

#[cold]
#[inline(never)]
fn never() {
    FLAG.store(2, Relaxed);
}

/// 2. What an unarmed probe must cost: a relaxed load and a branch (around the same call).
#[divan::bench]
fn b_atomic_load_and_branch(b: Bencher) {
    b.bench(|| {
        if FLAG.load(Relaxed) != 0 {
            never();
        }
        bare(black_box(7))
    });
}

/// 3. Two reads of `std::time::Instant`.
#[divan::bench]
fn c_instant_pair(b: Bencher) {
    b.bench(|| {
        let start = Instant::now();
        let v = bare(black_box(7));
        (Instant::now() - start, v)
    });
}

/// 4. Two raw reads of the CPU clock the profiler uses.
#[divan::bench]
fn d_cpu_clock_raw_pair(b: Bencher) {
    let clock = CpuClock::new();
    b.bench(|| {
        let start = clock.raw();
        let v = bare(black_box(7));
        (clock.raw().wrapping_sub(start), v)
    });
}

fn start(filter: &str, warmup: u32) -> profiler_core::InitGuard {
    start_in(Mode::Sample, filter, warmup, 1000, 4096)
}

fn start_in(
    mode: Mode,
    filter: &str,
    warmup: u32,
    repeat: u32,
    max_events: u32,
) -> profiler_core::InitGuard {
    let config = Config {
        filter: Filter::parse(filter).unwrap(),
        mode,
        warmup,
        repeat,
        max_events,
        out: std::env::temp_dir()
            .join("profiler-core-bench.json")
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    profiler_core::init_with(config, None).expect("bench session")
}

fn unarmed_site(x: u64) -> u64 {
    let _p = probe!("bench_unarmed", layer = "bench");
    bare(x)
}

fn armed_site(x: u64) -> u64 {
    let _p = probe!("bench_armed", layer = "bench");
    bare(x)
}

/// 5. A probe that is not armed (not selected, or not this iteration's event).
#[divan::bench]
fn e_unarmed_probe(b: Bencher) {
    let _session = start("name=bench_armed", 1);
    b.bench(|| unarmed_site(black_box(7)));
}

/// The armed probe (6): occurrence count, two clock reads, three stores. The run counter is
/// reset before each call (one relaxed store) so that every call is the armed occurrence.
#[divan::bench]
fn f_armed_probe(b: Bencher) {
    let _session = start("name=bench_armed", 1);
    armed_site(1); // warmup iteration: learn the event
    profiler_core::step(); // arm it
    let counter = profiler_core::__private::run_counter("bench_armed").unwrap();
    b.bench(|| {
        counter.store(0, Relaxed);
        armed_site(black_box(7))
    });
}

/// 7. `step()` once the schedule is complete (nothing armed).
#[divan::bench]
fn g_step_nothing_armed(b: Bencher) {
    let _session = start("name=bench_armed", 1);
    armed_site(1);
    profiler_core::step();
    while !profiler_core::finished() {
        profiler_core::step();
    }
    b.bench(profiler_core::step);
}

#[cfg(feature = "cuda")]
fn stream_site(x: u64) -> u64 {
    const STREAM: profiler_core::device::Stream = profiler_core::device::Stream::new(1, 0);
    let _p = probe!("bench_stream", layer = "bench", stream = STREAM);
    bare(x)
}

/// Case 8, `cuda` builds: an unarmed probe that names a stream, whose stream expression is
/// evaluated only past the same load and branch as case 5.
#[cfg(feature = "cuda")]
#[divan::bench]
fn h_unarmed_stream_probe(b: Bencher) {
    let _session = start("name=bench_armed", 1);
    b.bench(|| stream_site(black_box(7)));
}

/// Case 15's sites: the same unarmed probe without and with `flops`, `bytes` and `shape` keys,
/// out of line so that `scripts/hot_path_instructions.py` counts each call; the keys'
/// expressions run only past the same load and branch, so both cost the same.
#[inline(never)]
fn unarmed_plain_site(x: u64) -> u64 {
    let _p = probe!("bench_unarmed_plain", layer = "bench");
    bare(x)
}

#[inline(never)]
fn unarmed_work_site(x: u64) -> u64 {
    let _p = probe!(
        "bench_unarmed_work",
        layer = "bench",
        flops = 2 * x * x,
        bytes = 8 * x,
        shape = (x, 4)
    );
    bare(x)
}

#[inline(never)]
fn armed_work_site(x: u64) -> u64 {
    let _p = probe!(
        "bench_armed_work",
        layer = "bench",
        flops = 2 * x * x,
        bytes = 8 * x,
        shape = ([x, 4], [4, 4])
    );
    bare(x)
}

/// Case 16: the armed probe (6) with `flops`, `bytes` and `shape` keys: the keys evaluated and
/// stored (before the start mark) besides the armed run's work.
#[divan::bench]
fn p_armed_probe_with_work(b: Bencher) {
    let _session = start("name=bench_armed_work", 1);
    armed_work_site(1);
    profiler_core::step();
    let counter = profiler_core::__private::run_counter("bench_armed_work").unwrap();
    b.bench(|| {
        counter.store(0, Relaxed);
        armed_work_site(black_box(7))
    });
}

/// Case 15: unarmed probes without and with work keys (the instruction counts compare them).
#[divan::bench]
fn o_unarmed_probe_with_work(b: Bencher) {
    let _session = start("name=bench_armed", 1);
    b.bench(|| unarmed_plain_site(black_box(7)) ^ unarmed_work_site(black_box(7)));
}

fn iteration_site(x: u64) -> u64 {
    let _p = probe!("bench_iteration", layer = "bench_iteration");
    bare(x)
}

/// One training iteration of the benches below: a probe site run 25 times (25 events, as in
/// the dlrm example), then `step()`.
fn one_iteration() {
    for i in 0..25 {
        iteration_site(black_box(i));
    }
    profiler_core::step();
}

/// Case 9, the baseline of case 10: the same iteration with profiling done (nothing selected,
/// nothing armed: what `PROF_MODE=off` leaves).
#[divan::bench]
fn i_iteration_not_profiled(b: Bencher) {
    let _session = start("name=bench_armed", 1);
    armed_site(1);
    profiler_core::step();
    while !profiler_core::finished() {
        profiler_core::step();
    }
    b.bench(one_iteration);
}

/// Case 10: the iteration in `continuous` mode, everything included: 24 unarmed runs, the armed
/// one, `step()` (resolving the sample, arming the next event) and, every 25 x 50 iterations,
/// the closing of a window (handed to the writer thread, which works beside it: its own cost is
/// not in this number; see `window_close.rs` and `scripts/continuous-overhead.sh`).
#[divan::bench]
fn j_iteration_continuous(b: Bencher) {
    let config = Config {
        filter: Filter::parse("name=bench_iteration").unwrap(),
        mode: Mode::Continuous,
        warmup: 2,
        repeat: 50,
        out: std::env::temp_dir()
            .join("profiler-core-bench-continuous.json")
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    let _session = profiler_core::init_with(config, None).expect("bench session");
    for _ in 0..3 {
        one_iteration();
    }
    b.bench(one_iteration);
}

fn iteration_work_site(x: u64) -> u64 {
    let _p = probe!(
        "bench_iteration_work",
        layer = "bench_iteration",
        flops = 2 * x * x,
        bytes = 8 * x,
        shape = ([x, 4], [4, 4])
    );
    bare(x)
}

/// [`one_iteration`] with `flops`, `bytes` and `shape` keys on its site, out of line so that
/// `scripts/hot_path_instructions.py` counts it whole. One probe run 25 times: while one of its
/// 25 events is armed, the probe is, so all 25 runs evaluate the keys (the worst case: a probe
/// with one event evaluates them once, in its armed run).
#[inline(never)]
fn one_iteration_with_work() {
    for i in 0..25 {
        iteration_work_site(black_box(i));
    }
    profiler_core::step();
}

/// Case 17: case 10 with work keys: what keeping each armed run's work costs an iteration of
/// `continuous` mode (issue 43, item 6), against `j_iteration_continuous`.
#[divan::bench]
fn q_iteration_continuous_with_work(b: Bencher) {
    let config = Config {
        filter: Filter::parse("name=bench_iteration_work").unwrap(),
        mode: Mode::Continuous,
        warmup: 2,
        repeat: 50,
        out: std::env::temp_dir()
            .join("profiler-core-bench-continuous-work.json")
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    let _session = profiler_core::init_with(config, None).expect("bench session");
    for _ in 0..3 {
        one_iteration_with_work();
    }
    b.bench(one_iteration_with_work);
}

fn repeated_site(x: u64) -> u64 {
    let _p = probe!("bench_repeated", layer = "bench");
    bare(x)
}

/// Case 11: the armed probe of `sample` mode for a probe that runs several times per iteration
/// (its occurrences are counted as they run). The run counter is reset before each call, so
/// that every call is the armed occurrence.
#[divan::bench]
fn k_armed_probe_of_repeated_site(b: Bencher) {
    let _session = start("name=bench_repeated", 1);
    for i in 0..3 {
        repeated_site(i); // warmup iteration: three occurrences, three events
    }
    profiler_core::step(); // arm the first
    let counter = profiler_core::__private::run_counter("bench_repeated").unwrap();
    b.bench(|| {
        counter.store(0, Relaxed);
        repeated_site(black_box(7))
    });
}

fn traced_site(x: u64) -> u64 {
    let _p = probe!("bench_traced", layer = "bench");
    bare(x)
}

/// Case 12: a recorded call in `trace` mode, in the case the issue measured: a probe run many
/// times in one iteration, past `PROF_MAX_EVENTS` (2 here), so that its later runs fold into
/// the probe's merged event (exact totals and a reservoir).
#[divan::bench]
fn l_trace_recorded_call(b: Bencher) {
    let _session = start_in(Mode::Trace, "name=bench_traced", 1, 1000, 2);
    for i in 0..4 {
        traced_site(i); // warmup: two events and the merged one
    }
    profiler_core::step();
    b.bench(|| traced_site(black_box(7)));
}

fn first_site(x: u64) -> u64 {
    let _p = probe!("bench_first", layer = "bench");
    bare(x)
}

/// Case 13: a recorded call in the first iteration of `trace` mode with `PROF_WARMUP=0` (the
/// iteration that both learns the events and is measured): the program. A fixed number
/// of calls (100 samples of 1,000), since that iteration keeps every run until its `step()`.
#[divan::bench(sample_count = 100, sample_size = 1000)]
fn m_trace_first_iteration_call(b: Bencher) {
    let _session = start_in(Mode::Trace, "name=bench_first", 0, 1, 4096);
    b.bench(|| first_site(black_box(7)));
}

/// Case 14: the cold half of case 12, `step()` after 1,000 recorded runs of a probe whose later
/// runs fold into its merged event (the runs are made outside the timing): divide by 1,000 for
/// what a recorded run costs at `step()`.
#[divan::bench]
fn n_trace_step_after_1000_runs(b: Bencher) {
    let _session = start_in(Mode::Trace, "name=bench_traced", 1, 100_000, 2);
    for i in 0..4 {
        traced_site(i);
    }
    profiler_core::step();
    b.with_inputs(|| {
        for i in 0..1000 {
            traced_site(black_box(i));
        }
    })
    .bench_local_values(|()| profiler_core::step());
}
