//! Student's t distribution: the intervals and p-values of several runs a side (`diff`) and of
//! change points (`drift`).

/// The quantile `q` (0.5 to 1) of Student's t with `df` degrees of freedom, by bisection.
pub fn quantile(q: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while cdf(hi, df) < q && hi < 1e9 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid == lo || mid == hi {
            // `lo` and `hi` are neighbours: every further step would leave the midpoint where
            // it is (about 60 steps in, where 200 were once taken).
            return mid;
        }
        if cdf(mid, df) < q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The distribution function of Student's t with `df` degrees of freedom.
pub fn cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * incomplete_beta(0.5 * df, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The regularized incomplete beta function `I_x(a, b)` (continued fraction, Lentz).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let nonzero = |v: f64| if v.abs() < TINY { TINY } else { v };
    // One step of Lentz's method with coefficient `aa`: returns the factor to multiply `h` by.
    let step = |aa: f64, c: &mut f64, d: &mut f64| {
        *d = 1.0 / nonzero(1.0 + aa * *d);
        *c = nonzero(1.0 + aa / *c);
        *d * *c
    };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / nonzero(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        h *= step(m * (b - m) * x / ((qam + m2) * (a + m2)), &mut c, &mut d);
        let del = step(
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
            &mut c,
            &mut d,
        );
        h *= del;
        if (del - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for `x > 0` (Lanczos).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 6] = [
        76.180_091_729_471_46,
        -86.505_320_329_416_77,
        24.014_098_240_830_91,
        -1.231_739_572_450_155,
        0.120_865_097_386_617_9e-2,
        -0.539_523_938_495_3e-5,
    ];
    let mut y = x;
    let tmp = x + 5.5;
    let tmp = tmp - (x + 0.5) * tmp.ln();
    let mut ser = 1.000_000_000_190_015;
    for g in G {
        y += 1.0;
        ser += g / y;
    }
    -tmp + (2.506_628_274_631_000_5 * ser / x).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_the_tables() {
        for (df, q975) in [(1.0, 12.706), (2.0, 4.303), (5.0, 2.571), (30.0, 2.042)] {
            let t = quantile(0.975, df);
            assert!((t - q975).abs() < 2e-3, "df {df}: {t}");
        }
        assert!((cdf(0.0, 7.0) - 0.5).abs() < 1e-12);
    }
}
