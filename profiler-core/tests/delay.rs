//! `PROF_DELAY`: every run of the probes `PROF_DELAY_FILTER` selects is delayed, in every mode,
//! whether or not it is the event measured and whether or not `PROF_FILTER` selects it; other
//! probes are not. Checked by what the run counts (`run.delay`: the runs delayed and the delay
//! asked for, exact on a fake clock), never by wall time.
#![cfg(feature = "enable")]

use profiler_core::testing::FakeClock;
use profiler_core::{Config, DelayAmount, Filter, Mode, Profile, RuntimeProbe};

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn config(filter: &str, mode: Mode, delay: (&str, DelayAmount), name: &str) -> Config {
    Config {
        filter: Filter::parse(filter).unwrap(),
        mode,
        warmup: 2,
        repeat: 3,
        out: std::env::temp_dir()
            .join(format!("prof-delay-{}-{name}.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        delay_filter: Some(Filter::parse(delay.0).unwrap()),
        delay: Some(delay.1),
        ..Config::default()
    }
}

/// Runs iterations of `a` (10 ns), `b` twice (100 and 300 ns) and `c` (1,000 ns) on `clock`
/// until the schedule completes; returns the profile and the iterations run.
fn run(clock: &FakeClock, names: [&str; 3]) -> (Profile, u64) {
    let [a, b, c] = names.map(|n| RuntimeProbe::new(n, Some("delay"), None));
    let mut steps = 0;
    while !profiler_core::finished() {
        a.measure(|| clock.advance(10));
        b.measure(|| clock.advance(100));
        b.measure(|| clock.advance(300));
        c.measure(|| clock.advance(1_000));
        profiler_core::step();
        steps += 1;
        assert!(steps < 100, "the schedule does not complete");
    }
    (profiler_core::snapshot().unwrap(), steps)
}

fn samples(p: &Profile, name: &str) -> Vec<Vec<u64>> {
    p.events
        .iter()
        .filter(|e| e.name == name)
        .map(|e| e.samples_ns.clone())
        .collect()
}

#[test]
fn every_run_of_a_delayed_probe_is_delayed_in_sample_mode() {
    let _s = serial();
    let clock = FakeClock::new();
    let names = ["dly_s_a", "dly_s_b", "dly_s_c"];
    for n in names {
        RuntimeProbe::new(n, Some("delay"), None);
    }
    let _g = profiler_core::init_with(
        config(
            "name=dly_s_*",
            Mode::Sample,
            ("name=dly_s_b", DelayAmount::Fixed(2_000)),
            "sample",
        ),
        Some(Box::new(clock.clone())),
    )
    .unwrap();
    let (p, steps) = run(&clock, names);
    // 4 events (b twice) x 3 repeats after 2 warmup iterations.
    assert_eq!(steps, 2 + 4 * 3);
    let delay = p.run.delay.clone().expect("run.delay is written");
    // Both runs of b in every iteration from the first step() on (the first iteration, like
    // whatever runs before the loop, is not delayed): warmup, the iterations measuring b's
    // first or second run, and those measuring a or c.
    assert_eq!(delay.calls, 2 * (steps - 1));
    assert_eq!(delay.requested_ns, 2 * (steps - 1) * 2_000);
    assert_eq!(
        (delay.filter.as_str(), delay.amount.as_str()),
        ("name=dly_s_b", "2us")
    );
    // The spins are real (on the CPU clock): at least what was asked, less a nanosecond of
    // rounding per run.
    assert!(
        delay.injected_ns + delay.calls >= delay.requested_ns,
        "{delay:?}"
    );
    // The samples are the runs' own durations, measured as without the delay.
    assert_eq!(samples(&p, "dly_s_b"), [vec![100; 3], vec![300; 3]]);
    assert_eq!(samples(&p, "dly_s_c"), [vec![1_000; 3]]);
}

#[test]
fn a_share_is_of_each_runs_own_duration() {
    let _s = serial();
    let clock = FakeClock::new();
    let names = ["dly_p_a", "dly_p_b", "dly_p_c"];
    for n in names {
        RuntimeProbe::new(n, Some("delay"), None);
    }
    let _g = profiler_core::init_with(
        config(
            "name=dly_p_*",
            Mode::Sample,
            ("name=dly_p_b|name=dly_p_c", DelayAmount::Share(0.1)),
            "share",
        ),
        Some(Box::new(clock.clone())),
    )
    .unwrap();
    let (p, steps) = run(&clock, names);
    let delay = p.run.delay.clone().unwrap();
    assert_eq!(delay.calls, 3 * (steps - 1));
    // 10% of 100 + 300 + 1,000 ns a iteration.
    assert_eq!(delay.requested_ns, 140 * (steps - 1));
    assert_eq!(delay.amount, "10%");
}

#[test]
fn a_probe_prof_filter_leaves_out_is_delayed_all_the_same_in_trace_mode() {
    let _s = serial();
    let clock = FakeClock::new();
    let names = ["dly_t_a", "dly_t_b", "dly_t_c"];
    for n in names {
        RuntimeProbe::new(n, Some("delay"), None);
    }
    // Only a is measured; c is delayed.
    let _g = profiler_core::init_with(
        config(
            "name=dly_t_a",
            Mode::Trace,
            ("name=dly_t_c", DelayAmount::Fixed(0)),
            "trace",
        ),
        Some(Box::new(clock.clone())),
    )
    .unwrap();
    let (p, steps) = run(&clock, names);
    assert_eq!(steps, 2 + 3);
    let delay = p.run.delay.clone().unwrap();
    // A delay of 0 takes the same path and counts its runs, spinning for nothing.
    assert_eq!(delay.calls, steps - 1);
    assert_eq!((delay.requested_ns, delay.injected_ns), (0, 0));
    assert_eq!(delay.amount, "0");
    assert_eq!(samples(&p, "dly_t_a"), [vec![10; 3]]);
    assert!(samples(&p, "dly_t_c").is_empty());
}

#[test]
fn a_delay_filter_that_selects_nothing_is_an_error() {
    let _s = serial();
    RuntimeProbe::new("dly_e_a", Some("delay"), None);
    let clock = FakeClock::new();
    let err = profiler_core::init_with(
        config(
            "name=dly_e_a",
            Mode::Sample,
            ("name=no_such_probe", DelayAmount::Fixed(1_000)),
            "none",
        ),
        Some(Box::new(clock)),
    )
    .map(|_| ())
    .unwrap_err();
    assert_eq!(err.var, "PROF_DELAY_FILTER");
    assert!(err.to_string().contains("--list-probes"), "{err}");
}

/// A probe that runs only before the loop (the model's construction) is not delayed: a delay
/// there lengthens no iteration, and `prof whatif`, which divides the delay by the iterations,
/// read it as a delay of every iteration (and called the probe "hidden", exit 0, where it must
/// say that the probe never ran in an iteration). Delays begin at the first `step()`.
#[test]
fn runs_before_the_loop_are_not_delayed() {
    let _s = serial();
    let clock = FakeClock::new();
    let names = ["dly_l_a", "dly_l_b", "dly_l_c"];
    let build = RuntimeProbe::new("dly_l_build", Some("delay"), None);
    for n in names {
        RuntimeProbe::new(n, Some("delay"), None);
    }
    let _g = profiler_core::init_with(
        config(
            "name=dly_l_*",
            Mode::Sample,
            ("name=dly_l_build", DelayAmount::Fixed(1_000)),
            "before-loop",
        ),
        Some(Box::new(clock.clone())),
    )
    .unwrap();
    build.measure(|| clock.advance(500));
    let (p, _) = run(&clock, names);
    let delay = p.run.delay.clone().unwrap();
    assert_eq!((delay.calls, delay.requested_ns), (0, 0), "{delay:?}");
}

/// Runs after the last `step()` (a final evaluation, the checkpoint) are not counted in
/// `run.delay`, which holds what the iterations had: before, they were, and `prof whatif` read
/// them as a delay of the iterations (a probe run only after the loop: "hidden", exit 0).
#[test]
fn runs_after_the_last_step_are_not_counted() {
    let _s = serial();
    let clock = FakeClock::new();
    let names = ["dly_x_a", "dly_x_b", "dly_x_c"];
    for n in names {
        RuntimeProbe::new(n, Some("delay"), None);
    }
    let _g = profiler_core::init_with(
        config(
            "name=dly_x_*",
            Mode::Sample,
            ("name=dly_x_c", DelayAmount::Fixed(1_000)),
            "after-loop",
        ),
        Some(Box::new(clock.clone())),
    )
    .unwrap();
    // A run whose schedule does not complete (continuous mode, or a loop shorter than it):
    // its probes stay delayed after the loop.
    let c = RuntimeProbe::new("dly_x_c", Some("delay"), None);
    for _ in 0..4 {
        c.measure(|| clock.advance(100));
        profiler_core::step();
    }
    assert!(!profiler_core::finished());
    let counted = profiler_core::snapshot().unwrap().run.delay.unwrap();
    assert_eq!(counted.calls, 3, "the iterations after the first step()");
    for _ in 0..5 {
        c.measure(|| clock.advance(100));
    }
    let after = profiler_core::snapshot().unwrap().run.delay.unwrap();
    assert_eq!(after, counted);
}
