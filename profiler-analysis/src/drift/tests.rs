//! Unit tests of `analysis::drift`, and the continuous-mode profile builder that the tests of
//! `report` and `html` use too.

use super::*;
use crate::diff::tests::{event, model, profile, Spec};
use crate::stats::SplitMix64;

/// A `continuous`-mode run of `specs`: `warmup` 10, then `closed` windows of `repeat` iterations
/// per event, in order, of which the last `kept` are kept. In window w every event takes its
/// median x a uniform noise of +-`noise`/2, times `factor` for the events named in `slow` from
/// their window on; the iteration's wall time is their sum plus 5µs. The top-level events and
/// iterations are the last window's.
pub(crate) fn continuous(
    specs: &[Spec],
    repeat: usize,
    closed: usize,
    kept: usize,
    noise: f64,
    slow: &[(&str, f64, usize)],
    seed: u64,
) -> Profile {
    let warmup = 10usize;
    let per_window = specs.len() * repeat;
    let mut rng = SplitMix64::new(seed);
    let mut windows = Vec::new();
    let mut last = (Vec::new(), vec![(Vec::new(), Vec::new()); specs.len()]);
    for w in 0..closed {
        let first = warmup + w * per_window;
        let mut walls = Vec::with_capacity(per_window);
        let mut samples = vec![(Vec::new(), Vec::new()); specs.len()];
        for i in 0..per_window {
            let mut wall = 5_000.0;
            for (k, spec) in specs.iter().enumerate() {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let factor = slow
                    .iter()
                    .find(|(name, _, from)| *name == spec.0 && w >= *from)
                    .map_or(1.0, |s| s.1);
                let t = spec.4 * factor * (1.0 + noise * (u - 0.5));
                wall += t;
                if i / repeat == k {
                    samples[k].0.push(t.round() as u64);
                    samples[k].1.push((first + i) as u32);
                }
            }
            walls.push(wall.round() as u64);
        }
        windows.push(Window {
            index: w as u64,
            first_iteration: first as u64,
            wall_ns: walls.clone(),
            events: samples
                .iter()
                .enumerate()
                .map(|(k, (s, _))| profiler_format::WindowEvent {
                    order: k as u32,
                    samples_ns: s.clone(),
                    stats: Stats::of(s),
                })
                .collect(),
            baseline: false,
        });
        last = (walls, samples);
    }
    let events = specs
        .iter()
        .zip(last.1)
        .enumerate()
        .map(|(k, (spec, (s, it)))| event(spec, s, it, k as u32))
        .collect();
    let mut p = profile(0, warmup as u32, repeat as u32, last.0, events);
    p.run.mode = "continuous".to_owned();
    p.run.windows = Some(kept as u32);
    p.iterations.first = (warmup + (closed - 1) * per_window) as u64;
    p.iterations.count = (warmup + closed * per_window) as u64;
    p.windows = windows.split_off(closed - kept.min(closed));
    p
}

/// `p` (made by [`continuous`] with every window kept) as a run that kept its first `baseline`
/// windows for the whole run and the last `kept` after them.
pub(crate) fn pinned(mut p: Profile, baseline: usize, kept: usize) -> Profile {
    let all = std::mem::take(&mut p.windows);
    let n = all.len();
    let from = (n - kept.min(n)).max(baseline.min(n));
    p.windows = all[..baseline.min(n)]
        .iter()
        .cloned()
        .map(|w| Window {
            baseline: true,
            ..w
        })
        .chain(all[from..].iter().cloned())
        .collect();
    p.run.windows = Some(kept as u32);
    p
}

fn of<'a>(w: &'a Windows, name: &str) -> &'a Series {
    w.events.iter().find(|s| s.identity.name == name).unwrap()
}

/// Windows of these indices, the first `baseline` of them baseline windows.
fn windows_of(indices: &[u64], baseline: usize) -> Vec<Window> {
    indices
        .iter()
        .enumerate()
        .map(|(k, &index)| Window {
            index,
            baseline: k < baseline,
            ..Window::default()
        })
        .collect()
}

