//! Comparing two runs: `prof diff before.json after.json`.
//!
//! Events are matched by identity, their probe's id and occurrence ([`event_key`]); those found
//! in one run only are listed ([`Diff::only_before`], [`Diff::only_after`]). Each matched event's
//! samples (`samples_ns`) are compared between the runs, and so is the whole iteration, through
//! the wall times of the measured iterations (`iterations.wall_ns[i]` for `i >= run.warmup`; all
//! of them when there is none).
//!
//! # An event
//!
//! - **ratio** = median(after samples) / median(before samples): above 1 is slower. 0/0 counts as
//!   1, x/0 as infinity; NaN (`null` in JSON) when a side has no sample.
//! - **Adjusted samples.** In sample mode an event is measured in one window of `repeat`
//!   consecutive iterations, and everything else in the iteration runs unmeasured around it. The
//!   *rest* of iteration i is its wall time minus the sample taken in it. Each sample s_i is
//!   multiplied by median(rest over the window) / rest_i: brought to the machine's median speed
//!   within its window. A change of the code leaves these factors alone (it changes every
//!   iteration alike); a machine that slows down for a few iterations (another process, a
//!   frequency change) gets discounted. Samples whose iterations are unknown are left as they are.
//! - **Drift** of an event: how much faster or slower the machine ran in its window of the after
//!   run than in its window of the before run, `min(|ln(Wa / Wb)|, |ln(Ra / Rb)|)` where W is the
//!   median wall time and R the median rest of the window's iterations (0 when unknown). The
//!   smaller of the two keeps a change of the event itself from passing for a change of the
//!   machine: the rest leaves the event out, and the wall time does not move when only the
//!   event's samples do.
//! - **Spread** between the two runs: 1.4826 x the median absolute deviation, over the matched
//!   events, of ln(adjusted ratio) - ln(Ra / Rb) (ln(Wa / Wb) when R is unknown): how much events
//!   differ between these two runs beyond the machine's drift, for reasons that are not theirs
//!   (memory layout, caches), robust to a minority of events that really changed. 0 with fewer
//!   than [`MIN_EVENTS_FOR_SPREAD`] events.
//! - **Noise allowance** A = [`DRIFT_FACTOR`] x drift + [`SPREAD_Z`] x spread (on the log scale).
//!   On a steady machine and identical code around the event, A is about 0.
//! - **Confidence interval** (`ci_low`, `ci_high`): the bootstrap percentile interval, at
//!   confidence 1 - alpha (95% by default), of median(after) / median(before) of the adjusted
//!   samples, each side resampled independently `resamples` times
//!   ([`stats::bootstrap_median_ratio`]), then widened by the allowance: `[low e^-A, high e^A]`.
//! - **p-value**: the two-sided Mann-Whitney U test ([`stats::mann_whitney_p`]) of the adjusted
//!   before samples against the adjusted after samples brought back by the allowance (divided by
//!   e^A when slower, multiplied when faster); 1 when the adjusted ratio lies within
//!   `[e^-A, e^A]`. With A = 0 it is the plain test of the two sets of samples.
//!
//! # The iteration
//!
//! ratio = median(after walls) / median(before walls). Consecutive iterations are not
//! independent (the machine drifts), so each run's measured iterations are cut into blocks of
//! `repeat` iterations (one event's window in sample mode; shorter when needed to make at least 5
//! blocks). The interval is a block bootstrap (whole blocks resampled) and the p-value compares
//! the two runs' block medians. The allowance is A = [`SPREAD_Z`] x sqrt(wb^2 + wa^2), where a
//! run's *wander* w is 1.4826 x the median absolute deviation of ln(block median): how much the
//! machine's speed wandered within the run, taken as a measure of how much it may differ between
//! runs. The interval is widened and the p-value computed as for an event.
//!
//! # Verdicts
//!
//! p-values are adjusted by Holm-Bonferroni ([`stats::holm`]) over the whole family (the
//! iteration and every matched event), which keeps the chance of even one false positive below
//! alpha. With the threshold t (2% by default):
//!
//! - **regressed**: `p_adjusted < alpha` and `ci_low > 1 + t`;
//! - **improved**: `p_adjusted < alpha` and `ci_high < 1 - t`;
//! - **within noise**: `p_adjusted < alpha` but neither: a difference that cannot be shown to
//!   exceed the threshold;
//! - **no change**: `p_adjusted >= alpha`.
//!
//! A run of a busy machine differs from the next by tens of percent, event by event, and a test
//! of the samples alone would call that a change; the allowance keeps such events at "no change"
//! unless they moved well beyond how the machine and the other events moved. The iteration's
//! allowance covers only how much the machine wandered within each run: a run made while the
//! machine was busier throughout is slower throughout, and its iteration says so. Compare runs
//! made on the same, quiet machine; on a steady one the allowances are close to 0 and the
//! verdicts are those of the plain tests.

use std::collections::HashMap;

use serde::Serialize;

use super::stats::{self, SplitMix64};
use super::{event_key, text, Format};
use crate::{Event, Profile};

