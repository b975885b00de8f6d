//! The conv block of the burn examples (`cnn.rs` trains three of them, `conv_ratio.rs` times
//! them alone): one definition, so that both time the same layers.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{PaddingConfig2d, Relu};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use profiler_core::profiled;

/// Two convs 3x3 (same padding) with ReLUs, `in -> hidden -> out` channels, and a max-pool
/// 2x2: doubling `hidden` changes this block's work and no other's.
#[derive(Module, Debug)]
pub struct ConvBlock<B: Backend> {
    conv_a: Conv2d<B>,
    conv_b: Conv2d<B>,
    pool: MaxPool2d,
    relu: Relu,
}

impl<B: Backend> ConvBlock<B> {
    pub fn new([input, hidden, output]: [usize; 3], device: &B::Device) -> Self {
        let conv = |channels| {
            Conv2dConfig::new(channels, [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device)
        };
        ConvBlock {
            conv_a: conv([input, hidden]),
            conv_b: conv([hidden, output]),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
            relu: Relu::new(),
        }
    }

    #[profiled(phase = "fwd")]
    pub fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let x = self.relu.forward(self.conv_a.forward(x));
        self.pool.forward(self.relu.forward(self.conv_b.forward(x)))
    }
}
