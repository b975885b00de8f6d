//! Comparing two runs: `prof diff before.json after.json`.
//!
//! Events are matched by identity, their probe's id and occurrence ([`event_key`]); those found
//! in one run only are listed ([`Diff::only_before`], [`Diff::only_after`]). Each matched event's
//! samples (`samples_ns`) are compared between the runs, and so is the whole iteration, through
//! the wall times of the measured iterations (iteration `i >= run.warmup`, `wall_ns[i - first]`;
//! all of them when there is none; in `continuous` mode, every iteration listed: the last
//! window's).
//!
//! Two runs of the same code never take the same time: the machine is busier or quieter, a run
//! is preempted by other processes, memory and caches are laid out differently. The comparison
//! estimates how far the machine moved from the evidence that is about the machine, the events
//! themselves, and calls an event changed only when it moved beyond that.
//!
//! # An event
//!
//! - **ratio** = median(after samples) / median(before samples): above 1 is slower. 0/0 counts as
//!   1, x/0 as infinity; NaN (`null` in JSON) when a side has no sample.
//! - **The machine** ([`Machine`]): the *shift* is the median, over the matched events, of
//!   `ln(ratio)`, the part of every event's change that the events share; the *spread* is 1.4826
//!   x the median absolute deviation of those logs, how much events differ from one another in how
//!   they moved (memory layout, caches, how sensitive each is to a busy machine). Both are 0 with
//!   fewer than [`MIN_EVENTS_FOR_SPREAD`] events. A few events that really changed move neither.
//! - **Instability** of an event: 1.4826 x the median absolute deviation of the logarithms of its
//!   samples, the larger of the two runs', and at least [`MIN_INSTABILITY`] (1%; drift, which
//!   compares windows of one run, uses 0: [`DiffOptions::min_instability`]). An event whose
//!   runs scatter within a run (a wait on another thread, a memory-bound step) is the one whose
//!   typical time moves most between two runs of the same code; a steady event (a fixed
//!   computation) moves least, though a few percent from where code and data land in memory.
//! - **Wall-time drift**, weighed only as far as the events agree with it: the *rest* of an
//!   iteration is its wall time minus the event's sample, and an event's rest drift is
//!   `ln(median rest after / median rest before)` over the iterations in which its samples were
//!   taken: how much slower the code around it ran. Preemption stretches iterations, not the runs
//!   of a steady event, so a drift is used only as far as the *other* events followed theirs
//!   ([`Machine::follow`], between 0 and 1: the median, weighted by the size of the drift, of
//!   `ln(ratio) / drift` over the events whose windows drifted clearly, leaving out the event
//!   judged).
//! - **Allowance** A (log scale) = `z x hypot(spread, INSTABILITY_FACTOR x instability) + follow x
//!   |rest drift|`, where z = Phi^-1(1 - alpha / (2m)) for m matched events (each event's
//!   allowance holds for the whole family at once). [`INSTABILITY_FACTOR`] was measured, not
//!   assumed: see "How `prof diff` was checked" in docs/overhead.md.
//! - **Confidence interval** (`ci_low`, `ci_high`) of the event's own change, beyond the
//!   machine's: the bootstrap percentile interval, at confidence 1 - alpha (95% by default), of
//!   median(after) / median(before) of the samples, each side resampled independently
//!   `resamples` times ([`stats::bootstrap_median_ratio`]), divided by `1 + shift`, and widened
//!   by the allowance: `[low e^-A, high e^A] / (1 + shift)`.
//! - **p-value**: the two-sided Mann-Whitney U test ([`stats::mann_whitney_p`]) of the before
//!   samples against the after samples divided by `1 + shift` and brought back by the allowance
//!   (divided by e^A when slower, multiplied when faster); 1 when the event's own change lies
//!   within `[e^-A, e^A]`.
//! - **detectable**: the smallest change beyond the machine's that this comparison could call a
//!   regression, `(1 + threshold) e^A x ratio / low - 1` (the allowance and the interval's own
//!   width at these sample counts); `null` when the sample counts are too small for any change to
//!   pass the family's significance level. "No change" means "no change of at least this much".
//!
//! # The iteration
//!
//! ratio = median(after walls) / median(before walls). Consecutive iterations are not
//! independent (the machine drifts), so each run's measured iterations are cut into blocks of
//! `repeat` iterations (one event's window in sample mode; shorter when needed to make at least 5
//! blocks). The interval is a block bootstrap (whole blocks resampled) and the p-value compares
//! the two runs' block medians. The allowance is `A = SPREAD_Z x hypot(wb, wa) + |Da - Db|`,
//! plus `|Sa - Sb|` when one run looks disturbed, where a run's *wander* w is 1.4826 x the median absolute deviation of ln(block
//! median), how much the machine's speed wandered within the run; its *excess* D is `ln(median /
//! fastest 5%)` of its iterations, how far its typical iteration stands above an undisturbed
//! one; and its *slow share* S is the share of its iterations that took over [`SLOW_ITERATION`]
//! times its fastest ([`RunShape`]): a run disturbed by other processes is slower in its
//! undisturbed iterations too (caches refilled after every switch), by a share that grows with
//! how often it was disturbed. A run looks *disturbed* when at least [`DISTURBED_SHARE`] of its iterations
//! took over [`SLOW_ITERATION`] times its fastest, [`DISTURBED_MARGIN`] more than the other run's;
//! the output says so, and how far that widened the intervals. The iteration is not corrected by
//! the events' shift: a change that slows every event alike shows there and only there.
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
//! - **no change**: `p_adjusted >= alpha`, and the interval lies within `[1 - t, 1 + t]`: a
//!   change of the threshold's size is ruled out (an equivalence test), "no change of t or
//!   more";
//! - **inconclusive**: `p_adjusted >= alpha`, but the interval reaches beyond `1 - t` or `1 + t`
//!   (or there is none): a change of the threshold's size could have gone unseen, the runs are
//!   too noisy, too short, or too disturbed to tell. A gate must not read it as "no regression":
//!   `prof diff --fail-on-regression` exits 3 when nothing regressed but something is
//!   inconclusive. More samples (`PROF_REPEAT`), a quieter machine, or a larger threshold (the
//!   change that matters to you) settle it.

