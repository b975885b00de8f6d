//! Several runs a side: the run is the unit (`prof diff BEFORE... -- AFTER...`, and `prof ab`).
//!
//! Two runs of the same code differ by more than their samples say: where code and data land in
//! memory, and what the machine did during each, shift whole runs. With several runs a side
//! that shift is measured. Each event is summarised per run by its **fastest-5% time**
//! ([`stats::fast`]: on a shared machine delays only add, and the fastest samples are what they
//! cannot move) and by its median (the typical time, reported beside it). On the log scale:
//!
//! - **paired** (`prof ab`, `prof diff --paired`: the K-th before run and the K-th after run
//!   ran adjacent, in one round): each round's `d_k = ln(after_k / before_k)` is the unit, and
//!   the ratio is `exp(mean d)`, the interval `exp(mean d +- t(n - 1, 1 - alpha/2) sd(d) / sqrt n)`
//!   and the p-value Student's one-sample t test (randomized multiple interleaved trials,
//!   Abedi and Brecht, ICPE 2017): a machine that changes over minutes falls on both runs of a
//!   round and cancels;
//! - **unpaired** (runs made at other times): the two sides' log fastest-5% times by Welch's t
//!   (Kalibera and Jones's hierarchical view with the run as the unit), the Welch-Satterthwaite
//!   degrees of freedom; a side of one run borrows the other's variance.
//!
//! `before_ns` and `after_ns` are the geometric means of the runs' fastest-5% times, so the
//! ratio is their quotient and lies inside its interval. No shared shift of the events is taken
//! out: measured on the recorded corpus (docs/overhead.md), taking it out let the small events
//! that slow most under load pull every other event's change. The events' shared change and
//! spread are still reported ([`Machine`]).
//!
//! - **verdicts** and **gate**: as in the one-run comparison ([`Verdict`], [`Diff::gate`]);
//!   **detectable**: `(1 + t) · ratio / low - 1`.
//! - **typical time**: the runs' log medians compared the same way (paired or Welch); an event
//!   whose typical time moved beyond the threshold (Bonferroni over the events) and beyond what
//!   its fastest-5% time's interval allows gets [`EventDiff::typical`].
//! - **load**: each run's share of measured iterations that took over [`SLOW_ITERATION`](super::SLOW_ITERATION) times
//!   its fastest 5% ([`RunShape::slow_share`]) is compared between the sides by the Mann-Whitney
//!   test ([`Load`]). For unpaired runs, made at different times, sides loaded differently
//!   ([`Load::differs`]) make every verdict inconclusive. Paired runs ran under the same
//!   machine round by round: the load is reported, never overrides them.

use std::collections::HashMap;

use serde::Serialize;

use super::{
    event_key, stats, Diff, DiffOptions, EventDiff, Machine, Missing, RunShape, Runs, Verdict,
};
use profiler_format::{Event, Identity, Profile};

/// The Mann-Whitney p-value below which the sides' shares of slow iterations differ (see
/// [`Load`]).
pub const LOAD_ALPHA: f64 = 0.01;

/// Fewest runs a side with which the Mann-Whitney test of the load can reach [`LOAD_ALPHA`]
/// (five against five, every run of one side above every run of the other: p 0.008).
pub const LOAD_MIN_RUNS: usize = 5;

/// How far apart (1 point) the sides' median shares of slow iterations must also be for the
/// sides to count as differently loaded.
pub const LOAD_MARGIN: f64 = 0.01;

/// Whether the two sides' runs ran under the same load, judged by their shares of slow
/// iterations (see the module documentation of [`diff_runs`]).
#[derive(Clone, Debug, Serialize)]
pub struct Load {
    /// The before runs' median share of measured iterations that took over
    /// [`SLOW_ITERATION`](super::SLOW_ITERATION) times the run's fastest 5%.
    pub before_slow_share: f64,
    /// The same for the after runs.
    pub after_slow_share: f64,
    /// The two-sided Mann-Whitney p-value of the runs' shares.
    pub p_value: f64,
    /// True when the sides were loaded differently (p below [`LOAD_ALPHA`], medians at least
    /// [`LOAD_MARGIN`] apart): every verdict is then inconclusive.
    pub differs: bool,
}

