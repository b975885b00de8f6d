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
    normal_quantile, Machine, RunShape, DISTURBED_MARGIN, DISTURBED_SHARE, MIN_EVENTS_FOR_SPREAD,
    MIN_INSTABILITY, SLOW_ITERATION,
};
use profiler_format::{Event, Identity, Profile};
use profiler_tables::descriptive_stats::robust_spread;

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
    /// The instability an event is given when the events are too few to measure the spread
    /// between them (fewer than [`MIN_EVENTS_FOR_SPREAD`]; from there on the spread is
    /// measured, and may be below it): [`MIN_INSTABILITY`] between two runs of a program; 0
    /// between windows of one run, as drift compares them, where code and data stay where
    /// they are.
    pub min_instability: f64,
    /// Several runs a side were made in rounds, the K-th before and K-th after adjacent
    /// (`prof ab`, `prof diff --paired`): compare round by round.
    pub paired: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            threshold: 0.02,
            alpha: 0.05,
            resamples: 2000,
            seed: 0x5EED_D1FF,
            min_instability: MIN_INSTABILITY,
            paired: false,
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
    /// What the verdict judges: the `before` side's fastest-5% time ([`stats::fast`]; several
    /// runs a side: the geometric mean of the runs' fastest-5% times).
    pub before_ns: f64,
    /// The same for the `after` side.
    pub after_ns: f64,
    /// The typical time: the median of the `before` samples (several runs a side: the median
    /// of the runs' medians).
    pub before_median_ns: f64,
    /// The same for the `after` side.
    pub after_median_ns: f64,
    /// `after_ns / before_ns`: the change judged. The interval holds it.
    pub ratio: f64,
    /// `after_median_ns / before_median_ns`: the change of the typical time.
    pub typical_ratio: f64,
    /// `regressed` (or `improved`) when the typical time moved beyond the threshold,
    /// significantly, and beyond what the fastest-5% time's interval allows: a new occasional
    /// stall, or one gone. A finding of its own, never a verdict on the code's cost, and no
    /// part of the gate; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typical: Option<Verdict>,
    /// The event's share of the iteration: its `before_ns` over the iteration's (1 for the
    /// iteration; NaN when unknown).
    pub share: f64,
    /// Whether the row decides the gate ([`Diff::gate`]): the iteration always; an event when
    /// its share of the iteration is at least the threshold, or its change moved the
    /// iteration by the threshold (`share x |ratio - 1|`), except when it is inconclusive and
    /// what its interval leaves open could not move the iteration by the threshold
    /// (`share x reach < threshold`, the reach being how far the interval goes from no change).
    pub matters: bool,
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
    /// What the verdicts judge: `"fastest 5%"` (see [`stats::fast`]).
    pub estimator: &'static str,
    /// Several runs a side, paired by round (`prof ab`, `prof diff --paired`): each round's
    /// ratio is the unit.
    pub paired: bool,
    /// What a run of each event allocates, before and after, for the events with memory
    /// figures in both runs (exact counts: see [`memory`]); absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<memory::MemoryDiff>,
    /// How far the events moved together: the machine's part of their changes.
    pub machine: Machine,
    /// The shapes of the two runs' measured iterations, `before` then `after`: whether one
    /// looks disturbed. One run a side only: not written with several (whose load is `load`),
    /// where it held zeros.
    #[serde(skip_serializing_if = "Runs::is_empty")]
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
    /// What the comparison could not do as asked (events of one probe and occurrence on
    /// several streams: only the first compared); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The shapes of the two runs' measured iterations.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Runs {
    /// The `before` run.
    pub before: RunShape,
    /// The `after` run.
    pub after: RunShape,
}

impl Runs {
    /// No run's shape is known (several runs a side).
    pub fn is_empty(&self) -> bool {
        self.before.iterations == 0 && self.after.iterations == 0
    }
}

/// What a comparison decides, from the rows that matter ([`EventDiff::matters`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Nothing that matters regressed or is unresolved (exit status 0).
    Pass,
    /// The iteration or an event that matters regressed (exit status 1).
    Regressed,
    /// Nothing that matters regressed, but the iteration or an event that matters is
    /// inconclusive: a regression of the threshold's size could have gone unseen (exit
    /// status 3).
    Inconclusive,
}

impl Diff {
    /// The rows that decide the gate: the iteration and the events that matter.
    pub fn deciding(&self) -> impl Iterator<Item = &EventDiff> {
        std::iter::once(&self.iteration).chain(self.events.iter().filter(|e| e.matters))
    }