/// Settings of a comparison.
#[derive(Clone, Debug)]
pub struct DiffOptions {
    /// Smallest relative change that matters (0.02: 2%).
    pub threshold: f64,
    /// Family-wise significance level (0.05).
    pub alpha: f64,
    /// Bootstrap resamples per confidence interval (2000).
    pub resamples: usize,
    /// Seed of the bootstrap's generator: the same seed gives the same intervals.
    pub seed: u64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            threshold: 0.02,
            alpha: 0.05,
            resamples: 2000,
            seed: 0x5EED_D1FF,
        }
    }
}

/// The verdict on one event or on the iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly faster, by more than the threshold.
    Improved,
    /// Significantly slower, by more than the threshold.
    Regressed,
    /// No significant difference.
    NoChange,
    /// A significant difference that cannot be shown to exceed the threshold.
    WithinNoise,
}

impl Verdict {
    /// `"improved"`, `"regressed"`, `"no change"` or `"within noise"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no change",
            Verdict::WithinNoise => "within noise",
        }
    }
}

/// The comparison of one event (or of the whole iteration) between two runs.
#[derive(Clone, Debug, Serialize)]
pub struct EventDiff {
    /// The probe's id (`"iteration"` for the whole iteration).
    pub id: String,
    /// The probe's name (`"iteration"` for the whole iteration).
    pub name: String,
    /// The `layer` key.
    pub layer: Option<String>,
    /// The `phase` key.
    pub phase: Option<String>,
    /// Which run of the probe within an iteration.
    pub occurrence: u32,
    /// Samples in the `before` run.
    pub before_n: usize,
    /// Samples in the `after` run.
    pub after_n: usize,
    /// Median of the `before` samples.
    pub before_median_ns: f64,
    /// Median of the `after` samples.
    pub after_median_ns: f64,
    /// `after_median_ns / before_median_ns`.
    pub ratio: f64,
    /// Lower bound of the confidence interval of the ratio.
    pub ci_low: f64,
    /// Upper bound of the confidence interval of the ratio.
    pub ci_high: f64,
    /// Two-sided p-value of the hypothesis of no difference.
    pub p_value: f64,
    /// `p_value` adjusted for the number of comparisons (Holm-Bonferroni).
    pub p_adjusted: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// An event found in only one of the two runs.
#[derive(Clone, Debug, Serialize)]
pub struct Missing {
    /// The probe's id.
    pub id: String,
    /// The probe's name.
    pub name: String,
    /// Which run of the probe within an iteration.
    pub occurrence: u32,
}

/// The comparison of two runs.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    /// The whole iteration (`id` and `name` `"iteration"`).
    pub iteration: EventDiff,
    /// Events found in both runs, in the `after` run's order.
    pub events: Vec<EventDiff>,
    /// Events found only in the `before` run.
    pub only_before: Vec<Missing>,
    /// Events found only in the `after` run.
    pub only_after: Vec<Missing>,
    /// The threshold used.
    pub threshold: f64,
    /// The significance level used.
    pub alpha: f64,
}

impl Diff {
    /// True when the iteration or any event regressed.
    pub fn has_regression(&self) -> bool {
        self.iteration.verdict == Verdict::Regressed
            || self.events.iter().any(|e| e.verdict == Verdict::Regressed)
    }
}

/// How many times its drift (the change of machine speed between the two windows in which an
/// event was measured, see the module documentation) widens an event's confidence interval:
/// under contention from other processes, memory-bound events slow down by up to about three
/// times as much as the iteration as a whole.
pub const DRIFT_FACTOR: f64 = 3.0;

/// How many standard deviations of the spread of the events' ratios between the two runs, or of
/// the runs' wander for the iteration (see the module documentation), widen a confidence
/// interval.
pub const SPREAD_Z: f64 = 2.0;

/// Fewest events from which the spread between the two runs is estimated; with fewer, it is 0.
pub const MIN_EVENTS_FOR_SPREAD: usize = 5;

/// 1 / Phi^-1(3/4): scales a median absolute deviation to a standard deviation.
const MAD_SCALE: f64 = 1.4826;