#[test]
fn the_sides_are_the_baseline_the_earlier_half_and_the_last_quarter_of_the_others() {
    // 3 baseline windows and 8 after them: since the start 0-2 against the last 2, in the recent
    // past the first 4 of the 8 against the same last 2.
    let kept = windows_of(&[0, 1, 2, 30, 31, 32, 33, 34, 35, 36, 37], 3);
    let s = sides(&kept);
    assert_eq!(s.start, Some(0..3));
    assert_eq!(s.earlier, Some(3..7));
    assert_eq!(s.recent, Some(9..11));
    // One window after the baseline: since the start only.
    let s = sides(&windows_of(&[0, 1, 2, 3], 3));
    assert_eq!(
        (s.start, s.earlier, s.recent),
        (Some(0..3), None, Some(3..4))
    );
    // Only baseline windows: nothing to compare yet.
    assert_eq!(sides(&windows_of(&[0, 1], 2)), Sides::default());
    // No baseline windows (an older file): the recent past only, as before.
    let s = sides(&windows_of(&[5, 6, 7, 8], 0));
    assert_eq!(
        (s.start, s.earlier, s.recent),
        (None, Some(0..2), Some(3..4))
    );
}

#[test]
fn the_split_takes_the_first_half_and_the_last_quarter() {
    assert_eq!(split(0), None);
    assert_eq!(split(1), None);
    assert_eq!(split(2), Some((0..1, 1..2)));
    assert_eq!(split(3), Some((0..1, 2..3)));
    assert_eq!(split(4), Some((0..2, 3..4)));
    assert_eq!(split(8), Some((0..4, 6..8)));
    assert_eq!(split(100), Some((0..50, 75..100)));
}

#[test]
fn a_steady_run_drifts_nowhere() {
    for seed in 1..4 {
        let p = continuous(&model(), 20, 12, 12, 0.1, &[], seed);
        let w = windows(&p, &DiffOptions::default()).unwrap();
        assert_eq!((w.kept, w.closed, w.iterations_per_window), (12, 12, 500));
        assert_eq!(w.events.len(), 25);
        assert_eq!(w.drifted().count(), 0, "seed {seed}");
        assert!(w.events.iter().all(|s| !s.drift.drifted()));
        assert!(!w.iteration.drift.drifted());
        // No baseline windows in this file: the recent past only.
        assert_eq!(w.start, None);
        assert!(w.notes[0].contains("no baseline windows"), "{:?}", w.notes);
        // 12 windows: the headline is the change points'; the recent past is still compared.
        assert!(w.events.iter().all(|s| s.drift_basis == Basis::ChangePoints
            && s.drift_against.is_none()
            && s.recent_past.comparison.is_some()));
        assert_eq!(
            w.earlier,
            Some(Span {
                first: 0,
                last: 5,
                windows: 6
            })
        );
        assert_eq!(
            w.recent,
            Some(Span {
                first: 9,
                last: 11,
                windows: 3
            })
        );
    }
}

#[test]
fn an_event_20_percent_slower_in_the_recent_windows_is_flagged() {
    let p = continuous(&model(), 20, 12, 12, 0.02, &[("top_backward", 1.2, 9)], 7);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    let drifted: Vec<&str> = w.drifted().map(|s| s.identity.name.as_str()).collect();
    assert_eq!(drifted, ["top_backward"]);
    let s = of(&w, "top_backward");
    assert_eq!(s.drift, DriftStatus::Slower);
    let cp = s.change_point.as_ref().unwrap();
    assert_eq!((cp.index, cp.previous_index), (9, 8), "{cp:?}");
    assert_eq!((cp.before_windows, cp.after_windows), (9, 3));
    assert!((cp.ratio - 1.2).abs() < 0.01 && cp.ci_low > 1.15, "{cp:?}");
    let c = s.recent_past.comparison.as_ref().unwrap();
    assert!((c.ratio - 1.2).abs() < 0.03, "{c:?}");
    assert!(c.ci_low > 1.1 && c.ci_high < 1.3, "{c:?}");
    assert_eq!(c.verdict, Verdict::Regressed);
    assert!((s.change.unwrap() - 0.2).abs() < 0.05, "{s:?}");
    // Faster: the mirror image.
    let p = continuous(&model(), 20, 12, 12, 0.02, &[("lookup", 0.8, 9)], 7);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    assert_eq!(of(&w, "lookup").drift, DriftStatus::Faster);
    assert_eq!(w.drifted().count(), 1);
}