    /// The gate: regressed when a row that matters regressed, inconclusive when one is
    /// inconclusive, else pass. Events too small to matter are reported, never decide.
    pub fn gate(&self) -> Gate {
        if self.deciding().any(|e| e.verdict == Verdict::Regressed) {
            Gate::Regressed
        } else if self.deciding().any(|e| e.verdict == Verdict::Inconclusive) {
            Gate::Inconclusive
        } else {
            Gate::Pass
        }
    }

    /// True when the iteration or an event that matters regressed.
    pub fn has_regression(&self) -> bool {
        self.gate() == Gate::Regressed
    }

    /// True when nothing that matters regressed but the iteration or an event that matters is
    /// inconclusive: a regression of the threshold's size could have gone unseen.
    pub fn is_inconclusive(&self) -> bool {
        self.gate() == Gate::Inconclusive
    }
}

/// Marks the rows that decide the gate (see [`EventDiff::matters`]) and each event's share of
/// the iteration; after the verdicts.
pub(crate) fn mark_matters(iteration: &mut EventDiff, events: &mut [EventDiff], threshold: f64) {
    iteration.share = 1.0;
    iteration.matters = true;
    let whole = iteration.before_ns;
    for e in events {
        e.share = if whole > 0.0 && e.before_ns.is_finite() {
            e.before_ns / whole
        } else {
            f64::NAN
        };
        let moved = e.share * (e.ratio - 1.0).abs();
        // Without a measured iteration no event can be shown small: each decides (before, a
        // +100% event of such a profile was "too small to matter", and the gate inconclusive).
        let unknown_whole = (whole.is_nan() || whole <= 0.0) && e.before_ns.is_finite();
        let large =
            unknown_whole || e.share >= threshold || (moved.is_finite() && moved >= threshold);
        // Unresolved, it holds the gate only if what it leaves open could move the iteration
        // by the threshold.
        let open = e.share * reach(e);
        e.matters =
            large && (e.verdict != Verdict::Inconclusive || open.is_nan() || open >= threshold);
    }
}

/// How far a row's interval reaches from no change (infinite without one).
pub(crate) fn reach(e: &EventDiff) -> f64 {
    let r = (e.ci_high - 1.0).max(1.0 - e.ci_low);
    if r.is_nan() {
        f64::INFINITY
    } else {
        r
    }
}

/// Compares two runs: every event found in both, by its identity ([`event_key`]), and the whole
/// iteration. See the module documentation for the statistics and the verdicts.
pub fn diff(before: &Profile, after: &Profile, options: &DiffOptions) -> Diff {
    let mut seeds = SplitMix64::new(options.seed);
    let (matched, only_before, only_after) = match_events(before, after);
    let sides: Vec<(Vec<f64>, Vec<f64>)> = matched
        .iter()
        .map(|(b, a)| (stats::as_f64(&b.samples_ns), stats::as_f64(&a.samples_ns)))
        .collect();
    // The machine: the events' shared change of their fastest-5% times and the spread around it.
    let logs: Vec<f64> = sides
        .iter()
        .filter_map(|(b, a)| log_ratio(stats::fast(b), stats::fast(a)))
        .collect();
    let machine = Machine::of(&logs);
    // How far one event moves between two runs beyond its samples' own scatter: as far as
    // these events moved around their shared shift; with too few events to tell, the floor.
    let between = if machine.events >= MIN_EVENTS_FOR_SPREAD {
        machine.spread
    } else {
        options.min_instability
    };
    let judged = Judged {
        shift: machine.log_shift(),
        between,
        z: normal_quantile(1.0 - options.alpha / 2.0),
        resamples: options.resamples,
        threshold: options.threshold,
        alpha: options.alpha,
        family: matched.len() + 1,
    };
    // Each event's bootstrap has a seed of its own, drawn in order, so that the events can be
    // compared on several threads with the same results.
    let event_seeds: Vec<u64> = sides.iter().map(|_| seeds.next_u64()).collect();
    let mut events: Vec<EventDiff> = in_parallel(matched.len(), |i| {
        let (b, a) = &sides[i];
        // An event whose samples scatter (memory-bound code, a wait on another thread) is also
        // the one whose fastest samples move most between runs: its own allowance grows with
        // its scatter.
        let own = Judged {
            between: judged
                .between
                .hypot(SCATTER_FACTOR * scatter(b).max(scatter(a))),
            ..judged
        };
        one_run_row(matched[i].1.identity(), b, a, &own, event_seeds[i])
    });
    let wb = stats::as_f64(profiler_tables::rows::measured_walls(before));
    let wa = stats::as_f64(profiler_tables::rows::measured_walls(after));
    let (run_before, run_after) = machine::shapes(&wb, &wa);
    // The iteration is judged on its whole change: a change that slows every event alike shows
    // there, and only there.
    let whole = Judged {
        shift: 0.0,
        ..judged
    };
    let mut iteration = one_run_row(
        Identity::named("iteration"),
        &wb,
        &wa,
        &whole,
        seeds.next_u64(),
    );
    // Holm over the whole family: the iteration and every event.
    judge_family(&mut iteration, &mut events, options, [before, after]);
    mark_matters(&mut iteration, &mut events, options.threshold);
    typical_one_run(&matched, &mut events, options);

    Diff {
        iteration,
        events,
        only_before,
        only_after,
        threshold: options.threshold,
        alpha: options.alpha,
        estimator: ESTIMATOR,
        paired: false,
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
        warnings: super::run_differences([before, after], "the runs compared")
            .into_iter()
            .chain(super::shared_key_warning([before, after]))
            .collect(),
    }
}

