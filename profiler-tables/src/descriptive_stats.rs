//! Descriptive statistics over `f64` samples; every function accepts an empty slice and returns 0
//! for it.

/// Arithmetic mean.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample standard deviation (n - 1 in the denominator; 0 for fewer than two values).
pub fn stddev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    let var = values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
    var.sqrt()
}

/// Coefficient of variation: standard deviation over mean (0 when the mean is 0).
pub fn cv(values: &[f64]) -> f64 {
    let m = mean(values);
    if m == 0.0 {
        0.0
    } else {
        stddev(values) / m
    }
}

/// The `q` quantile (0..=1) of *sorted* values, by linear interpolation between closest ranks.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

/// Median (mean of the two middle values for an even count): `quantile_sorted(sorted, 0.5)`,
/// to the bit, found by selection (linear time) rather than by sorting a copy.
pub fn median(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return quantile_sorted(values, 0.5);
    }
    let mut v = values.to_vec();
    // `quantile_sorted`'s ranks and weight, and its formula.
    let pos = 0.5 * (n - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let (below, &mut upper, _) = v.select_nth_unstable_by(hi, f64::total_cmp);
    let lower = match lo == hi {
        true => upper,
        // The value of rank `hi - 1`: the greatest of those below rank `hi`.
        false => below
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .unwrap_or(upper),
    };
    lower + (upper - lower) * (pos - lo as f64)
}

/// Scales a median absolute deviation to a normal distribution's standard deviation.
pub const MAD_SCALE: f64 = 1.4826;

/// `1.4826 x` the median absolute deviation of `values`: a standard deviation that a minority of
/// outliers cannot move (0 for no value).
pub fn robust_spread(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let center = median(values);
    let deviations: Vec<f64> = values.iter().map(|v| (v - center).abs()).collect();
    MAD_SCALE * median(&deviations)
}

/// The ranks (0-based, into the sorted values) of a distribution-free confidence interval of
/// the median of `n` values at confidence at least `confidence` (order statistics, binomial
/// with p = 1/2); the whole range when `n` is too small to reach it.
pub fn median_interval_ranks(n: usize, confidence: f64) -> (usize, usize) {
    if n == 0 {
        return (0, 0);
    }
    // P(X_(k) <= m <= X_(n-1-k)) = 1 - 2 P(Binomial(n, 1/2) <= k); the largest k that keeps it.
    let mut pmf = 0.5f64.powi(n as i32);
    let mut cdf = pmf;
    let mut k = 0usize;
    while k + 1 < n / 2 + 1 {
        // P(B = k + 1) from P(B = k).
        let next = pmf * (n - k) as f64 / (k + 1) as f64;
        if 1.0 - 2.0 * (cdf + next) < confidence {
            break;
        }
        pmf = next;
        cdf += next;
        k += 1;
    }
    if 1.0 - 2.0 * 0.5f64.powi(n as i32) < confidence {
        return (0, n - 1);
    }
    (k, n - 1 - k)
}

/// A sorted copy.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Nanosecond samples as `f64`.
pub fn as_f64(values: &[u64]) -> Vec<f64> {
    values.iter().map(|&v| v as f64).collect()
}

/// Median of `values`, reordering them in place (`select_nth_unstable`: linear time, no
/// allocation). Mean of the two middle values for an even count; 0 for an empty slice.
pub fn median_mut(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return 0.0;
    }
    let (low, &mut upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        upper
    } else {
        // The lower middle value is the largest of the lower part.
        let lower = low.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lower + upper) / 2.0
    }
}

#[cfg(test)]
mod interval_tests {
    use super::*;

    /// The order-statistic interval of a median: ranks 1 and 7 of 9 (96.1%), the whole range
    /// of 5 (no narrower interval reaches 95%), ranks 39 and 60 of 100.
    #[test]
    fn median_interval_ranks_reach_the_confidence() {
        assert_eq!(median_interval_ranks(9, 0.95), (1, 7));
        assert_eq!(median_interval_ranks(5, 0.95), (0, 4));
        assert_eq!(median_interval_ranks(1, 0.95), (0, 0));
        assert_eq!(median_interval_ranks(100, 0.95), (39, 60));
        assert_eq!(robust_spread(&[1.0, 2.0, 3.0, 100.0]), MAD_SCALE * 1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `median` is the sorted values' `quantile_sorted(.., 0.5)`, to the bit: odd and even
    /// counts, ties, negatives, signed zeros, infinities.
    #[test]
    fn median_by_selection_is_the_sorted_median() {
        let mut seed = 11u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let specials = [
            0.0,
            -0.0,
            1.5,
            -3.25,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
        ];
        for n in 0..200 {
            for _ in 0..5 {
                let values: Vec<f64> = (0..n)
                    .map(|_| match next() % 4 {
                        0 => specials[(next() % specials.len() as u64) as usize],
                        1 => (next() % 10) as f64,
                        _ => (next() % 1_000_000) as f64 / 7.0 - 50_000.0,
                    })
                    .collect();
                let want = quantile_sorted(&sorted(&values), 0.5);
                let got = median(&values);
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{values:?}: {got} against {want}"
                );
            }
        }
    }
}
