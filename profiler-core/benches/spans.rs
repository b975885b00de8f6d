//! What a `tracing` span costs through the bridge, against tracing's own baselines.
//!
//! Run with `cargo bench -p profiler-core --features tracing --bench spans`. Each case enters
//! and leaves one span around the same non-inlined call; docs/overhead.md quotes the medians.

use std::hint::black_box;
use std::sync::atomic::Ordering::Relaxed;

use divan::Bencher;
use profiler_core::{probe, Config, Filter, Mode, TracingBridge};

fn main() {
    divan::main();
}

#[inline(never)]
fn bare(x: u64) -> u64 {
    x.wrapping_mul(3)
}

fn start(filter: &str) -> profiler_core::InitGuard {
    let config = Config {
        filter: Filter::parse(filter).unwrap(),
        mode: Mode::Sample,
        warmup: 1,
        repeat: 1_000_000,
        out: std::env::temp_dir()
            .join("profiler-core-bench-spans.json")
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    profiler_core::init_with(config, None).expect("bench session")
}

/// 1. The call alone.
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn a_bare_call(b: Bencher) {
    b.bench(|| bare(black_box(7)));
}

/// 2. A span with no subscriber at all: what a disabled callsite costs.
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn b_span_no_subscriber(b: Bencher) {
    b.bench(|| tracing::trace_span!("b_span").in_scope(|| bare(black_box(7))));
}

/// 3. tracing-subscriber's registry with no layer: the least a layer-based profiler pays.
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn c_span_registry_no_layers(b: Bencher) {
    let _d = tracing::subscriber::set_default(tracing_subscriber::registry());
    b.bench(|| tracing::trace_span!("c_span").in_scope(|| bare(black_box(7))));
}

/// 4. The bridge, a span the filter does not select: `Interest::never`.
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn d_bridge_span_not_selected(b: Bencher) {
    let _session = start("kind=span&name=d_other");
    let _d = tracing::subscriber::set_default(TracingBridge::new());
    b.bench(|| tracing::trace_span!("d_span").in_scope(|| bare(black_box(7))));
}

fn armed_first() {
    let _p = probe!("e_armed_first", layer = "bench");
}

/// 5. The bridge, a selected span that is not armed (another event is this iteration's).
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn e_bridge_span_selected_unarmed(b: Bencher) {
    let _session = start("name=e_armed_first|name=e_span");
    let _d = tracing::subscriber::set_default(TracingBridge::new());
    // Warmup: the probe runs first, so its event is armed first (for a million iterations).
    armed_first();
    tracing::trace_span!("e_span").in_scope(|| bare(1));
    profiler_core::step();
    b.bench(|| tracing::trace_span!("e_span").in_scope(|| bare(black_box(7))));
}

/// 6. The bridge, the armed span: two clock reads and the stores of a sample.
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn f_bridge_span_armed(b: Bencher) {
    let _session = start("kind=span&name=f_span");
    let _d = tracing::subscriber::set_default(TracingBridge::new());
    let span = || tracing::trace_span!("f_span");
    span().in_scope(|| bare(1));
    profiler_core::step();
    let counter = profiler_core::__private::run_counter("f_span").unwrap();
    b.bench(|| {
        counter.store(0, Relaxed);
        span().in_scope(|| bare(black_box(7)))
    });
}

/// Case 7: the bridge, a selected span with `layer` and `phase` fields, made anew at every call
/// as `#[tracing::instrument(fields(layer = ..))]` does, not armed: its probe is found from
/// the fields' values.
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn g_bridge_span_with_fields_unarmed(b: Bencher) {
    let _session = start("name=e_armed_first|kind=span&layer=bench_fields");
    let _d = tracing::subscriber::set_default(TracingBridge::new());
    let span = || tracing::trace_span!("g_span", layer = "bench_fields", phase = "fwd");
    armed_first();
    span().in_scope(|| bare(1));
    profiler_core::step();
    b.bench(|| span().in_scope(|| bare(black_box(7))));
}

/// Case 8: the bridge, a selected span with `flops` and `bytes` fields, made anew at every call,
/// not armed: the span's counts are allocated with it and freed when it closes.
#[divan::bench(sample_count = 200, sample_size = 2000)]
fn h_bridge_span_with_work_unarmed(b: Bencher) {
    let _session = start("name=e_armed_first|kind=span&name=h_span");
    let _d = tracing::subscriber::set_default(TracingBridge::new());
    let span = |n: u64| tracing::trace_span!("h_span", flops = 2 * n, bytes = 8 * n);
    armed_first();
    span(1).in_scope(|| bare(1));
    profiler_core::step();
    b.bench(|| span(black_box(7)).in_scope(|| bare(black_box(7))));
}
