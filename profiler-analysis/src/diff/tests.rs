//! Unit tests of `analysis::diff`, and the profile builders that the tests of `scale` and
//! `merge` use too.

use super::*;
use profiler_format::{Iterations, Run, Stats};

/// One simulated event: (name, layer, phase, occurrence, median ns).
pub(crate) type Spec = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    u32,
    f64,
);

pub(crate) fn event(spec: &Spec, samples: Vec<u64>, iters: Vec<u32>, order: u32) -> Event {
    let (name, layer, phase, occurrence, _) = *spec;
    Event {
        id: format!("{}::{name}", layer.unwrap_or("model")),
        name: name.to_owned(),
        layer: layer.map(str::to_owned),
        phase: phase.map(str::to_owned),
        kind: "fn".to_owned(),
        module: "model".to_owned(),
        file: "model.rs".to_owned(),
        line: 1,
        occurrence,
        order,
        stats: Stats::of(&samples),
        offsets_ns: vec![0; samples.len()],
        samples_ns: samples,
        sample_iters: iters,
        ..Default::default()
    }
}

pub(crate) fn profile(
    rank: u32,
    warmup: u32,
    repeat: u32,
    walls: Vec<u64>,
    events: Vec<Event>,
) -> Profile {
    Profile {
        schema: profiler_format::SCHEMA.to_owned(),
        complete: true,
        run: Run {
            program: "model".to_owned(),
            pid: 1,
            host: "host".to_owned(),
            rank,
            mode: "sample".to_owned(),
            filter: String::new(),
            warmup,
            repeat,
            clock: "fake".to_owned(),
            max_events: 4096,
            timer_floor_ns: 20,
            profiler_version: "0".to_owned(),
            windows: None,
            on_demand: None,
            delay: None,
            peak: None,
        },
        iterations: Iterations {
            first: 0,
            count: walls.len() as u64,
            wall_ns: walls,
            device_memory: Vec::new(),
        },
        events,
        windows: Vec::new(),
        before_loop: Vec::new(),
        cpu_samples: None,
    }
}

/// A sample-mode run: 10 warmup iterations, then `repeat` iterations per event, in order.
/// In iteration i every event takes its median x `speed(i)` x a uniform noise of +-`noise`/2
/// (the slowdown factor `slow` applies to the events named in it); the iteration's wall time
/// is their sum plus 5µs, and only the armed event's time is kept as a sample.
pub(crate) fn simulate(
    specs: &[Spec],
    repeat: usize,
    noise: f64,
    speed: impl Fn(usize) -> f64,
    slow: &[(&str, f64)],
    seed: u64,
) -> Profile {
    let warmup = 10;
    let mut rng = SplitMix64::new(seed);
    let total = warmup + specs.len() * repeat;
    let mut walls = Vec::with_capacity(total);
    let mut samples = vec![(Vec::new(), Vec::new()); specs.len()];
    for i in 0..total {
        let m = speed(i);
        let mut wall = 5_000.0;
        for (k, spec) in specs.iter().enumerate() {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let factor = slow
                .iter()
                .find(|(name, _)| *name == spec.0)
                .map_or(1.0, |s| s.1);
            let t = spec.4 * factor * m * (1.0 + noise * (u - 0.5));
            wall += t;
            if i >= warmup && (i - warmup) / repeat == k {
                samples[k].0.push(t.round() as u64);
                samples[k].1.push(i as u32);
            }
        }
        walls.push(wall.round() as u64);
    }
    let events = specs
        .iter()
        .zip(samples)
        .enumerate()
        .map(|(k, (spec, (s, it)))| event(spec, s, it, k as u32))
        .collect();
    profile(0, warmup as u32, repeat as u32, walls, events)
}

/// 25 events of 1µs to 400µs, like a small model's layers.
pub(crate) fn model() -> Vec<Spec> {
    let layers = [
        ("embedding", 80_000.0),
        ("bottom_mlp", 60_000.0),
        ("interaction", 40_000.0),
        ("top_mlp", 120_000.0),
        ("loss", 3_000.0),
    ];
    let phases = ["fwd", "bwd", "update"];
    let mut specs: Vec<Spec> = Vec::new();
    let names = [
        ["lookup", "lookup_grad", "sparse_update"],
        ["bottom_forward", "bottom_backward", "bottom_update"],
        ["interact", "interact_grad", "interact_update"],
        ["top_forward", "top_backward", "top_update"],
        ["loss", "loss_grad", "loss_update"],
    ];
    for (l, (layer, t)) in layers.iter().enumerate() {
        for (p, phase) in phases.iter().enumerate() {
            specs.push((
                names[l][p],
                Some(layer),
                Some(phase),
                0,
                t * (1.0 + p as f64),
            ));
        }
    }
    // Repeated probes without a layer, told apart by occurrence.
    for occ in 0..10 {
        specs.push((
            "linear",
            None,
            Some("fwd"),
            occ,
            1_000.0 + 3_000.0 * occ as f64,
        ));
    }
    specs
}

fn steady(_: usize) -> f64 {
    1.0
}

/// A verdict that names a change (what a false positive is).
fn named(v: Verdict) -> bool {
    matches!(v, Verdict::Regressed | Verdict::Improved)
}

