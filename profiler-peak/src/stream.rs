//! The memory-bandwidth kernels, after McCalpin's STREAM: `copy` (c = a) and `triad`
//! (a = b + s c) over f64 arrays, bytes counted as STREAM counts them (what the kernel reads
//! and writes, no write-allocate traffic): 16 bytes an element for copy, 24 for triad.

/// Bytes STREAM counts per element of `copy`.
pub const COPY_BYTES: u64 = 16;
/// Bytes STREAM counts per element of `triad`.
pub const TRIAD_BYTES: u64 = 24;

/// One thread's three arrays.
pub struct Arrays {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Arrays {
    /// Three arrays of `len` elements, filled (so their pages are touched) as STREAM fills
    /// them.
    pub fn new(len: usize) -> Result<Arrays, String> {
        let array = |value| super::timing::try_filled(len, value, "a STREAM array");
        Ok(Arrays {
            a: array(1.0)?,
            b: array(2.0)?,
            c: array(0.0)?,
        })
    }

    /// c = a.
    pub fn copy(&mut self) {
        for (c, a) in self.c.iter_mut().zip(&self.a) {
            *c = *a;
        }
        std::hint::black_box(&mut self.c);
    }

    /// a = b + 3 c.
    pub fn triad(&mut self) {
        const SCALAR: f64 = 3.0;
        for ((a, b), c) in self.a.iter_mut().zip(&self.b).zip(&self.c) {
            *a = *b + SCALAR * *c;
        }
        std::hint::black_box(&mut self.a);
    }

    /// Whether the first, middle and last elements hold what `reps` rounds of copy then triad
    /// leave (STREAM's own check, on three elements so that it costs nothing): a kernel the
    /// compiler dropped, or one that stopped short, would not.
    pub fn check(&self, reps: usize) -> bool {
        let (mut a, b, mut c) = (1.0f64, 2.0f64, 0.0f64);
        for _ in 0..reps {
            c = a;
            a = b + 3.0 * c;
        }
        let n = self.a.len();
        [0, n / 2, n - 1]
            .iter()
            .all(|&i| self.a[i] == a && self.c[i] == c && self.b[i] == b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_compute_what_stream_checks() {
        let mut arrays = Arrays::new(1000).unwrap();
        for _ in 0..4 {
            arrays.copy();
            arrays.triad();
        }
        assert!(arrays.check(4));
        assert!(!arrays.check(3));
    }
}
