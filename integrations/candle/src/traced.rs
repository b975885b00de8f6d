//! (c) `tracing` spans on candle modules, as candle-transformers' `with_tracing` wrappers put
//! them: a span made once with the module and entered on every `forward`.
//!
//! candle-core and candle-nn 0.11 emit no spans themselves (their sources never call
//! `tracing`, under any feature); candle-transformers' models do, through wrappers like these.
//! With `--tracing`, profiler-core's bridge turns each selected span into a probe
//! (`kind=span`, name = the span's name, layer and phase from its fields). The `linear` span's
//! `flops` and `bytes` fields make its probe count the matmul's work, as the `flops` and `bytes`
//! keys of `#[profiled]` do, and its `shape.m`, `shape.k` and `shape.n` fields give the matmul's
//! shape, as the `shape` key does.

use candle_core::{Result, Tensor};
use candle_nn::{LayerNorm, Linear, Module, VarBuilder};
use tracing::field::Empty;
use tracing::Span;

use crate::work::LinearWork;

/// `candle_nn::Linear` with a `linear` span around its forward, which carries the forward's
/// FLOPs and bytes.
#[derive(Clone, Debug)]
pub struct TracedLinear {
    inner: Linear,
    span: Span,
}

impl TracedLinear {
    /// A `[inputs -> outputs]` linear layer whose span carries `layer`.
    pub fn new(inputs: usize, outputs: usize, layer: &str, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            inner: candle_nn::linear(inputs, outputs, vb)?,
            // The work depends on the batch, known at each forward: recorded there.
            span: tracing::trace_span!(
                "linear",
                layer,
                phase = "fwd",
                flops = Empty,
                bytes = Empty,
                shape.m = Empty,
                shape.k = Empty,
                shape.n = Empty
            ),
        })
    }

    /// The work of a forward on `xs`.
    pub fn work(&self, xs: &Tensor) -> LinearWork {
        LinearWork::of(xs, &self.inner)
    }
}

impl Module for TracedLinear {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        // Without a subscriber that wants the span, nothing to count.
        if !self.span.is_disabled() {
            let work = self.work(xs);
            self.span.record("flops", work.flops);
            self.span.record("bytes", work.bytes);
            let [m, k, n] = work.mkn;
            self.span.record("shape.m", m);
            self.span.record("shape.k", k);
            self.span.record("shape.n", n);
        }
        let _enter = self.span.enter();
        self.inner.forward(xs)
    }
}

/// `candle_nn::LayerNorm` with a `layer_norm` span around its forward.
#[derive(Clone, Debug)]
pub struct TracedLayerNorm {
    inner: LayerNorm,
    span: Span,
}

impl TracedLayerNorm {
    /// A layer norm over `size` features whose span carries `layer`.
    pub fn new(size: usize, layer: &str, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            inner: candle_nn::layer_norm(size, 1e-5, vb)?,
            span: tracing::trace_span!("layer_norm", layer, phase = "fwd"),
        })
    }
}

impl Module for TracedLayerNorm {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let _enter = self.span.enter();
        self.inner.forward(xs)
    }
}