/// Compares two runs: every event found in both, by its identity ([`event_key`]), and the whole
/// iteration. See the module documentation for the statistics and the verdicts.
pub fn diff(before: &Profile, after: &Profile, options: &DiffOptions) -> Diff {
    let confidence = (1.0 - options.alpha).clamp(0.0, 1.0);
    let mut seeds = SplitMix64::new(options.seed);

    // Match the events by identity; the first of duplicated keys wins.
    let mut before_index: HashMap<(String, u32), usize> = HashMap::new();
    for (i, e) in before.events.iter().enumerate() {
        before_index.entry(event_key(e)).or_insert(i);
    }
    let mut after_keys: HashMap<(String, u32), ()> = HashMap::new();
    let mut pairs: Vec<(&Event, &Event)> = Vec::new();
    let mut only_after = Vec::new();
    for e in &after.events {
        let key = event_key(e);
        if after_keys.insert(key.clone(), ()).is_some() {
            continue;
        }
        match before_index.get(&key) {
            Some(&i) => pairs.push((&before.events[i], e)),
            None => only_after.push(missing(e)),
        }
    }
    let mut seen_before: HashMap<(String, u32), ()> = HashMap::new();
    let only_before = before
        .events
        .iter()
        .filter(|e| {
            let key = event_key(e);
            seen_before.insert(key.clone(), ()).is_none() && !after_keys.contains_key(&key)
        })
        .map(missing)
        .collect();

    // Samples, adjusted for the machine's speed within each window, and the drift between the
    // two windows of each event.
    let sides: Vec<(Prepared, Prepared)> = pairs
        .iter()
        .map(|(b, a)| (Prepared::of(before, b), Prepared::of(after, a)))
        .collect();
    let spread = spread(&sides);

    let mut events: Vec<EventDiff> = pairs
        .iter()
        .zip(&sides)
        .map(|((_, a), (pb, pa))| {
            let allowance = DRIFT_FACTOR * drift(pb, pa) + SPREAD_Z * spread;
            compare_event(a, pb, pa, allowance, confidence, options, seeds.next_u64())
        })
        .collect();
    let mut iteration = compare_iteration(before, after, confidence, options, seeds.next_u64());

    // Holm over the whole family: the iteration and every event.
    let mut p: Vec<f64> = vec![iteration.p_value];
    p.extend(events.iter().map(|e| e.p_value));
    let adjusted = stats::holm(&p);
    iteration.p_adjusted = adjusted[0];
    iteration.verdict = verdict(&iteration, options);
    for (e, &q) in events.iter_mut().zip(&adjusted[1..]) {
        e.p_adjusted = q;
        e.verdict = verdict(e, options);
    }

    Diff {
        iteration,
        events,
        only_before,
        only_after,
        threshold: options.threshold,
        alpha: options.alpha,
    }
}

fn missing(e: &Event) -> Missing {
    Missing {
        id: e.id.clone(),
        name: e.name.clone(),
        occurrence: e.occurrence,
    }
}

/// The verdict rule of the module documentation.
fn verdict(d: &EventDiff, options: &DiffOptions) -> Verdict {
    let significant = d.p_adjusted < options.alpha; // false for NaN
    if !significant {
        Verdict::NoChange
    } else if d.ci_low > 1.0 + options.threshold {
        Verdict::Regressed
    } else if d.ci_high < 1.0 - options.threshold {
        Verdict::Improved
    } else {
        Verdict::WithinNoise
    }
}

/// One side of an event: its samples and the machine's speed while they were taken.
struct Prepared {
    /// The samples as measured.
    raw: Vec<f64>,
    /// Each sample times (median rest of the window / rest of its iteration), where the rest of
    /// an iteration is its wall time minus the sample; the raw samples when that is unavailable.
    adjusted: Vec<f64>,
    /// Median wall time of the iterations in which the samples were taken.
    window_wall: Option<f64>,
    /// Median rest (wall time minus the sample) of those iterations.
    window_rest: Option<f64>,
}

impl Prepared {
    fn of(profile: &Profile, event: &Event) -> Prepared {
        let raw = stats::as_f64(&event.samples_ns);
        let walls = &profile.iterations.wall_ns;
        let aligned = !raw.is_empty()
            && event.sample_iters.len() == raw.len()
            && event
                .sample_iters
                .iter()
                .all(|&i| (i as usize) < walls.len());
        if !aligned {
            return Prepared {
                adjusted: raw.clone(),
                raw,
                window_wall: None,
                window_rest: None,
            };
        }
        let wall: Vec<f64> = event
            .sample_iters
            .iter()
            .map(|&i| walls[i as usize] as f64)
            .collect();
        let rest: Vec<f64> = wall.iter().zip(&raw).map(|(w, s)| w - s).collect();
        let window_wall = Some(stats::median(&wall)).filter(|&w| w > 0.0);
        if rest.iter().any(|&r| r <= 0.0) {
            return Prepared {
                adjusted: raw.clone(),
                raw,
                window_wall,
                window_rest: None,
            };
        }
        let window_rest = stats::median(&rest);
        let adjusted = raw
            .iter()
            .zip(&rest)
            .map(|(s, r)| s * window_rest / r)
            .collect();
        Prepared {
            raw,
            adjusted,
            window_wall,
            window_rest: Some(window_rest),
        }
    }
}

/// `ln(after / before)` when both are known and positive.
fn log_ratio(before: Option<f64>, after: Option<f64>) -> Option<f64> {
    match (before, after) {
        (Some(b), Some(a)) if b > 0.0 && a > 0.0 => Some((a / b).ln()),
        _ => None,
    }
}

/// The drift of an event: the smaller of |ln| of the change of its window's median wall time
/// and of its window's median rest, between the two runs (0 when unknown).
fn drift(before: &Prepared, after: &Prepared) -> f64 {
    let wall = log_ratio(before.window_wall, after.window_wall).map(f64::abs);
    let rest = log_ratio(before.window_rest, after.window_rest).map(f64::abs);
    match (wall, rest) {
        (Some(w), Some(r)) => w.min(r),
        (Some(d), None) | (None, Some(d)) => d,
        (None, None) => 0.0,
    }
}

