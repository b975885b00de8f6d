//! `candle-mlp`: trains a small MLP with candle-nn's AdamW on synthetic data, timed per layer
//! by profiler-core three ways (see `model.rs`):
//!
//! - (a) `#[profiled]` on the model's own modules, the loss, backward and update;
//! - (b) [`timed::Timed`], a wrapper that times any `candle_nn::Module` under a name known
//!   only at run time (`layers.0`, `layers.1`, ...);
//! - (c) `tracing` spans on modules, turned into probes by profiler-core's bridge (`--tracing`).
//!
//! ```sh
//! cargo run --release -p candle-example -- --tracing
//! PROF_FILTER='name=layers.*' cargo run --release -p candle-example
//! cargo run --release -p candle-example -- --list-probes
//! # On an NVIDIA GPU (building needs nvcc): the model on GPU 0, probes timed on candle's stream
//! cargo run --release -p candle-example --features cuda
//! ```

mod data;
#[cfg(feature = "cuda")]
mod gpu;
mod model;
mod timed;
mod traced;
mod work;

use std::process::ExitCode;

use candle_core::{DType, Device, Result};
use candle_nn::{AdamW, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};

use crate::data::Teacher;
use crate::model::{Mlp, Shape};

/// Memory per layer: every allocation goes through profiler-core's counting allocator, which
/// counts those of the armed event's thread while it runs (candle's CPU tensors are allocated
/// here), and costs one thread-local load and a branch otherwise.
#[cfg(feature = "profile")]
#[global_allocator]
static ALLOC: profiler_core::Alloc = profiler_core::Alloc::system();

const HELP: &str = "\
candle-mlp: train a small MLP with candle-nn on synthetic data, timed per layer by profiler-core

usage: candle-mlp [options]

  --iters N       stop after N iterations, or earlier when the profile is complete (default 2000)
  --batch N       samples per batch (default 64)
  --inputs N      input features (default 64)
  --hidden N      width of the hidden blocks (default 256)
  --blocks N      hidden blocks, probes layers.0 .. layers.N-1 (default 2)
  --classes N     classes (default 10)
  --lr X          AdamW learning rate (default 0.003)
  --log-every N   print the mean loss every N iterations (default 100)
  --tracing       install profiler-core's tracing bridge: the modules' spans become probes
  --bwd-layers    time each layer's backward steps too: <layer>/bwd beside <layer>/fwd
                  (input, layers.0 .., head), from markers at the layers' boundaries
  --list-probes   list every probe and exit (profiler-core); --list-probes=warmup runs
                  the warmup first, so that runtime probes and spans are listed too
  -h, --help      this text

The profiler reads PROF_* variables (PROF_FILTER, PROF_WARMUP, PROF_REPEAT, PROF_OUT, ...)
and writes prof.json when training ends; `prof report prof.json` reads it.
";

/// The command line.
#[derive(Clone, Debug)]
struct Args {
    iters: u64,
    batch: usize,
    shape: Shape,
    lr: f64,
    log_every: u64,
    tracing: bool,
    bwd_layers: bool,
}

impl Args {
    fn parse(mut argv: impl Iterator<Item = String>) -> std::result::Result<Option<Args>, String> {
        let mut args = Args {
            iters: 2000,
            batch: 64,
            shape: Shape {
                inputs: 64,
                hidden: 256,
                blocks: 2,
                classes: 10,
            },
            lr: 3e-3,
            log_every: 100,
            tracing: false,
            bwd_layers: false,
        };
        while let Some(arg) = argv.next() {
            let mut value = |name: &str| argv.next().ok_or_else(|| format!("{name} needs a value"));
            match arg.as_str() {
                // The profiler's flag: handled before `main`'s body, or (`=warmup`) after the
                // warmup iterations; in a build without profiling it means nothing.
                a if a.starts_with("--list-probes") => {}
                "-h" | "--help" => return Ok(None),
                "--tracing" => args.tracing = true,
                "--bwd-layers" => args.bwd_layers = true,
                "--iters" => args.iters = number(&arg, &value(&arg)?)?,
                "--batch" => args.batch = number(&arg, &value(&arg)?)?,
                "--inputs" => args.shape.inputs = number(&arg, &value(&arg)?)?,
                "--hidden" => args.shape.hidden = number(&arg, &value(&arg)?)?,
                "--blocks" => args.shape.blocks = number(&arg, &value(&arg)?)?,
                "--classes" => args.shape.classes = number(&arg, &value(&arg)?)?,
                "--lr" => args.lr = number(&arg, &value(&arg)?)?,
                "--log-every" => args.log_every = number(&arg, &value(&arg)?)?,
                _ => return Err(format!("unknown argument `{arg}` (try --help)")),
            }
        }
        Ok(Some(args))
    }
}

