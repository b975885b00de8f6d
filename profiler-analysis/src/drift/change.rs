//! Change points of one series of per-window values (the logs of the windows' fastest-5% times):
//! where the series steps, found by the split that maximises a two-sample t statistic, judged by
//! a permutation test, then looked for again in each side (binary segmentation).
//!
//! Plain functions over `f64` logs; [`super::windows`] runs them on every series of a file and
//! adjusts the p-values over the series (Holm).
//!
//! # Why these choices
//!
//! - **The statistic**: for a split after `k` of `n` values, `|mean(right) - mean(left)|` over
//!   its standard error `sigma sqrt(1/k + 1/(n - k))`, with one `sigma` for the whole series:
//!   the windows' scatter measured from *successive differences* (the median absolute
//!   difference of neighbours, over 0.6745 sqrt 2), which a step, a second step or a ramp
//!   barely touch (each adds one or a few large differences among `n - 1`), so that a series
//!   that goes up and comes back (two changes) is not hidden by the variance its own steps add,
//!   as it is when the variance is pooled within the two sides; one `sigma` also keeps a side
//!   of two windows from getting a variance of its own from two values. A series whose
//!   neighbours are mostly equal (a coarse clock) falls back to the root mean square of the
//!   differences.
//! - **Its significance**, two tests that must both pass:
//!   - a **permutation test** (the same maximum over all splits, on the values shuffled): under
//!     "no change" the windows are exchangeable whatever the shape of their noise, so it needs
//!     no normality and accounts for having chosen the best of `n - 3` splits; seeded
//!     ([`SEED`]), so a file gives the same answer every time; sequential (Besag and Clifford
//!     1991: it stops once [`STOP_AFTER`] shuffles reach the observed value), so a series
//!     without a change costs a few hundred shuffles. It cannot go below about
//!     `2 / C(n, k)` for a change with `k` windows on its short side (only the shuffles that put
//!     those `k` windows together at an end reach the observed value): 1/150 for two windows of
//!     25, which no adjustment over 25 events survives. So it is asked at `alpha` itself;
//!   - the **Student max-t p-value** ([`max_t_p`]): the statistic's two-sided p-value (the
//!     degrees of freedom of the scatter) times the number of splits tried (Bonferroni: conservative,
//!     the splits' statistics being strongly correlated); this one goes as low as the data
//!     say, and is the one adjusted over the series (Holm).
//! - **Its size**: Welch's interval of the difference of the two sides' mean logs, as a ratio.

use crate::stats::SplitMix64;

/// Fewest windows on each side of a change.
pub const MIN_SEGMENT: usize = 2;

/// Most change points per series: binary segmentation stops there.
pub const MAX_CHANGES: usize = 8;

/// The seed of every permutation test (mixed with the series and the segment).
pub const SEED: u64 = 0xC4A6_E5EE_D5EE_D001;

/// A permutation test stops once this many shuffles reached the observed statistic.
pub const STOP_AFTER: usize = 20;

/// The most likely single change of a series: the first position after it, and its statistic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Split {
    /// Position (in the series) of the first value after the change.
    pub at: usize,
    /// The two-sample t statistic with the series' [`scatter`] (infinite when the scatter is 0
    /// and the sides differ).
    pub t: f64,
}

/// The split of `x` that maximises the two-sample t (see the module documentation), at least [`MIN_SEGMENT`] values
/// each side; `None` for fewer than `2 MIN_SEGMENT` values. Ties go to the earliest split.
pub fn best_split(x: &[f64]) -> Option<Split> {
    best_split_with(x, scatter(x))
}

/// [`best_split`] with the scatter given: the permutation test keeps the observed series' for
/// every shuffle (the scatter of a shuffle depends on its order, and a statistic whose scale
/// moves with the order would let a shuffle with quieter neighbours beat a real step).
fn best_split_with(x: &[f64], sigma: f64) -> Option<Split> {
    let n = x.len();
    if n < 2 * MIN_SEGMENT {
        return None;
    }
    // Centred first, so that the sums lose no precision to a large common level.
    let centre = x.iter().sum::<f64>() / n as f64;
    let total: f64 = x.iter().map(|v| v - centre).sum();
    let mut sum = 0.0;
    let mut best: Option<Split> = None;
    for k in 1..=n - MIN_SEGMENT {
        sum += x[k - 1] - centre;
        if k < MIN_SEGMENT {
            continue;
        }
        let (l, r) = (k as f64, (n - k) as f64);
        let d = (total - sum) / r - sum / l;
        let se = sigma * (1.0 / l + 1.0 / r).sqrt();
        let t = if se > 0.0 {
            d.abs() / se
        } else if d.abs() > 1e-12 {
            f64::INFINITY
        } else {
            0.0
        };
        if best.is_none_or(|b| t > b.t) {
            best = Some(Split { at: k, t });
        }
    }
    best
}

