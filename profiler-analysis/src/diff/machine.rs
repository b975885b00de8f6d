//! What the two runs say about the machine they ran on: how far the events moved together (the
//! machine's shift and the spread around it), how far events followed the wall-time drift of
//! the iterations around them, each event's own instability, and how disturbed each run's
//! iterations look. See the module documentation of [`diff`](super) for how these enter the
//! verdicts.

use serde::Serialize;

use super::super::stats;
use profiler_format::{Event, Profile};

use profiler_tables::descriptive_stats::MAD_SCALE;

/// Fewest events from which the machine's shift and spread are estimated; with fewer, both are 0.
pub const MIN_EVENTS_FOR_SPREAD: usize = 5;

/// The least instability an event is given (1%, on the log scale): even a perfectly steady
/// computation runs a few percent faster or slower from one run of the same binary to the next,
/// as code and data land at other addresses (Mytkowicz et al., "Producing wrong data without
/// doing anything obviously wrong!", ASPLOS 2009); seen here as a steady layer of the dlrm
/// example taking 9% longer in one run of ten, its runs within 1% of one another in each.
pub const MIN_INSTABILITY: f64 = 0.01;

/// A window's rest drift (see [`Pair::rest_drift`]) counts as evidence of how far events follow
/// the machine only beyond this (5%) and beyond twice the spread of the windows' drifts.
const LEVERAGE_DRIFT: f64 = 0.05;

/// A measured iteration "took long" when it took more than this many times the run's fastest 5%.
pub const SLOW_ITERATION: f64 = 1.5;

/// A run looks disturbed when at least this share of its measured iterations took long and that
/// share is at least [`DISTURBED_MARGIN`] above the other run's.
pub const DISTURBED_SHARE: f64 = 0.10;

/// See [`DISTURBED_SHARE`].
pub const DISTURBED_MARGIN: f64 = 0.05;

pub use profiler_tables::descriptive_stats::robust_spread;

/// One run's side of an event.
pub(super) struct Side {
    /// The samples, in nanoseconds.
    pub samples: Vec<f64>,
    /// Their median.
    pub median: f64,
    /// [`robust_spread`] of the logarithms of the (positive) samples: how much the event's runs
    /// vary within this run, on the log scale (0.01: about 1%).
    pub log_spread: f64,
    /// The median rest (wall time minus the sample) of the iterations in which the samples were
    /// taken, when every sample's iteration is known and its rest is positive.
    pub rest: Option<f64>,
}

impl Side {
    pub(super) fn of(profile: &Profile, event: &Event) -> Side {
        let samples = stats::as_f64(&event.samples_ns);
        let logs: Vec<f64> = samples
            .iter()
            .filter(|&&s| s > 0.0)
            .map(|s| s.ln())
            .collect();
        let iterations = &profile.iterations;
        let rest = (!samples.is_empty() && event.sample_iters.len() == samples.len())
            .then(|| {
                event
                    .sample_iters
                    .iter()
                    .zip(&samples)
                    .map(|(&i, s)| Some(iterations.wall_of(u64::from(i))? as f64 - s))
                    .collect::<Option<Vec<f64>>>()
            })
            .flatten()
            .filter(|rest| rest.iter().all(|&r| r > 0.0))
            .map(|rest| stats::median(&rest));
        Side {
            median: stats::median(&samples),
            log_spread: robust_spread(&logs),
            samples,
            rest,
        }
    }
}

/// An event's two sides and what they say together.
pub(super) struct Pair {
    pub before: Side,
    pub after: Side,
    /// `ln(median after / median before)`, when both sides have samples and positive medians.
    pub log_ratio: Option<f64>,
    /// `ln(rest after / rest before)`: how much slower the rest of the iterations around the
    /// event's samples ran in the after run, when both are known.
    pub rest_drift: Option<f64>,
}

impl Pair {
    pub(super) fn new(before: Side, after: Side) -> Pair {
        let log = |b: f64, a: f64| (b > 0.0 && a > 0.0).then(|| (a / b).ln());
        let log_ratio = (!before.samples.is_empty() && !after.samples.is_empty())
            .then(|| log(before.median, after.median))
            .flatten();
        let rest_drift = match (before.rest, after.rest) {
            (Some(b), Some(a)) => log(b, a),
            _ => None,
        };
        Pair {
            before,
            after,
            log_ratio,
            rest_drift,
        }
    }

    /// How much the event's runs vary within a run: the larger of its two sides' log spreads.
    /// An event whose runs scatter widely (a wait on another thread, a memory-bound kernel) is
    /// also the one whose typical time moves most from one run of the program to the next.
    pub(super) fn instability(&self) -> f64 {
        self.before.log_spread.max(self.after.log_spread)
    }
}

