//! The step-time breakdown of a real run, on a fake clock so that every time is exact: the
//! categories and `other` add up to the mean iteration, and a known stretch of work outside
//! every probe is found as `other`, between the probes that surround it.
#![cfg(feature = "enable")]

use profiler_core::testing::FakeClock;
use profiler_core::{probe, Config, Filter, Mode};
use profiler_tables::breakdown::{breakdown, OTHER};
use profiler_tables::rows::profile_rows;

fn run(mode: Mode, clock: &FakeClock, out: &str) -> profiler_core::Profile {
    let config = Config {
        filter: Filter::parse("layer=bd").unwrap(),
        mode,
        warmup: 2,
        repeat: 3,
        out: std::env::temp_dir()
            .join(format!("prof-breakdown-{}-{out}.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    let _g = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    let mut steps = 0;
    while !profiler_core::finished() && steps < 100 {
        probe!("next_batch", layer = "bd", phase = "data" => { clock.advance(100) });
        probe!("forward", layer = "bd", phase = "fwd" => {
            probe!("inner", layer = "bd", phase = "fwd" => { clock.advance(50) });
            clock.advance(250);
        });
        // Work that no probe covers: the gap a user should annotate next.
        clock.advance(400);
        probe!("backward", layer = "bd", phase = "bwd" => { clock.advance(600) });
        probe!("sgd", layer = "bd", phase = "update" => { clock.advance(30) });
        // And a little before step().
        clock.advance(20);
        profiler_core::step();
        steps += 1;
    }
    profiler_core::snapshot().unwrap()
}

#[test]
fn the_breakdown_adds_up_and_finds_the_uncovered_work() {
    let clock = FakeClock::new();
    for mode in [Mode::Sample, Mode::Trace] {
        let p = run(mode, &clock, mode.as_str());
        let b = breakdown(&p, &profile_rows(&p, 0.25, 0.05)).unwrap();
        assert_eq!(b.iteration_ns, 1450.0, "{mode:?}");
        let total: f64 = b.categories.iter().map(|c| c.total_ns).sum();
        assert_eq!(total, b.iteration_ns, "{mode:?}: {b:?}");
        let of = |name: &str| {
            b.categories
                .iter()
                .find(|c| c.name == name)
                .unwrap()
                .total_ns
        };
        assert_eq!(
            (of("data"), of("fwd"), of("bwd"), of("update"), of(OTHER)),
            (100.0, 300.0, 600.0, 30.0, 420.0),
            "{mode:?}"
        );
        assert_eq!(b.overlap_ns, 0.0);
        let gap = &b.gaps[0];
        assert_eq!(
            (gap.start_ns, gap.len_ns),
            (400.0, 400.0),
            "{mode:?}: {b:?}"
        );
        assert_eq!(gap.after.as_ref().unwrap().label, "bd/fwd forward");
        assert_eq!(gap.before.as_ref().unwrap().label, "bd/bwd backward");
        let here = gap.before.as_ref().unwrap().location.clone();
        assert!(
            here.starts_with("profiler-core/tests/breakdown.rs:"),
            "{here}"
        );
        assert_eq!(b.gaps[1].len_ns, 20.0);
        assert!(b.gaps[1].before.is_none(), "until step()");
        let line = b.line();
        assert!(line.contains("other 29.0%"), "{line}");
        assert!(line.contains("400ns after bd/fwd forward"), "{line}");
    }
}