/// The scatter of one window's value around its level, from the differences of neighbours: the
/// median absolute difference over `0.6745 sqrt 2` (the standard deviation, for normal noise),
/// or, when most neighbours are equal, the root mean square difference over `sqrt 2`.
pub fn scatter(x: &[f64]) -> f64 {
    let mut diffs: Vec<f64> = x.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    if diffs.is_empty() {
        return 0.0;
    }
    let rms = (diffs.iter().map(|d| d * d).sum::<f64>() / diffs.len() as f64).sqrt();
    let mad = crate::stats::median_mut(&mut diffs);
    if mad > 0.0 {
        mad / (0.674_489_75 * std::f64::consts::SQRT_2)
    } else {
        rms / std::f64::consts::SQRT_2
    }
}

/// The Student max-t p-value of a best split of statistic `t` among `n` values: the two-sided
/// p-value of Student's t times the number of splits tried (`n - 2 MIN_SEGMENT + 1`), at most
/// 1; 1 for fewer than `2 MIN_SEGMENT` values. The degrees of freedom are those of the scatter:
/// `(n - 1) / 3`, at least 1 (a median absolute deviation has about 37% of the efficiency of a
/// standard deviation, so its `n - 1` differences count for about a third as many).
pub fn max_t_p(t: f64, n: usize) -> f64 {
    if n < 2 * MIN_SEGMENT {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    let splits = (n - 2 * MIN_SEGMENT + 1) as f64;
    let df = ((n - 1) as f64 / 3.0).max(1.0);
    let tail = 2.0 * (1.0 - crate::student::cdf(t.abs(), df));
    (splits * tail.max(0.0)).min(1.0)
}

/// The permutation p-value of the best split's statistic `observed` in `x`: the share of at
/// most `permutations` shuffles of `x` whose best split reaches it (counting the observed
/// series itself), stopped after [`STOP_AFTER`] such shuffles. Deterministic for `seed`; 1
/// when `x` is too short to split.
pub fn permutation_p(x: &[f64], observed: f64, permutations: usize, seed: u64) -> f64 {
    if x.len() < 2 * MIN_SEGMENT {
        return 1.0;
    }
    let mut rng = SplitMix64::new(seed);
    let mut y = x.to_vec();
    let sigma = scatter(x);
    let mut reached = 0usize;
    // A shuffle that ties the observed value counts; a hair of tolerance for rounding.
    let bar = observed * (1.0 - 1e-12);
    for done in 1..=permutations.max(1) {
        for i in (1..y.len()).rev() {
            let j = rng.below(i + 1);
            y.swap(i, j);
        }
        if best_split_with(&y, sigma).is_some_and(|s| s.t >= bar) {
            reached += 1;
            if reached == STOP_AFTER {
                return reached as f64 / done as f64;
            }
        }
    }
    (reached + 1) as f64 / (permutations.max(1) + 1) as f64
}

/// A change's size: the ratio `exp(mean(after) - mean(before))` of two runs of logs, and its
/// interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Size {
    /// `exp(mean(after) - mean(before))`.
    pub ratio: f64,
    /// Lower end of the interval of the ratio.
    pub ci_low: f64,
    /// Upper end of the interval of the ratio.
    pub ci_high: f64,
}

impl Size {
    /// The interval lies beyond the threshold, above (`Some(true)`: slower) or below
    /// (`Some(false)`: faster); `None` when it reaches inside `1 ± threshold`.
    pub fn beyond(&self, threshold: f64) -> Option<bool> {
        if self.ci_low > 1.0 + threshold {
            Some(true)
        } else if self.ci_high < 1.0 - threshold {
            Some(false)
        } else {
            None
        }
    }

    /// The interval lies inside `1 ± threshold`: a change of the threshold's size is ruled out.
    pub fn within(&self, threshold: f64) -> bool {
        self.ci_low > 1.0 - threshold && self.ci_high < 1.0 + threshold
    }
}