#[test]
fn a_change_at_the_noise_level_is_not_flagged() {
    for seed in 1..4 {
        let p = continuous(
            &model(),
            20,
            12,
            12,
            0.2,
            &[("top_backward", 1.01, 9)],
            seed,
        );
        let w = windows(&p, &DiffOptions::default()).unwrap();
        assert_eq!(w.drifted().count(), 0, "seed {seed}");
    }
    // A 1% change on a quiet machine is real (significant) but below prof diff's 2% threshold:
    // "within noise", not drifted.
    let p = continuous(&model(), 20, 12, 12, 0.001, &[("top_backward", 1.01, 9)], 1);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    let s = of(&w, "top_backward");
    assert_eq!(
        s.recent_past.comparison.as_ref().unwrap().verdict,
        Verdict::WithinNoise
    );
    // Found (significant), but its interval is inside 1 +- 2%: stable, no change point.
    let m = s.most_likely_change.as_ref().unwrap();
    assert_eq!(m.index, 9, "{m:?}");
    assert!(
        m.p_adjusted < 0.05 && (m.ratio - 1.01).abs() < 0.003,
        "{m:?}"
    );
    assert_eq!(s.change_point, None);
    assert_eq!(s.drift, DriftStatus::Stable);
    assert_eq!(w.drifted().count(), 0);
}

#[test]
fn a_change_before_the_recent_windows_but_after_the_baseline_still_counts() {
    // Slower from window 6 on: the baseline (0-5) is before it, the recent windows after it.
    let p = continuous(&model(), 20, 12, 12, 0.02, &[("interact", 1.3, 6)], 3);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    assert_eq!(of(&w, "interact").drift, DriftStatus::Slower);
}

#[test]
fn one_window_is_not_enough() {
    let p = continuous(&model(), 20, 5, 1, 0.1, &[], 1);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    assert_eq!((w.kept, w.closed), (1, 5));
    assert_eq!(w.indices, [4]);
    assert!(w.notes.iter().any(|n| n.contains("not enough windows")));
    assert!(w.start.is_none() && w.earlier.is_none() && w.recent.is_none());
    assert!(w.events.iter().all(|s| s.drift == DriftStatus::Unknown));
    assert!(w.events.iter().all(|s| s.medians_ns.len() == 1));
    let mut sample = p.clone();
    sample.windows.clear();
    assert!(windows(&sample, &DiffOptions::default()).is_none());
}

#[test]
fn dropped_windows_leave_a_gap_and_series_follow_the_kept_ones() {
    let p = continuous(&model(), 10, 9, 4, 0.0, &[("loss", 2.0, 7)], 1);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    assert_eq!((w.kept, w.closed, w.cap), (4, 9, Some(4)));
    assert_eq!(w.indices, [5, 6, 7, 8]);
    assert_eq!(w.first_iterations[0], 10 + 5 * 250);
    let s = of(&w, "loss");
    assert_eq!(
        s.medians_ns,
        [Some(3000), Some(3000), Some(6000), Some(6000)]
    );
    assert_eq!(
        (s.first_median_ns, s.last_median_ns),
        (Some(3000), Some(6000))
    );
    assert_eq!(s.change, Some(1.0));
    assert_eq!(s.drift, DriftStatus::Slower);
}