/// How far the events moved together between the two runs: the part of every event's change that
/// is the machine's rather than the event's own.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Machine {
    /// Events whose changes were used (those with samples in both runs); the shift and spread are
    /// 0 when they are fewer than [`MIN_EVENTS_FOR_SPREAD`].
    pub events: usize,
    /// The median of the events' changes, as a relative change (0.3: every event ran about 30%
    /// slower in the after run): left out of each event's change before it is judged.
    pub shift: f64,
    /// How much the events' changes differ from one another beyond that shift: `1.4826 x` the
    /// median absolute deviation of their `ln(ratio)`.
    pub spread: f64,
    /// How far the events followed the wall-time drift of the iterations around them (0: not at
    /// all, as under preemption by other processes; 1: fully, as when the whole machine slowed
    /// down for a while); each event is judged with the same figure computed from the other
    /// events.
    pub follow: f64,
}

impl Machine {
    /// `ln(1 + shift)`.
    pub(super) fn log_shift(&self) -> f64 {
        self.shift.ln_1p()
    }
}

/// The machine's shift and spread, from the events' log ratios.
pub(super) fn machine(pairs: &[Pair]) -> Machine {
    let logs: Vec<f64> = pairs.iter().filter_map(|p| p.log_ratio).collect();
    if logs.len() < MIN_EVENTS_FOR_SPREAD {
        return Machine {
            events: logs.len(),
            ..Machine::default()
        };
    }
    let center = stats::median(&logs);
    Machine {
        events: logs.len(),
        shift: center.exp_m1(),
        spread: robust_spread(&logs),
        follow: follow(pairs, None),
    }
}

/// How far events followed their windows' rest drift: the median of `ln(ratio) / rest drift`
/// over the events whose windows drifted clearly (beyond [`LEVERAGE_DRIFT`] and twice the spread
/// of the drifts), weighted by the size of the drift, clamped to `0..=1`; 0 when no window
/// drifted clearly. `except` leaves one event out: an event's own change never excuses itself.
pub(super) fn follow(pairs: &[Pair], except: Option<usize>) -> f64 {
    let points: Vec<(f64, f64)> = pairs
        .iter()
        .enumerate()
        .filter(|&(i, _)| Some(i) != except)
        .filter_map(|(_, p)| Some((p.log_ratio?, p.rest_drift?)))
        .collect();
    if points.len() + 1 < MIN_EVENTS_FOR_SPREAD {
        return 0.0;
    }
    let drifts: Vec<f64> = points.iter().map(|p| p.1).collect();
    let cut = (2.0 * robust_spread(&drifts)).max(LEVERAGE_DRIFT);
    let mut slopes: Vec<(f64, f64)> = points
        .iter()
        .filter(|(_, drift)| drift.abs() > cut)
        .map(|(ratio, drift)| (ratio / drift, drift.abs()))
        .collect();
    if slopes.is_empty() {
        return 0.0;
    }
    slopes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = slopes.iter().map(|s| s.1).sum::<f64>() / 2.0;
    let mut seen = 0.0;
    for (slope, weight) in &slopes {
        seen += weight;
        if seen >= half {
            return slope.clamp(0.0, 1.0);
        }
    }
    0.0
}