fn find<'a>(diff: &'a Diff, layer: &str, phase: &str) -> &'a EventDiff {
    diff.events
        .iter()
        .find(|e| {
            e.identity.layer.as_deref() == Some(layer) && e.identity.phase.as_deref() == Some(phase)
        })
        .unwrap()
}

#[test]
fn same_distribution_is_no_change() {
    let specs = model();
    for seed in 0..4 {
        let before = simulate(&specs, 50, 0.1, steady, &[], seed);
        let after = simulate(&specs, 50, 0.1, steady, &[], seed + 100);
        let d = diff(&before, &after, &DiffOptions::default());
        assert_eq!(d.events.len(), specs.len());
        assert!(!d.has_regression(), "{}", render(&d, Format::Table));
        for e in std::iter::once(&d.iteration).chain(&d.events) {
            assert!(
                matches!(
                    e.verdict,
                    Verdict::NoChange | Verdict::WithinNoise | Verdict::Inconclusive
                ),
                "{}",
                render(&d, Format::Table)
            );
            assert!(e.ci_low <= e.ratio && e.ratio <= e.ci_high, "{e:?}");
        }
        // One run a side cannot show a 2% change of these scattered events; those whose open
        // interval could not move the iteration by 2% are shown, not deciding.
        let text = render(&d, Format::Table);
        let open: Vec<&EventDiff> = d
            .events
            .iter()
            .filter(|e| e.verdict == Verdict::Inconclusive)
            .collect();
        assert!(!open.is_empty(), "{text}");
        for e in &open {
            assert_eq!(
                e.matters,
                e.share >= 0.02 && e.share * super::reach(e) >= 0.02,
                "{e:?}"
            );
        }
        assert!(open.iter().any(|e| !e.matters), "{text}");
        assert!(text.contains("(inconclusive)"), "{text}");
        assert_eq!(
            d.is_inconclusive(),
            open.iter().any(|e| e.matters) || d.iteration.verdict == Verdict::Inconclusive,
            "{text}"
        );
        // Judged with the threshold at 0.2%, what they leave open matters: said, not "no
        // regression".
        let strict = DiffOptions {
            threshold: 0.002,
            ..DiffOptions::default()
        };
        let d_strict = diff(&before, &after, &strict);
        let text = render(&d_strict, Format::Table);
        assert!(d_strict.is_inconclusive(), "{text}");
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("INCONCLUSIVE") && last.contains("cannot rule out a change of 0.2%"),
            "{text}"
        );
        assert!(last.contains("Several runs a side"), "{last}");
        // Rounds already paired (prof ab) are told to run more rounds, not more runs a side.
        let mut paired = d_strict.clone();
        paired.paired = true;
        let last = render(&paired, Format::Table)
            .lines()
            .last()
            .unwrap()
            .to_owned();
        assert!(
            last.contains("More rounds (prof ab's -n and --budget)"),
            "{last}"
        );
        // Judged on a change that these intervals can rule out, it is conclusive.
        let largest = std::iter::once(&d.iteration)
            .chain(&d.events)
            .map(|e| (e.ci_high - 1.0).max(1.0 - e.ci_low))
            .fold(0.0, f64::max);
        let wide = DiffOptions {
            threshold: largest,
            ..DiffOptions::default()
        };
        let d = diff(&before, &after, &wide);
        let text = render(&d, Format::Table);
        assert!(!d.is_inconclusive() && !d.has_regression(), "{text}");
        assert!(
            text.lines().last().unwrap().starts_with("no regression"),
            "{text}"
        );
        assert!(
            d.events
                .iter()
                .all(|e| matches!(e.verdict, Verdict::NoChange | Verdict::WithinNoise)),
            "{text}"
        );
    }
}

#[test]
fn a_slower_layer_is_named_and_only_it() {
    let specs = model();
    // Samples within about 1% of one another, as a computation's runs are on a quiet machine.
    let before = simulate(&specs, 50, 0.02, steady, &[], 1);
    let target = specs[3 * 3 + 1];
    assert_eq!(target.0, "top_backward");
    let after = simulate(&specs, 50, 0.02, steady, &[(target.0, 1.3)], 2);
    let d = diff(&before, &after, &DiffOptions::default());
    let text = render(&d, Format::Table);
    let regressed: Vec<&EventDiff> = d
        .events
        .iter()
        .filter(|e| e.verdict == Verdict::Regressed)
        .collect();
    assert_eq!(regressed.len(), 1, "{text}");
    assert_eq!(regressed[0].identity.name, target.0);
    assert_eq!(regressed[0].identity.layer.as_deref(), Some("top_mlp"));
    assert!((regressed[0].ratio - 1.3).abs() < 0.05, "{text}");
    assert!(regressed[0].ci_low > 1.02 && regressed[0].p_adjusted < 0.05);
    assert!(d
        .events
        .iter()
        .all(|e| e.verdict != Verdict::Improved || e.identity.name == target.0));
    assert!(d.has_regression());
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("1 regressed: top_mlp/bwd top_backward (+")
            || last.starts_with("2 regressed: iteration (+"),
        "{text}"
    );
    assert!(last.contains("top_mlp/bwd top_backward (+"), "{text}");
}