#[test]
fn an_event_missing_from_some_windows_has_gaps_and_no_verdict_without_a_side() {
    let mut p = continuous(&model(), 10, 4, 4, 0.1, &[], 1);
    // A probe first seen in window 3 (a new order); one that stopped running after window 0.
    let new = profiler_format::WindowEvent {
        order: 99,
        samples_ns: vec![10; 5],
        stats: Stats::of(&[10; 5]),
    };
    p.windows[3].events.push(new);
    for w in &mut p.windows[1..] {
        w.events[0].samples_ns.clear();
        w.events[0].stats = Stats::default();
    }
    let w = windows(&p, &DiffOptions::default()).unwrap();
    let s = w.events.iter().find(|s| s.order == Some(99)).unwrap();
    assert_eq!(s.identity.name, "order 99");
    assert_eq!(s.medians_ns, [None, None, None, Some(10)]);
    assert_eq!(s.drift, DriftStatus::Unknown);
    let lookup = of(&w, "lookup");
    assert_eq!(lookup.medians_ns[1..], [None, None, None]);
    assert_eq!(lookup.drift, DriftStatus::Unknown);
    assert_eq!(sparkline(&s.medians_ns), "···▅");
}

#[test]
fn a_slowdown_long_before_the_recent_windows_is_found_since_the_start() {
    // Slower from window 10 of 40; the last 12 are kept (28-39), and the first 3 as the baseline.
    let all = continuous(&model(), 20, 40, 40, 0.02, &[("top_backward", 1.3, 10)], 11);
    let p = pinned(all.clone(), 3, 12);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    assert_eq!((w.kept, w.closed, w.baseline_windows), (15, 40, 3));
    assert_eq!(w.indices[..4], [0, 1, 2, 28]);
    let span = |first, last, windows| {
        Some(Span {
            first,
            last,
            windows,
        })
    };
    assert_eq!(
        (w.start, w.earlier, w.recent),
        (span(0, 2, 3), span(28, 33, 6), span(37, 39, 3))
    );
    let s = of(&w, "top_backward");
    assert_eq!(s.since_start.drift, DriftStatus::Slower);
    let c = s.since_start.comparison.as_ref().unwrap();
    assert!((c.ratio - 1.3).abs() < 0.04, "{c:?}");
    // Nothing changed in the recent past (that these windows could tell).
    assert!(!s.recent_past.drift.drifted(), "{s:?}");
    // The headline: the change between the baseline windows and the first kept after them.
    assert_eq!(
        (s.drift, s.drift_against, s.drift_basis),
        (DriftStatus::Slower, None, Basis::ChangePoints)
    );
    let cp = s.change_point.as_ref().unwrap();
    assert_eq!((cp.previous_index, cp.index), (2, 28), "{cp:?}");
    assert!((cp.ratio - 1.3).abs() < 0.01, "{cp:?}");
    let drifted: Vec<&str> = w.drifted().map(|s| s.identity.name.as_str()).collect();
    assert_eq!(drifted, ["top_backward"]);
    // The iteration, which top_backward is part of, slowed since the start too.
    assert_eq!(w.iteration.since_start.drift, DriftStatus::Slower);
    // The same run without its baseline windows (as before they were kept): nothing drifted.
    let w = windows(&pinned(all, 0, 12), &DiffOptions::default()).unwrap();
    assert_eq!(w.drifted().count(), 0);
    assert!(!of(&w, "top_backward").drift.drifted());
}