/// The spread between the two runs: 1.4826 x the median absolute deviation, over the events,
/// of ln(adjusted ratio) minus ln(change of the window's median rest) (or of its median wall
/// time, when the rest is unknown). 0 with fewer than [`MIN_EVENTS_FOR_SPREAD`] events.
fn spread(sides: &[(Prepared, Prepared)]) -> f64 {
    let residuals: Vec<f64> = sides
        .iter()
        .filter_map(|(b, a)| {
            let ratio = ratio(
                stats::median(&a.adjusted),
                stats::median(&b.adjusted),
                b.adjusted.len().min(a.adjusted.len()),
            );
            if !(ratio.is_finite() && ratio > 0.0) {
                return None;
            }
            let speed = log_ratio(b.window_rest, a.window_rest)
                .or_else(|| log_ratio(b.window_wall, a.window_wall))
                .unwrap_or(0.0);
            Some(ratio.ln() - speed)
        })
        .collect();
    if residuals.len() < MIN_EVENTS_FOR_SPREAD {
        return 0.0;
    }
    let center = stats::median(&residuals);
    let deviations: Vec<f64> = residuals.iter().map(|r| (r - center).abs()).collect();
    MAD_SCALE * stats::median(&deviations)
}

/// `after / before` medians: NaN when a side has no sample, 1 for 0/0, infinity for x/0.
fn ratio(after: f64, before: f64, n: usize) -> f64 {
    if n == 0 {
        f64::NAN
    } else if before == 0.0 {
        if after == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        after / before
    }
}

/// Compares one event (p-adjustment and verdict come later).
fn compare_event(
    event: &Event,
    before: &Prepared,
    after: &Prepared,
    allowance: f64,
    confidence: f64,
    options: &DiffOptions,
    seed: u64,
) -> EventDiff {
    let n = before.raw.len().min(after.raw.len());
    let before_median = stats::median(&before.raw);
    let after_median = stats::median(&after.raw);
    let (ci_low, ci_high, p_value) = if n == 0 {
        (f64::NAN, f64::NAN, 1.0)
    } else {
        let factor = allowance.exp();
        let (lo, hi) = stats::bootstrap_median_ratio(
            &before.adjusted,
            &after.adjusted,
            options.resamples,
            confidence,
            seed,
        );
        let p = p_beyond(&before.adjusted, &after.adjusted, factor);
        (lo / factor, hi * factor, p)
    };
    EventDiff {
        id: event.id.clone(),
        name: event.name.clone(),
        layer: event.layer.clone(),
        phase: event.phase.clone(),
        occurrence: event.occurrence,
        before_n: before.raw.len(),
        after_n: after.raw.len(),
        before_median_ns: before_median,
        after_median_ns: after_median,
        ratio: ratio(after_median, before_median, n),
        ci_low,
        ci_high,
        p_value,
        p_adjusted: p_value,
        verdict: Verdict::NoChange,
    }
}

/// The p-value of "after differs from before by more than `factor`": the two-sided Mann-Whitney
/// U test of `before` against `after` divided by `factor` (when its median is above `factor`
/// times before's) or multiplied by it (when below 1 / `factor` times); 1 in between. With a
/// factor of 1, the plain test.
fn p_beyond(before: &[f64], after: &[f64], factor: f64) -> f64 {
    if factor <= 1.0 {
        return stats::mann_whitney_p(before, after);
    }
    let r = ratio(
        stats::median(after),
        stats::median(before),
        before.len().min(after.len()),
    );
    let scale = if r > factor {
        1.0 / factor
    } else if r < 1.0 / factor {
        factor
    } else {
        return 1.0;
    };
    let scaled: Vec<f64> = after.iter().map(|x| x * scale).collect();
    stats::mann_whitney_p(before, &scaled)
}

/// How much a run's machine speed wandered: 1.4826 x the median absolute deviation of the
/// logarithms of its block medians (0 for fewer than [`MIN_BLOCKS`] blocks).
fn wander(block_medians: &[f64]) -> f64 {
    let logs: Vec<f64> = block_medians
        .iter()
        .filter(|&&m| m > 0.0)
        .map(|m| m.ln())
        .collect();
    if logs.len() < MIN_BLOCKS {
        return 0.0;
    }
    let center = stats::median(&logs);
    let deviations: Vec<f64> = logs.iter().map(|l| (l - center).abs()).collect();
    MAD_SCALE * stats::median(&deviations)
}

/// Fewest blocks a run's iterations are cut into for the iteration's comparison.
const MIN_BLOCKS: usize = 5;

/// Block length of a run: its `repeat` (the length of one event's window in sample mode), but
/// short enough to make at least [`MIN_BLOCKS`] blocks, and at least 1.
fn block_len(profile: &Profile, n: usize) -> usize {
    (profile.run.repeat as usize).min(n / MIN_BLOCKS).max(1)
}