use std::collections::HashMap;

use serde::Serialize;

use super::stats::{self, SplitMix64};
use super::{event_key, text, Format};
pub use machine::{
    normal_quantile, robust_spread, Machine, RunShape, DISTURBED_MARGIN, DISTURBED_SHARE,
    MIN_EVENTS_FOR_SPREAD, MIN_INSTABILITY, SLOW_ITERATION,
};
use machine::{Pair, Side};
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
    /// The least instability an event is given ([`MIN_INSTABILITY`] between two runs of a
    /// program; 0 between windows of one run, as drift compares them, where code and data stay
    /// where they are).
    pub min_instability: f64,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            threshold: 0.02,
            alpha: 0.05,
            resamples: 2000,
            seed: 0x5EED_D1FF,
            min_instability: MIN_INSTABILITY,
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
    /// No significant difference, but a change of the threshold's size could have gone unseen
    /// (the interval reaches beyond the threshold on either side, or there is none).
    Inconclusive,
}

impl Verdict {
    /// `"improved"`, `"regressed"`, `"no change"`, `"within noise"` or `"inconclusive"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no change",
            Verdict::WithinNoise => "within noise",
            Verdict::Inconclusive => "inconclusive",
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
    /// How much the interval was widened on each side beyond the bootstrap's, as a relative
    /// change (`e^A - 1` for the allowance A of the module documentation).
    pub allowance: f64,
    /// The smallest change beyond the machine's that this comparison could call a regression,
    /// as a relative change (0.12: 12%); `None` (`null`) when the sample counts are too small for
    /// any change to be significant, or a side has no sample.
    pub detectable: Option<f64>,
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
    /// How far the events moved together: the machine's part of their changes.
    pub machine: Machine,
    /// The shapes of the two runs' measured iterations, `before` then `after`: whether one
    /// looks disturbed.
    pub runs: Runs,
    /// Several runs a side ([`diff_runs`]): how many before and after; absent for one run a
    /// side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_compared: Option<(usize, usize)>,
    /// Several runs a side: whether the two sides ran under the same load ([`Load`]); absent
    /// for one run a side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<Load>,
    /// One run a side: how many runs a side would resolve a change of the threshold for an
    /// event moving between runs as these events moved around their shared shift
    /// ([`runs_needed`]); absent with several runs a side or fewer than
    /// [`MIN_EVENTS_FOR_SPREAD`] events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_needed: Option<usize>,
}

/// The shapes of the two runs' measured iterations.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Runs {
    /// The `before` run.
    pub before: RunShape,
    /// The `after` run.
    pub after: RunShape,
}

impl Diff {
    /// True when the iteration or any event regressed.
    pub fn has_regression(&self) -> bool {
        self.iteration.verdict == Verdict::Regressed
            || self.events.iter().any(|e| e.verdict == Verdict::Regressed)
    }