impl Load {
    /// The load of each side's runs, compared.
    pub fn of(before: &[Profile], after: &[Profile]) -> Load {
        let shares = |side: &[Profile]| -> Vec<f64> {
            side.iter()
                .map(|p| stats::as_f64(profiler_tables::rows::measured_walls(p)))
                .filter(|w| !w.is_empty())
                .map(|w| RunShape::of(&w).slow_share)
                .collect()
        };
        let (b, a) = (shares(before), shares(after));
        let p_value = stats::mann_whitney_p(&b, &a);
        let (before_slow_share, after_slow_share) = (stats::median(&b), stats::median(&a));
        Load {
            differs: p_value < LOAD_ALPHA
                && (after_slow_share - before_slow_share).abs() >= LOAD_MARGIN,
            before_slow_share,
            after_slow_share,
            p_value,
        }
    }
}

/// Compares several runs of each side, event by event and for the iteration (see the module
/// documentation); paired by round when `options.paired` and the sides have as many runs; one
/// run a side is [`diff`](super::diff)'s comparison.
pub fn diff_runs(before: &[Profile], after: &[Profile], options: &DiffOptions) -> Diff {
    if let ([b], [a]) = (before, after) {
        return super::diff(b, a, options);
    }
    let paired = options.paired && before.len() == after.len();
    // The events, in the order of the first after run that has them.
    let mut keys: Vec<(String, u32)> = Vec::new();
    let mut identity: HashMap<(String, u32), Identity> = HashMap::new();
    for p in after.iter().chain(before) {
        for e in &p.events {
            let k = event_key(e);
            if !identity.contains_key(&k) {
                identity.insert(k.clone(), e.identity());
                keys.push(k);
            }
        }
    }
    // Each run's (fastest-5%, median) of an event, `None` where the run lacks it.
    let per_run = |side: &[Profile], k: &(String, u32)| -> Vec<Option<(f64, f64)>> {
        side.iter()
            .map(|p| {
                p.events
                    .iter()
                    .find(|e| &event_key(e) == k)
                    .and_then(run_times)
            })
            .collect()
    };
    let mut sides = Vec::new();
    let (mut only_before, mut only_after) = (Vec::new(), Vec::new());
    for k in &keys {
        let (b, a) = (per_run(before, k), per_run(after, k));
        let id = identity[k].clone();
        match (b.iter().all(Option::is_none), a.iter().all(Option::is_none)) {
            (false, false) => sides.push((id, b, a)),
            (true, false) => only_after.push(missing(&id)),
            (false, true) => only_before.push(missing(&id)),
            (true, true) => {}
        }
    }
    let mut events: Vec<EventDiff> = sides
        .iter()
        .map(|(id, b, a)| compare(id.clone(), b, a, paired, options))
        .collect();
    // The machine, reported: the events' shared change and the spread around it.
    let logs: Vec<f64> = events
        .iter()
        .filter_map(|e| super::log_ratio(e.before_ns, e.after_ns))
        .collect();
    let machine = Machine::of(&logs);
    let walls = |side: &[Profile]| -> Vec<Option<(f64, f64)>> {
        side.iter()
            .map(|p| {
                let w = stats::as_f64(profiler_tables::rows::measured_walls(p));
                (!w.is_empty()).then(|| (stats::fast(&w), stats::median(&w)))
            })
            .collect()
    };
    let mut iteration = compare(
        Identity::named("iteration"),
        &walls(before),
        &walls(after),
        paired,
        options,
    );
    super::judge_family(
        &mut iteration,
        &mut events,
        options,
        before.iter().chain(after),
    );
    // The typical time, after the verdicts (a finding only where they do not say the same).
    let family = events.len().max(1) as f64;
    for (row, (_, b, a)) in events.iter_mut().zip(&sides) {
        if (row.typical_ratio - 1.0).abs() > options.threshold {
            let typical = |v: &[Option<(f64, f64)>]| -> Vec<Option<f64>> {
                v.iter().map(|x| x.map(|t| t.1)).collect()
            };
            let p = log_test(&typical(b), &typical(a), paired).map_or(1.0, |t| t.p);
            super::mark_typical(row, p * family < options.alpha);
        }
    }
    let load = Load::of(before, after);
    if load.differs && !paired {
        for row in std::iter::once(&mut iteration).chain(events.iter_mut()) {
            row.verdict = Verdict::Inconclusive;
        }
    }
    super::mark_matters(&mut iteration, &mut events, options.threshold);
    Diff {
        iteration,
        events,
        only_before,
        only_after,
        threshold: options.threshold,
        alpha: options.alpha,
        estimator: super::ESTIMATOR,
        paired,
        memory: Vec::new(),
        machine,
        runs: Runs::default(),
        runs_compared: Some((before.len(), after.len())),
        load: Some(load),
        runs_needed: None,
        warnings: super::super::run_differences(before.iter().chain(after), "the runs compared")
            .into_iter()
            .chain(super::super::shared_key_warning(before.iter().chain(after)))
            .collect(),
    }
}