#[test]
fn a_faster_layer_is_improved() {
    let specs = model();
    let before = simulate(&specs, 50, 0.02, steady, &[], 1);
    let target = specs[0];
    let after = simulate(&specs, 50, 0.02, steady, &[(target.0, 0.7)], 2);
    let d = diff(&before, &after, &DiffOptions::default());
    let e = find(&d, "embedding", "fwd");
    assert_eq!(
        e.verdict,
        Verdict::Improved,
        "{}",
        render(&d, Format::Table)
    );
    assert!(e.ci_high < 0.98);
    assert!(!d.has_regression());
    assert!(render(&d, Format::Table).contains("1 improved: embedding/fwd lookup (-"));
}

#[test]
fn a_tiny_change_with_many_samples_is_within_noise() {
    // 1% slower, 2000 samples per event with 0.2% noise, compared as drift compares windows of
    // one run: certainly different, not by 2%.
    let specs: Vec<Spec> = model().into_iter().take(6).collect();
    let before = simulate(&specs, 2000, 0.002, steady, &[], 1);
    let after = simulate(&specs, 2000, 0.002, steady, &[(specs[2].0, 1.01)], 2);
    let one_run = DiffOptions {
        resamples: 500,
        min_instability: 0.0,
        ..DiffOptions::default()
    };
    let d = diff(&before, &after, &one_run);
    let e = find(&d, "embedding", "update");
    assert_eq!(
        e.verdict,
        Verdict::WithinNoise,
        "{}",
        render(&d, Format::Table)
    );
    assert!(
        e.p_adjusted < 1e-6 && e.ci_low > 1.0 && e.ci_high < 1.02,
        "{e:?}"
    );
    assert!(!d.has_regression());
    // And the same change with a 0.25% threshold is a regression.
    let strict = DiffOptions {
        threshold: 0.0025,
        ..one_run.clone()
    };
    let d = diff(&before, &after, &strict);
    assert_eq!(find(&d, "embedding", "update").verdict, Verdict::Regressed);
    // Between two runs of a program with too few events to see how far events move between
    // runs (4), the floor of 1% stands in for it: a 1% change is below what can be detected,
    // and the row says how much could be.
    let few: Vec<Spec> = specs.iter().copied().take(4).collect();
    let (b4, a4) = (
        simulate(&few, 2000, 0.002, steady, &[], 1),
        simulate(&few, 2000, 0.002, steady, &[(specs[2].0, 1.01)], 2),
    );
    let two_runs = DiffOptions {
        resamples: 500,
        ..DiffOptions::default()
    };
    let d = diff(&b4, &a4, &two_runs);
    let e = find(&d, "embedding", "update");
    assert_eq!(e.verdict, Verdict::Inconclusive, "{e:?}");
    assert!(e.detectable.unwrap() > 0.03, "{e:?}");
}

/// An event whose samples are stretched by delays that only add (a busy machine: most samples
/// up to 3 times their cost) is judged on its fastest samples: a 30% slower cost is named with
/// delays on both sides, and delays alone, however many, name nothing; the typical time's
/// change is then a finding of its own.
#[test]
fn delays_that_only_add_leave_the_verdict_to_the_fastest_samples() {
    let specs: Vec<Spec> = model().into_iter().take(8).collect();
    let delayed = |share: usize, slow: f64, seed: u64| {
        let mut p = simulate(&specs, 60, 0.02, steady, &[], seed);
        let mut rng = SplitMix64::new(seed);
        let first = &mut p.events[0];
        for s in &mut first.samples_ns {
            let delay = if rng.below(100) < share {
                1.0 + 2.0 * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
            } else {
                1.0
            };
            *s = (*s as f64 * slow * delay) as u64;
        }
        p
    };
    let d = diff(
        &delayed(50, 1.0, 1),
        &delayed(50, 1.3, 2),
        &DiffOptions::default(),
    );
    let text = render(&d, Format::Table);
    assert_eq!(d.events[0].verdict, Verdict::Regressed, "{text}");
    assert!((d.events[0].ratio - 1.3).abs() < 0.05, "{text}");
    // Delayed in 10% of its runs before, 85% after: the typical time more than doubles, the
    // fastest samples do not move. One run a side cannot tell more (its samples scatter so
    // widely that the fastest time's interval reaches past the typical change); five rounds,
    // paired, show the typical time slower beyond anything the fastest time allows.
    let d = diff(
        &delayed(10, 1.0, 1),
        &delayed(85, 1.0, 2),
        &DiffOptions::default(),
    );
    let text = render(&d, Format::Table);
    assert!(!named(d.events[0].verdict), "{text}");
    assert!(d.events[0].typical_ratio > 1.5, "{text}");
    let rounds = |share: usize, seed: u64| -> Vec<Profile> {
        (0..5).map(|r| delayed(share, 1.0, seed + 10 * r)).collect()
    };
    let paired = DiffOptions {
        paired: true,
        ..DiffOptions::default()
    };
    let d = diff_runs(&rounds(10, 1), &rounds(85, 2), &paired);
    let text = render(&d, Format::Table);
    assert!(!named(d.events[0].verdict), "{text}");
    assert!(d.events[0].ci_high < 1.05, "{text}");
    assert_eq!(d.events[0].typical, Some(Verdict::Regressed), "{text}");
    assert!(
        text.contains("typical time slower, fastest unchanged (occasional stalls"),
        "{text}"
    );
    assert!(d.events[1..].iter().all(|e| !named(e.verdict)), "{text}");
    // An event regressed by its fastest time as well is told as regressed, never as "fastest
    // unchanged" (that line contradicted the verdict on the recorded dlrm slow10 rounds).
    let mut d = d;
    d.events[0].verdict = Verdict::Regressed;
    let text = render(&d, Format::Table);
    assert!(!text.contains("fastest unchanged"), "{text}");
}

