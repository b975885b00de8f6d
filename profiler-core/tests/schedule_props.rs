//! Property test of the `sample` schedule: for any steady training loop (the same sequence of
//! probe runs every iteration), the schedule learns one event per (probe, occurrence), measures
//! each exactly `repeat` times with its exact duration and offset, arms one event per iteration,
//! and completes after exactly `warmup + events x repeat` iterations.
#![cfg(feature = "enable")]

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use profiler_core::testing::FakeClock;
use profiler_core::{probe, profiled, Config, Filter, Mode};
use proptest::prelude::*;

fn clock() -> &'static FakeClock {
    static CLOCK: OnceLock<FakeClock> = OnceLock::new();
    CLOCK.get_or_init(FakeClock::new)
}

#[profiled(layer = "prop")]
fn p0() {
    clock().advance(10);
}

#[profiled(layer = "prop")]
fn p1() {
    clock().advance(20);
}

fn p2() {
    let _g = probe!("p2", layer = "prop");
    clock().advance(30);
}

fn p3() {
    let v = probe!("p3", layer = "prop" => { clock().advance(40); 4 });
    assert_eq!(v, 4);
}

fn call(p: u8) {
    match p {
        0 => p0(),
        1 => p1(),
        2 => p2(),
        _ => p3(),
    }
    clock().advance(1); // time between probes
}

const NAMES: [&str; 4] = ["p0", "p1", "p2", "p3"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn steady_loops_are_scheduled_exactly(
        body in prop::collection::vec(0u8..4, 1..10),
        warmup in 1u32..4,
        repeat in 1u32..4,
    ) {
        static SERIAL: Mutex<()> = Mutex::new(());
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let config = Config {
            filter: Filter::parse("layer=prop").unwrap(),
            mode: Mode::Sample,
            warmup,
            repeat,
            max_events: 64,
            out: std::env::temp_dir().join("prof-props.json").display().to_string(),
            summary: false,
            ..Config::default()
        };
        let _g = profiler_core::init_with(config, Some(Box::new(clock().clone()))).unwrap();

        // The expected events, in execution order, with their duration and offset.
        let mut seen: HashMap<u8, u32> = HashMap::new();
        let mut expected = Vec::new();
        let mut offset = 0u64;
        for &p in &body {
            let occ = seen.entry(p).or_default();
            expected.push((NAMES[p as usize], *occ, 10 * (p as u64 + 1), offset));
            *occ += 1;
            offset += 10 * (p as u64 + 1) + 1;
        }

        let mut steps = 0u32;
        while !profiler_core::finished() {
            let marks = clock().marks_taken();
            for &p in &body {
                call(p);
            }
            profiler_core::step();
            if steps >= warmup {
                prop_assert_eq!(clock().marks_taken() - marks, 3, "one armed event per iteration");
            }
            steps += 1;
            prop_assert!(steps <= warmup + repeat * 40);
        }
        prop_assert_eq!(steps, warmup + expected.len() as u32 * repeat);

        let p = profiler_core::snapshot().unwrap();
        prop_assert_eq!(p.events.len(), expected.len());
        for (i, (e, (name, occ, dur, off))) in p.events.iter().zip(&expected).enumerate() {
            prop_assert_eq!(&e.name, name);
            prop_assert_eq!(e.occurrence, *occ);
            prop_assert_eq!(e.order, i as u32);
            prop_assert_eq!(&e.samples_ns, &vec![*dur; repeat as usize]);
            prop_assert_eq!(&e.offsets_ns, &vec![*off; repeat as usize]);
            let first = warmup + i as u32 * repeat;
            prop_assert_eq!(&e.sample_iters, &(first..first + repeat).collect::<Vec<_>>());
        }
    }
}
