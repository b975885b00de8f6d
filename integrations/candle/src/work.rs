//! What a linear layer's forward computes, for the profiler's work counts (`flops` and `bytes`:
//! the reports' FLOP/s, bytes/s and MFU per layer).
//!
//! `Linear` on inputs `[m, k]` with weights `[n, k]` is one matmul of `2·m·n·k` FLOPs (a multiply
//! and an add per term; the bias add and any activation are left out), and it moves its inputs,
//! its weights and bias, and its output once each, at the dtype's size: a lower bound on the
//! memory traffic, which a cache-blocked matmul reads more than once.

use candle_core::Tensor;
use candle_nn::Linear;

/// The work of one forward of a linear layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearWork {
    /// `2·m·n·k`.
    pub flops: u64,
    /// The bytes of the inputs, the weights and bias, and the output.
    pub bytes: u64,
    /// The matmul's `[m, k, n]`: rows of the input, inputs, outputs (the spans' shape fields).
    pub mkn: [u64; 3],
}

impl LinearWork {
    /// The work of `linear.forward(xs)`, from the shapes alone (nothing is computed).
    pub fn of(xs: &Tensor, linear: &Linear) -> LinearWork {
        let weight = linear.weight().dims();
        let (n, k) = (weight[0] as u64, weight[1] as u64);
        let m = xs.elem_count() as u64 / k.max(1);
        let bias = linear.bias().map_or(0, |b| b.elem_count() as u64);
        let size = xs.dtype().size_in_bytes() as u64;
        LinearWork {
            flops: 2 * m * n * k,
            bytes: size * (m * k + n * k + bias + m * n),
            mkn: [m, k, n],
        }
    }

    /// As a runtime probe's work closure returns it: (FLOPs, bytes).
    pub fn pair(self) -> (u64, u64) {
        (self.flops, self.bytes)
    }
}