/// How many runs a side would resolve a change of `threshold` for an event that moves between
/// runs as these events moved around their shared shift (`spread`, on the log scale, from a
/// one-run comparison: it holds two runs' shifts, layout and the machine, and the samples'
/// scatter): the fewest `n` from [`LOAD_MIN_RUNS`] on (fewer cannot tell whether the load fell
/// on one side) with `t(2n - 2, 1 - alpha/2) · spread / √n ≤ ln(1 + threshold)`, the interval
/// of the several-runs comparison then reaching no further than the threshold for a typical
/// event (events much shorter or more scattered than the rest need more). `None` past 1,000
/// runs or without a finite spread.
pub fn runs_needed(spread: f64, threshold: f64, alpha: f64) -> Option<usize> {
    if !spread.is_finite() || spread < 0.0 || threshold <= 0.0 {
        return None;
    }
    let target = threshold.ln_1p();
    let enough = |n: usize| {
        let t = crate::student::quantile(1.0 - alpha / 2.0, (2 * n - 2) as f64);
        t * spread / (n as f64).sqrt() <= target
    };
    // The reach falls as `n` grows (both `t` and `1 / √n` do): the first `n` that is enough is
    // found by halving the range, in 10 quantiles rather than up to 1,000.
    let (mut lo, mut hi) = (LOAD_MIN_RUNS, MOST_RUNS + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    (lo <= MOST_RUNS).then_some(lo)
}

/// The most runs a side [`runs_needed`] will ask for.
const MOST_RUNS: usize = 1000;

/// An event's (fastest-5%, median) time in one run, from its samples; its recorded median for
/// both when the samples were not kept; `None` when not positive.
fn run_times(e: &Event) -> Option<(f64, f64)> {
    if e.samples_ns.is_empty() {
        return crate::event_time(e).filter(|&m| m > 0.0).map(|m| (m, m));
    }
    let samples = stats::as_f64(&e.samples_ns);
    let (fast, median) = (stats::fast(&samples), stats::median(&samples));
    (fast > 0.0 && median > 0.0).then_some((fast, median))
}

fn missing(id: &Identity) -> Missing {
    Missing {
        id: id.id.clone(),
        name: id.name.clone(),
        occurrence: id.occurrence,
    }
}

/// A comparison of log values: the mean difference (after - before), its standard error and
/// degrees of freedom, and the two-sided p-value.
struct LogTest {
    diff: f64,
    se: f64,
    df: f64,
    p: f64,
}

/// The logs of `before` and `after` (per run; `None` where a run lacks the event) compared:
/// paired by round (one-sample t of the rounds with both) or by Welch's t; `None` when there is
/// not enough to compare.
fn log_test(before: &[Option<f64>], after: &[Option<f64>], paired: bool) -> Option<LogTest> {
    let ln = |x: &f64| (*x > 0.0).then(|| x.ln());
    let (diff, se, df) = if paired {
        let d: Vec<f64> = before
            .iter()
            .zip(after)
            .filter_map(|(b, a)| Some(ln(a.as_ref()?)? - ln(b.as_ref()?)?))
            .collect();
        one_sample(&d)?
    } else {
        let logs = |v: &[Option<f64>]| -> Vec<f64> { v.iter().flatten().filter_map(ln).collect() };
        let w = welch(&logs(before), &logs(after))?;
        (w.diff, w.se, w.df)
    };
    let p = if diff == 0.0 {
        1.0
    } else if se > 0.0 {
        2.0 * (1.0 - crate::student::cdf(diff.abs() / se, df))
    } else {
        0.0
    };
    Some(LogTest { diff, se, df, p })
}

/// The mean of the rounds' differences `d`, its standard error and degrees of freedom (the
/// paired comparison's one-sample t); `None` with fewer than two.
fn one_sample(d: &[f64]) -> Option<(f64, f64, f64)> {
    if d.len() < 2 {
        return None;
    }
    let n = d.len() as f64;
    let mean = stats::mean(d);
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, (var / n).sqrt(), n - 1.0))
}

