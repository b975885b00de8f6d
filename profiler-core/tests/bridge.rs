//! The `tracing` bridge: spans of tracing-instrumented code become probes, selected by
//! `PROF_FILTER` on their name, target and `layer`/`phase` fields, measured with the schedule;
//! spans with `flops` and `bytes` fields count that work.
#![cfg(feature = "tracing")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

use profiler_core::testing::FakeClock;
use profiler_core::{Config, Filter, Mode, Profile, TracingBridge};

/// Counts the bytes this test binary holds, so that a span's data can be seen to be freed.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call goes to `System` unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One session at a time: the tests of this file each start one.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn clock() -> &'static FakeClock {
    static CLOCK: std::sync::OnceLock<FakeClock> = std::sync::OnceLock::new();
    CLOCK.get_or_init(FakeClock::new)
}

fn config(filter: &str, warmup: u32, name: &str) -> Config {
    Config {
        filter: Filter::parse(filter).unwrap(),
        mode: Mode::Sample,
        warmup,
        repeat: 3,
        out: std::env::temp_dir()
            .join(format!("prof-bridge-{}-{name}.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    }
}

/// Code instrumented as candle instruments its layers.
#[tracing::instrument(level = "trace", skip_all, fields(layer = "mlp", phase = "fwd"))]
fn linear_forward(ns: u64) {
    clock().advance(ns);
}

fn attention(ns: u64) -> bool {
    let span = tracing::trace_span!("attention", layer = "attn", phase = "fwd");
    let _entered = span.enter();
    clock().advance(ns);
    span.is_disabled()
}

/// One callsite whose `layer` is given per span: each value is a probe of its own.
fn valued(layer: &str, ns: u64) {
    let span = tracing::trace_span!("valued", layer = layer);
    let _entered = span.enter();
    clock().advance(ns);
}

fn untagged(ns: u64) -> bool {
    let span = tracing::trace_span!("helper");
    let _entered = span.enter();
    clock().advance(ns);
    span.is_disabled()
}

#[test]
fn selected_spans_are_measured_and_the_others_are_never_enabled() {
    let _s = serial();
    let config = config("kind=span&layer=mlp", 2, "selected");
    let _g = profiler_core::init_with(config, Some(Box::new(clock().clone()))).unwrap();
    let _d = tracing::subscriber::set_default(TracingBridge::new());
    let mut steps = 0;
    let mut helper_disabled = true;
    while !profiler_core::finished() {
        linear_forward(10);
        linear_forward(20);
        assert!(
            !attention(7),
            "a span with a layer field: only its value can tell"
        );
        valued("attn", 9);
        valued("mlp", 4);
        helper_disabled &= untagged(3);
        profiler_core::step();
        steps += 1;
        assert!(steps < 100);
    }
    // Three events (two calls of the one span per iteration, and `valued` with layer mlp), 3
    // iterations each.
    assert_eq!(steps, 2 + 3 * 3);
    let p = profiler_core::snapshot().unwrap();
    assert_eq!(p.events.len(), 3, "{:?}", p.events);
    let v = &p.events[2];
    assert_eq!(
        (v.name.as_str(), v.layer.as_deref()),
        ("valued", Some("mlp"))
    );
    assert_eq!(v.samples_ns, [4; 3]);
    for (e, ns) in p.events.iter().zip([10, 20]) {
        assert_eq!(e.name, "linear_forward");
        assert_eq!(e.kind, "span");
        assert_eq!(e.layer.as_deref(), Some("mlp"));
        assert_eq!(e.phase.as_deref(), Some("fwd"));
        assert_eq!(e.module, "bridge");
        assert_eq!(e.id, "bridge::linear_forward");
        assert!(e.file.ends_with("bridge.rs"));
        assert_eq!(e.samples_ns, [ns; 3]);
    }
    // A span the filter cannot select is never enabled: it costs what tracing costs with no
    // subscriber. (`attention` has a layer field, so only its value could tell: enabled, but
    // its probe is not selected.)
    assert!(helper_disabled);
    // Once the schedule is complete, spans are judged again: disabled, as with no subscriber.
    assert!(attention(1));
    let listed = profiler_core::probes();
    let spans: Vec<_> = listed.iter().filter(|p| p.kind == "span").collect();
    assert!(spans
        .iter()
        .any(|p| p.name == "attention" && p.layer == Some("attn")));
    assert!(spans.iter().any(|p| p.name == "helper" && !p.selected));
}

/// A span made per call with its counts: `2 * m * 32` FLOPs and `1.5 * m` bytes (a float).
fn gemm(m: u64) {
    let span = tracing::trace_span!(
        "gemm",
        layer = "work",
        flops = 2 * m * 32,
        bytes = m as f64 * 1.5
    );
    let _entered = span.enter();
    clock().advance(m);
}

/// A span counting bytes only, as `#[instrument]` makes it, its count a signed integer.
#[tracing::instrument(level = "trace", skip_all, fields(layer = "work", bytes = 3 * n as i64))]
fn copy(n: u64) {
    clock().advance(n);
}

/// A span made once, as candle-transformers' wrappers make theirs, whose FLOPs are recorded
/// before each entry (the batch is known only then).
struct Layer {
    span: tracing::Span,
}

impl Layer {
    fn new() -> Layer {
        Layer {
            span: tracing::trace_span!("layer", layer = "work", flops = tracing::field::Empty),
        }
    }

    fn forward(&self, batch: u64) {
        self.span.record("flops", 10 * batch);
        let _entered = self.span.enter();
        clock().advance(batch);
    }
}

fn event<'a>(p: &'a Profile, name: &str) -> &'a profiler_core::format::Event {
    p.events.iter().find(|e| e.name == name).unwrap()
}

#[test]
fn spans_with_flops_and_bytes_fields_count_their_work() {
    let _s = serial();
    // `unlayered` has no `layer` field: its callsite alone decides its probe.
    let config = config("kind=span&(layer=work|name=unlayered)", 2, "work");
    let _g = profiler_core::init_with(config, Some(Box::new(clock().clone()))).unwrap();
    let _d = tracing::subscriber::set_default(TracingBridge::new());
    let layer = Layer::new();
    let mut iter = 0;
    while !profiler_core::finished() {
        gemm(100 + iter);
        copy(7 + iter);
        layer.forward(20 + iter);
        {
            let plain = tracing::trace_span!("plain", layer = "work");
            let _entered = plain.enter();
            clock().advance(1);
        }
        {
            let unlayered = tracing::trace_span!("unlayered", flops = 5 * iter);
            let _entered = unlayered.enter();
            clock().advance(2);
        }
        {
            // A value that is not a number counts 0.
            let wordy = tracing::trace_span!("wordy", layer = "work", flops = "many");
            let _entered = wordy.enter();
            clock().advance(1);
        }
        {
            // Its shape from two fields, the first recorded after creation: `m x 32`, m
            // alternating between 8 and 16 (the span's time).
            let m = if iter % 2 == 0 { 8u64 } else { 16 };
            let shaped = tracing::trace_span!(
                "shaped",
                layer = "work",
                shape.m = tracing::field::Empty,
                shape.k = 32u64
            );
            shaped.record("shape.m", m);
            let _entered = shaped.enter();
            clock().advance(m);
        }
        profiler_core::step();
        iter += 1;
        assert!(iter < 100);
    }
    assert_eq!(iter, 2 + 7 * 3);
    let p = profiler_core::snapshot().unwrap();
    let scaled = |e: &profiler_core::format::Event, by: f64| -> Vec<u64> {
        e.samples_ns
            .iter()
            .map(|&n| (n as f64 * by) as u64)
            .collect()
    };

    let g = event(&p, "gemm");
    assert_eq!(g.kind, "span");
    assert_eq!(g.samples_ns.len(), 3);
    let work = g.work.as_ref().expect("gemm counts its work");
    assert_eq!(work.flops, Some(scaled(g, 64.0)));
    assert_eq!(work.bytes, Some(scaled(g, 1.5)));

    let c = event(&p, "copy");
    let work = c.work.as_ref().expect("copy counts its bytes");
    assert_eq!(work.flops, None);
    assert_eq!(work.bytes, Some(scaled(c, 3.0)));

    let l = event(&p, "layer");
    let work = l.work.as_ref().expect("layer counts its FLOPs");
    assert_eq!(work.flops, Some(scaled(l, 10.0)));
    assert_eq!(work.bytes, None);

    let u = event(&p, "unlayered");
    assert_eq!(u.layer, None);
    let flops: Vec<u64> = u.sample_iters.iter().map(|&i| 5 * u64::from(i)).collect();
    assert_eq!(u.work.as_ref().unwrap().flops.as_deref(), Some(&flops[..]));

    assert_eq!(event(&p, "plain").work, None);
    let w = event(&p, "wordy").work.as_ref().unwrap();
    assert_eq!(w.flops, Some(vec![0; 3]));
    // Shape fields: one list, in the fields' order, each sample its own.
    let sh = event(&p, "shaped");
    assert_eq!(sh.work, None);
    let shapes = sh.shapes.as_ref().expect("shaped keeps its shapes");
    let named: Vec<&str> = shapes
        .sample_shapes
        .iter()
        .map(|k| shapes.values[k.unwrap() as usize].as_str())
        .collect();
    let want: Vec<String> = sh.samples_ns.iter().map(|ns| format!("{ns}x32")).collect();
    assert_eq!(named, want);
    // prof.json carries it, and its checks accept it.
    let text = serde_json::to_string(&p).unwrap();
    profiler_core::format::parse_profile(text.as_bytes(), std::path::Path::new("spans.json"))
        .unwrap();
}

#[test]
fn counting_spans_are_freed_with_their_last_handle() {
    let _s = serial();
    // A long warmup: every span below is learned (so entered and left through the bridge).
    let config = config("kind=span&layer=work", 1_000, "freed");
    let _g = profiler_core::init_with(config, Some(Box::new(clock().clone()))).unwrap();
    let _d = tracing::subscriber::set_default(TracingBridge::new());
    // 100 spans an iteration: learning keeps each iteration's runs until its `step()`.
    let iterations = |n: u64| {
        for _ in 0..n {
            for i in 0..100 {
                let span = tracing::trace_span!(
                    "freed",
                    layer = "work",
                    flops = i,
                    bytes = tracing::field::Empty
                );
                let handle = span.clone();
                drop(span);
                handle.record("bytes", 2 * i);
                let _entered = handle.enter();
            }
            profiler_core::step();
        }
    };
    iterations(2); // the callsite's registration, the caches, the events learned
    let before = LIVE.load(Relaxed);
    iterations(100);
    let held = LIVE.load(Relaxed) - before;
    // Each span's counts take 40 bytes: kept, they would hold 400 kB.
    assert!(held < 8 * 10_000, "{held} bytes held after 10,000 spans");
}