#[test]
fn a_recent_change_is_found_in_the_recent_past_and_since_the_start() {
    let p = pinned(
        continuous(&model(), 20, 40, 40, 0.02, &[("lookup", 0.75, 35)], 12),
        3,
        12,
    );
    let w = windows(&p, &DiffOptions::default()).unwrap();
    let s = of(&w, "lookup");
    assert_eq!(s.since_start.drift, DriftStatus::Faster);
    assert_eq!(s.recent_past.drift, DriftStatus::Faster);
    assert_eq!(s.drift, DriftStatus::Faster);
    let cp = s.change_point.as_ref().unwrap();
    assert_eq!(
        (cp.index, cp.before_windows, cp.after_windows),
        (35, 10, 5),
        "{cp:?}"
    );
    assert!((cp.ratio - 0.75).abs() < 0.01, "{cp:?}");
    assert_eq!(w.drifted().count(), 1);
    // A steady run drifts nowhere, in either comparison.
    let p = pinned(continuous(&model(), 20, 40, 40, 0.1, &[], 12), 3, 12);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    assert_eq!(w.drifted().count(), 0);
    assert!(w
        .events
        .iter()
        .all(|s| !s.since_start.drift.drifted() && !s.recent_past.drift.drifted()));
    assert!(w.notes.is_empty(), "{:?}", w.notes);
}

#[test]
fn baseline_windows_alone_give_no_verdict() {
    let p = pinned(continuous(&model(), 10, 3, 3, 0.1, &[], 1), 3, 5);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    assert_eq!((w.kept, w.baseline_windows), (3, 3));
    assert!(w.recent.is_none());
    assert!(w.events.iter().all(|s| s.drift == DriftStatus::Unknown));
    assert!(
        w.notes[0].contains("the first 3 are the baseline"),
        "{:?}",
        w.notes
    );
}

#[test]
fn sparklines() {
    let v = |xs: &[u64]| xs.iter().map(|&x| Some(x)).collect::<Vec<_>>();
    assert_eq!(sparkline(&v(&[100, 200, 300, 400])), "▁▃▆█");
    // A little noise stays flat.
    let flat = sparkline(&v(&[1000, 1010, 995, 1005]));
    assert!(flat.chars().all(|c| "▃▄▅".contains(c)), "{flat}");
    assert_eq!(sparkline(&[]), "");
    assert_eq!(sparkline(&[None, None]), "··");
    assert_eq!(sparkline(&v(&[0, 0])), "▁▁");
    let long: Vec<Option<u64>> = (0..100).map(Some).collect();
    let s = sparkline(&long);
    assert_eq!(s.chars().count(), 34); // groups of 3
    assert!(s.starts_with('▁') && s.ends_with('█'), "{s}");
    // The baseline windows, a separator, the others; one scale for both.
    assert_eq!(sparkline_split(&v(&[100, 100, 400, 400]), 2), "▁▁┊██");
    assert_eq!(sparkline_split(&v(&[100, 400]), 0), "▁█");
    assert_eq!(sparkline_split(&v(&[100, 400]), 2), "▁█");
    let s = sparkline_split(&long, 3);
    assert_eq!(s.chars().count(), 3 + 1 + 33); // 97 in groups of 3
    assert!(s.starts_with("▁▁▁┊"), "{s}");
}

/// `stable` only where the windows rule out a drift of the threshold's size: in a steady run
/// whose windows hold 20 samples scattered by 2%, each event is stable exactly when its most
/// likely change's interval lies inside 1 +- threshold, else inconclusive; a threshold as wide
/// as the widest interval makes them all stable.
#[test]
fn stable_only_where_the_windows_rule_out_a_drift_of_the_threshold() {
    let p = pinned(continuous(&model(), 20, 40, 40, 0.02, &[], 12), 3, 12);
    let w = windows(&p, &DiffOptions::default()).unwrap();
    assert_eq!(w.drifted().count(), 0);
    let reach = |s: &Series| {
        let c = s.most_likely_change.as_ref().unwrap();
        (c.ci_high - 1.0).max(1.0 - c.ci_low)
    };
    for s in &w.events {
        assert_eq!(
            s.drift == DriftStatus::Stable,
            reach(s) < 0.02,
            "{:?}",
            s.most_likely_change
        );
    }
    let largest = w.events.iter().map(reach).fold(0.0, f64::max);
    let wide = DiffOptions {
        threshold: largest + 1e-9,
        ..DiffOptions::default()
    };
    let w = windows(&p, &wide).unwrap();
    assert!(
        w.events.iter().all(|s| s.drift == DriftStatus::Stable),
        "{largest}"
    );
}