/// `text` as a positive number, for option `name`.
fn number<T: std::str::FromStr + PartialOrd + Default>(
    name: &str,
    text: &str,
) -> std::result::Result<T, String> {
    match text.parse::<T>() {
        Ok(n) if n > T::default() => Ok(n),
        _ => Err(format!("{name} wants a positive number, not `{text}`")),
    }
}

#[profiler_core::main]
fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("candle-mlp: {e}");
            return ExitCode::from(2);
        }
    };
    if args.tracing {
        install_tracing();
    }
    match train(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("candle-mlp: {e}");
            ExitCode::FAILURE
        }
    }
}

/// (c) Routes `tracing` spans to profiler-core. Installed before the model is built: a span is
/// made with its module, and one made while no subscriber listens stays disabled.
#[cfg(feature = "profile")]
fn install_tracing() {
    tracing::subscriber::set_global_default(profiler_core::TracingBridge::new())
        .expect("no other tracing subscriber is installed");
}

/// Without profiling compiled in there is no bridge: the spans stay disabled.
#[cfg(not(feature = "profile"))]
fn install_tracing() {
    eprintln!("candle-mlp: --tracing does nothing without the `profile` feature");
}

/// Where the model runs: GPU 0 in a `cuda` build, else the CPU.
fn device() -> Result<Device> {
    #[cfg(feature = "cuda")]
    return gpu::device();
    #[cfg(not(feature = "cuda"))]
    Ok(Device::Cpu)
}

/// The training loop: one `profiler_core::step()` per iteration.
fn train(args: &Args) -> Result<()> {
    let device = device()?;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
    let model = Mlp::new(args.shape, vb, args.bwd_layers)?;
    let params: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
    let mut opt = AdamW::new(
        varmap.all_vars(),
        ParamsAdamW {
            lr: args.lr,
            ..ParamsAdamW::default()
        },
    )?;
    let data = Teacher::new(args.shape.inputs, args.shape.classes, args.batch, &device)?;
    println!(
        "candle-mlp: {params} parameters, {} hidden blocks of {}, batch {}, on {}, {}",
        args.shape.blocks,
        args.shape.hidden,
        args.batch,
        if device.is_cuda() {
            "CUDA GPU 0"
        } else {
            "the CPU"
        },
        if args.tracing {
            "tracing spans on"
        } else {
            "tracing spans off"
        }
    );

    let mut window = Window::default();
    let mut losses = Vec::new();
    let mut iters = 0;
    for it in 0..args.iters {
        let (x, y) = data.batch()?;
        let logits = model.forward(&x)?;
        let loss = model::loss(&logits, &y)?;
        let grads = model::backward(&loss)?;
        model::update(&mut opt, &grads, &device)?;
        profiler_core::step();
        iters = it + 1;

        let loss = loss.to_scalar::<f32>()?;
        losses.push(loss);
        window.add(loss);
        if iters % args.log_every == 0 {
            println!("iter {iters:>6}  loss {:.4}", window.take());
        }
        if profiler_core::finished() {
            break;
        }
    }
    // The mean loss of the first and of the last few iterations (fresh batches make one
    // iteration's loss noisy).
    let k = (args.log_every as usize).min(losses.len() / 2).max(1);
    if losses.len() >= 2 {
        let mean = |l: &[f32]| l.iter().map(|&x| f64::from(x)).sum::<f64>() / l.len() as f64;
        println!(
            "trained {iters} iterations: mean loss of the first {k} {:.4}, of the last {k} {:.4}",
            mean(&losses[..k]),
            mean(&losses[losses.len() - k..])
        );
    }
    Ok(())
}

/// The mean loss over the iterations since the last print.
#[derive(Debug, Default)]
struct Window {
    sum: f64,
    n: u32,
}

impl Window {
    fn add(&mut self, loss: f32) {
        self.sum += f64::from(loss);
        self.n += 1;
    }

    fn take(&mut self) -> f64 {
        let mean = self.sum / f64::from(self.n.max(1));
        *self = Window::default();
        mean
    }
}