/// The same slowdown in the window of one event only: nothing else moved with its window's wall
/// time, so the event's change is its own, whatever the wall time did.
#[test]
fn an_event_that_moved_alone_is_a_change_whatever_the_wall_time_did() {
    let specs = model();
    let before = simulate(&specs, 50, 0.02, steady, &[], 1);
    let window = |i: usize| (460..510).contains(&i);
    let after = simulate(
        &specs,
        50,
        0.02,
        |i| if window(i) { 1.4 } else { 1.0 },
        &[],
        2,
    );
    let d = diff(&before, &after, &DiffOptions::default());
    let e = find(&d, "top_mlp", "fwd");
    assert_eq!(
        e.verdict,
        Verdict::Regressed,
        "{}",
        render(&d, Format::Table)
    );
    let others = d.events.iter().filter(|e| named(e.verdict)).count();
    assert_eq!(others, 1, "{}", render(&d, Format::Table));
}

/// The after run of `specs` with `slow`, preempted by other processes: three in five iterations
/// were stretched by 3 ms (another process held the processor), which a steady event's runs
/// mostly escape (one in ten was preempted too).
fn preempted(specs: &[Spec], slow: &[(&str, f64)]) -> Profile {
    let mut after = simulate(specs, 30, 0.02, steady, slow, 2);
    let mut rng = SplitMix64::new(9);
    for wall in &mut after.iterations.wall_ns {
        if rng.below(5) < 3 {
            *wall += 3_000_000;
        }
    }
    for e in &mut after.events {
        for k in (0..e.samples_ns.len()).step_by(10) {
            e.samples_ns[k] += 3_000_000;
            after.iterations.wall_ns[e.sample_iters[k] as usize] += 3_000_000;
        }
    }
    after
}

/// Preemption stretches iterations, not the runs of a steady event: against a quiet run, the
/// event that really slowed down by 75% is named, and only it, and the run is said to look
/// disturbed; with nothing slowed, nothing is named, the iteration included.
#[test]
fn preemption_stretches_iterations_not_the_runs_of_a_steady_event() {
    let specs = model();
    let before = simulate(&specs, 30, 0.02, steady, &[], 1);
    let target = specs[3 * 3 + 1];
    let d = diff(
        &before,
        &preempted(&specs, &[(target.0, 1.75)]),
        &DiffOptions::default(),
    );
    let text = render(&d, Format::Table);
    let changed: Vec<&str> = d
        .events
        .iter()
        .filter(|e| named(e.verdict))
        .map(|e| e.identity.name.as_str())
        .collect();
    assert_eq!(changed, [target.0], "{text}");
    assert_eq!(find(&d, "top_mlp", "bwd").verdict, Verdict::Regressed);
    assert!(
        d.runs.after.disturbed && !d.runs.before.disturbed,
        "{:?}",
        d.runs
    );
    assert!(text.contains("after looks disturbed: 6"), "{text}");
    // One run a side says what it cannot tell, and how many runs would.
    let n = d.runs_needed.expect("enough events for a spread");
    assert_eq!(
        Some(n),
        super::runs_needed(d.machine.spread, d.threshold, d.alpha)
    );
    assert!(
        text.contains(&format!("about {n} runs a side would resolve 2.0%")),
        "{text}"
    );
    assert!(text.contains("which such delays leave alone"), "{text}");

    // Nothing named, the iteration included: it is 2.5 times slower in its median, and its
    // fastest iterations, which no preemption reached, did not move.
    let d = diff(&before, &preempted(&specs, &[]), &DiffOptions::default());
    let text = render(&d, Format::Table);
    assert!(!named(d.iteration.verdict), "{text}");
    assert!(d.iteration.typical_ratio > 1.5, "{text}");
    assert!(d.events.iter().all(|e| !named(e.verdict)), "{text}");
}

#[test]
fn a_slower_iteration_is_a_regression() {
    let specs: Vec<Spec> = model().into_iter().take(8).collect();
    let before = simulate(&specs, 50, 0.1, steady, &[], 1);
    let after = simulate(&specs, 50, 0.1, |_| 1.1, &[], 2);
    let d = diff(&before, &after, &DiffOptions::default());
    assert_eq!(d.iteration.identity.id, "iteration");
    assert_eq!(d.iteration.before_n, 8 * 50);
    assert!((d.iteration.ratio - 1.1).abs() < 0.02, "{:?}", d.iteration);
    assert_eq!(d.iteration.verdict, Verdict::Regressed);
    assert!(d.has_regression());
}