/// The paired comparison `prof ab` makes, on values already made one per round (`prof whatif`'s
/// change of the iteration per unit of delay): their mean and its `1 - alpha` interval,
/// `mean +- t(n - 1, 1 - alpha/2) sd / sqrt n` (Student's one-sample t over the rounds, which a
/// machine changing over minutes falls on alike); `None` with fewer than two rounds.
pub fn paired_interval(d: &[f64], alpha: f64) -> Option<(f64, f64, f64)> {
    let (mean, se, df) = one_sample(d)?;
    let reach = crate::student::quantile(1.0 - alpha / 2.0, df) * se;
    Some((mean, mean - reach, mean + reach))
}

/// One row from each side's per-run (fastest-5%, median) times (p-adjustment and verdict come
/// later).
fn compare(
    identity: Identity,
    before: &[Option<(f64, f64)>],
    after: &[Option<(f64, f64)>],
    paired: bool,
    options: &DiffOptions,
) -> EventDiff {
    let fast = |v: &[Option<(f64, f64)>]| -> Vec<Option<f64>> {
        v.iter().map(|x| x.map(|t| t.0)).collect()
    };
    let typical =
        |v: &[Option<(f64, f64)>]| -> Vec<f64> { v.iter().flatten().map(|t| t.1).collect() };
    let geo = |v: &[Option<f64>]| -> f64 {
        let logs: Vec<f64> = v
            .iter()
            .flatten()
            .filter(|&&x| x > 0.0)
            .map(|x| x.ln())
            .collect();
        if logs.is_empty() {
            f64::NAN
        } else {
            stats::mean(&logs).exp()
        }
    };
    let (fb, fa) = (fast(before), fast(after));
    let (tb, ta) = (typical(before), typical(after));
    let mut row = super::unjudged(
        identity,
        (fb.iter().flatten().count(), fa.iter().flatten().count()),
        (geo(&fb), geo(&fa)),
        (stats::median(&tb), stats::median(&ta)),
    );
    let Some(test) = log_test(&fb, &fa, paired) else {
        return row;
    };
    let t = crate::student::quantile(1.0 - options.alpha / 2.0, test.df);
    let reach = t * test.se;
    row.ratio = test.diff.exp();
    row.ci_low = (test.diff - reach).exp();
    row.ci_high = (test.diff + reach).exp();
    row.p_value = test.p;
    if reach.is_finite() {
        row.detectable = Some((1.0 + options.threshold) * reach.exp() - 1.0);
    }
    row
}