/// Compares the measured iterations' wall times (p-adjustment and verdict come later).
fn compare_iteration(
    before: &Profile,
    after: &Profile,
    confidence: f64,
    options: &DiffOptions,
    seed: u64,
) -> EventDiff {
    let wb = stats::as_f64(crate::analysis::measured_walls(before));
    let wa = stats::as_f64(crate::analysis::measured_walls(after));
    let n = wb.len().min(wa.len());
    let before_median = stats::median(&wb);
    let after_median = stats::median(&wa);
    let (ci_low, ci_high, p_value) = if n == 0 {
        (f64::NAN, f64::NAN, 1.0)
    } else {
        let (lb, la) = (block_len(before, wb.len()), block_len(after, wa.len()));
        let (lo, hi) =
            block_bootstrap_median_ratio(&wb, lb, &wa, la, options.resamples, confidence, seed);
        let block_medians = |w: &[f64], l: usize| -> Vec<f64> {
            w.chunks(l)
                .map(|c| stats::median_mut(&mut c.to_vec()))
                .collect()
        };
        let (mb, ma) = (block_medians(&wb, lb), block_medians(&wa, la));
        let allowance = SPREAD_Z * wander(&mb).hypot(wander(&ma));
        let factor = allowance.exp();
        (lo / factor, hi * factor, p_beyond(&mb, &ma, factor))
    };
    EventDiff {
        id: "iteration".to_owned(),
        name: "iteration".to_owned(),
        layer: None,
        phase: None,
        occurrence: 0,
        before_n: wb.len(),
        after_n: wa.len(),
        before_median_ns: before_median,
        after_median_ns: after_median,
        ratio: ratio(after_median, before_median, n),
        ci_low,
        ci_high,
        p_value,
        p_adjusted: p_value,
        verdict: Verdict::NoChange,
    }
}

/// Like [`stats::bootstrap_median_ratio`], but each side is resampled by whole blocks of
/// consecutive values (`before` in blocks of `lb`, `after` of `la`; the last block may be
/// shorter): blocks are drawn until they hold at least as many values as the side, so that slow
/// drifts of the machine show in the interval.
fn block_bootstrap_median_ratio(
    before: &[f64],
    lb: usize,
    after: &[f64],
    la: usize,
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> (f64, f64) {
    let mut rng = SplitMix64::new(seed);
    let mut before = BlockSampler::new(before, lb);
    let mut after = BlockSampler::new(after, la);
    let mut ratios: Vec<f64> = (0..resamples.max(1))
        .map(|_| {
            let b = before.median(&mut rng);
            let a = after.median(&mut rng);
            ratio(a, b, 1)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    (
        stats::quantile_sorted(&ratios, tail),
        stats::quantile_sorted(&ratios, 1.0 - tail),
    )
}

/// Draws block-bootstrap medians of one series without copying it: the values sorted once,
/// each with its block, and per resample a count of how often each block was drawn.
struct BlockSampler {
    sorted: Vec<f64>,
    block_of: Vec<usize>,
    block_len: Vec<usize>,
    drawn: Vec<u32>,
}

impl BlockSampler {
    fn new(values: &[f64], len: usize) -> Self {
        let len = len.max(1);
        let mut pairs: Vec<(f64, usize)> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i / len))
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let blocks = values.len().div_ceil(len);
        BlockSampler {
            sorted: pairs.iter().map(|p| p.0).collect(),
            block_of: pairs.iter().map(|p| p.1).collect(),
            block_len: (0..blocks)
                .map(|b| len.min(values.len() - b * len))
                .collect(),
            drawn: vec![0; blocks],
        }
    }

    fn median(&mut self, rng: &mut SplitMix64) -> f64 {
        let blocks = self.block_len.len();
        if blocks == 0 {
            return 0.0;
        }
        self.drawn.fill(0);
        let mut total = 0;
        while total < self.sorted.len() {
            let b = rng.below(blocks);
            self.drawn[b] += 1;
            total += self.block_len[b];
        }
        // The values of ranks (total - 1) / 2 and total / 2 (0-based) of the drawn multiset.
        let (k1, k2) = ((total - 1) / 2, total / 2);
        let mut seen = 0usize;
        let mut low = None;
        for (value, &b) in self.sorted.iter().zip(&self.block_of) {
            seen += self.drawn[b] as usize;
            if low.is_none() && seen > k1 {
                low = Some(*value);
            }
            if seen > k2 {
                return (low.unwrap_or(*value) + value) / 2.0;
            }
        }
        low.unwrap_or(0.0)
    }
}

/// Prints a comparison: a table with one row for the iteration and one per event, the events
/// found in only one run, counts, and a closing line naming the regressions (or `no regression`).
/// CSV and JSON give times in nanoseconds and ratios as numbers; CSV lists the events found in
/// one run only as rows with the verdict `only before` or `only after`.
pub fn render(diff: &Diff, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(diff).unwrap_or_default() + "\n",
        Format::Csv => render_csv(diff),
        Format::Table | Format::Markdown => render_text(diff, format == Format::Markdown),
    }
}