    /// True when nothing regressed but the iteration or some event is inconclusive: a
    /// regression of the threshold's size could have gone unseen.
    pub fn is_inconclusive(&self) -> bool {
        !self.has_regression()
            && std::iter::once(&self.iteration)
                .chain(&self.events)
                .any(|e| e.verdict == Verdict::Inconclusive)
    }
}

/// How many times an event's instability (the spread of its samples within a run, see the
/// module documentation) its typical time may move between two runs of the same code, in
/// standard deviations; measured on this project's examples, quiet and under load
/// (docs/overhead.md, "How `prof diff` was checked").
pub const INSTABILITY_FACTOR: f64 = 2.5;

/// How many standard deviations of the runs' wander (see the module documentation) widen the
/// iteration's confidence interval.
pub const SPREAD_Z: f64 = 2.0;

/// Compares two runs: every event found in both, by its identity ([`event_key`]), and the whole
/// iteration. See the module documentation for the statistics and the verdicts.
pub fn diff(before: &Profile, after: &Profile, options: &DiffOptions) -> Diff {
    let confidence = (1.0 - options.alpha).clamp(0.0, 1.0);
    let mut seeds = SplitMix64::new(options.seed);

    let (matched, only_before, only_after) = match_events(before, after);
    let pairs: Vec<Pair> = matched
        .iter()
        .map(|(b, a)| Pair::new(Side::of(before, b), Side::of(after, a)))
        .collect();
    let machine = machine::machine(&pairs);
    let family = pairs.len() + 1;
    let z = normal_quantile(1.0 - options.alpha / (2.0 * pairs.len().max(1) as f64));
    let follows = machine::follow_each(&pairs);
    // Each event's bootstrap has a seed of its own, drawn in order, so that the events can be
    // compared on several threads with the same results.
    let event_seeds: Vec<u64> = pairs.iter().map(|_| seeds.next_u64()).collect();
    let mut events: Vec<EventDiff> = in_parallel(matched.len(), |i| {
        let (pair, follow) = (&pairs[i], follows[i]);
        let allowance = z * machine
            .spread
            .hypot(INSTABILITY_FACTOR * pair.instability().max(options.min_instability))
            + follow * pair.rest_drift.map_or(0.0, f64::abs);
        let judged = Judged {
            shift: machine.log_shift(),
            allowance,
            confidence,
            family,
        };
        compare_event(
            matched[i].1.identity(),
            pair,
            &judged,
            options,
            event_seeds[i],
        )
    });

    let wb = stats::as_f64(crate::measured_walls(before));
    let wa = stats::as_f64(crate::measured_walls(after));
    let (run_before, run_after) = machine::shapes(&wb, &wa);
    let (mut iteration, width) = iteration::compare(
        (before, after),
        (&wb, &wa),
        (&run_before, &run_after),
        confidence,
        options.resamples,
        seeds.next_u64(),
    );
    let counts = (wb.len(), wa.len());
    let allowance = iteration.allowance.ln_1p();
    iteration.detectable = detectable(counts, width, allowance, options, family);

    // Holm over the whole family: the iteration and every event.
    judge_family(&mut iteration, &mut events, options, [before, after]);

    Diff {
        iteration,
        events,
        only_before,
        only_after,
        threshold: options.threshold,
        alpha: options.alpha,
        memory: memory::compare(&matched),
        runs: Runs {
            before: run_before,
            after: run_after,
        },
        runs_compared: None,
        load: None,
        runs_needed: (machine.events >= MIN_EVENTS_FOR_SPREAD)
            .then(|| runs::runs_needed(machine.spread, options.threshold, options.alpha))
            .flatten(),
        machine,
    }
}

/// Fewest events compared on more than one thread.
const PARALLEL_FROM: usize = 256;

/// `(0..n).map(f)`, in order, on as many threads as the machine has (up to one per
/// [`PARALLEL_FROM`] items), each taking a contiguous share.
fn in_parallel<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(n / PARALLEL_FROM)
        .max(1);
    if threads == 1 {
        return (0..n).map(f).collect();
    }
    let share = n.div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let parts: Vec<_> = (0..n)
            .step_by(share)
            .map(|start| {
                scope.spawn(move || (start..(start + share).min(n)).map(f).collect::<Vec<R>>())
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|part| part.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect::<Vec<R>>()
    })
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