// ---------------------------------------------------------------------------------------------
// Change points
// ---------------------------------------------------------------------------------------------

/// `p` with the `i`-th sample (and wall time) `v` of window `k` replaced by `f(k, order, i, v)`
/// (the iteration's wall times get order `u32::MAX`); the stats follow.
fn reshaped(mut p: Profile, f: impl Fn(usize, u32, usize, u64) -> u64) -> Profile {
    for (k, w) in p.windows.iter_mut().enumerate() {
        for e in &mut w.events {
            for (i, v) in e.samples_ns.iter_mut().enumerate() {
                *v = f(k, e.order, i, *v);
            }
            e.stats = Stats::of(&e.samples_ns);
        }
        for (i, v) in w.wall_ns.iter_mut().enumerate() {
            *v = f(k, u32::MAX, i, *v);
        }
    }
    p
}

fn named(w: &Windows) -> Vec<String> {
    std::iter::once(&w.iteration)
        .chain(&w.events)
        .filter(|s| s.drift.drifted())
        .map(|s| s.identity.name.clone())
        .collect()
}

#[test]
fn a_step_is_named_by_its_window_its_size_and_its_interval() {
    // The case: two windows before the step, 22 after; 20 samples a window, 2% noise.
    for seed in 1..4 {
        let p = continuous(
            &model(),
            20,
            24,
            24,
            0.02,
            &[("top_backward", 1.2, 2)],
            seed,
        );
        let w = windows(&p, &DiffOptions::default()).unwrap();
        let s = of(&w, "top_backward");
        assert_eq!(s.drift_basis, Basis::ChangePoints);
        assert_eq!(s.drift, DriftStatus::Slower, "seed {seed}");
        let c = s.change_point.as_ref().unwrap();
        assert_eq!(
            (c.index, c.previous_index, c.first_iteration),
            (2, 1, 10 + 2 * 500)
        );
        assert_eq!((c.before_windows, c.after_windows), (2, 22));
        assert!((c.ratio - 1.2).abs() < 0.01, "{c:?}");
        assert!(
            c.ci_low > 1.02 && c.ci_low < c.ratio && c.ci_high > c.ratio,
            "{c:?}"
        );
        assert!(c.p_adjusted < 0.05 && c.p_permutation < 0.05, "{c:?}");
        assert_eq!(s.change_points, std::slice::from_ref(c));
        // top_backward is about 10% of the iteration: it may be named too, nothing else.
        let others: Vec<String> = named(&w)
            .into_iter()
            .filter(|n| n != "top_backward" && n != "iteration")
            .collect();
        assert!(others.is_empty(), "seed {seed}: {others:?}");
        // The report's cell and line say it.
        let cell = crate::report::headline_cell(s, w.alpha);
        assert!(
            cell.starts_with("SLOWER from window 2 (it. 1010): +2"),
            "{cell}"
        );
        assert!(crate::report::drifted_line(&w)
            .contains("top_backward (slower from window 2 (iteration 1010): +"));
    }
}

#[test]
fn change_points_are_deterministic() {
    let p = continuous(&model(), 20, 24, 24, 0.05, &[("lookup", 0.8, 15)], 9);
    let a = windows(&p, &DiffOptions::default()).unwrap();
    let b = windows(&p, &DiffOptions::default()).unwrap();
    for (x, y) in a.events.iter().zip(&b.events) {
        assert_eq!(x.most_likely_change, y.most_likely_change);
        assert_eq!(x.change_points, y.change_points);
    }
    assert_eq!(of(&a, "lookup").change_point.as_ref().unwrap().index, 15);
}