const CSV_HEADER: &str = "id,name,layer,phase,occurrence,before_n,after_n,before_median_ns,\
after_median_ns,ratio,ci_low,ci_high,p_value,p_adjusted,verdict";

fn render_csv(diff: &Diff) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for d in std::iter::once(&diff.iteration).chain(&diff.events) {
        let fields = [
            text::csv_field(&d.id),
            text::csv_field(&d.name),
            text::csv_field(d.layer.as_deref().unwrap_or("")),
            text::csv_field(d.phase.as_deref().unwrap_or("")),
            d.occurrence.to_string(),
            d.before_n.to_string(),
            d.after_n.to_string(),
            text::num(d.before_median_ns),
            text::num(d.after_median_ns),
            text::num(d.ratio),
            text::num(d.ci_low),
            text::num(d.ci_high),
            text::num(d.p_value),
            text::num(d.p_adjusted),
            d.verdict.as_str().to_owned(),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    for (list, verdict) in [
        (&diff.only_before, "only before"),
        (&diff.only_after, "only after"),
    ] {
        for m in list {
            out.push_str(&format!(
                "{},{},,,{},,,,,,,,,,{verdict}\n",
                text::csv_field(&m.id),
                text::csv_field(&m.name),
                m.occurrence
            ));
        }
    }
    out
}

fn label(d: &EventDiff) -> String {
    text::label(
        &d.name,
        d.occurrence,
        d.layer.as_deref(),
        d.phase.as_deref(),
    )
}

fn missing_label(m: &Missing) -> String {
    if m.occurrence > 0 {
        format!("{}#{} ({})", m.name, m.occurrence, m.id)
    } else {
        format!("{} ({})", m.name, m.id)
    }
}

/// A change as a signed percentage: ratio 1.312 -> `+31.2%`.
fn change(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{:+.1}%", 100.0 * (ratio - 1.0))
    } else {
        "-".to_owned()
    }
}

