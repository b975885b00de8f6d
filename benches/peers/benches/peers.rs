//! profiler-core's probe against other instrumenting profilers, each around the same body.
//!
//! Run with `cargo bench -p profiler-peers --bench peers`, or `scripts/peers.sh [RUNS]`, which
//! runs it RUNS times and prints the "Against the peers" table of docs/overhead.md
//! (`scripts/peers_table.py` turns divan's output into it).
//!
//! Every case goes through the same divan loop: samples of [`CALLS`] calls of one closure that
//! wraps the same non-inlined body in one peer's instrumentation. A sample is one iteration of a
//! training loop (one frame, for puffin): what a profiler needs between iterations (profiler-core's
//! `step()` in trace mode, puffin's `new_frame()`) runs in divan's input generator, which divan
//! calls [`CALLS`] times before each sample's timed loop, outside the timing. Each case that
//! records something checks afterwards that it recorded what it was meant to (a wrong setup
//! would otherwise time a cheaper path without saying so) and panics, naming the cause, if not.

use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use divan::Bencher;
use profiler_core::{probe, Config, Filter, InitGuard, Mode};

/// Calls per sample: one training iteration (or puffin frame) of this many instrumented calls.
/// The trace-mode case learns that many events per iteration, so divan's sample size is fixed to
/// it in `main`.
const CALLS: u32 = 1000;

/// Samples per case (divan's `--sample-count` overrides it, up to [`TRACE_REPEAT`]).
const SAMPLES: u32 = 1000;

/// Active iterations of the trace-mode session: one per sample, and room for a larger
/// `--sample-count`. Its storage is `CALLS` events x this many slots x 20 bytes (about 40 MB).
const TRACE_REPEAT: u32 = 2000;

fn main() {
    // A sample must be exactly one iteration of `CALLS` calls (see `g_core_trace`): this
    // overrides `--sample-size`.
    divan::Divan::from_args().sample_size(CALLS).main();
}

/// The body every case wraps: a multiplication behind a call the optimizer cannot inline or
/// remove (about 1 ns).
#[inline(never)]
fn body(x: u64) -> u64 {
    x.wrapping_mul(3)
}

/// An input generator that runs `between` on the first of every [`CALLS`] inputs, that is once
/// before each sample (divan generates a sample's inputs before timing it), and counts the
/// inputs, which is the number of timed calls.
fn once_per_sample(generated: Rc<Cell<u64>>, mut between: impl FnMut()) -> impl FnMut() {
    move || {
        if generated.get().is_multiple_of(u64::from(CALLS)) {
            between();
        }
        generated.set(generated.get() + 1);
    }
}

// ---- baselines ----

/// The body alone: the floor every case stands on.
#[divan::bench(sample_count = SAMPLES)]
fn a_bare_call(b: Bencher) {
    b.bench_local(|| body(black_box(7)));
}

/// The `profiling` crate with no backend feature: its `scope!` expands to nothing.
#[divan::bench(sample_count = SAMPLES)]
fn b_profiling_no_backend(b: Bencher) {
    b.bench_local(|| {
        profiling::scope!("peers_body");
        body(black_box(7))
    });
}

/// Two reads of `std::time::Instant` around the body.
#[divan::bench(sample_count = SAMPLES)]
fn c_instant_pair(b: Bencher) {
    b.bench_local(|| {
        let start = Instant::now();
        let v = body(black_box(7));
        (start.elapsed(), v)
    });
}

/// Two raw reads of `quanta`'s clock, the one profiler-core's `CpuClock` wraps (the TSC where
/// it is invariant): what any measurement on that clock must pay.
#[divan::bench(sample_count = SAMPLES)]
fn d_quanta_raw_pair(b: Bencher) {
    let clock = quanta::Clock::new();
    b.bench_local(|| {
        let start = clock.raw();
        let v = body(black_box(7));
        (clock.raw().wrapping_sub(start), v)
    });
}

// ---- profiler-core ----

/// Starts a session as `init()` would with these variables; its results go to
/// `target/tmp/peers-<name>.json` when the guard drops.
fn session(filter: &str, mode: Mode, repeat: u32, name: &str) -> InitGuard {
    let config = Config {
        filter: Filter::parse(filter).expect("the bench's filter parses"),
        mode,
        warmup: 1,
        repeat,
        out: std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("peers-{name}.json"))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    profiler_core::init_with(config, None).expect("the bench's session starts")
}

/// Ends the iteration under way (resolving its samples) and returns how many samples the
/// events of probe `name` hold.
fn samples_of(name: &str) -> u64 {
    profiler_core::step();
    let profile = profiler_core::snapshot().expect("a session runs");
    let events = profile.events.iter().filter(|e| e.name == name);
    events.map(|e| e.samples_ns.len() as u64).sum()
}

fn core_other_site() {
    let _p = probe!("peers_other", layer = "peers");
}

fn core_unarmed_site(x: u64) -> u64 {
    let _p = probe!("peers_unarmed", layer = "peers");
    body(x)
}

/// An unarmed probe: selected, learned in warmup, waiting while another event is armed (what
/// every probe but one costs in `sample` mode).
#[divan::bench(sample_count = SAMPLES)]
fn e_core_unarmed(b: Bencher) {
    let _session = session(
        "name=peers_other|name=peers_unarmed",
        Mode::Sample,
        1,
        "unarmed",
    );
    // Warmup: `peers_other` runs first, so its event is the one armed next.
    core_other_site();
    core_unarmed_site(1);
    profiler_core::step();
    b.bench_local(|| core_unarmed_site(black_box(7)));
    let taken = samples_of("peers_unarmed");
    assert!(
        taken == 0,
        "e_core_unarmed: the probe took {taken} samples, so it was armed, not waiting; \
         `peers_other` must run first in warmup"
    );
}