/// Welch's interval (level `1 - alpha`) of the difference of the mean logs of `after` and
/// `before`, as a ratio; each side needs two values.
pub fn welch(before: &[f64], after: &[f64], alpha: f64) -> Size {
    let (mb, vb) = mean_var(before);
    let (ma, va) = mean_var(after);
    let (qb, qa) = (vb / before.len() as f64, va / after.len() as f64);
    let se = (qb + qa).sqrt();
    let df = if qb + qa > 0.0 {
        (qb + qa).powi(2)
            / (qb * qb / (before.len() - 1).max(1) as f64
                + qa * qa / (after.len() - 1).max(1) as f64)
    } else {
        (before.len() + after.len()).saturating_sub(2).max(1) as f64
    };
    size(ma - mb, se, df.max(1.0), alpha)
}

/// Student's interval with the variance pooled over both sides: the size of a split under the
/// hypothesis that the windows scatter alike on both sides (used to decide whether a series
/// rules out a change; see [`super::windows`]).
pub fn pooled(before: &[f64], after: &[f64], alpha: f64) -> Size {
    let (mb, vb) = mean_var(before);
    let (ma, va) = mean_var(after);
    let (l, r) = (before.len() as f64, after.len() as f64);
    let df = (l + r - 2.0).max(1.0);
    let var = ((l - 1.0) * vb + (r - 1.0) * va) / df;
    size(ma - mb, (var * (1.0 / l + 1.0 / r)).sqrt(), df, alpha)
}

fn size(d: f64, se: f64, df: f64, alpha: f64) -> Size {
    let half = if se > 0.0 {
        crate::student::quantile(1.0 - alpha / 2.0, df) * se
    } else {
        0.0
    };
    Size {
        ratio: d.exp(),
        ci_low: (d - half).exp(),
        ci_high: (d + half).exp(),
    }
}

/// Mean and sample variance (0 for one value).
fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = if x.len() > 1 {
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, v)
}

/// A split and its p-values, by its position in the whole series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Found {
    /// Position of the first value after the change.
    pub at: usize,
    /// Its Student max-t p-value ([`max_t_p`]) within the segment it was found in.
    pub p: f64,
    /// `p` adjusted over the series: Holm for the first split of a series, Bonferroni (`p`
    /// times their number) for those found inside a segment.
    pub p_adjusted: f64,
    /// Its permutation p-value ([`permutation_p`]) within that segment.
    pub p_permutation: f64,
}

impl Found {
    /// Both tests pass at `alpha`: the adjusted max-t p-value and the permutation p-value.
    pub fn significant(&self, alpha: f64) -> bool {
        self.p_adjusted < alpha && self.p_permutation < alpha
    }
}

/// The best split of `x` and its p-values (`p_adjusted` left equal to `p`); `None` when `x` is
/// too short.
pub fn test(x: &[f64], permutations: usize, seed: u64) -> Option<Found> {
    let split = best_split(x)?;
    let p = max_t_p(split.t, x.len());
    Some(Found {
        at: split.at,
        p,
        p_adjusted: p,
        p_permutation: permutation_p(x, split.t, permutations, seed),
    })
}

/// Binary segmentation below a first significant change: the further changes of `x` in the
/// segments `x[start..end]` on both sides of `first`, each significant when its max-t p-value
/// times `family` (the number of series) and its permutation p-value are below `alpha`; all of
/// them (`first` included) by position, at most [`MAX_CHANGES`].
pub fn segment(
    x: &[f64],
    first: Found,
    family: usize,
    alpha: f64,
    permutations: usize,
    seed: u64,
) -> Vec<Found> {
    let mut found = vec![first];
    let mut todo = vec![(0, first.at), (first.at, x.len())];
    while let Some((start, end)) = todo.pop() {
        if found.len() >= MAX_CHANGES {
            break;
        }
        let seed = seed ^ (start as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let Some(mut f) = test(&x[start..end], permutations, seed) else {
            continue;
        };
        f.at += start;
        f.p_adjusted = (f.p * family as f64).min(1.0);
        if f.significant(alpha) {
            found.push(f);
            todo.push((start, f.at));
            todo.push((f.at, end));
        }
    }
    found.sort_by_key(|f| f.at);
    found
}
