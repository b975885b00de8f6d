//! The GEMM `prof peak` times: matrixmultiply's `sgemm` (f32) or `dgemm` (f64), on row-major
//! matrices, C = A B.

/// An element type matrixmultiply multiplies.
pub trait Element: Copy + Send + Sync + Default + PartialEq + std::fmt::Debug + 'static {
    /// The kernel's name, for the report: `sgemm` or `dgemm`.
    const KERNEL: &'static str;
    /// The type's name: `f32` or `f64`.
    const NAME: &'static str;

    /// `x` in this type.
    fn from_f64(x: f64) -> Self;

    /// This value as f64, to compare products.
    fn to_f64(self) -> f64;

    /// C = A B for A of m × k, B of k × n, C of m × n, all row-major and dense.
    ///
    /// Panics when a slice's length does not match its shape: the shapes are the program's,
    /// never the user's, and the kernel reads through raw pointers.
    fn multiply(m: usize, k: usize, n: usize, a: &[Self], b: &[Self], c: &mut [Self]);
}

/// The checks every `multiply` makes before it hands raw pointers to the kernel.
fn check_shapes(m: usize, k: usize, n: usize, a: usize, b: usize, c: usize) {
    assert_eq!(a, m * k, "A is not m × k");
    assert_eq!(b, k * n, "B is not k × n");
    assert_eq!(c, m * n, "C is not m × n");
    assert!(
        m.max(k).max(n) <= isize::MAX as usize,
        "a stride does not fit an isize"
    );
}

impl Element for f32 {
    const KERNEL: &'static str = "sgemm";
    const NAME: &'static str = "f32";

    fn from_f64(x: f64) -> f32 {
        x as f32
    }

    fn to_f64(self) -> f64 {
        self as f64
    }

    fn multiply(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
        check_shapes(m, k, n, a.len(), b.len(), c.len());
        // SAFETY: the lengths were checked against the shapes; with row strides k, n, n and
        // column stride 1 every index the kernel forms is inside its slice; C is a unique
        // borrow, so it aliases neither A nor B; beta is 0, so C's old values are not read.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            )
        }
    }
}

impl Element for f64 {
    const KERNEL: &'static str = "dgemm";
    const NAME: &'static str = "f64";

    fn from_f64(x: f64) -> f64 {
        x
    }

    fn to_f64(self) -> f64 {
        self
    }

    fn multiply(m: usize, k: usize, n: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
        check_shapes(m, k, n, a.len(), b.len(), c.len());
        // SAFETY: as for f32 above.
        unsafe {
            matrixmultiply::dgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            )
        }
    }
}

/// Fills `out` with values in [-1, 1) from a fixed sequence (an LCG seeded by `seed`): no zeros
/// to make a product trivially cheap, nothing that overflows.
pub fn fill<T: Element>(out: &mut [T], seed: u64) {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for x in out {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        *x = T::from_f64((state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0);
    }
}

/// Entry (i, j) of A B computed the naive way (in f64), for checking the kernel's.
pub fn naive_entry<T: Element>(k: usize, n: usize, a: &[T], b: &[T], i: usize, j: usize) -> f64 {
    (0..k)
        .map(|p| a[i * k + p].to_f64() * b[p * n + j].to_f64())
        .sum()
}

/// Whether the kernel's entry `got` is the naive product's `want`, within the rounding of `k`
/// products of values in [-1, 1) in `T` (the kernel sums in another order).
pub fn agrees<T: Element>(got: f64, want: f64, k: usize) -> bool {
    let epsilon = if T::NAME == "f32" { 1.2e-7 } else { 2.3e-16 };
    (got - want).abs() <= 4.0 * epsilon * k as f64 + 1e-30
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's product, every entry, against the naive one: odd shapes (no multiple of the
    /// kernels' tiles), so that a wrong stride or a dropped edge would show.
    fn check<T: Element>() {
        let (m, k, n) = (37, 53, 29);
        let mut a = vec![T::default(); m * k];
        let mut b = vec![T::default(); k * n];
        fill(&mut a, 1);
        fill(&mut b, 2);
        let mut c = vec![T::default(); m * n];
        T::multiply(m, k, n, &a, &b, &mut c);
        for i in 0..m {
            for j in 0..n {
                let want = naive_entry(k, n, &a, &b, i, j);
                let got = c[i * n + j].to_f64();
                assert!(agrees::<T>(got, want, k), "{i},{j}: {got} != {want}");
            }
        }
    }

    #[test]
    fn sgemm_computes_the_product() {
        check::<f32>();
    }

    #[test]
    fn dgemm_computes_the_product() {
        check::<f64>();
    }

    #[test]
    fn a_wrong_entry_is_seen() {
        assert!(!agrees::<f32>(1.0, 1.01, 1024));
        assert!(agrees::<f32>(1.0, 1.0 + 1e-5, 1024));
    }
}
