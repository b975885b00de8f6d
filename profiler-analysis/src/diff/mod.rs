//! Comparing two runs: `prof diff before.json after.json`.
//!
//! Events are matched by identity, their probe's id and occurrence ([`event_key`]); those found
//! in one run only are listed ([`Diff::only_before`], [`Diff::only_after`]). Each matched event's
//! samples (`samples_ns`) are compared between the runs, and so is the whole iteration, through
//! the wall times of the measured iterations (iteration `i >= run.warmup`, `wall_ns[i - first]`;
//! all of them when there is none; in `continuous` mode, every iteration listed: the last
//! window's).
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
//!   exceed the threshold, or one smaller than the clock resolves (the medians differ by less
//!   than twice `run.timer_floor_ns`, the cost of an empty measurement);
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
use profiler_format::{Event, Identity, Profile};

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
    /// Which event (`id` and `name` `"iteration"` for the whole iteration); flattened, so that
    /// JSON has its `id`, `name`, `layer`, `phase` and `occurrence` as keys of the row.
    #[serde(flatten)]
    pub identity: Identity,
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
    /// What a run of each event allocates, before and after, for the events with memory
    /// figures in both runs (exact counts: see [`memory`]); absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<memory::MemoryDiff>,
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

    let (pairs, only_before, only_after) = match_events(before, after);

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
    iteration.verdict = verdict(&iteration, options, 0.0);
    // Below twice the cost of an empty measurement, a change is the clock's, not the code's.
    let resolution = 2.0 * before.run.timer_floor_ns.max(after.run.timer_floor_ns) as f64;
    for (e, &q) in events.iter_mut().zip(&adjusted[1..]) {
        e.p_adjusted = q;
        e.verdict = verdict(e, options, resolution);
    }

    Diff {
        iteration,
        events,
        only_before,
        only_after,
        threshold: options.threshold,
        alpha: options.alpha,
        memory: memory::compare(&pairs),
    }
}

/// The events of both runs, matched by identity ([`event_key`]; the first of duplicated keys
/// wins), in the `after` run's order, and those found only before or only after.
fn match_events<'a>(
    before: &'a Profile,
    after: &'a Profile,
) -> (Vec<(&'a Event, &'a Event)>, Vec<Missing>, Vec<Missing>) {
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
    (pairs, only_before, only_after)
}

/// An event of one run only, as listed.
fn missing(e: &Event) -> Missing {
    Missing {
        id: e.id.clone(),
        name: e.name.clone(),
        occurrence: e.occurrence,
    }
}

/// The verdict rule of the module documentation; `resolution` is the smallest change in
/// nanoseconds that can be called a regression or an improvement.
fn verdict(d: &EventDiff, options: &DiffOptions, resolution: f64) -> Verdict {
    let significant = d.p_adjusted < options.alpha; // false for NaN
    let resolved = (d.after_median_ns - d.before_median_ns).abs() >= resolution;
    if !significant {
        Verdict::NoChange
    } else if !resolved {
        Verdict::WithinNoise
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
        let iterations = &profile.iterations;
        let aligned = !raw.is_empty()
            && event.sample_iters.len() == raw.len()
            && event
                .sample_iters
                .iter()
                .all(|&i| iterations.wall_of(u64::from(i)).is_some());
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
            .map(|&i| iterations.wall_of(u64::from(i)).unwrap_or(0) as f64)
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
    let interval = if n == 0 {
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
    unjudged(event.identity(), &before.raw, &after.raw, interval)
}

/// The row of a comparison of `before` and `after` (raw samples) whose interval and p-value are
/// known, `(ci_low, ci_high, p_value)`; the p-adjustment and verdict come later.
fn unjudged(
    identity: Identity,
    before: &[f64],
    after: &[f64],
    (ci_low, ci_high, p_value): (f64, f64, f64),
) -> EventDiff {
    let before_median = stats::median(before);
    let after_median = stats::median(after);
    EventDiff {
        identity,
        before_n: before.len(),
        after_n: after.len(),
        before_median_ns: before_median,
        after_median_ns: after_median,
        ratio: ratio(after_median, before_median, before.len().min(after.len())),
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
    let wb = stats::as_f64(crate::measured_walls(before));
    let wa = stats::as_f64(crate::measured_walls(after));
    let n = wb.len().min(wa.len());
    let interval = if n == 0 {
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
    unjudged(Identity::named("iteration"), &wb, &wa, interval)
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

pub mod memory;
mod render;
pub use render::render;

#[cfg(test)]
pub(crate) mod tests;