/// How far one event's fastest-5% time moves between two runs of the same code beyond the
/// events' shared shift, in units of its samples' own scatter ([`scatter`]), with one run a
/// side. Measured on the recorded corpus (tests/data/diff-corpus, every A/A pair of dlrm and
/// waits, quiet, loaded and bursty: docs/overhead.md, "The estimator"): with 2, one change in a
/// thousand of an event of 2% of the iteration or more falls outside its 95% interval before
/// Holm's correction; with 1.5, three; with 1, fourteen.
pub const SCATTER_FACTOR: f64 = 2.0;

/// An event's scatter within a run, on the log scale: the smaller of [`robust_spread`] of the
/// logarithms of its positive samples and `ln(q30 / q5)`, how far its 30th percentile stands
/// above its fastest 5% (0.05: about 5%). Delays only add, so the spread of the fastest part
/// says what the code's own variation is when delays stretch most samples (a rank sharing its
/// cores, a wait that a busy machine wakes late), where the spread of all the samples would
/// say mostly how busy the machine was.
pub fn scatter(samples: &[f64]) -> f64 {
    let mut positive: Vec<f64> = samples.iter().copied().filter(|&x| x > 0.0).collect();
    if positive.len() < 2 {
        return 0.0;
    }
    let logs: Vec<f64> = positive.iter().map(|x| x.ln()).collect();
    positive.sort_by(f64::total_cmp);
    let q = |p: f64| positive[(p * (positive.len() - 1) as f64).floor() as usize];
    robust_spread(&logs).min((q(0.30) / q(0.05)).ln())
}

/// How the verdicts name their estimator.
pub const ESTIMATOR: &str = "fastest 5%";

/// `ln(after / before)` for two positive values.
pub(crate) fn log_ratio(before: f64, after: f64) -> Option<f64> {
    (before > 0.0 && after > 0.0 && before.is_finite() && after.is_finite())
        .then(|| (after / before).ln())
}

/// How one run a side is judged: the machine's shift (log scale), how far an event moves
/// between runs (log scale), the normal quantile of the interval, and the bootstrap's size.
#[derive(Clone, Copy)]
struct Judged {
    shift: f64,
    between: f64,
    z: f64,
    resamples: usize,
    threshold: f64,
    alpha: f64,
    family: usize,
}

