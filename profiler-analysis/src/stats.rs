//! Statistics shared by the reports and the comparisons. Plain functions over `f64` or `u64`
//! samples; every function accepts an empty slice and returns 0 (or `None`) for it, except the
//! p-value of a test, which is then 1 (no evidence). The bootstrap draws from [`SplitMix64`], so a
//! seed gives the same interval on every platform.

pub use profiler_tables::descriptive_stats::{
    as_f64, cv, mean, median, median_mut, quantile_sorted, sorted, stddev,
};

/// A small, fast, seeded pseudo-random generator (SplitMix64, Steele et al. 2014): the same seed
/// gives the same sequence on every platform, so bootstrap results are reproducible.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (Lemire's multiply-shift; the bias, below `n / 2^64`, is
    /// negligible). Returns 0 when `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// A uniform float in the open interval (0, 1): 53 random bits, centred in their step.
    pub fn open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box and Muller).
    pub fn normal(&mut self) -> f64 {
        let r = (-2.0 * self.open01().ln()).sqrt();
        r * (std::f64::consts::TAU * self.open01()).cos()
    }
}

/// Bootstrap percentile CI of median(after)/median(before), resampling each side independently.
///
/// Each of `resamples` rounds draws `before.len()` values from `before` and `after.len()` from
/// `after`, with replacement, and takes the ratio of their medians; the interval holds the
/// central `confidence` (e.g. 0.95) of those ratios. Deterministic for a given `seed`. Returns
/// `(0.0, 0.0)` when either side is empty; a resample whose `before` median is 0 counts as a
/// ratio of 1 if its `after` median is 0 too, else as infinity.
///
/// A round costs the same whatever the number of values: a side of up to [`COUNTING_MAX`]
/// values is resampled by counting how often each value is drawn; a larger one draws the
/// resample's median directly, from the same distribution, so that a comparison of millions of
/// samples takes as long as one of a hundred. Drawing an index uniformly from `0..n` is taking
/// `floor(n U)` for U uniform on (0, 1), and floor keeps order, so the j-th smallest of n drawn
/// indices is `floor(n U(j))`, where U(j), the j-th smallest of n uniforms, follows
/// Beta(j, n + 1 - j); the resample's median is the mean of the values at the drawn indices of
/// ranks (n - 1) / 2 and n / 2 (0-based): one beta draw (two gamma draws) for odd n, and for
/// even n the next order statistic, the smallest of the n - j uniforms above the first.
pub fn bootstrap_median_ratio(
    before: &[f64],
    after: &[f64],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> (f64, f64) {
    if before.is_empty() || after.is_empty() {
        return (0.0, 0.0);
    }
    let mut rng = SplitMix64::new(seed);
    let (before, after) = (sorted(before), sorted(after));
    let counts = |n: usize| vec![0u32; if n <= COUNTING_MAX { n } else { 0 }];
    let mut counts_b = counts(before.len());
    let mut counts_a = counts(after.len());
    let mut ratios: Vec<f64> = (0..resamples.max(1))
        .map(|_| {
            let b = resampled_median(&before, &mut counts_b, &mut rng);
            let a = resampled_median(&after, &mut counts_a, &mut rng);
            ratio(a, b)
        })
        .collect();
    let tail = (1.0 - confidence.clamp(0.0, 1.0)) / 2.0;
    (
        quantile_select(&mut ratios, tail),
        quantile_select(&mut ratios, 1.0 - tail),
    )
}

/// The share of a run's fastest samples whose boundary judges a comparison (see [`fast`]).
pub const FAST_QUANTILE: f64 = 0.05;

/// What the verdicts judge: the **fastest-5% time**, the sample of rank
/// `floor(FAST_QUANTILE (n - 1))` (0-based) of `values` once sorted: the minimum up to 20
/// samples, the 5th fastest of 100, the 50th of 1,000. `NaN` for no value.
///
/// On a shared machine a sample is the code's cost plus delays that only ever add (preemption,
/// a busy sibling core, a lower clock): a location taken among the fastest samples is what
/// those delays cannot move, where the median jumps with the machine's state (Chen and
/// Revels, "Robust benchmarking in noisy environments", 2016). Chosen on recorded runs
/// (docs/overhead.md, "The estimator"): a low order statistic rather than the minimum, so that
/// one lucky sample or a coarse clock does not decide alone; low enough that a machine whose
/// slow state covers 90% of a run's samples leaves it where it was.
pub fn fast(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let k = fast_rank(values.len());
    let mut v = values.to_vec();
    let (_, &mut x, _) = v.select_nth_unstable_by(k, f64::total_cmp);
    x
}

/// The 0-based rank [`fast`] takes of `n` sorted values.
pub fn fast_rank(n: usize) -> usize {
    (FAST_QUANTILE * n.saturating_sub(1) as f64).floor() as usize
}

/// The standard deviation of `ln(fast(after') / fast(before'))` over `resamples` bootstrap
/// resamples (each side drawn with replacement from itself, independently): the within-run
/// uncertainty of the fastest-5% ratio. Deterministic for a given `seed`; `NaN` when a side is
/// empty; 0 when every resample gives the same ratio.
///
/// Exact and in constant time per resample whatever the sample count: the value of rank k
/// (0-based) of n values drawn with replacement from `sorted` is `sorted[floor(n U)]`, where U,
/// the (k+1)-th smallest of n uniforms, follows Beta(k + 1, n - k) (as the private `resampled_median` draws a median).
pub fn bootstrap_fast_log_sd(before: &[f64], after: &[f64], resamples: usize, seed: u64) -> f64 {
    if before.is_empty() || after.is_empty() {
        return f64::NAN;
    }
    let mut rng = SplitMix64::new(seed);
    let (before, after) = (sorted(before), sorted(after));
    let draw = |s: &[f64], rng: &mut SplitMix64| {
        let n = s.len();
        let k = fast_rank(n);
        let u = beta(rng, (k + 1) as f64, (n - k) as f64);
        s[((n as f64 * u) as usize).min(n - 1)]
    };
    let logs: Vec<f64> = (0..resamples.max(2))
        .map(|_| {
            let b = draw(&before, &mut rng);
            let a = draw(&after, &mut rng);
            ratio(a, b).ln()
        })
        .filter(|x| x.is_finite())
        .collect();
    if logs.len() < 2 || logs.iter().all(|&x| x == logs[0]) {
        return 0.0;
    }
    let m = mean(&logs);
    (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (logs.len() - 1) as f64).sqrt()
}

/// [`quantile_sorted`] of `values` once sorted, found by selection instead (linear time):
/// the same value, with `values` reordered.
pub fn quantile_select(values: &mut [f64], q: f64) -> f64 {
    let n = values.len();
    if n < 2 {
        return values.first().copied().unwrap_or(0.0);
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let (_, &mut low, above) = values.select_nth_unstable_by(lo, f64::total_cmp);
    let high = if pos.ceil() as usize == lo {
        low
    } else {
        above.iter().copied().min_by(f64::total_cmp).unwrap_or(low)
    };
    low + (high - low) * (pos - lo as f64)
}

/// Largest side [`bootstrap_median_ratio`] resamples by counting (linear time per resample);
/// above it, a resample's median is drawn from its order statistics (constant time).
pub const COUNTING_MAX: usize = 100;

/// The median of `sorted.len()` values drawn with replacement from `sorted` (which must be
/// sorted).
///
/// Up to [`COUNTING_MAX`] values: counts how often each is drawn (`counts` holds one slot per
/// value), then walks the counts to the middle; linear time and no comparisons.
///
/// Above: the median is drawn directly, exactly as distributed. Drawing an index uniformly
/// from `0..n` is taking `floor(n U)` for U uniform on (0, 1), and floor keeps order, so the
/// j-th smallest of n drawn indices is `floor(n U(j))`, where U(j), the j-th smallest of n
/// uniforms, follows Beta(j, n + 1 - j). The median of the resample is the mean of the values
/// at the drawn indices of ranks (n - 1) / 2 and n / 2 (0-based): for odd n the same one; for
/// even n, given U(j) = u, the next, U(j+1), is the smallest of the n - j uniforms above u,
/// `u + (1 - u) (1 - V^(1/(n - j)))` with V uniform. Two gamma draws (Marsaglia and Tsang)
/// make the beta, whatever n.
fn resampled_median(sorted: &[f64], counts: &mut [u32], rng: &mut SplitMix64) -> f64 {
    let n = sorted.len();
    if n <= COUNTING_MAX {
        counts.fill(0);
        for _ in 0..n {
            counts[rng.below(n)] += 1;
        }
        return median_of_counts(sorted, counts, n);
    }
    // The smallest middle rank, 1-based: j = (n - 1) / 2 + 1.
    let j = (n - 1) / 2 + 1;
    let u = beta(rng, j as f64, (n + 1 - j) as f64);
    let index = |u: f64| ((n as f64 * u) as usize).min(n - 1);
    let low = sorted[index(u)];
    if n % 2 == 1 {
        return low;
    }
    let above = -(rng.open01().ln() / (n - j) as f64).exp_m1();
    let high = sorted[index(u + (1.0 - u) * above)];
    (low + high) / 2.0
}

/// A Beta(a, b) draw, for a, b >= 1: X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b).
fn beta(rng: &mut SplitMix64, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    let y = gamma(rng, b);
    x / (x + y)
}

/// A Gamma(shape, 1) draw for shape >= 1: Marsaglia and Tsang's method (2000), exact (a
/// rejection sampler that accepts about 96% of its tries, or more).
fn gamma(rng: &mut SplitMix64, shape: f64) -> f64 {
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = rng.normal();
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = rng.open01();
        let x2 = x * x;
        if u < 1.0 - 0.0331 * x2 * x2 || u.ln() < 0.5 * x2 + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// The median of the multiset holding `counts[i]` copies of `sorted[i]` (`total` in all; `sorted`
/// ascending): the mean of the values of rank (total - 1) / 2 and total / 2 (0-based).
pub(crate) fn median_of_counts(sorted: &[f64], counts: &[u32], total: usize) -> f64 {
    let (k1, k2) = ((total.max(1) - 1) / 2, total / 2);
    let mut seen = 0usize;
    let mut low = None;
    for (value, &c) in sorted.iter().zip(counts) {
        seen += c as usize;
        if low.is_none() && seen > k1 {
            low = Some(*value);
        }
        if seen > k2 {
            return (low.unwrap_or(*value) + value) / 2.0;
        }
    }
    low.unwrap_or(0.0)
}

/// `num / den`, with 0/0 = 1 and x/0 = infinity.
fn ratio(num: f64, den: f64) -> f64 {
    if den == 0.0 {
        if num == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        num / den
    }
}

/// Largest sample size per side for which [`mann_whitney_p`] computes the exact distribution of
/// U (when there are no ties).
const EXACT_MWU_MAX: usize = 20;

/// Two-sided Mann-Whitney U test (Wilcoxon rank-sum): the p-value of the hypothesis that a value
/// drawn from `a` is as likely to exceed one drawn from `b` as the reverse.
///
/// U counts the pairs (x in `a`, y in `b`) with x > y, ties counting one half. Without ties and
/// with at most 20 values per side, the p-value is exact (the distribution of U by counting);
/// otherwise it uses the normal approximation with the tie correction of the variance,
/// `n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1)))`, and a continuity correction of 1/2.
/// Returns 1 (no evidence of a difference) when either side is empty or every value is tied.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let n = n1 + n2;
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&y| (y, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Midranks (1-based) and the tie term.
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && all[j].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        let midrank = (i + j + 1) as f64 / 2.0;
        rank_sum_a += midrank * all[i..j].iter().filter(|v| v.1).count() as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    let (f1, f2, nf) = (n1 as f64, n2 as f64, n as f64);
    let u = rank_sum_a - f1 * (f1 + 1.0) / 2.0;
    if tie_term == 0.0 && n1 <= EXACT_MWU_MAX && n2 <= EXACT_MWU_MAX {
        return exact_mwu_p(n1, n2, u.round() as usize);
    }
    let mean_u = f1 * f2 / 2.0;
    let var_u = f1 * f2 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var_u <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean_u).abs() - 0.5).max(0.0) / var_u.sqrt();
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// Exact two-sided p-value of U = `u` for samples of `n1` and `n2` values without ties:
/// `2 min(P(U <= u), P(U >= u))`, capped at 1.
fn exact_mwu_p(n1: usize, n2: usize, u: usize) -> f64 {
    let max_u = n1 * n2;
    // counts[m][k]: number of arrangements of m values of the first sample among the values
    // of the second (n2 of them) giving U = k; built up one value of the first sample at a time
    // with the recurrence f(m, n, k) = f(m - 1, n, k - n) + f(m, n - 1, k).
    // Here: table over n (second sample size) for fixed growth of m.
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect(); // m = 0: U = 0 only
    for m in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        cur.push(vec![1.0]); // n = 0: U = 0 only
        for n in 1..=n2 {
            let mut row = vec![0.0; m * n + 1];
            for (k, slot) in row.iter_mut().enumerate() {
                let with_top = if k >= n {
                    prev[n].get(k - n).copied().unwrap_or(0.0)
                } else {
                    0.0
                };
                let without = cur[n - 1].get(k).copied().unwrap_or(0.0);
                *slot = with_top + without;
            }
            cur.push(row);
        }
        prev = cur;
    }
    let dist = &prev[n2];
    let total: f64 = dist.iter().sum();
    let u = u.min(max_u);
    let lower: f64 = dist[..=u].iter().sum::<f64>() / total;
    let upper: f64 = dist[u..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

/// The two-sided p-value of a standard normal statistic `z`: `P(|Z| >= |z|)`; 1 for NaN.
pub fn normal_p(z: f64) -> f64 {
    if z.is_nan() {
        return 1.0;
    }
    erfc(z.abs() / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
}

/// Complementary error function, with a relative error below 1.2e-7 everywhere (Numerical
/// Recipes' Chebyshev fit `erfcc`).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Holm-Bonferroni adjusted p-values, same order as the input.
///
/// With the m p-values sorted ascending, p(1) <= ... <= p(m), the adjusted value of the i-th is
/// `max over j <= i of min(1, (m - j + 1) p(j))`: rejecting every hypothesis whose adjusted
/// p-value is below alpha controls the family-wise error rate at alpha (the probability of even
/// one false positive among the m tests). A NaN counts as 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let clean: Vec<f64> = p
        .iter()
        .map(|&v| if v.is_nan() { 1.0 } else { v.clamp(0.0, 1.0) })
        .collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| clean[i].total_cmp(&clean[j]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * clean[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_is_the_low_order_statistic() {
        assert!(fast(&[]).is_nan());
        let v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        // Rank floor(0.05 * 99) = 4: the 5th fastest of 100.
        assert_eq!(fast(&v), 5.0);
        assert_eq!(fast(&v[..20]), 81.0, "the minimum up to 20 samples");
        assert_eq!(fast(&v[..21]), 81.0, "the second fastest of 21");
        // Delays that only add (here: 90% of the samples doubled) leave it where it was.
        let mut noisy = v.clone();
        noisy.sort_by(f64::total_cmp);
        for x in noisy.iter_mut().skip(10) {
            *x *= 2.0;
        }
        assert_eq!(fast(&noisy), fast(&v));
    }

    #[test]
    fn bootstrap_fast_log_sd_is_zero_for_constant_sides_and_shrinks_with_samples() {
        assert!(bootstrap_fast_log_sd(&[], &[1.0], 100, 1).is_nan());
        assert_eq!(bootstrap_fast_log_sd(&[3.0; 50], &[4.0; 50], 200, 1), 0.0);
        let mut rng = SplitMix64::new(9);
        let mut side =
            |n: usize| -> Vec<f64> { (0..n).map(|_| 100.0 + rng.normal().abs() * 10.0).collect() };
        let (b1, a1) = (side(40), side(40));
        let (b2, a2) = (side(4000), side(4000));
        let small = bootstrap_fast_log_sd(&b1, &a1, 2000, 3);
        let large = bootstrap_fast_log_sd(&b2, &a2, 2000, 3);
        assert!(
            small > 0.0 && large > 0.0 && large < small / 3.0,
            "{small} {large}"
        );
        // The same seed, the same figure.
        assert_eq!(small, bootstrap_fast_log_sd(&b1, &a1, 2000, 3));
    }

    #[test]
    fn basics() {
        assert_eq!(mean(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!((stddev(&[10.0, 20.0, 30.0, 40.0]) - 12.909944).abs() < 1e-5);
        assert!((cv(&[10.0, 20.0, 30.0, 40.0]) - 0.516397).abs() < 1e-5);
        assert_eq!(quantile_sorted(&[0.0, 10.0], 0.9), 9.0);
        // Selection gives what sorting gives, ties and one value included.
        let mut rng = SplitMix64::new(5);
        for n in [1, 2, 3, 10, 999, 2000] {
            let values: Vec<f64> = (0..n).map(|_| rng.below(n / 2 + 1) as f64 * 0.5).collect();
            let sorted = sorted(&values);
            for q in [0.0, 0.025, 0.3, 0.5, 0.975, 1.0] {
                let mut v = values.clone();
                assert_eq!(
                    quantile_select(&mut v, q),
                    quantile_sorted(&sorted, q),
                    "{n} {q}"
                );
            }
        }
        assert_eq!(cv(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn median_mut_matches_median() {
        let mut rng = SplitMix64::new(3);
        for n in 0..40 {
            let v: Vec<f64> = (0..n).map(|_| rng.below(10) as f64).collect();
            assert_eq!(median_mut(&mut v.clone()), median(&v), "{v:?}");
        }
    }

    #[test]
    fn splitmix_is_deterministic_and_uniform() {
        // Reference values of SplitMix64 seeded with 0 (as in Vigna's splitmix64.c).
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut rng = SplitMix64::new(42);
        let mut counts = [0usize; 10];
        for _ in 0..100_000 {
            counts[rng.below(10)] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.below(1), 0);
    }

    #[test]
    fn mann_whitney_known_values() {
        // Identical samples: no evidence at all.
        let a = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(mann_whitney_p(&a, &a), 1.0);
        let big: Vec<f64> = (0..50).map(|i| (i % 7) as f64).collect();
        assert!(mann_whitney_p(&big, &big) > 0.99);
        // Exact: fully separated 5 vs 5 is one arrangement in C(10, 5) = 252, each way.
        let (lo, hi) = ([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!((mann_whitney_p(&lo, &hi) - 2.0 / 252.0).abs() < 1e-12);
        assert!((mann_whitney_p(&hi, &lo) - 2.0 / 252.0).abs() < 1e-12);
        // R's `wilcox.test` example: W = 35, one-sided exact p = 0.1272, two-sided 0.2544.
        let x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
        let y = [1.15, 0.88, 0.90, 0.74, 1.21];
        assert!((mann_whitney_p(&x, &y) - 0.2544).abs() < 1e-3);
        // Fully separated 20 vs 20: exact p = 2 / C(40, 20) ~ 1.5e-11; 21 vs 21 uses the normal
        // approximation: z = (220.5 - 0.5) / sqrt(21 * 21 * 43 / 12), p ~ 3.1e-8.
        let low: Vec<f64> = (0..20).map(f64::from).collect();
        let high: Vec<f64> = (100..120).map(f64::from).collect();
        let p = mann_whitney_p(&low, &high);
        assert!(
            p < 1e-6 && (p - 2.0 / 137_846_528_820.0).abs() < 1e-15,
            "{p}"
        );
        let low: Vec<f64> = (0..21).map(f64::from).collect();
        let high: Vec<f64> = (100..121).map(f64::from).collect();
        let p = mann_whitney_p(&low, &high);
        assert!(p < 1e-6 && p > 1e-8, "{p}");
        // Normal approximation with ties (values computed independently): U = 16, p = 0.17930.
        let a = [1.0, 2.0, 2.0, 3.0, 5.0, 5.0, 7.0];
        let b = [2.0, 3.0, 3.0, 4.0, 6.0, 8.0, 8.0, 9.0];
        assert!((mann_whitney_p(&a, &b) - 0.179_300_9).abs() < 1e-5);
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = (10..40).map(f64::from).collect();
        assert!((mann_whitney_p(&a, &b) - 2.244_838e-4).abs() < 1e-8);
        // Symmetric, and degenerate inputs mean no evidence.
        assert_eq!(mann_whitney_p(&a, &b), mann_whitney_p(&b, &a));
        assert_eq!(mann_whitney_p(&[], &b), 1.0);
        assert_eq!(mann_whitney_p(&[2.0, 2.0], &[2.0, 2.0, 2.0]), 1.0);
    }

    #[test]
    fn erfc_accuracy() {
        // erfc(0) = 1, erfc(1) = 0.157299207050285, erfc(3) = 2.20904969985854e-5,
        // erfc(-1) = 1.842700792949715.
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) / 0.157_299_207_050_285 - 1.0).abs() < 2e-7);
        assert!((erfc(3.0) / 2.209_049_699_858_54e-5 - 1.0).abs() < 2e-7);
        assert!((erfc(-1.0) - 1.842_700_792_949_715).abs() < 2e-7);
    }

    #[test]
    fn bootstrap_ci_contains_the_true_ratio_and_is_reproducible() {
        // Lognormal-ish noise around 100 (before) and 130 (after): the true ratio is 1.3.
        let mut rng = SplitMix64::new(9);
        let mut noisy = |center: f64, n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| {
                    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    center * (1.0 + 0.1 * (u - 0.5))
                })
                .collect()
        };
        let before = noisy(100.0, 50);
        let after = noisy(130.0, 50);
        let (lo, hi) = bootstrap_median_ratio(&before, &after, 2000, 0.95, 7);
        assert!(lo < 1.3 && 1.3 < hi, "({lo}, {hi})");
        assert!(hi - lo < 0.08, "({lo}, {hi})");
        let again = bootstrap_median_ratio(&before, &after, 2000, 0.95, 7);
        assert_eq!((lo, hi), again);
        let other_seed = bootstrap_median_ratio(&before, &after, 2000, 0.95, 8);
        assert_ne!((lo, hi), other_seed);
        // A wider confidence gives a wider interval.
        let (lo99, hi99) = bootstrap_median_ratio(&before, &after, 2000, 0.99, 7);
        assert!(lo99 <= lo && hi99 >= hi);
        // Identical constant samples: exactly 1; an empty side: (0, 0).
        assert_eq!(
            bootstrap_median_ratio(&[5.0; 10], &[5.0; 10], 100, 0.95, 1),
            (1.0, 1.0)
        );
        assert_eq!(
            bootstrap_median_ratio(&[], &after, 100, 0.95, 1),
            (0.0, 0.0)
        );
    }

    #[test]
    fn bootstrap_coverage_is_near_nominal() {
        // Skewed samples (exponential around a floor), ratio 1.2: the 90% interval should hold
        // the true ratio in about 90% of repeated experiments.
        let mut rng = SplitMix64::new(11);
        let mut draw = |scale: f64, n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| {
                    let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
                    scale * (1.0 - u.ln())
                })
                .collect()
        };
        let trials = 200;
        let mut covered = 0;
        for t in 0..trials {
            let before = draw(1000.0, 40);
            let after = draw(1200.0, 60);
            let (lo, hi) = bootstrap_median_ratio(&before, &after, 500, 0.9, t);
            if lo <= 1.2 && 1.2 <= hi {
                covered += 1;
            }
        }
        assert!((165..=195).contains(&covered), "{covered} of {trials}");
    }

    #[test]
    fn median_of_counts_matches_the_expanded_multiset() {
        let sorted = [1.0, 2.0, 4.0, 8.0, 16.0];
        for counts in [
            [1, 1, 1, 1, 1],
            [0, 2, 0, 0, 2],
            [3, 0, 0, 0, 1],
            [0, 0, 0, 0, 1],
            [2, 1, 0, 1, 0],
        ] {
            let expanded: Vec<f64> = sorted
                .iter()
                .zip(counts)
                .flat_map(|(&v, c)| std::iter::repeat_n(v, c as usize))
                .collect();
            let total = expanded.len();
            assert_eq!(
                median_of_counts(&sorted, &counts, total),
                median(&expanded),
                "{counts:?}"
            );
        }
    }

    /// 30 events x 50 samples x 2000 resamples. The time is printed, not judged (a test's
    /// verdict must not hang on how busy the machine is); the speed is measured by the diff
    /// measurements of docs/overhead.md.
    #[test]
    fn bootstrap_of_thirty_events() {
        let before: Vec<f64> = (0..50).map(|i| 1000.0 + (i * 37 % 50) as f64).collect();
        let after: Vec<f64> = (0..50).map(|i| 1010.0 + (i * 13 % 50) as f64).collect();
        let start = std::time::Instant::now();
        for seed in 0..30 {
            let (lo, hi) = bootstrap_median_ratio(&before, &after, 2000, 0.95, seed);
            assert!(lo <= hi && lo > 0.9 && hi < 1.1, "{lo} {hi}");
        }
        eprintln!("30 bootstraps of 2000 resamples: {:?}", start.elapsed());
    }

    /// The median of a resample drawn the slow, obvious way: n indices, sorted, the middle.
    fn brute_resampled_median(sorted: &[f64], rng: &mut SplitMix64) -> f64 {
        let n = sorted.len();
        let mut drawn: Vec<f64> = (0..n).map(|_| sorted[rng.below(n)]).collect();
        median_mut(&mut drawn)
    }

    /// Two-sample Kolmogorov-Smirnov statistic: the largest distance between the empirical
    /// distribution functions of `a` and `b` (both sorted).
    fn ks(a: &[f64], b: &[f64]) -> f64 {
        let (mut i, mut j, mut d) = (0, 0, 0.0f64);
        while i < a.len() && j < b.len() {
            let x = a[i].min(b[j]);
            while i < a.len() && a[i] <= x {
                i += 1;
            }
            while j < b.len() && b[j] <= x {
                j += 1;
            }
            d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
        }
        d
    }

    /// Above `COUNTING_MAX` values, the resampled median is drawn from its order statistics:
    /// its distribution is that of drawing every value and taking the middle (two-sample
    /// Kolmogorov-Smirnov test at 0.1%, fixed seeds), for odd and even counts, distinct values,
    /// ties, and two clusters (where an even count's median is often the mean of the two).
    #[test]
    fn drawn_medians_follow_the_resampling_distribution() {
        let draws = 4000;
        let mut seeds = SplitMix64::new(77);
        let skewed = |n: usize| -> Vec<f64> {
            sorted(
                &(0..n)
                    .map(|i| ((i * 7919) % n) as f64 * 1.5 + 10.0)
                    .collect::<Vec<_>>(),
            )
        };
        let ties = |n: usize| -> Vec<f64> { (0..n).map(|i| (i / 37) as f64).collect() };
        let clusters = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| if i < n / 2 { 100.0 } else { 200.0 })
                .collect()
        };
        for n in [COUNTING_MAX + 1, COUNTING_MAX + 2, 257, 1000] {
            for values in [skewed(n), ties(n), clusters(n)] {
                let mut rng = SplitMix64::new(seeds.next_u64());
                let mut fast: Vec<f64> = (0..draws)
                    .map(|_| resampled_median(&values, &mut [], &mut rng))
                    .collect();
                let mut slow: Vec<f64> = (0..draws)
                    .map(|_| brute_resampled_median(&values, &mut rng))
                    .collect();
                fast.sort_by(f64::total_cmp);
                slow.sort_by(f64::total_cmp);
                // Critical value at 0.1% for two samples of `draws`: 1.95 sqrt(2 / draws).
                let d = ks(&fast, &slow);
                assert!(d < 1.95 * (2.0 / draws as f64).sqrt(), "n {n}: D = {d}");
            }
        }
    }

    #[test]
    fn bootstrap_coverage_is_near_nominal_for_large_samples() {
        // As bootstrap_coverage_is_near_nominal, with sides large enough to draw medians.
        let mut rng = SplitMix64::new(12);
        let mut draw = |scale: f64, n: usize| -> Vec<f64> {
            (0..n).map(|_| scale * (1.0 - rng.open01().ln())).collect()
        };
        let (trials, mut covered) = (200, 0);
        for t in 0..trials {
            let before = draw(1000.0, 400);
            let after = draw(1200.0, 601);
            let (lo, hi) = bootstrap_median_ratio(&before, &after, 500, 0.9, t);
            if lo <= 1.2 && 1.2 <= hi {
                covered += 1;
            }
        }
        assert!((165..=195).contains(&covered), "{covered} of {trials}");
    }

    #[test]
    fn gamma_and_normal_draws_have_their_moments() {
        let mut rng = SplitMix64::new(5);
        let n = 200_000;
        let normal: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
        assert!(mean(&normal).abs() < 0.01 && (stddev(&normal) - 1.0).abs() < 0.01);
        for shape in [1.0, 2.5, 40.0, 5e6] {
            let g: Vec<f64> = (0..n).map(|_| gamma(&mut rng, shape)).collect();
            // Gamma(k): mean k, variance k.
            let se = (shape / n as f64).sqrt();
            assert!((mean(&g) - shape).abs() < 5.0 * se, "{shape}: {}", mean(&g));
            assert!((stddev(&g) / shape.sqrt() - 1.0).abs() < 0.02, "{shape}");
        }
    }

    #[test]
    fn holm_worked_example() {
        // Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> 0.06
        // (adjusted values never decrease along the sorted order).
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.005]);
        let expected = [0.03, 0.06, 0.06, 0.02];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{adjusted:?}");
        }
        assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
        assert_eq!(holm(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
        assert!(holm(&[]).is_empty());
    }
}
