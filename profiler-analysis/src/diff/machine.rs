//! What the two runs say about the machine they ran on: how far the events moved together (the
//! machine's shift and the spread around it), how far events followed the wall-time drift of
//! the iterations around them, each event's own instability, and how disturbed each run's
//! iterations look. See the module documentation of [`diff`](super) for how these enter the
//! verdicts.

use serde::Serialize;

use super::super::stats;

/// Fewest events from which the machine's shift and spread are estimated; with fewer, both are 0.
pub const MIN_EVENTS_FOR_SPREAD: usize = 5;

/// The instability an event is given when there are too few events to measure the spread
/// between them (below [`MIN_EVENTS_FOR_SPREAD`]; 1%, on the log scale): even a perfectly steady
/// computation runs a few percent faster or slower from one run of the same binary to the next,
/// as code and data land at other addresses (Mytkowicz et al., "Producing wrong data without
/// doing anything obviously wrong!", ASPLOS 2009); seen here as a steady layer of the dlrm
/// example taking 9% longer in one run of ten, its runs within 1% of one another in each.
pub const MIN_INSTABILITY: f64 = 0.01;

/// A measured iteration "took long" when it took more than this many times the run's fastest 5%.
pub const SLOW_ITERATION: f64 = 1.5;

/// A run looks disturbed when at least this share of its measured iterations took long and that
/// share is at least [`DISTURBED_MARGIN`] above the other run's.
pub const DISTURBED_SHARE: f64 = 0.10;

/// See [`DISTURBED_SHARE`].
pub const DISTURBED_MARGIN: f64 = 0.05;

use profiler_tables::descriptive_stats::robust_spread;

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
}

impl Machine {
    /// The machine of the events' changes `logs` (`ln(after / before)` of each): their median
    /// and spread, from [`MIN_EVENTS_FOR_SPREAD`] events on; 0 below.
    pub(super) fn of(logs: &[f64]) -> Machine {
        if logs.len() < MIN_EVENTS_FOR_SPREAD {
            return Machine {
                events: logs.len(),
                ..Machine::default()
            };
        }
        Machine {
            events: logs.len(),
            shift: stats::median(logs).exp_m1(),
            spread: robust_spread(logs),
        }
    }

    /// `ln(1 + shift)`.
    pub(super) fn log_shift(&self) -> f64 {
        self.shift.ln_1p()
    }
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