/// [`follow`] for every event, each left out in turn (`follow(pairs, Some(i))` for each `i`),
/// with the same results to the bit, in O(n log n + n k) instead of O(n^2 log n) for n events
/// of which k drifted clearly: the drifts are sorted once, the deviations once per distinct
/// centre, and the events beyond the cut once per distinct cut (leaving one event out moves a
/// median by one rank, so there are only a few of each); per event, only the events beyond its
/// cut are walked.
pub(super) fn follow_each(pairs: &[Pair]) -> Vec<f64> {
    use std::collections::HashMap;
    // (pair index, ln ratio, rest drift) of the events with both, in pair order.
    let points: Vec<(usize, f64, f64)> = pairs
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p.log_ratio?, p.rest_drift?)))
        .collect();
    let n = points.len();
    let mut at = vec![None; pairs.len()];
    for (k, p) in points.iter().enumerate() {
        at[p.0] = Some(k);
    }
    // The middle of `m` sorted values read through `get`, as `quantile_sorted(_, 0.5)` makes it.
    let mid = |m: usize, get: &dyn Fn(usize) -> f64| {
        let pos = 0.5 * (m - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        get(lo) + (get(hi) - get(lo)) * (pos - lo as f64)
    };
    // Sorted order of `values` (indices into points) and each one's rank in it.
    let order = |values: &dyn Fn(usize) -> f64| {
        let mut by: Vec<usize> = (0..n).collect();
        by.sort_by(|&a, &b| values(a).total_cmp(&values(b)));
        let mut rank = vec![0; n];
        for (r, &k) in by.iter().enumerate() {
            rank[k] = r;
        }
        (by, rank)
    };
    // The j-th of a sorted order with the rank `skip` left out.
    let nth = |by: &[usize], skip: Option<usize>, j: usize| {
        by[j + usize::from(skip.is_some_and(|r| j >= r))]
    };
    let (by_drift, drift_rank) = order(&|k| points[k].2);
    let mut deviations: HashMap<u64, (Vec<usize>, Vec<usize>)> = HashMap::new();
    let mut beyond: HashMap<u64, Vec<(f64, f64, usize)>> = HashMap::new();
    let mut follow_without = |left_out: Option<usize>| -> f64 {
        let m = n - usize::from(left_out.is_some());
        if m + 1 < MIN_EVENTS_FOR_SPREAD {
            return 0.0;
        }
        let skip = left_out.map(|k| drift_rank[k]);
        let center = mid(m, &|j| points[nth(&by_drift, skip, j)].2);
        let (by_dev, dev_rank) = deviations
            .entry(center.to_bits())
            .or_insert_with(|| order(&|k| (points[k].2 - center).abs()));
        let skip = left_out.map(|k| dev_rank[k]);
        let spread = MAD_SCALE * mid(m, &|j| (points[nth(by_dev, skip, j)].2 - center).abs());
        let cut = (2.0 * spread).max(LEVERAGE_DRIFT);
        let slopes = beyond.entry(cut.to_bits()).or_insert_with(|| {
            let mut s: Vec<(f64, f64, usize)> = points
                .iter()
                .enumerate()
                .filter(|(_, p)| p.2.abs() > cut)
                .map(|(k, p)| (p.1 / p.2, p.2.abs(), k))
                .collect();
            s.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
            s
        });
        let kept = || slopes.iter().filter(|s| Some(s.2) != left_out);
        if kept().next().is_none() {
            return 0.0;
        }
        let half = kept().map(|s| s.1).sum::<f64>() / 2.0;
        let mut seen = 0.0;
        for (slope, weight, _) in kept() {
            seen += weight;
            if seen >= half {
                return slope.clamp(0.0, 1.0);
            }
        }
        0.0
    };
    let all = follow_without(None);
    (0..pairs.len())
        .map(|i| match at[i] {
            Some(k) => follow_without(Some(k)),
            None => all,
        })
        .collect()
}

/// The shape of one run's measured iterations: how far they stand above the run's own fastest.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunShape {
    /// Measured iterations.
    pub iterations: usize,
    /// Their median wall time.
    pub median_ns: f64,
    /// Their fastest 5% (the 5th percentile): what an undisturbed iteration takes.
    pub fastest_ns: f64,
    /// The share of them that took more than [`SLOW_ITERATION`] times `fastest_ns`.
    pub slow_share: f64,
    /// Whether the run looks disturbed: at least [`DISTURBED_SHARE`] of its iterations took long,
    /// and [`DISTURBED_MARGIN`] more than in the other run.
    pub disturbed: bool,
}

impl RunShape {
    /// The shape of the measured iterations `walls` (`disturbed` is decided by [`shapes`]).
    pub(super) fn of(walls: &[f64]) -> RunShape {
        if walls.is_empty() {
            return RunShape::default();
        }
        let sorted = stats::sorted(walls);
        let fastest = stats::quantile_sorted(&sorted, 0.05);
        let slow = walls
            .iter()
            .filter(|&&w| w > SLOW_ITERATION * fastest)
            .count();
        RunShape {
            iterations: walls.len(),
            median_ns: stats::quantile_sorted(&sorted, 0.5),
            fastest_ns: fastest,
            slow_share: slow as f64 / walls.len() as f64,
            disturbed: false,
        }
    }

    /// `ln(median / fastest)`: how far the run's typical iteration stands above an undisturbed
    /// one (0 when unknown).
    pub(super) fn excess(&self) -> f64 {
        if self.median_ns > 0.0 && self.fastest_ns > 0.0 {
            (self.median_ns / self.fastest_ns).ln()
        } else {
            0.0
        }
    }
}

/// Both runs' shapes, each marked disturbed against the other.
pub(super) fn shapes(before: &[f64], after: &[f64]) -> (RunShape, RunShape) {
    let (mut b, mut a) = (RunShape::of(before), RunShape::of(after));
    let disturbed = |x: &RunShape, other: &RunShape| {
        x.slow_share >= DISTURBED_SHARE && x.slow_share >= other.slow_share + DISTURBED_MARGIN
    };
    (b.disturbed, a.disturbed) = (disturbed(&b, &a), disturbed(&a, &b));
    (b, a)
}

/// The standard normal quantile Phi^-1(p) for p in (0, 1) (Acklam's rational approximation,
/// relative error below 1.2e-9; infinite at 0 and 1).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}