/// Welch's comparison of two samples' means.
struct Welch {
    diff: f64,
    se: f64,
    df: f64,
}

/// `mean(a) - mean(b)`, its standard error and degrees of freedom; a side of one value borrows
/// the other's variance; `None` without a value on each side or with one on both.
fn welch(b: &[f64], a: &[f64]) -> Option<Welch> {
    let (m, n) = (b.len() as f64, a.len() as f64);
    if b.is_empty() || a.is_empty() || (b.len() == 1 && a.len() == 1) {
        return None;
    }
    let var = |v: &[f64]| -> Option<f64> {
        (v.len() > 1).then(|| {
            let mean = stats::mean(v);
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64
        })
    };
    let (vb, va) = match (var(b), var(a)) {
        (Some(vb), Some(va)) => (vb, va),
        (Some(vb), None) => (vb, vb),
        (None, Some(va)) => (va, va),
        (None, None) => return None,
    };
    let (qb, qa) = (vb / m, va / n);
    let se = (qb + qa).sqrt();
    // Welch-Satterthwaite; a side of one value contributes the other's degrees of freedom.
    let dof = |k: f64, other: f64| if k > 1.0 { k - 1.0 } else { other - 1.0 };
    let df = if qb + qa > 0.0 {
        (qb + qa).powi(2) / (qb * qb / dof(m, n) + qa * qa / dof(n, m))
    } else {
        (m + n - 2.0).max(1.0)
    };
    Some(Welch {
        diff: stats::mean(a) - stats::mean(b),
        se,
        df: df.max(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs a side that resolve the threshold grow with the square of the spread, start at
    /// the fewest that can see the load, and give up past 1,000.
    #[test]
    fn runs_needed_follow_the_spread() {
        assert_eq!(runs_needed(0.0, 0.02, 0.05), Some(LOAD_MIN_RUNS));
        // 2.7% of spread against 2%: t(2n-2) * 0.027 / sqrt(n) <= ln 1.02 first at n = 9.
        assert_eq!(runs_needed(0.027, 0.02, 0.05), Some(9));
        let (a, b) = (runs_needed(0.05, 0.02, 0.05), runs_needed(0.10, 0.02, 0.05));
        assert!(b.unwrap() > 3 * a.unwrap(), "{a:?} {b:?}");
        assert_eq!(runs_needed(10.0, 0.02, 0.05), None);
        assert_eq!(runs_needed(f64::NAN, 0.02, 0.05), None);
    }

    #[test]
    fn runs_needed_is_the_first_count_that_is_enough() {
        // The halving search against the count it stands for: the first from LOAD_MIN_RUNS on.
        let enough = |n: usize, spread: f64| {
            crate::student::quantile(0.975, (2 * n - 2) as f64) * spread / (n as f64).sqrt()
                <= 0.02f64.ln_1p()
        };
        for spread in [0.005, 0.0127, 0.027, 0.05, 0.1, 0.2, 0.3] {
            let n = runs_needed(spread, 0.02, 0.05).unwrap();
            assert!(enough(n, spread), "{spread}: {n}");
            assert!(
                n == LOAD_MIN_RUNS || !enough(n - 1, spread),
                "{spread}: {n}"
            );
        }
        // Just enough at the most runs asked for, and just not.
        let t = |n: usize| crate::student::quantile(0.975, (2 * n - 2) as f64);
        let at_most = 0.02f64.ln_1p() * (MOST_RUNS as f64).sqrt() / t(MOST_RUNS);
        assert_eq!(
            runs_needed(at_most * 0.999_999, 0.02, 0.05),
            Some(MOST_RUNS)
        );
        assert_eq!(runs_needed(at_most * 1.000_001, 0.02, 0.05), None);
    }
}
