//! The model: an MLP with residual hidden blocks, timed three ways.
//!
//! ```text
//! input [batch, inputs]
//!   -> Input       linear + relu             (a) #[profiled(layer = "input", phase = "fwd")]
//!   -> layers.0    x + relu(linear(norm(x)))  (b) Timed, probe named "layers.0" at run time
//!        norm, linear                         (c) `layer_norm` and `linear` tracing spans
//!   -> layers.1 ...
//!   -> Head        linear -> logits           (a) #[profiled(layer = "head", phase = "fwd")]
//! loss, backward, update                      (a) #[profiled] with phase loss / bwd / update
//! ```
//!
//! Every probe around a linear layer counts its matmul's FLOPs and bytes (`work.rs`): `Input`
//! and `Head` with the `flops` and `bytes` keys, each block's `Timed` probe through
//! `RuntimeProbe::with_work`, and the `linear` span through its `flops` and `bytes` fields. The
//! norm, the activations, the loss, backward and the update count nothing. `Input` and `Head`
//! also give their `shape` (the input's dims and the weights'), which `prof report` lists per
//! event.

use candle_core::backprop::GradStore;
use candle_core::{Device, Result, Tensor};
use candle_example::backward::LayerProbes;
use candle_nn::{Linear, Module, Optimizer, VarBuilder};
use profiler_core::profiled;

use crate::timed::Timed;
use crate::traced::{TracedLayerNorm, TracedLinear};
use crate::work::LinearWork;

/// The sizes of the model.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub inputs: usize,
    pub hidden: usize,
    pub blocks: usize,
    pub classes: usize,
}

/// (a) The first layer, its forward annotated.
#[derive(Clone, Debug)]
pub struct Input {
    linear: Linear,
}

impl Module for Input {
    #[profiled(
        layer = "input",
        phase = "fwd",
        stream = crate::gpu::stream(xs.device()),
        flops = LinearWork::of(xs, &self.linear).flops,
        bytes = LinearWork::of(xs, &self.linear).bytes,
        shape = (xs.dims(), self.linear.weight().dims())
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.linear.forward(xs)?.relu()
    }
}

/// One hidden block, `x + relu(linear(norm(x)))`: not annotated itself; the model wraps each
/// in [`Timed`] under its own name, and its norm and linear carry `tracing` spans.
#[derive(Clone, Debug)]
pub struct Block {
    norm: TracedLayerNorm,
    linear: TracedLinear,
}

impl Module for Block {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let h = self.linear.forward(&self.norm.forward(xs)?)?.relu()?;
        xs + h
    }
}

impl Block {
    /// The work of a forward on `xs`: its linear's (the norm keeps the shape of `xs`).
    fn work(&self, xs: &Tensor) -> LinearWork {
        self.linear.work(xs)
    }
}

/// (a) The output layer, its forward annotated.
#[derive(Clone, Debug)]
pub struct Head {
    linear: Linear,
}

impl Module for Head {
    #[profiled(
        layer = "head",
        phase = "fwd",
        stream = crate::gpu::stream(xs.device()),
        flops = LinearWork::of(xs, &self.linear).flops,
        bytes = LinearWork::of(xs, &self.linear).bytes,
        shape = (xs.dims(), self.linear.weight().dims())
    )]
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.linear.forward(xs)
    }
}

/// The whole network.
#[derive(Clone, Debug)]
pub struct Mlp {
    input: Input,
    blocks: Vec<Timed<Block>>,
    head: Head,
    /// With `--bwd-layers`: the events `<layer>/fwd` and `<layer>/bwd` of `input`,
    /// `layers.0` .. and `head`, in that order, whose markers find each layer's backward steps
    /// in candle's walk (`candle_example::backward`).
    by_layer: Option<Vec<LayerProbes>>,
}

impl Mlp {
    /// Makes the layers, their variables in `vb`'s var map; `by_layer` times each layer's
    /// backward steps as `<layer>/bwd` (and its forward as `<layer>/fwd`).
    pub fn new(shape: Shape, vb: VarBuilder, by_layer: bool) -> Result<Self> {
        let input = Input {
            linear: candle_nn::linear(shape.inputs, shape.hidden, vb.pp("input"))?,
        };
        let blocks = (0..shape.blocks)
            .map(|i| {
                let vb = vb.pp(format!("layers.{i}"));
                let block = Block {
                    norm: TracedLayerNorm::new(shape.hidden, "hidden", vb.pp("norm"))?,
                    linear: TracedLinear::new(
                        shape.hidden,
                        shape.hidden,
                        "hidden",
                        vb.pp("linear"),
                    )?,
                };
                // (b) The probe's name exists only now, at run time; it counts the block's
                // linear work.
                Ok(Timed::new(
                    block,
                    &format!("layers.{i}"),
                    Some("hidden"),
                    Some("fwd"),
                    Some(Block::work),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let head = Head {
            linear: candle_nn::linear(shape.hidden, shape.classes, vb.pp("head"))?,
        };
        let by_layer = by_layer.then(|| {
            std::iter::once("input".to_string())
                .chain((0..shape.blocks).map(|i| format!("layers.{i}")))
                .chain(std::iter::once("head".to_string()))
                .map(|name| LayerProbes::new(&name))
                .collect()
        });
        Ok(Self {
            input,
            blocks,
            head,
            by_layer,
        })
    }

    /// `f(xs)` as the forward of layer number `i` (0: input, then the blocks, then the head)
    /// when the model is timed by layer.
    fn layer(
        &self,
        i: usize,
        xs: &Tensor,
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        match &self.by_layer {
            Some(layers) => layers[i].forward(xs, f),
            None => f(xs),
        }
    }
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let mut h = self.layer(0, xs, |xs| self.input.forward(xs))?;
        for (i, block) in self.blocks.iter().enumerate() {
            h = self.layer(i + 1, &h, |h| block.forward(h))?;
        }
        self.layer(self.blocks.len() + 1, &h, |h| self.head.forward(h))
    }
}

/// (a) The loss: cross-entropy of the logits against the labels.
#[profiled(layer = "head", phase = "loss", stream = crate::gpu::stream(logits.device()))]
pub fn loss(logits: &Tensor, labels: &Tensor) -> Result<Tensor> {
    candle_nn::loss::cross_entropy(logits, labels)
}

/// (a) The backward pass of the whole model. `Optimizer::backward_step` is `loss.backward()`
/// then `step(&grads)`; calling the two here times backward and update as separate probes.
/// `candle_example::backward::backward` is `loss.backward()` that also ends the `<layer>/bwd`
/// runs of a model timed by layer.
#[profiled(phase = "bwd", stream = crate::gpu::stream(loss.device()))]
pub fn backward(loss: &Tensor) -> Result<GradStore> {
    candle_example::backward::backward(loss)
}

/// (a) The optimizer's update of every parameter.
#[profiled(phase = "update", stream = crate::gpu::stream(device))]
pub fn update<O: Optimizer>(opt: &mut O, grads: &GradStore, device: &Device) -> Result<()> {
    // Only the `cuda` build reads `device` (the stream the update is timed on).
    let _ = device;
    opt.step(grads)
}