#[test]
fn two_changes_are_both_found() {
    // 30% slower from window 8, 30% faster again from window 16: binary segmentation finds
    // both. (A change that comes back to where it was, with the windows between as many as
    // those on either side, is what a single split finds worst; this one is found.)
    let p = continuous(&model(), 20, 24, 24, 0.02, &[("interact", 1.3, 8)], 4);
    let p = reshaped(p, |k, order, _, v| {
        if order == 6 && k >= 16 {
            (v as f64 / 1.3 / 1.3).round() as u64
        } else {
            v
        }
    });
    let w = windows(&p, &DiffOptions::default()).unwrap();
    let s = of(&w, "interact");
    let found: Vec<(u64, DriftStatus)> =
        s.change_points.iter().map(|c| (c.index, c.drift)).collect();
    assert_eq!(
        found,
        [(8, DriftStatus::Slower), (16, DriftStatus::Faster)],
        "{s:?}"
    );
    let ratios: Vec<f64> = s.change_points.iter().map(|c| c.ratio).collect();
    assert!(
        (ratios[0] - 1.3).abs() < 0.01 && (ratios[1] - 1.0 / 1.69).abs() < 0.01,
        "{ratios:?}"
    );
    // Each measured between its neighbours: 8 windows before, 8 after.
    assert!(s
        .change_points
        .iter()
        .all(|c| c.before_windows == 8 && c.after_windows == 8));
}

/// A machine that flips between two states, window by window at random: in the slow state 90%
/// of the samples (and wall times) are delayed by 30%. The fastest samples do not move: nothing
/// is named.
#[test]
fn a_steady_series_under_two_alternating_machine_states_names_nothing() {
    for seed in 1..4 {
        let p = continuous(&model(), 20, 24, 24, 0.02, &[], seed);
        let mut rng = SplitMix64::new(seed * 77);
        let slow_windows: Vec<bool> = (0..24).map(|_| rng.next_u64().is_multiple_of(2)).collect();
        let p = reshaped(p, |k, _, i, v| {
            // The same delayed share in every slow window: all but every tenth sample.
            if slow_windows[k] && i % 10 != 0 {
                (v as f64 * 1.3).round() as u64
            } else {
                v
            }
        });
        let w = windows(&p, &DiffOptions::default()).unwrap();
        assert_eq!(named(&w), Vec::<String>::new(), "seed {seed}");
    }
}

#[test]
fn a_slow_ramp_is_named_slower_somewhere_inside_it() {
    // 0% to +30% over 24 windows, evenly.
    let p = continuous(&model(), 20, 24, 24, 0.02, &[], 2);
    let p = reshaped(p, |k, order, _, v| {
        if order == 11 {
            (v as f64 * (1.0 + 0.3 * k as f64 / 23.0)).round() as u64
        } else {
            v
        }
    });
    let w = windows(&p, &DiffOptions::default()).unwrap();
    let s = w.events.iter().find(|s| s.order == Some(11)).unwrap();
    assert_eq!(s.drift, DriftStatus::Slower, "{s:?}");
    let c = s.change_point.as_ref().unwrap();
    assert!((6..=18).contains(&c.index), "{c:?}");
    assert!(s
        .change_points
        .iter()
        .all(|c| c.drift == DriftStatus::Slower));
}

#[test]
fn a_single_outlier_window_is_not_a_change() {
    for (seed, at) in [(1, 2), (2, 12), (3, 21)] {
        let p = continuous(&model(), 20, 24, 24, 0.02, &[], seed);
        let p = reshaped(p, |k, _, _, v| if k == at { v * 3 / 2 } else { v });
        let w = windows(&p, &DiffOptions::default()).unwrap();
        assert_eq!(named(&w), Vec::<String>::new(), "outlier at window {at}");
    }
}

