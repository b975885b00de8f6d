//! The `tracing` bridge: spans of tracing-instrumented code become probes, selected by
//! `PROF_FILTER` on their name, target and `layer`/`phase` fields, measured with the schedule.
#![cfg(feature = "tracing")]

use profiler_core::testing::FakeClock;
use profiler_core::{Config, Filter, Mode, TracingBridge};

fn clock() -> &'static FakeClock {
    static CLOCK: std::sync::OnceLock<FakeClock> = std::sync::OnceLock::new();
    CLOCK.get_or_init(FakeClock::new)
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
    let config = Config {
        filter: Filter::parse("kind=span&layer=mlp").unwrap(),
        mode: Mode::Sample,
        warmup: 2,
        repeat: 3,
        out: std::env::temp_dir()
            .join(format!("prof-bridge-{}.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
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