fn core_armed_site(x: u64) -> u64 {
    let _p = probe!("peers_armed", layer = "peers");
    body(x)
}

/// The armed probe in `sample` mode: every call is this iteration's armed event. The probe's
/// run counter is reset before each call (one relaxed store, timed) so that every call is the
/// occurrence the schedule armed, as in `profiler-core/benches/hot_path.rs`.
#[divan::bench(sample_count = SAMPLES)]
fn f_core_armed_sample(b: Bencher) {
    let _session = session("name=peers_armed", Mode::Sample, 1, "armed");
    core_armed_site(1); // warmup: learn the event
    profiler_core::step(); // arm it
    let counter = profiler_core::__private::run_counter("peers_armed")
        .expect("the armed probe has a run counter");
    b.bench_local(|| {
        counter.store(0, Relaxed);
        core_armed_site(black_box(7))
    });
    let taken = samples_of("peers_armed");
    assert!(
        taken == 1,
        "f_core_armed_sample: the armed event holds {taken} samples instead of one (each call \
         rewrites the iteration's slot): it was not armed"
    );
}

fn core_traced_site(x: u64) -> u64 {
    let _p = probe!("peers_traced", layer = "peers");
    body(x)
}

/// `trace` mode: every call recorded. Each iteration (sample) runs the probe [`CALLS`] times,
/// as learned in warmup, so each call is its own event with its own slot; `step()` ends the
/// iteration between samples, untimed.
#[divan::bench(sample_count = SAMPLES)]
fn g_core_trace(b: Bencher) {
    let _session = session("name=peers_traced", Mode::Trace, TRACE_REPEAT, "trace");
    for _ in 0..CALLS {
        core_traced_site(1); // warmup: `CALLS` events per iteration
    }
    let calls = Rc::new(Cell::new(0));
    b.with_inputs(once_per_sample(calls.clone(), profiler_core::step))
        .bench_local_values(|()| core_traced_site(black_box(7)));
    let taken = samples_of("peers_traced");
    assert!(
        taken == calls.get(),
        "g_core_trace: {taken} samples for {} calls: every call must be recorded (a sample must \
         be one iteration of {CALLS} calls, and --sample-count at most {TRACE_REPEAT})",
        calls.get()
    );
}

// ---- the peers ----

/// tracy-client, `ondemand`, no profiler connected: `span!` asks the C++ client whether one is
/// connected (on entry) and whether the zone was active (on exit), and does nothing more.
#[divan::bench(sample_count = SAMPLES)]
fn h_tracy_ondemand_no_client(b: Bencher) {
    let _client = tracy_client::Client::start();
    assert!(
        !tracy_client::Client::is_connected(),
        "h_tracy_ondemand_no_client: a Tracy profiler is connected; this case times the \
         no-client path (close the profiler)"
    );
    b.bench_local(|| {
        let _span = tracy_client::span!("peers_body");
        body(black_box(7))
    });
}

/// Scopes puffin's frames delivered to the sink below.
static PUFFIN_SCOPES: AtomicU64 = AtomicU64::new(0);

/// puffin with scopes on: each `profile_scope!` writes its begin and end, with a timestamp each,
/// into the thread's stream. The scopes are nested in a frame scope, as in a program that
/// profiles its frame: closing a top-level scope would also hand the stream to the global
/// profiler, which happens here once per frame, between samples, with `new_frame()`.
#[divan::bench(sample_count = SAMPLES)]
fn i_puffin_scope(b: Bencher) {
    let sink = puffin::GlobalProfiler::lock().add_sink(Box::new(|frame| {
        PUFFIN_SCOPES.fetch_add(frame.meta().num_scopes as u64, Relaxed);
    }));
    puffin::set_scopes_on(true);
    let mut frame_scope = None;
    let calls = Rc::new(Cell::new(0));
    let next_frame = || {
        drop(frame_scope.take()); // hands this frame's stream to the global profiler
        puffin::GlobalProfiler::lock().new_frame(); // to the sink, then dropped
        frame_scope = puffin::profile_scope_custom!("peers_frame");
    };
    b.with_inputs(once_per_sample(calls.clone(), next_frame))
        .bench_local_values(|()| {
            puffin::profile_scope!("peers_body");
            body(black_box(7))
        });
    drop(frame_scope);
    puffin::GlobalProfiler::lock().new_frame();
    puffin::set_scopes_on(false);
    puffin::GlobalProfiler::lock().remove_sink(sink);
    let frames = calls.get().div_ceil(u64::from(CALLS));
    let scopes = PUFFIN_SCOPES.load(Relaxed);
    assert!(
        scopes == calls.get() + frames,
        "i_puffin_scope: puffin delivered {scopes} scopes for {} calls in {frames} frames",
        calls.get()
    );
}

/// tracing with `tracing_subscriber::registry()` as the global default: a span per call, entered
/// and exited (the registry takes a slot for the span's data, pushes and pops it on the
/// thread's span stack, and frees the slot when the span closes).
#[divan::bench(sample_count = SAMPLES)]
fn j_tracing_registry_span(b: Bencher) {
    tracing::subscriber::set_global_default(tracing_subscriber::registry())
        .expect("no other global subscriber in the bench");
    assert!(
        !tracing::info_span!("peers_check").is_disabled(),
        "j_tracing_registry_span: info spans are disabled (no subscriber, or a `max_level_*` \
         feature of `tracing` compiled them out), so this case would time nothing"
    );
    b.bench_local(|| {
        let span = tracing::info_span!("peers_body");
        let _entered = span.enter();
        body(black_box(7))
    });
}