#[test]
fn the_split_statistic_and_its_tests() {
    // A clean step: the split is at it, both tests pass.
    let mut x: Vec<f64> = (0..20).map(|k| if k < 7 { 0.0 } else { 0.2 }).collect();
    for (k, v) in x.iter_mut().enumerate() {
        *v += 0.01 * ((k * 7919) % 13) as f64 / 13.0;
    }
    let f = change::test(&x, 999, 1).unwrap();
    assert_eq!(f.at, 7);
    assert!(f.p < 1e-6 && f.p_permutation < 0.01, "{f:?}");
    // Too short to split: nothing.
    assert!(change::best_split(&x[..3]).is_none());
    // Constant: no split stands out, nothing is significant.
    let flat = vec![1.0; 12];
    let f = change::test(&flat, 999, 1).unwrap();
    assert!(!f.significant(0.05), "{f:?}");
    // Two windows at an end: the permutation test's floor is 2 / C(n, 2).
    let mut edge = vec![0.0; 25];
    edge[23] = 0.5;
    edge[24] = 0.5;
    let f = change::test(&edge, 999, 1).unwrap();
    assert_eq!(f.at, 23);
    assert!(
        f.p_permutation > 1.0 / 300.0 && f.p_permutation < 0.05,
        "{f:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Recorded runs (tests/data/drift-corpus; its README says how each was made)
// ---------------------------------------------------------------------------------------------

fn recorded(name: &str) -> Profile {
    use std::io::Read;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/drift-corpus")
        .join(format!("dlrm-{name}.json.gz"));
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    profiler_format::read::parse_profile(&bytes, &path).unwrap_or_else(|e| panic!("{e}"))
}

/// `dlrm --slow top_mlp --slow-by 20 --slow-from 3000`, quiet, under two switching hogs and
/// under a `cargo build`: top_backward is named slower from window 12 (iteration 3010, the
/// first whose top_backward samples come after iteration 3000), by about 20%; the events of
/// other layers are not named.
#[test]
fn recorded_slowed_runs_name_top_backward_from_window_12() {
    for name in ["slow-quiet-1", "slow-hogs-1", "slow-cargo-1"] {
        let w = windows(&recorded(name), &DiffOptions::default()).unwrap();
        assert_eq!(w.kept, 23, "{name}");
        let s = of(&w, "top_backward");
        let c = s
            .change_point
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: {s:?}"));
        assert_eq!(
            (c.drift, c.index, c.first_iteration),
            (DriftStatus::Slower, 12, 3010),
            "{name}"
        );
        assert!(
            c.ratio > 1.15 && c.ratio < 1.3 && c.ci_low > 1.1,
            "{name}: {c:?}"
        );
        let wrong: Vec<&Series> = w
            .events
            .iter()
            .filter(|s| s.drift.drifted() && s.identity.layer.as_deref() != Some("top_mlp"))
            .filter(|s| s.identity.name != "linear_backward")
            .collect();
        assert!(
            wrong.is_empty(),
            "{name}: {:?}",
            wrong.iter().map(|s| &s.identity.name).collect::<Vec<_>>()
        );
    }
}

/// Steady runs, quiet, under hogs and under a build, that name nothing; and one that names
/// top_backward about 3% slower from window 6: dlrm's own warm-up, which every run of it shows
/// (top_backward's fastest times rise by 3-5% over its first ~3,000 iterations, in every run,
/// loaded or not; docs/overhead.md, "Drift in continuous mode decides (change points)").
#[test]
fn recorded_steady_runs() {
    for name in ["steady-quiet-7", "steady-hogs-10", "steady-cargo-1"] {
        let w = windows(&recorded(name), &DiffOptions::default()).unwrap();
        assert_eq!(named(&w), Vec::<String>::new(), "{name}");
    }
    let w = windows(&recorded("steady-quiet-4"), &DiffOptions::default()).unwrap();
    assert_eq!(named(&w), ["top_backward"]);
    let s = of(&w, "top_backward");
    let c = s.change_point.as_ref().unwrap();
    assert_eq!(c.drift, DriftStatus::Slower);
    assert!(c.ratio < 1.06, "{c:?}");
}
