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
    let tail = (1.0 - confidence) / 2.0;
    (
        stats::quantile_select(&mut ratios, tail),
        stats::quantile_select(&mut ratios, 1.0 - tail),
    )
}

/// Draws block-bootstrap medians of one series without copying it: the values sorted once,
/// each with its block, and per resample a count of how often each block was drawn.
///
/// A resample's median is found by walking the sorted values, counting each as often as its
/// block was drawn. With many values in fewer blocks, the walk starts at a band around the
/// middle instead ([`Band`]): the values below it are counted block by block (how many each
/// block has there, times how often it was drawn), and only the band is walked. When the median
/// lies outside the band, the whole walk is made: the result is the same either way.
struct BlockSampler {
    sorted: Vec<f64>,
    block_of: Vec<usize>,
    block_len: Vec<usize>,
    drawn: Vec<u32>,
    band: Option<Band>,
}

/// The ranks `start..end` of the sorted values around the middle, and how many values of each
/// block lie below `start`.
struct Band {
    start: usize,
    end: usize,
    below: Vec<u32>,
}

/// Fewest values for which a resample's median is looked for in a band ([`BlockSampler`]).
const BAND_FROM: usize = 4096;

impl BlockSampler {
    fn new(values: &[f64], len: usize) -> Self {
        let len = len.max(1);
        let mut pairs: Vec<(f64, usize)> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i / len))
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = values.len();
        let blocks = n.div_ceil(len);
        let block_of: Vec<usize> = pairs.iter().map(|p| p.1).collect();
        // Counting the blocks costs as much as walking `blocks` values: worth it when they are
        // a quarter of the values or fewer. The band is an eighth of the values.
        let band = (n >= BAND_FROM && 4 * blocks <= n).then(|| {
            let (start, end) = (n / 2 - n / 16, n / 2 + n / 16);
            let mut below = vec![0u32; blocks];
            for &b in &block_of[..start] {
                below[b] += 1;
            }
            Band { start, end, below }
        });
        BlockSampler {
            sorted: pairs.iter().map(|p| p.0).collect(),
            block_of,
            block_len: (0..blocks).map(|b| len.min(n - b * len)).collect(),
            drawn: vec![0; blocks],
            band,
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
        let ranks = ((total - 1) / 2, total / 2);
        if let Some(band) = &self.band {
            let seen: usize = band
                .below
                .iter()
                .zip(&self.drawn)
                .map(|(&n, &d)| n as usize * d as usize)
                .sum();
            if seen <= ranks.0 {
                if let Some(m) = self.walk(band.start..band.end, seen, ranks) {
                    return m;
                }
            }
        }
        self.walk(0..self.sorted.len(), 0, ranks)
            .unwrap_or_else(|| self.sorted.last().copied().unwrap_or(0.0))
    }

    /// Walks the sorted values of `range`, `seen` drawn values lying below it, to the values
    /// of ranks `k1` and `k2` of the drawn multiset; their mean, if both lie within it.
    fn walk(
        &self,
        range: std::ops::Range<usize>,
        mut seen: usize,
        (k1, k2): (usize, usize),
    ) -> Option<f64> {
        let mut low = None;
        for (value, &b) in self.sorted[range.clone()].iter().zip(&self.block_of[range]) {
            seen += self.drawn[b] as usize;
            if low.is_none() && seen > k1 {
                low = Some(*value);
            }
            if seen > k2 {
                return Some((low.unwrap_or(*value) + value) / 2.0);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The band gives the medians the whole walk gives, resample by resample: on values with
    /// ties, with a drift, with one block much slower, and with blocks of other lengths.
    #[test]
    fn the_band_finds_the_median_the_whole_walk_finds() {
        let mut rng = SplitMix64::new(7);
        let series: Vec<(Vec<f64>, usize)> = vec![
            ((0..20_000).map(|_| rng.below(50) as f64).collect(), 50),
            (
                (0..9_000)
                    .map(|i| (i / 300) as f64 + rng.below(7) as f64)
                    .collect(),
                30,
            ),
            (
                (0..6_001)
                    .map(|i| {
                        if i < 3_000 {
                            1e6
                        } else {
                            rng.below(1000) as f64
                        }
                    })
                    .collect(),
                1_000,
            ),
            ((0..4_096).map(|i| i as f64).collect(), 4),
        ];
        let mut outside = 0;
        for (values, len) in series {
            let mut banded = BlockSampler::new(&values, len);
            assert!(banded.band.is_some());
            let mut whole = BlockSampler::new(&values, len);
            whole.band = None;
            let (mut r1, mut r2) = (SplitMix64::new(3), SplitMix64::new(3));
            for _ in 0..300 {
                let m = banded.median(&mut r1);
                assert_eq!(m, whole.median(&mut r2), "len {len}");
                let band = banded.band.as_ref().unwrap();
                let inside = m >= banded.sorted[band.start] && m <= banded.sorted[band.end - 1];
                outside += usize::from(!inside);
            }
        }
        // The series with one slow half sends medians outside the band: the whole walk is made.
        assert!(outside > 0);
    }
}