#[test]
fn events_in_one_run_only_are_listed() {
    let specs = model();
    let before = simulate(&specs[..5], 20, 0.1, steady, &[], 1);
    let after = simulate(&specs[2..7], 20, 0.1, steady, &[], 2);
    let d = diff(&before, &after, &DiffOptions::default());
    let names = |m: &[Missing]| m.iter().map(|m| m.id.clone()).collect::<Vec<_>>();
    assert_eq!(d.events.len(), 3);
    assert_eq!(
        names(&d.only_before),
        ["embedding::lookup", "embedding::lookup_grad"]
    );
    assert_eq!(
        names(&d.only_after),
        ["bottom_mlp::bottom_update", "interaction::interact"]
    );
    // In the after run's order.
    assert_eq!(
        d.events[0].identity.id,
        specs[2].1.map(|l| format!("{l}::{}", specs[2].0)).unwrap()
    );
    let text = render(&d, Format::Table);
    assert!(
        text.contains("only in before (2): lookup (embedding::lookup)"),
        "{text}"
    );
    assert!(text.contains("only in after (2):"), "{text}");
    let csv = render(&d, Format::Csv);
    assert_eq!(
        csv.lines()
            .filter(|l| l.ends_with(",only before,,,,,,"))
            .count(),
        2
    );
    assert_eq!(
        csv.lines()
            .filter(|l| l.ends_with(",only after,,,,,,"))
            .count(),
        2
    );
}

#[test]
fn the_same_seed_gives_the_same_intervals() {
    let specs: Vec<Spec> = model().into_iter().take(6).collect();
    let before = simulate(&specs, 30, 0.2, steady, &[], 1);
    let after = simulate(&specs, 30, 0.2, steady, &[], 2);
    let one = diff(&before, &after, &DiffOptions::default());
    let two = diff(&before, &after, &DiffOptions::default());
    assert_eq!(render(&one, Format::Json), render(&two, Format::Json));
    let other = diff(
        &before,
        &after,
        &DiffOptions {
            seed: 1,
            ..DiffOptions::default()
        },
    );
    assert_ne!(render(&one, Format::Json), render(&other, Format::Json));
}

#[test]
fn missing_samples_and_iterations_are_handled() {
    let spec: Spec = ("f", Some("l"), Some("fwd"), 0, 100.0);
    let empty = profile(0, 0, 1, vec![], vec![event(&spec, vec![], vec![], 0)]);
    let some = profile(
        0,
        0,
        1,
        vec![10, 10],
        vec![event(&spec, vec![5, 6], vec![0, 7], 0)],
    );
    let d = diff(&empty, &some, &DiffOptions::default());
    // Nothing to compare on one side: nothing can be told.
    assert_eq!(d.events[0].verdict, Verdict::Inconclusive);
    assert!(d.events[0].ratio.is_nan());
    assert_eq!(d.iteration.verdict, Verdict::Inconclusive);
    assert!(!d.has_regression());
    let json: serde_json::Value = serde_json::from_str(&render(&d, Format::Json)).unwrap();
    assert!(json["events"][0]["ratio"].is_null());
    for format in [Format::Table, Format::Csv, Format::Markdown] {
        assert!(!render(&d, format).is_empty());
    }
}

