//! The whole iteration: the measured iterations' wall times of the two runs, compared by a block
//! bootstrap (see the module documentation of [`diff`](super)).

use super::machine::{robust_spread, RunShape};
use super::stats::{self, SplitMix64};
use super::{p_beyond, ratio, unjudged, EventDiff, SPREAD_Z};
use profiler_format::{Identity, Profile};

/// Compares the measured iterations' wall times `wb` (before) and `wa` (after), whose runs have
/// the shapes `runs` (p-adjustment and verdict come later); with the interval's lower half-width
/// before the allowance (`ratio / low`), NaN when a side is empty.
pub(super) fn compare(
    (before, after): (&Profile, &Profile),
    (wb, wa): (&[f64], &[f64]),
    runs: (&RunShape, &RunShape),
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> (EventDiff, f64) {
    let n = wb.len().min(wa.len());
    let mut allowance = 0.0;
    let mut width = f64::NAN;
    let interval = if n == 0 {
        (f64::NAN, f64::NAN, 1.0)
    } else {
        let (lb, la) = (block_len(before, wb.len()), block_len(after, wa.len()));
        let (lo, hi) = block_bootstrap_median_ratio(wb, lb, wa, la, resamples, confidence, seed);
        let block_medians = |w: &[f64], l: usize| -> Vec<f64> {
            w.chunks(l)
                .map(|c| stats::median_mut(&mut c.to_vec()))
                .collect()
        };
        let (mb, ma) = (block_medians(wb, lb), block_medians(wa, la));
        // How much the machine wandered within each run; how much further above its own fastest
        // iterations one run stood than the other; and, when one run looks disturbed, how much
        // more often it was, since a run disturbed by other processes is slower in its
        // undisturbed iterations too (caches refilled after every switch), by a share that
        // grows with it.
        let disturbed = if runs.0.disturbed || runs.1.disturbed {
            (runs.1.slow_share - runs.0.slow_share).abs()
        } else {
            0.0
        };
        allowance = SPREAD_Z * wander(&mb).hypot(wander(&ma))
            + (runs.1.excess() - runs.0.excess()).abs()
            + disturbed;
        let factor = allowance.exp();
        width = ratio(stats::median(wa), stats::median(wb), n) / lo;
        (lo / factor, hi * factor, p_beyond(&mb, &ma, factor))
    };
    let mut row = unjudged(Identity::named("iteration"), wb, wa, interval);
    row.allowance = allowance.exp_m1();
    (row, width)
}

/// How much a run's machine speed wandered: 1.4826 x the median absolute deviation of the
/// logarithms of its block medians (0 for fewer than [`MIN_BLOCKS`] blocks).
pub(super) fn wander(block_medians: &[f64]) -> f64 {
    let logs: Vec<f64> = block_medians
        .iter()
        .filter(|&&m| m > 0.0)
        .map(|m| m.ln())
        .collect();
    if logs.len() < MIN_BLOCKS {
        return 0.0;
    }
    robust_spread(&logs)
}

/// Fewest blocks a run's iterations are cut into for the iteration's comparison.
const MIN_BLOCKS: usize = 5;

/// Block length of a run: its `repeat` (the length of one event's window in sample mode), but
/// short enough to make at least [`MIN_BLOCKS`] blocks, and at least 1.
fn block_len(profile: &Profile, n: usize) -> usize {
    (profile.run.repeat as usize).min(n / MIN_BLOCKS).max(1)
}

/// Like [`stats::bootstrap_median_ratio`], but each side is resampled by whole blocks of
/// consecutive values (`before` in blocks of `lb`, `after` of `la`; the last block may be
/// shorter): blocks are drawn until they hold at least as many values as the side, so that slow
/// drifts of the machine show in the interval.
pub(super) fn block_bootstrap_median_ratio(
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
