//! What the writer writes, `prof` reads: profiles written through the real writer in every mode,
//! at every bound (events folded into merged events past `PROF_MAX_EVENTS`, nesting, several
//! calls an iteration), on a clock whose ticks are not whole nanoseconds (as a time-stamp
//! counter's), are loaded and checked by profiler-analysis exactly as `prof` loads them.
#![cfg(feature = "enable")]

use std::sync::Mutex;

use profiler_core::testing::FakeClock;
use profiler_core::{probe, profiled, Config, Filter, Mode};
use proptest::prelude::*;

/// The clock of the current case (each case sets its own tick).
static CLOCK: Mutex<Option<FakeClock>> = Mutex::new(None);

fn advance(ticks: u64) {
    if let Some(clock) = CLOCK.lock().unwrap().as_ref() {
        clock.advance(ticks);
    }
}

/// A varying duration: a pseudo-random number of ticks from a counter.
fn ticks() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    1 + (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) * 7
}

#[profiled(layer = "rt", phase = "fwd")]
fn flood() {
    advance(ticks());
}

#[profiled(layer = "rt", phase = "bwd")]
fn outer(depth: u32) {
    advance(ticks());
    if depth > 0 {
        let _p = probe!("inner", layer = "rt", phase = "bwd");
        advance(ticks());
        outer(depth - 1);
    }
}

fn out_path() -> String {
    let dir = std::env::temp_dir().join(format!("prof-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("prof.json").display().to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_profile_the_writer_writes_is_read_back(
        mode in prop::sample::select(vec![Mode::Sample, Mode::Trace, Mode::Continuous]),
        floods in 0u32..12,
        depth in 0u32..4,
        max_events in 1u32..10,
        warmup in 1u32..4,
        repeat in 1u32..5,
        tick in (1u64..20, 1u64..20),
    ) {
        static SERIAL: Mutex<()> = Mutex::new(());
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let clock = FakeClock::ticking(tick.0, tick.1);
        *CLOCK.lock().unwrap() = Some(clock.clone());
        let out = out_path();
        let _ = std::fs::remove_file(&out);
        let config = Config {
            filter: Filter::parse("layer=rt").unwrap(),
            mode,
            warmup,
            repeat,
            max_events,
            windows: 3,
            baseline_windows: 1,
            out: out.clone(),
            summary: false,
            ..Config::default()
        };
        let guard = profiler_core::init_with(config, Some(Box::new(clock))).unwrap();
        for _ in 0..200 {
            for _ in 0..floods {
                flood();
            }
            outer(depth);
            advance(3);
            profiler_core::step();
            if profiler_core::finished() {
                break;
            }
        }
        drop(guard);
        *CLOCK.lock().unwrap() = None;
        match profiler_analysis::load_profile(&out) {
            Ok(p) => prop_assert!(!p.events.is_empty()),
            Err(e) => prop_assert!(false, "{mode:?}: the written profile is refused: {e}"),
        }
    }
}