#[test]
fn renders_every_format() {
    let specs = model();
    let before = simulate(&specs, 50, 0.02, steady, &[], 1);
    let after = simulate(&specs, 50, 0.02, steady, &[(specs[10].0, 1.5)], 2);
    let d = diff(&before, &after, &DiffOptions::default());
    let csv = render(&d, Format::Csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], render::CSV_HEADER);
    assert_eq!(lines.len(), 2 + specs.len());
    assert!(lines[1].starts_with("iteration,iteration,,,0,"));
    assert!(lines.iter().all(|l| l.split(',').count() == 23));
    assert!(csv.contains(",regressed,"));
    let json: serde_json::Value = serde_json::from_str(&render(&d, Format::Json)).unwrap();
    assert_eq!(json["events"].as_array().unwrap().len(), specs.len());
    assert_eq!(json["threshold"], 0.02);
    assert!(json["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["verdict"] == "regressed"));
    let md = render(&d, Format::Markdown);
    assert!(md.starts_with("| layer | phase | name | occ |"));
    assert!(md.contains("|---|"));
    assert!(md.contains("regressed"));
    let table = render(&d, Format::Table);
    let header = table.lines().next().unwrap();
    assert!(header.contains("verdict") && header.contains("95% CI"));
    assert!(table.lines().nth(1).unwrap().contains("iteration"));
    assert_eq!(Verdict::WithinNoise.as_str(), "within noise");
    assert_eq!(
        serde_json::to_value(Verdict::NoChange).unwrap(),
        serde_json::json!("no_change")
    );
}

#[test]
fn many_events_need_a_stronger_p_value() {
    // 10 events, 5 samples each; one is 30% slower and fully separated: p = 2 / C(10, 5)
    // = 0.0079 alone, but 11 x 0.0079 = 0.087 after Holm: no event can be called, and no
    // change is detectable at these sample counts.
    let specs: Vec<Spec> = model().into_iter().take(10).collect();
    let run = |n: u32, factor: f64| {
        let events = specs
            .iter()
            .enumerate()
            .map(|(k, spec)| {
                let f = if k == 3 { factor } else { 1.0 };
                let samples = (0..n).map(|i| ((1000 + i) as f64 * f) as u64).collect();
                event(spec, samples, (1..=n).collect(), k as u32)
            })
            .collect();
        profile(0, 1, n, vec![10_000; n as usize + 1], events)
    };
    let d = diff(&run(5, 1.0), &run(5, 1.3), &DiffOptions::default());
    let e = &d.events[3];
    assert!((e.p_value - 2.0 / 252.0).abs() < 1e-9, "{e:?}");
    assert!(e.p_adjusted > 0.05 && e.ci_low > 1.2, "{e:?}");
    // A large change seen, too few samples to be sure of it: inconclusive, not "no change".
    assert_eq!(e.verdict, Verdict::Inconclusive);
    assert_eq!(e.detectable, None);
    assert!(render(&d, Format::Table).contains(" none "));
    // With 6 samples each, 2 / C(12, 6) = 0.0022, x 11 = 0.024: regressed.
    let d = diff(&run(6, 1.0), &run(6, 1.3), &DiffOptions::default());
    assert_eq!(d.events[3].verdict, Verdict::Regressed, "{:?}", d.events[3]);
    assert!(d.events[3].detectable.is_some());
    let others = d.events.iter().filter(|e| !named(e.verdict)).count();
    assert_eq!(others, 9);
}

/// A diff of about 30 events (1500 iterations, 2000 resamples); its time is printed, not
/// judged (no verdict may hang on how busy the machine is).
#[test]
fn a_diff_of_thirty_events() {
    // ~30 events x 50 samples, 1500 iterations, 2000 resamples.
    let mut specs = model();
    for occ in 10..15 {
        specs.push(("linear", None, Some("fwd"), occ, 50_000.0));
    }
    let before = simulate(&specs, 50, 0.1, steady, &[], 1);
    let after = simulate(&specs, 50, 0.1, steady, &[], 2);
    let start = std::time::Instant::now();
    let d = diff(&before, &after, &DiffOptions::default());
    let elapsed = start.elapsed();
    assert_eq!(d.events.len(), 30);
    eprintln!("diff of 30 events: {elapsed:?}");
}

#[test]
fn changes_below_the_clock_resolution_are_never_verdicts() {
    // 30 ns slower in every sample of an event of about 100 ns: significant, and far beyond the
    // 2% threshold, but within twice the 20 ns timer floor.
    let specs: Vec<Spec> = model().into_iter().take(1).collect();
    let run = |extra: u64| {
        let events = specs
            .iter()
            .enumerate()
            .map(|(k, spec)| {
                let samples = (0..40).map(|i| 100 + i % 3 + extra).collect();
                event(spec, samples, (1..=40).collect(), k as u32)
            })
            .collect();
        profile(0, 1, 40, vec![10_000; 41], events)
    };
    let d = diff(&run(0), &run(30), &DiffOptions::default());
    assert_eq!(
        d.events[0].verdict,
        Verdict::WithinNoise,
        "{:?}",
        d.events[0]
    );
    let d = diff(&run(0), &run(60), &DiffOptions::default());
    assert_eq!(d.events[0].verdict, Verdict::Regressed, "{:?}", d.events[0]);
}

/// Memory figures are compared exactly: an event whose runs allocate more is listed, with its
/// before and after; the others are not; memory does not change the time verdicts.
#[test]
fn memory_is_compared_exactly() {
    let specs = model();
    let with_memory = |p: &mut Profile, grow: u64| {
        for e in &mut p.events {
            let n = e.samples_ns.len();
            let bytes = if e.name == "top_forward" {
                4096 + grow
            } else {
                4096
            };
            e.memory = Some(profiler_format::Memory {
                alloc_bytes: vec![bytes; n],
                freed_bytes: vec![bytes; n],
                allocs: vec![4; n],
                peak_bytes: vec![bytes; n],
            });
        }
    };
    let mut before = simulate(&specs, 20, 0.02, steady, &[], 1);
    let mut after = simulate(&specs, 20, 0.02, steady, &[], 2);
    with_memory(&mut before, 0);
    with_memory(&mut after, 1024);
    let d = diff(&before, &after, &DiffOptions::default());
    assert_eq!(d.memory.len(), d.events.len());
    let changed: Vec<&str> = d
        .memory
        .iter()
        .filter(|m| m.changed)
        .map(|m| m.identity.name.as_str())
        .collect();
    assert_eq!(changed, ["top_forward"]);
    let text = render(&d, Format::Table);
    assert!(text.contains("memory (exact counts"), "{text}");
    assert!(
        text.contains("top_mlp/fwd top_forward: allocated 4.0KiB -> 5.0KiB"),
        "{text}"
    );
    assert!(!d.has_regression());
    // Without figures on both sides, nothing is said.
    let plain = simulate(&specs, 20, 0.02, steady, &[], 3);
    let d = diff(&plain, &after, &DiffOptions::default());
    assert!(d.memory.is_empty());
    assert!(!render(&d, Format::Table).contains("memory (exact counts"));
}

/// Identical runs whose events moved about 0.2% around their shared shift get intervals of
/// that order, not a fixed allowance; one event 6% slower for the whole of one run is then
/// named (with one run a side, what the runs show is all there is to go by), and a shift that
/// every event shares is left to the iteration.
#[test]
fn one_run_a_side_allows_what_the_events_show() {
    let specs = model();
    let target = specs[3 * 3 + 1];
    let before = simulate(&specs, 50, 0.004, steady, &[], 1);
    let same = simulate(&specs, 50, 0.004, steady, &[], 2);
    let d = diff(&before, &same, &DiffOptions::default());
    let text = render(&d, Format::Table);
    assert!(d.machine.spread < 0.005, "{text}");
    for e in d.events.iter().filter(|e| e.before_ns > 10_000.0) {
        assert!(
            e.ci_high < 1.015 && e.ci_low > 0.985,
            "{}: {text}",
            e.identity.name
        );
    }
    assert!(d.events.iter().all(|e| !named(e.verdict)), "{text}");
    let shifted = simulate(&specs, 50, 0.004, steady, &[(target.0, 1.06)], 2);
    let d = diff(&before, &shifted, &DiffOptions::default());
    let text = render(&d, Format::Table);
    let named_events: Vec<&str> = d
        .events
        .iter()
        .filter(|e| e.verdict == Verdict::Regressed)
        .map(|e| e.identity.name.as_str())
        .collect();
    assert_eq!(named_events, [target.0], "{text}");
    // Every event 5% slower: no event is named on its own, the iteration is.
    let everything = simulate(&specs, 50, 0.004, |_| 1.05, &[], 2);
    let d = diff(&before, &everything, &DiffOptions::default());
    let text = render(&d, Format::Table);
    assert!((d.machine.shift - 0.05).abs() < 0.01, "{text}");
    assert!(d.events.iter().all(|e| !named(e.verdict)), "{text}");
    assert_eq!(d.iteration.verdict, Verdict::Regressed, "{text}");
}

/// Drift inside a run: the machine slows down steadily over the after run (every event and
/// iteration 30% slower by its end), which every event follows. No event is its own change.
#[test]
fn a_drift_inside_a_run_that_every_event_follows_names_no_event() {
    let specs = model();
    let total = 10 + specs.len() * 50;
    let before = simulate(&specs, 50, 0.02, steady, &[], 1);
    let after = simulate(
        &specs,
        50,
        0.02,
        |i| 1.0 + 0.3 * i as f64 / total as f64,
        &[],
        2,
    );
    let d = diff(&before, &after, &DiffOptions::default());
    let text = render(&d, Format::Table);
    assert!(d.events.iter().all(|e| !named(e.verdict)), "{text}");
}

/// The columns agree, whatever the data: the change lies inside its interval, and its sign is
/// that of after - before (one run a side, several, paired), on runs with slowed and faster
/// layers, a shifted machine and scattered samples.
#[test]
fn the_change_lies_inside_its_interval_and_agrees_with_before_and_after() {
    let specs = model();
    let mut checked = 0;
    for seed in 0..6u64 {
        // The after runs' machine 8% slower, or 8% faster.
        let machine = if seed % 2 == 0 { 1.08 } else { 1.0 / 1.08 };
        let side = |k: u64, slow: &[(&str, f64)], m: f64| {
            (0..3)
                .map(|r| {
                    let speed = move |_: usize| m;
                    simulate(&specs, 30, 0.02, speed, slow, 100 * k + r + seed)
                })
                .collect::<Vec<_>>()
        };
        let before = side(1, &[], 1.0);
        let after = side(2, &[(specs[4].0, 1.3), (specs[7].0, 0.8)], machine);
        let diffs = [
            diff(&before[0], &after[0], &DiffOptions::default()),
            diff_runs(&before, &after, &DiffOptions::default()),
            diff_runs(
                &before,
                &after,
                &DiffOptions {
                    paired: true,
                    ..DiffOptions::default()
                },
            ),
        ];
        for d in &diffs {
            for e in std::iter::once(&d.iteration).chain(&d.events) {
                if !e.ratio.is_finite() {
                    continue;
                }
                assert!(e.ci_low <= e.ratio && e.ratio <= e.ci_high, "{e:?}");
                if (e.ratio - 1.0).abs() > 1e-9 {
                    assert_eq!(
                        e.ratio > 1.0,
                        e.after_ns > e.before_ns,
                        "the sign of the change: {e:?}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 400, "{checked}");
}

/// Without a measured iteration (a profile of no completed `step()`), no event can be shown
/// small: a change of one decides the gate. Before, its share was unknown, so nothing
/// mattered: a +50% event was "too small to matter" and the gate inconclusive.
#[test]
fn without_a_measured_iteration_every_event_decides() {
    let specs: Vec<Spec> = model().into_iter().take(8).collect();
    let no_walls = |mut p: Profile| {
        p.iterations.wall_ns.clear();
        p.iterations.count = 0;
        p
    };
    let before = no_walls(simulate(&specs, 60, 0.01, steady, &[], 1));
    let slowed = specs[2].0;
    let after = no_walls(simulate(&specs, 60, 0.01, steady, &[(slowed, 1.5)], 2));
    let d = diff(&before, &after, &DiffOptions::default());
    let text = render(&d, Format::Table);
    assert_eq!(d.events[2].verdict, Verdict::Regressed, "{text}");
    assert!(d.events[2].matters, "{text}");
    assert_eq!(d.gate(), Gate::Regressed, "{text}");
}

/// One probe run on two streams gives two events of one id and occurrence: only the first is
/// compared, and the comparison says so, one run a side and several (before, the second was
/// left out silently, a 2x change on it unseen).
#[test]
fn events_sharing_an_id_and_occurrence_are_warned_of() {
    let with = |copy_ns: u64| {
        let spec: Spec = ("copy", Some("io"), Some("fwd"), 0, 0.0);
        let mut a = event(&spec, vec![100; 10], (1..=10).collect(), 0);
        let mut b = event(&spec, vec![copy_ns; 10], (1..=10).collect(), 1);
        a.stream = Some("7".to_owned());
        b.stream = Some("8".to_owned());
        profile(0, 1, 10, vec![1_000; 11], vec![a, b])
    };
    let (before, after) = (with(200), with(400));
    let one = diff(&before, &after, &DiffOptions::default());
    assert_eq!(one.events.len(), 1);
    assert!(
        one.warnings[0].contains("1 event of one probe and occurrence on several streams"),
        "{:?}",
        one.warnings
    );
    assert!(render(&one, Format::Table).contains("\nwarning: 1 event of one probe"));
    let runs = diff_runs(
        &[before.clone(), before],
        &[after.clone(), after],
        &DiffOptions::default(),
    );
    assert_eq!(runs.warnings.len(), 1, "{:?}", runs.warnings);
}

/// A load that differs, but not significantly, between runs paired in rounds (`prof ab`): the
/// runs were interleaved already, and the line says so instead of advising `prof ab`.
#[test]
fn the_load_line_of_paired_runs_does_not_advise_interleaving() {
    let specs = model();
    let runs = |seed: u64| -> Vec<Profile> {
        (0..2)
            .map(|k| simulate(&specs, 50, 0.1, steady, &[], seed + k))
            .collect()
    };
    for paired in [false, true] {
        let options = DiffOptions {
            paired,
            ..DiffOptions::default()
        };
        let mut d = diff_runs(&runs(0), &runs(100), &options);
        d.load = Some(Load {
            before_slow_share: 0.09,
            after_slow_share: 0.14,
            p_value: 0.053,
            differs: false,
        });
        let text = render(&d, Format::Table);
        let line = text
            .lines()
            .find(|l| l.starts_with("load: "))
            .unwrap_or_else(|| panic!("no load line: {text}"));
        assert_eq!(
            line.contains("interleave the runs (prof ab)"),
            !paired,
            "{line}"
        );
        assert_eq!(line.contains("paired in rounds"), paired, "{line}");
    }
}

/// Runs of different programs or modes are compared all the same (events matched by probe id
/// and occurrence), and said: before, `prof diff` and `prof ab` of unrelated programs gave a
/// verdict with nothing to warn.
#[test]
fn runs_of_different_programs_or_modes_are_warned_of() {
    let specs = model();
    let before = simulate(&specs, 50, 0.1, steady, &[], 1);
    let mut after = simulate(&specs, 50, 0.1, steady, &[], 2);
    after.run.program = "other".to_owned();
    after.run.mode = "trace".to_owned();
    let one = diff(&before, &after, &DiffOptions::default());
    let text = one.warnings.join("\n");
    assert!(
        text.contains("the runs compared ran different programs: model, other"),
        "{text}"
    );
    assert!(
        text.contains("ran different modes: sample, trace"),
        "{text}"
    );
    let runs = diff_runs(
        &[before.clone(), before.clone()],
        &[after.clone(), after],
        &DiffOptions::default(),
    );
    assert!(
        runs.warnings
            .iter()
            .any(|w| w.contains("different programs")),
        "{:?}",
        runs.warnings
    );
    let same = diff(&before, &before, &DiffOptions::default());
    assert!(same.warnings.is_empty(), "{:?}", same.warnings);
}

/// `runs` (each run's iterations) is written for one run a side, where it is known, and left
/// out with several a side: it held zeros there.
#[test]
fn the_runs_shapes_are_written_only_where_known() {
    let specs = model();
    let (b, a) = (
        simulate(&specs, 50, 0.1, steady, &[], 1),
        simulate(&specs, 50, 0.1, steady, &[], 2),
    );
    let one: serde_json::Value = serde_json::from_str(&render(
        &diff(&b, &a, &DiffOptions::default()),
        Format::Json,
    ))
    .unwrap();
    assert!(
        one["runs"]["before"]["iterations"].as_u64().unwrap() > 0,
        "{one}"
    );
    let several = diff_runs(&[b.clone(), b], &[a.clone(), a], &DiffOptions::default());
    let several: serde_json::Value = serde_json::from_str(&render(&several, Format::Json)).unwrap();
    assert!(several.get("runs").is_none(), "{several}");
    assert!(several.get("load").is_some());
}
