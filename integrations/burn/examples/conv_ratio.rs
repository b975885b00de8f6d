//! The backward-to-forward ratio of the cnn example's conv blocks measured without the
//! profiler: plain `Autodiff<NdArray>` (or `Autodiff<Flex>` with the `flex` feature), timed with
//! `std::time::Instant` only. It checks that the ratios the decorator reports (`block1/bwd`
//! against `block1/fwd`, `scripts/layers.py`) are the backend's and not the attribution's.
//!
//! For each of the three conv blocks at the shape it has in `cnn.rs` (batch 16; 3 -> 16 -> 16
//! channels at 16x16, 16 -> 32 -> 32 at 8x8, 32 -> 64 -> 64 at 4x4; two 3x3 convs with ReLUs and
//! a 2x2 max-pool), over `--reps` repetitions (median):
//! - `fwd`: the block's forward alone;
//! - `fwd+bwd`: the forward, a sum over its output and `backward()`; `bwd` is the difference of
//!   the two medians (it includes the sum and its backward, which are small), and `bwd alone`
//!   the median of the `backward()` call timed by itself in the same repetitions;
//! - block 1's input is the batch (no gradient, as in the cnn), blocks 2 and 3's input requires
//!   a gradient (it is the previous block's output in the cnn), so their first conv computes
//!   the gradient of its input too.
//!
//! Then each conv alone on the inner backend (no autodiff): `conv2d`, `conv2d_x_backward` and
//! `conv2d_weight_backward` (burn's backend ops, what the decorator's operator view names) at the
//! same shapes.
//!
//! ```text
//! cargo run --release --no-default-features --target-dir target/plain --example conv_ratio
//! cargo run --release --no-default-features --features flex --target-dir target/plain \
//!     --example conv_ratio -- --backend flex
//! ```

use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Distribution, Tensor};

#[path = "shared/conv_block.rs"]
mod conv_block;
use conv_block::ConvBlock;

/// The cnn's batch size.
const BATCH: usize = 16;

/// The three blocks as in `cnn.rs`: channels `[in, hidden, out]` and the input's side.
const BLOCKS: [(&str, [usize; 3], usize); 3] = [
    ("block1", [3, 16, 16], 16),
    ("block2", [16, 32, 32], 8),
    ("block3", [32, 64, 64], 4),
];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Milliseconds since `start`, once the device has finished its work.
fn ms_since<B: Backend>(start: Instant, device: &B::Device) -> f64 {
    B::sync(device).expect("the backend syncs");
    start.elapsed().as_secs_f64() * 1e3
}

/// Each block's forward, forward + backward, and their ratio.
fn blocks<B: AutodiffBackend>(reps: usize, device: &B::Device) {
    println!(
        "{:8} {:>16} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "block", "input", "fwd ms", "fwd+bwd", "bwd ms", "bwd/fwd", "bwd alone"
    );
    for (name, channels, side) in BLOCKS {
        let block: ConvBlock<B> = ConvBlock::new(channels, device);
        let shape = [BATCH, channels[0], side, side];
        let x = Tensor::<B, 4>::random(shape, Distribution::Normal(0.0, 1.0), device);
        let x = if name == "block1" {
            x
        } else {
            x.require_grad()
        };
        // Once before timing (burn initializes parameters on first use).
        let _ = block.forward(x.clone()).sum().backward();
        let (mut fwd, mut both, mut bwd) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            let start = Instant::now();
            let y = block.forward(x.clone());
            fwd.push(ms_since::<B>(start, device));
            drop(y);

            let start = Instant::now();
            let loss = block.forward(x.clone()).sum();
            let backward = Instant::now();
            let grads = loss.backward();
            bwd.push(ms_since::<B>(backward, device));
            both.push(ms_since::<B>(start, device));
            drop(grads);
        }
        let (fwd, both, bwd) = (median(fwd), median(both), median(bwd));
        println!(
            "{:8} {:>16} {:9.3} {:9.3} {:9.3} {:9.2} {:9.3}",
            name,
            format!("{shape:?}"),
            fwd,
            both,
            both - fwd,
            (both - fwd) / fwd,
            bwd
        );
    }
}

