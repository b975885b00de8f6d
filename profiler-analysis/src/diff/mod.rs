//! Comparing two runs: `prof diff before.json after.json`, by [`diff`] (one run a side) or
//! [`diff_runs`] (several runs a side), printed by [`render`].
//!
//! Events are matched by identity ([`event_key`]); each matched event's samples, and the
//! iteration's wall times, are compared beyond how far the machine moved ([`Machine`]: the
//! events' shared shift and their spread, [`RunShape`]: how disturbed each run was), and each
//! gets a verdict (regressed, improved, within noise, no change, inconclusive) after
//! Holm-Bonferroni over the whole family. The exact definitions (ratio, shift and spread,
//! instability, wall-time drift, allowance, interval, p-value, detectable, the iteration's
//! blocks, the verdicts) are in the repository's `docs/reference.md`, section "Definitions of
//! `prof diff`"; how they were measured in `docs/overhead.md` ("How `prof diff` was checked").

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