/// Holm over the whole family (the iteration and every event), then each row's verdict; an
/// event's change below twice the cost of an empty measurement in any of `runs` is the clock's,
/// not the code's.
fn judge_family<'a>(
    iteration: &mut EventDiff,
    events: &mut [EventDiff],
    options: &DiffOptions,
    runs: impl IntoIterator<Item = &'a Profile>,
) {
    let mut p: Vec<f64> = vec![iteration.p_value];
    p.extend(events.iter().map(|e| e.p_value));
    let adjusted = stats::holm(&p);
    iteration.p_adjusted = adjusted[0];
    iteration.verdict = verdict(iteration, options, 0.0);
    let floor = runs
        .into_iter()
        .map(|p| p.run.timer_floor_ns)
        .max()
        .unwrap_or(0);
    let resolution = 2.0 * floor as f64;
    for (e, &q) in events.iter_mut().zip(&adjusted[1..]) {
        e.p_adjusted = q;
        e.verdict = verdict(e, options, resolution);
    }
}

/// The verdict rule of the module documentation; `resolution` is the smallest change in
/// nanoseconds that can be called a regression or an improvement.
fn verdict(d: &EventDiff, options: &DiffOptions, resolution: f64) -> Verdict {
    let significant = d.p_adjusted < options.alpha; // false for NaN
    let resolved = (d.after_median_ns - d.before_median_ns).abs() >= resolution;
    if !significant {
        // "No change" only where the interval rules out a change of the threshold's size.
        let t = options.threshold;
        if d.ci_low >= 1.0 - t && d.ci_high <= 1.0 + t {
            Verdict::NoChange
        } else {
            Verdict::Inconclusive
        }
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

/// How one event is judged: the machine's shift and the event's allowance (both on the log
/// scale), the confidence of the interval and the size of the family of tests.
struct Judged {
    shift: f64,
    allowance: f64,
    confidence: f64,
    family: usize,
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
    identity: Identity,
    pair: &Pair,
    judged: &Judged,
    options: &DiffOptions,
    seed: u64,
) -> EventDiff {
    let (before, after) = (&pair.before.samples, &pair.after.samples);
    let mut width = f64::NAN;
    let interval = if before.is_empty() || after.is_empty() {
        (f64::NAN, f64::NAN, 1.0)
    } else {
        let (lo, hi) = stats::bootstrap_median_ratio(
            before,
            after,
            options.resamples,
            judged.confidence,
            seed,
        );
        width = ratio(pair.after.median, pair.before.median, 1) / lo;
        let machine = judged.shift.exp();
        let factor = judged.allowance.exp();
        let own: Vec<f64> = after.iter().map(|x| x / machine).collect();
        let p = p_beyond(before, &own, factor);
        (lo / machine / factor, hi / machine * factor, p)
    };
    let mut row = unjudged(identity, before, after, interval);
    row.allowance = judged.allowance.exp_m1();
    let counts = (before.len(), after.len());
    row.detectable = detectable(counts, width, judged.allowance, options, judged.family);
    row
}

/// The smallest change a comparison could call a regression (see the module documentation):
/// `(1 + threshold) x e^A x width - 1`, where `width` is `ratio / low` of the bootstrap interval
/// before the allowance A (its lower half-width at these sample counts). `None` when a side has
/// no sample, or when even two sets of samples entirely apart would not be significant at these
/// sample counts once adjusted over the `family`.
pub(super) fn detectable(
    (nb, na): (usize, usize),
    width: f64,
    allowance: f64,
    options: &DiffOptions,
    family: usize,
) -> Option<f64> {
    if nb == 0 || na == 0 || !width.is_finite() || width <= 0.0 {
        return None;
    }
    // Above 20 samples a side, complete separation is significant for any family below 10^6.
    if nb.min(na) <= 20 {
        let below: Vec<f64> = (0..nb).map(|i| i as f64).collect();
        let above: Vec<f64> = (nb..nb + na).map(|i| i as f64).collect();
        if stats::mann_whitney_p(&below, &above) * family as f64 >= options.alpha {
            return None;
        }
    }
    Some((1.0 + options.threshold) * allowance.exp() * width - 1.0)
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
        allowance: 0.0,
        detectable: None,
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

mod iteration;
mod machine;
mod runs;
pub use runs::{diff_runs, runs_needed, Load, LOAD_ALPHA, LOAD_MARGIN, LOAD_MIN_RUNS};
pub mod memory;
mod render;
pub(crate) use render::change;
pub use render::render;

#[cfg(test)]
pub(crate) mod tests;
