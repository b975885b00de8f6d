//! A small CNN trained with burn on `Autodiff<Profiled<NdArray>>` (or `Autodiff<Profiled<Flex>>`
//! with `--features flex` and `--backend flex`): three conv blocks (two convs
//! 3x3 with ReLUs, max-pool 2x2) and two linear layers, Adam, on random images (the data phase makes
//! them). Each layer's forward runs in `profiler_burn::layer`, the backward pass in
//! `profiler_burn::backward`, so the summary shows `block1/bwd`, `block2/bwd`, ... beside the
//! forward events.
//!
//! ```text
//! cargo run --release --example cnn                       # sample mode, summary on stderr
//! PROF_MODE=trace cargo run --release --example cnn
//! cargo run --release --example cnn -- --wide 2           # block 2 twice as wide inside
//! PROF_MODE=trace cargo run --release --features flex --example cnn -- --backend flex
//! ```

use burn::backend::NdArray;
use burn::module::Module;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Distribution, Int, Tensor, TensorData};
use profiler_core::{probe, profiled};

#[path = "shared/conv_block.rs"]
mod conv_block;
use conv_block::ConvBlock;

#[derive(Module, Debug)]
struct Cnn<B: Backend> {
    block1: ConvBlock<B>,
    block2: ConvBlock<B>,
    block3: ConvBlock<B>,
    fc1: Linear<B>,
    fc2: Linear<B>,
    relu: Relu,
}

/// Input images: 3 channels, 16x16; 10 classes.
const SIDE: usize = 16;
const CLASSES: usize = 10;

impl<B: Backend> Cnn<B> {
    /// `hidden`: the hidden channels of the three blocks (whose outputs have 16, 32 and 64).
    fn new(hidden: [usize; 3], device: &B::Device) -> Self {
        let [h1, h2, h3] = hidden;
        let flat = 64 * (SIDE / 8) * (SIDE / 8);
        Cnn {
            block1: ConvBlock::new([3, h1, 16], device),
            block2: ConvBlock::new([16, h2, 32], device),
            block3: ConvBlock::new([32, h3, 64], device),
            fc1: LinearConfig::new(flat, 128).init(device),
            fc2: LinearConfig::new(128, CLASSES).init(device),
            relu: Relu::new(),
        }
    }

    #[profiled(phase = "fwd")]
    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 2> {
        let x = profiler_burn::layer("block1", || self.block1.forward(x));
        let x = profiler_burn::layer("block2", || self.block2.forward(x));
        let x = profiler_burn::layer("block3", || self.block3.forward(x));
        let x: Tensor<B, 2> = x.flatten(1, 3);
        let x = profiler_burn::layer("fc1", || self.relu.forward(self.fc1.forward(x)));
        profiler_burn::layer("fc2", || self.fc2.forward(x))
    }
}

/// A batch of random images and labels.
fn batch<B: Backend>(
    batch: usize,
    step: usize,
    device: &B::Device,
) -> (Tensor<B, 4>, Tensor<B, 1, Int>) {
    let images = Tensor::random(
        [batch, 3, SIDE, SIDE],
        Distribution::Normal(0.0, 1.0),
        device,
    );
    let labels: Vec<i64> = (0..batch)
        .map(|i| ((i * 7 + step) % CLASSES) as i64)
        .collect();
    let labels = Tensor::from_data(TensorData::new(labels, [batch]), device);
    (images, labels)
}

/// The command line: `--wide N`, `--iters N`, `--backend NAME`.
struct Args {
    /// Block N (1, 2 or 3) gets twice the hidden channels.
    wide: Option<usize>,
    /// At most this many iterations (default: until the profiler's schedule is complete, at
    /// most 10,000).
    iters: usize,
    /// The inner backend: `ndarray` (the default) or `flex` (with the `flex` feature).
    backend: String,
}

fn args() -> Result<Args, String> {
    let mut parsed = Args {
        wide: None,
        iters: 10_000,
        backend: "ndarray".to_string(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or_else(|| format!("{name} takes a number (for example `{name} 2`)"))
        };
        match arg.as_str() {
            "--wide" => match value("--wide")? {
                n @ 1..=3 => parsed.wide = Some(n),
                n => return Err(format!("--wide {n}: the blocks are 1, 2 and 3")),
            },
            "--iters" => parsed.iters = value("--iters")?,
            "--backend" => {
                parsed.backend = args
                    .next()
                    .ok_or("--backend takes a name: ndarray or flex")?
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}` (use --wide N, --iters N, --backend ndarray|flex)"
                ))
            }
        }
    }
    match parsed.backend.as_str() {
        "ndarray" => {}
        "flex" if cfg!(feature = "flex") => {}
        "flex" => return Err("--backend flex needs the `flex` feature (--features flex)".into()),
        other => return Err(format!("unknown backend `{other}` (use ndarray or flex)")),
    }
    Ok(parsed)
}

/// Trains the model on `B` (burn's autodiff over the decorator over an inner backend).
fn train<B: AutodiffBackend>(wide: Option<usize>, iters: usize) {
    let device = Default::default();
    <B as Backend>::seed(&device, 7);
    let mut hidden = [16, 32, 64];
    if let Some(n) = wide {
        hidden[n - 1] *= 2;
    }
    let mut model: Cnn<B> = Cnn::new(hidden, &device);
    let mut optim = AdamConfig::new().init();
    let loss_fn = CrossEntropyLossConfig::new().init(&device);

    for step in 0..iters {
        if profiler_core::finished() {
            break;
        }
        let (images, labels) = {
            let _p = probe!("data", phase = "data");
            batch::<B>(16, step, &device)
        };
        let logits = model.forward(images);
        let loss = loss_fn.forward(logits, labels);
        let grads = {
            let _p = probe!("backward", phase = "bwd");
            profiler_burn::backward(|| loss.backward())
        };
        model = {
            let _p = probe!("update", phase = "update");
            let grads = GradientsParams::from_grads(grads, &model);
            optim.step(1e-3, model, grads)
        };
        profiler_core::step();
    }
}

#[profiler_core::main]
fn main() {
    let args = match args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("cnn: {message}");
            std::process::exit(2);
        }
    };
    match args.backend.as_str() {
        #[cfg(feature = "flex")]
        "flex" => train::<profiler_burn::Backend<burn_flex::Flex>>(args.wide, args.iters),
        _ => train::<profiler_burn::Backend<NdArray>>(args.wide, args.iters),
    }
}