fn p_text(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

const TEXT_HEADERS: [&str; 10] = [
    "layer", "phase", "name", "occ", "before", "after", "change", "95% CI", "p (adj)", "verdict",
];

fn text_cells(d: &EventDiff, iteration: bool) -> Vec<String> {
    let ci = if d.ci_low.is_finite() || d.ci_high.is_finite() {
        format!("{} .. {}", change(d.ci_low), change(d.ci_high))
    } else {
        "-".to_owned()
    };
    let times = |v: f64, n: usize| {
        if n == 0 {
            "-".to_owned()
        } else {
            super::report::human_ns(v)
        }
    };
    vec![
        d.layer.clone().unwrap_or_else(|| "-".to_owned()),
        d.phase.clone().unwrap_or_else(|| "-".to_owned()),
        d.name.clone(),
        if iteration {
            "-".to_owned()
        } else {
            d.occurrence.to_string()
        },
        times(d.before_median_ns, d.before_n),
        times(d.after_median_ns, d.after_n),
        change(d.ratio),
        ci,
        p_text(d.p_adjusted),
        d.verdict.as_str().to_owned(),
    ]
}

fn render_text(diff: &Diff, markdown: bool) -> String {
    let mut rows = vec![text_cells(&diff.iteration, true)];
    rows.extend(diff.events.iter().map(|d| text_cells(d, false)));
    let mut out = if markdown {
        text::markdown(&TEXT_HEADERS, &rows)
    } else {
        text::aligned(&TEXT_HEADERS, &rows, 3)
    };
    let bullet = if markdown { "\n" } else { "" };
    for (list, which) in [(&diff.only_before, "before"), (&diff.only_after, "after")] {
        if !list.is_empty() {
            let names: Vec<String> = list.iter().map(missing_label).collect();
            out.push_str(&format!(
                "{bullet}only in {which} ({}): {}\n",
                list.len(),
                names.join(", ")
            ));
        }
    }
    let all: Vec<&EventDiff> = std::iter::once(&diff.iteration)
        .chain(&diff.events)
        .collect();
    let count = |v: Verdict| diff.events.iter().filter(|d| d.verdict == v).count();
    out.push_str(&format!(
        "{bullet}iteration: {}; {} events: {} regressed, {} improved, {} within noise, {} no \
         change (threshold {}%, alpha {}, Holm over {} tests; intervals include the noise \
         allowance)\n",
        diff.iteration.verdict.as_str(),
        diff.events.len(),
        count(Verdict::Regressed),
        count(Verdict::Improved),
        count(Verdict::WithinNoise),
        count(Verdict::NoChange),
        100.0 * diff.threshold,
        diff.alpha,
        all.len()
    ));
    let listed = |v: Verdict| -> String {
        let names: Vec<String> = all
            .iter()
            .filter(|d| d.verdict == v)
            .map(|d| format!("{} ({})", label(d), change(d.ratio)))
            .collect();
        format!("{} {}: {}", names.len(), v.as_str(), names.join(", "))
    };
    let any = |v: Verdict| all.iter().any(|d| d.verdict == v);
    if any(Verdict::Improved) {
        out.push_str(&format!("{bullet}{}\n", listed(Verdict::Improved)));
    }
    if any(Verdict::Regressed) {
        out.push_str(&format!("{bullet}{}\n", listed(Verdict::Regressed)));
    } else {
        out.push_str(&format!("{bullet}no regression\n"));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{Iterations, Run, Stats};

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
            device: None,
            stream: None,
            merged: false,
            parent: None,
            stats: Stats::of(&samples),
            offsets_ns: vec![0; samples.len()],
            samples_ns: samples,
            sample_iters: iters,
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
            schema: crate::SCHEMA.to_owned(),
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
            },
            iterations: Iterations {
                count: walls.len() as u64,
                wall_ns: walls,
            },
            events,
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

    fn find<'a>(diff: &'a Diff, layer: &str, phase: &str) -> &'a EventDiff {
        diff.events
            .iter()
            .find(|e| e.layer.as_deref() == Some(layer) && e.phase.as_deref() == Some(phase))
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
                    matches!(e.verdict, Verdict::NoChange | Verdict::WithinNoise),
                    "{}",
                    render(&d, Format::Table)
                );
                assert!(e.ci_low <= e.ratio && e.ratio <= e.ci_high, "{e:?}");
            }
            assert!(render(&d, Format::Table).ends_with("no regression\n"));
        }
    }

    #[test]
    fn a_slower_layer_is_named_and_only_it() {
        let specs = model();
        let before = simulate(&specs, 50, 0.1, steady, &[], 1);
        let target = specs[3 * 3 + 1];
        assert_eq!(target.0, "top_backward");
        let after = simulate(&specs, 50, 0.1, steady, &[(target.0, 1.3)], 2);
        let d = diff(&before, &after, &DiffOptions::default());
        let text = render(&d, Format::Table);
        let regressed: Vec<&EventDiff> = d
            .events
            .iter()
            .filter(|e| e.verdict == Verdict::Regressed)
            .collect();
        assert_eq!(regressed.len(), 1, "{text}");
        assert_eq!(regressed[0].name, target.0);
        assert_eq!(regressed[0].layer.as_deref(), Some("top_mlp"));
        assert!((regressed[0].ratio - 1.3).abs() < 0.05, "{text}");
        assert!(regressed[0].ci_low > 1.02 && regressed[0].p_adjusted < 0.05);
        assert!(d
            .events
            .iter()
            .all(|e| e.verdict != Verdict::Improved || e.name == target.0));
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
        let before = simulate(&specs, 50, 0.1, steady, &[], 1);
        let target = specs[0];
        let after = simulate(&specs, 50, 0.1, steady, &[(target.0, 0.7)], 2);
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
        // 1% slower, 2000 samples per event with 2% noise: certainly different, not by 2%.
        let specs: Vec<Spec> = model().into_iter().take(6).collect();
        let before = simulate(&specs, 2000, 0.02, steady, &[], 1);
        let after = simulate(&specs, 2000, 0.02, steady, &[(specs[2].0, 1.01)], 2);
        let d = diff(
            &before,
            &after,
            &DiffOptions {
                resamples: 500,
                ..DiffOptions::default()
            },
        );
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
        // And the same change with a 0.5% threshold is a regression.
        let strict = DiffOptions {
            threshold: 0.0025,
            resamples: 500,
            ..DiffOptions::default()
        };
        let d = diff(&before, &after, &strict);
        assert_eq!(find(&d, "embedding", "update").verdict, Verdict::Regressed);
    }

    #[test]
    fn a_machine_slowdown_in_one_window_is_not_a_regression() {
        // In the after run the machine ran 40% slower while top_mlp/fwd was measured (its
        // window: iterations 10 + 9 x 50 .. 10 + 10 x 50), which also shows in the wall times.
        let specs = model();
        let before = simulate(&specs, 50, 0.1, steady, &[], 1);
        let window = |i: usize| (460..510).contains(&i);
        let after = simulate(
            &specs,
            50,
            0.1,
            |i| if window(i) { 1.4 } else { 1.0 },
            &[],
            2,
        );
        let d = diff(&before, &after, &DiffOptions::default());
        let e = find(&d, "top_mlp", "fwd");
        assert!(e.ratio > 1.3, "{e:?}");
        assert_eq!(
            e.verdict,
            Verdict::NoChange,
            "{}",
            render(&d, Format::Table)
        );
        assert!(!d.has_regression(), "{}", render(&d, Format::Table));
        // A slowdown over half the window is adjusted away sample by sample.
        let half = |i: usize| (485..510).contains(&i);
        let after = simulate(&specs, 50, 0.1, |i| if half(i) { 1.4 } else { 1.0 }, &[], 2);
        let d = diff(&before, &after, &DiffOptions::default());
        assert!(!d.has_regression(), "{}", render(&d, Format::Table));
    }

    #[test]
    fn a_slower_iteration_is_a_regression() {
        let specs: Vec<Spec> = model().into_iter().take(8).collect();
        let before = simulate(&specs, 50, 0.1, steady, &[], 1);
        let after = simulate(&specs, 50, 0.1, |_| 1.1, &[], 2);
        let d = diff(&before, &after, &DiffOptions::default());
        assert_eq!(d.iteration.id, "iteration");
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
            d.events[0].id,
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
            csv.lines().filter(|l| l.ends_with(",only before")).count(),
            2
        );
        assert_eq!(
            csv.lines().filter(|l| l.ends_with(",only after")).count(),
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
        assert_eq!(d.events[0].verdict, Verdict::NoChange);
        assert!(d.events[0].ratio.is_nan());
        assert_eq!(d.iteration.verdict, Verdict::NoChange);
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
        let before = simulate(&specs, 50, 0.1, steady, &[], 1);
        let after = simulate(&specs, 50, 0.1, steady, &[(specs[10].0, 1.5)], 2);
        let d = diff(&before, &after, &DiffOptions::default());
        let csv = render(&d, Format::Csv);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 2 + specs.len());
        assert!(lines[1].starts_with("iteration,iteration,,,0,"));
        assert!(lines.iter().all(|l| l.split(',').count() == 15));
        assert!(csv.contains(",regressed\n"));
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
        // 10 events, 5 samples each, every one 30% slower and fully separated: p = 2 / C(10, 5)
        // = 0.0079 alone, but 11 x 0.0079 = 0.087 after Holm: no event can be called.
        let specs: Vec<Spec> = model().into_iter().take(10).collect();
        let run = |factor: f64| {
            let events = specs
                .iter()
                .enumerate()
                .map(|(k, spec)| {
                    let samples = (0..5).map(|i| ((100 + i) as f64 * factor) as u64).collect();
                    event(spec, samples, (1..=5).collect(), k as u32)
                })
                .collect();
            profile(0, 1, 5, vec![10_000; 6], events)
        };
        let d = diff(&run(1.0), &run(1.3), &DiffOptions::default());
        for e in &d.events {
            assert!((e.p_value - 2.0 / 252.0).abs() < 1e-9, "{e:?}");
            assert!(e.p_adjusted > 0.05 && e.ci_low > 1.2, "{e:?}");
            assert_eq!(e.verdict, Verdict::NoChange);
        }
        // With 6 samples each, 2 / C(12, 6) = 0.0022, x 11 = 0.024: all regressed.
        let specs6 = specs.clone();
        let run6 = |factor: f64| {
            let events = specs6
                .iter()
                .enumerate()
                .map(|(k, spec)| {
                    let samples = (0..6).map(|i| ((100 + i) as f64 * factor) as u64).collect();
                    event(spec, samples, (1..=6).collect(), k as u32)
                })
                .collect();
            profile(0, 1, 6, vec![10_000; 7], events)
        };
        let d = diff(&run6(1.0), &run6(1.3), &DiffOptions::default());
        assert!(d.events.iter().all(|e| e.verdict == Verdict::Regressed));
    }

    #[test]
    fn block_bootstrap_sees_slow_drifts() {
        // A series whose level drifts slowly (a wave of 400 values) and the same values
        // shuffled: the block interval of the first is much wider; with blocks of one value both
        // agree with the plain bootstrap.
        let mut rng = SplitMix64::new(5);
        let drifting: Vec<f64> = (0..1000)
            .map(|i| {
                let level = 1000.0 + 300.0 * (i as f64 * std::f64::consts::TAU / 400.0).sin();
                level + rng.below(50) as f64
            })
            .collect();
        let mut shuffled = drifting.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.below(i + 1));
        }
        let width = |(lo, hi): (f64, f64)| hi - lo;
        let blocked = block_bootstrap_median_ratio(&drifting, 50, &drifting, 50, 1000, 0.95, 1);
        let iid = block_bootstrap_median_ratio(&shuffled, 50, &shuffled, 50, 1000, 0.95, 1);
        assert!(blocked.0 < 1.0 && 1.0 < blocked.1, "{blocked:?}");
        assert!(width(blocked) > 2.0 * width(iid), "{blocked:?} vs {iid:?}");
        let ones = block_bootstrap_median_ratio(&drifting, 1, &shuffled, 1, 1000, 0.95, 1);
        let plain = stats::bootstrap_median_ratio(&drifting, &shuffled, 1000, 0.95, 1);
        assert!(
            (width(ones) - width(plain)).abs() < 0.5 * width(plain),
            "{ones:?} {plain:?}"
        );
        // Wander: small for the shuffled series, large for the drifting one, 0 for a constant.
        let medians = |w: &[f64]| -> Vec<f64> { w.chunks(50).map(stats::median).collect() };
        let (steady, drifts) = (wander(&medians(&shuffled)), wander(&medians(&drifting)));
        assert!(
            drifts > 0.15 && drifts > 3.0 * steady,
            "{drifts} vs {steady}"
        );
        assert_eq!(wander(&[5.0; 10]), 0.0);
        assert_eq!(wander(&[5.0, 6.0]), 0.0); // too few blocks
    }

    #[test]
    fn fast_enough_in_debug_builds() {
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
        assert!(elapsed.as_secs_f64() < 1.0, "{elapsed:?}");
    }
}