/// One run a side, one row (p-adjustment and verdict come later): the change of the fastest-5%
/// time, `d = ln(after / before)`, with `se = sqrt(sd_boot^2 + between^2)` (the bootstrap
/// spread of `d` within the runs, and how far an event moves between runs); the interval is
/// `d +- z se`, widened towards no change by the machine's shift (a change the whole machine
/// shows is not the code's), and the p-value is of `d` beyond the shift: the distance from `d`
/// to the span between 0 and the shift, over `se`, and never below what the sample counts
/// allow (`detectable` is `None` when even that cannot be significant over the family).
fn one_run_row(
    identity: Identity,
    before: &[f64],
    after: &[f64],
    judged: &Judged,
    seed: u64,
) -> EventDiff {
    let mut row = row_of(identity, before, after);
    let Some(d) = log_ratio(row.before_ns, row.after_ns) else {
        return row;
    };
    let sd = stats::bootstrap_fast_log_sd(before, after, judged.resamples, seed);
    let se = sd.hypot(judged.between);
    let (up, down) = (judged.shift.max(0.0), judged.shift.min(0.0));
    let reach = judged.z * se;
    row.ci_low = (d - reach - up).exp();
    row.ci_high = (d + reach - down).exp();
    let distance = if d > up {
        d - up
    } else if d < down {
        down - d
    } else {
        0.0
    };
    // No p-value below what these sample counts allow: that of two sets of samples entirely
    // apart (Mann-Whitney), so that a handful of samples is never called on a bootstrap's word.
    let (nb, na) = (before.len(), after.len());
    let floor = if nb.min(na) <= 20 {
        let below: Vec<f64> = (0..nb).map(|i| i as f64).collect();
        let above: Vec<f64> = (nb..nb + na).map(|i| i as f64).collect();
        stats::mann_whitney_p(&below, &above)
    } else {
        0.0
    };
    row.p_value = if distance == 0.0 {
        1.0
    } else if se > 0.0 {
        stats::normal_p(distance / se).max(floor)
    } else {
        floor
    };
    row.allowance = (judged.between + judged.shift.abs()).exp_m1();
    if reach.is_finite() && floor * (judged.family as f64) < judged.alpha {
        // The smallest change whose interval would clear the threshold: d beyond
        // ln(1 + threshold) + reach + the machine's slowdown.
        row.detectable = Some((1.0 + judged.threshold) * (reach + up).exp() - 1.0);
    }
    row
}

/// A row with both sides' times (fastest-5% and typical) and ratios, no interval yet.
pub(crate) fn row_of(identity: Identity, before: &[f64], after: &[f64]) -> EventDiff {
    unjudged(
        identity,
        (before.len(), after.len()),
        (stats::fast(before), stats::fast(after)),
        (stats::median(before), stats::median(after)),
    )
}

/// A row of `nb` and `na` values a side with both sides' fastest-5% and typical times, and
/// their ratios; no interval, p-value or verdict yet.
pub(crate) fn unjudged(
    identity: Identity,
    (nb, na): (usize, usize),
    (before_ns, after_ns): (f64, f64),
    (before_median_ns, after_median_ns): (f64, f64),
) -> EventDiff {
    let n = nb.min(na);
    EventDiff {
        identity,
        before_n: nb,
        after_n: na,
        before_ns,
        after_ns,
        before_median_ns,
        after_median_ns,
        ratio: ratio(after_ns, before_ns, n),
        typical_ratio: ratio(after_median_ns, before_median_ns, n),
        typical: None,
        share: f64::NAN,
        matters: false,
        ci_low: f64::NAN,
        ci_high: f64::NAN,
        p_value: 1.0,
        p_adjusted: 1.0,
        verdict: Verdict::Inconclusive,
        allowance: 0.0,
        detectable: None,
    }
}

/// One run a side: marks the events whose typical time moved beyond the threshold (the
/// Mann-Whitney test of the samples, Bonferroni over the events) and beyond what their
/// fastest-5% time's interval allows.
fn typical_one_run(matched: &[(&Event, &Event)], events: &mut [EventDiff], options: &DiffOptions) {
    let family = events.len().max(1) as f64;
    for ((b, a), row) in matched.iter().zip(events.iter_mut()) {
        let moved = (row.typical_ratio - 1.0).abs() > options.threshold;
        if !moved {
            continue;
        }
        let p = stats::mann_whitney_p(&stats::as_f64(&b.samples_ns), &stats::as_f64(&a.samples_ns));
        mark_typical(row, p * family < options.alpha);
    }
}

/// Sets [`EventDiff::typical`] when `significant` and the typical time moved beyond anything the
/// fastest-5% time's interval allows (slower than its high end, or faster than its low end): a
/// change of the typical time that the code's cost cannot account for.
pub(crate) fn mark_typical(row: &mut EventDiff, significant: bool) {
    if !significant || !row.typical_ratio.is_finite() {
        return;
    }
    let (low, high) = (row.ci_low, row.ci_high);
    if row.typical_ratio > 1.0 && high.is_finite() && row.typical_ratio > high {
        row.typical = Some(Verdict::Regressed);
    } else if row.typical_ratio < 1.0 && low.is_finite() && row.typical_ratio < low {
        row.typical = Some(Verdict::Improved);
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
    let resolved = (d.after_ns - d.before_ns).abs() >= resolution;
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

mod machine;
mod runs;
pub use runs::{
    diff_runs, paired_interval, runs_needed, Load, LOAD_ALPHA, LOAD_MARGIN, LOAD_MIN_RUNS,
};
pub mod memory;
mod render;
pub(crate) use render::change;
pub use render::render;

#[cfg(test)]
pub(crate) mod tests;