/// Each conv of each block alone on the inner backend: `conv2d`, its x- and weight-backward.
fn convs<B: Backend>(reps: usize, device: &B::Device) {
    println!(
        "{:9} {:>16} {:>14} {:>9} {:>9} {:>9} {:>7} {:>7}",
        "conv", "x", "weight", "conv2d", "x_bwd", "w_bwd", "x/fwd", "w/fwd"
    );
    let options = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
    for (name, [input, hidden, output], side) in BLOCKS {
        for (conv, cin, cout) in [("a", input, hidden), ("b", hidden, output)] {
            let random = |shape: [usize; 4]| {
                Tensor::<B, 4>::random(shape, Distribution::Normal(0.0, 1.0), device)
                    .into_primitive()
                    .tensor()
            };
            let x = random([BATCH, cin, side, side]);
            let w = random([cout, cin, 3, 3]);
            let grad = random([BATCH, cout, side, side]);
            let time = |f: &dyn Fn()| {
                f();
                median(
                    (0..reps)
                        .map(|_| {
                            let start = Instant::now();
                            f();
                            ms_since::<B>(start, device)
                        })
                        .collect(),
                )
            };
            let fwd = time(&|| {
                let _ = B::conv2d(x.clone(), w.clone(), None, options.clone());
            });
            let x_bwd = time(&|| {
                let _ = B::conv2d_x_backward(x.clone(), w.clone(), grad.clone(), options.clone());
            });
            let w_bwd = time(&|| {
                let _ =
                    B::conv2d_weight_backward(x.clone(), w.clone(), grad.clone(), options.clone());
            });
            println!(
                "{:9} {:>16} {:>14} {:9.3} {:9.3} {:9.3} {:7.2} {:7.2}",
                format!("{name}.{conv}"),
                format!("{:?}", [BATCH, cin, side, side]),
                format!("{:?}", [cout, cin, 3, 3]),
                fwd,
                x_bwd,
                w_bwd,
                x_bwd / fwd,
                w_bwd / fwd
            );
        }
    }
}

fn run<B: AutodiffBackend>(name: &str, reps: usize) {
    let device = Default::default();
    B::seed(&device, 7);
    println!("{name}: batch {BATCH}, median of {reps} repetitions");
    blocks::<B>(reps, &device);
    println!("each conv alone on the inner backend ({name}, no autodiff):");
    convs::<B::InnerBackend>(reps, &device);
}

/// `--reps N` (default 30), `--backend ndarray|flex` (default ndarray).
fn args() -> Result<(String, usize), String> {
    let mut backend = "ndarray".to_string();
    let mut reps = 30;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--reps" => {
                reps = args
                    .next()
                    .and_then(|v| v.parse::<usize>().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--reps takes a number above 0 (for example `--reps 30`)")?
            }
            "--backend" => {
                backend = args
                    .next()
                    .ok_or("--backend takes a name: ndarray or flex")?
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}` (use --reps N, --backend ndarray|flex)"
                ))
            }
        }
    }
    Ok((backend, reps))
}

fn main() {
    let (backend, reps) = match args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("conv_ratio: {message}");
            std::process::exit(2);
        }
    };
    match backend.as_str() {
        "ndarray" => run::<Autodiff<NdArray>>("Autodiff<NdArray>", reps),
        #[cfg(feature = "flex")]
        "flex" => run::<Autodiff<burn_flex::Flex>>("Autodiff<Flex>", reps),
        #[cfg(not(feature = "flex"))]
        "flex" => {
            eprintln!("conv_ratio: --backend flex needs the `flex` feature (--features flex)");
            std::process::exit(2);
        }
        other => {
            eprintln!("conv_ratio: unknown backend `{other}` (use ndarray or flex)");
            std::process::exit(2);
        }
    }
}
