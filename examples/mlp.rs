//! A CPU multilayer perceptron whose weights do not fit in L2: the third program `prof ab`
//! is judged on (after `waits`, whose layers wait on the clock, and `dlrm`, whose layers are
//! small enough to live in L2).
//!
//! An autoencoder of four dense layers, each with a weight matrix of 2 MiB (512K `f32`s), trained
//! with plain SGD to give back its input:
//!
//! ```text
//!   input 512 -> dense1 1024 -> dense2 512 -> dense3 1024 -> dense4 512,  MSE against the input
//!                 (ReLU)         (ReLU)         (ReLU)         (linear)
//! ```
//!
//! Each iteration draws a batch of 2 inputs, each a random mix of 16 fixed random patterns (data of
//! rank 16, so that there is something to learn: the loss goes down from about 0.3), then runs
//! the forward pass, the backward pass and the update, every one written out by hand in `f32`.
//! With 8 MiB of weights (each matrix four times a core's L2) and a batch this small, every pass
//! streams the weights from L3 or memory: a layer's time is mostly its memory traffic, as in
//! real inference and training at small batch sizes. The backward pass of `dense1` only masks its gradient: the input needs none.
//!
//! Every layer is annotated in the forward pass, the backward pass and the update (event names
//! `dense3_forward`, `dense3_backward`, `dense3_update`, ..., with `layer = "dense3"`), the loss
//! and the batch too: 15 events. Ten of them stream a weight matrix each and take about the same
//! time (`dense1`'s backward pass is only a mask): `dense3`'s forward and backward passes each
//! take about 9% of an iteration (its update as much again), the layer to slow down (`--slow
//! dense3 --slow-by 10`) for a slowdown `prof ab` should find. On this project's 2-core VM,
//! shared (load average 2), 310 iterations took 1.3 s.
//!
//! Run it:
//!
//! ```sh
//! # Profile every probe (the `sample` schedule): 10 + 15 x 20 = 310 iterations, a few seconds.
//! PROF_REPEAT=20 cargo run --release --example mlp
//!
//! # dense3's forward and backward passes 10% slower: 10% more of the same arithmetic.
//! PROF_REPEAT=20 cargo run --release --example mlp -- --slow dense3 --slow-by 10
//!
//! # List the probes, then exit.
//! cargo run --release --example mlp -- --list-probes
//! ```

use std::ops::Range;
use std::str::FromStr;
use std::time::Instant;

use profiler_core::{probe, profiled};

/// The layers' widths: the input, then each layer's output. Every weight matrix is
/// 512 x 1024 `f32`s, 2 MiB.
const WIDTHS: [usize; 5] = [512, 1024, 512, 1024, 512];
const LAYERS: usize = WIDTHS.len() - 1;
/// The names `--slow` takes, in order.
const LAYER_NAMES: [&str; LAYERS] = ["dense1", "dense2", "dense3", "dense4"];
/// The patterns each input mixes: the rank of the data.
const PATTERNS: usize = 16;
const LEARNING_RATE: f32 = 0.0005;
/// Iterations between two lines of progress.
const REPORT_EVERY: usize = 100;

const USAGE: &str = "\
usage: mlp [--iters N] [--batch N] [--seed N] [--slow LAYER --slow-by P [--slow-from N]]
           [--list-probes[=json]]
  --iters N      train for at most N iterations (default 2000); a profiling run stops
                 earlier, as soon as its schedule is complete
  --batch N      samples per iteration (default 2)
  --seed N       seed of the data and of the initial weights (default 42)
  --slow LAYER   make LAYER (dense1, dense2, dense3 or dense4) slower on purpose: its forward
                 and backward passes do more of the same arithmetic, whose results are
                 discarded (a regression for `prof diff` and `prof ab`)
  --slow-by P    that much more: P percent of the layer's work (default 10)
  --slow-from N  only from iteration N on (default 1)";

// ---------------------------------------------------------------------------------------------
// Random numbers and data
// ---------------------------------------------------------------------------------------------

/// SplitMix64, as in the dlrm example: seeded, so that every run with the same arguments computes
/// the same thing.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-bound, bound).
    fn symmetric(&mut self, bound: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        (2.0 * unit - 1.0) * bound
    }
}

/// `y += alpha * x`: no reduction, so it vectorises.
fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

/// A dot product over 8 running sums, so that it vectorises (one sum would be a serial chain of
/// additions, which the compiler may not reorder).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (a, b) in a8.zip(b8) {
        for k in 0..8 {
            sums[k] += a[k] * b[k];
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// The rows of the first `percent`% of `rows` rows, as ranges: whole passes first, then a part of
/// one (`percent` 250 over 1024 rows: twice all of them, then the first 512).
fn extra_rows(percent: u32, rows: usize) -> impl Iterator<Item = Range<usize>> {
    let total = rows * percent as usize / 100;
    (0..total.div_ceil(rows.max(1))).map(move |pass| 0..(total - pass * rows).min(rows))
}

// ---------------------------------------------------------------------------------------------
// A dense layer
// ---------------------------------------------------------------------------------------------

/// `y = relu(x W + b)` (or `x W + b`) over a batch, one row per sample.
struct Dense {
    inputs: usize,
    outputs: usize,
    relu: bool,
    /// `inputs x outputs`, input-major: row `i` is what input `i` adds to every output, so that
    /// every pass reads the matrix once, in order, whatever the batch.
    weights: Vec<f32>,
    bias: Vec<f32>,
    /// Where `--slow`'s extra work writes, `batch x max(inputs, outputs)`: results discarded.
    scratch: Vec<f32>,
}

impl Dense {
    fn new(inputs: usize, outputs: usize, relu: bool, rng: &mut Rng) -> Self {
        // Glorot's uniform bound, sqrt(6 / (inputs + outputs)).
        let bound = (6.0 / (inputs + outputs) as f32).sqrt();
        Dense {
            inputs,
            outputs,
            relu,
            weights: (0..inputs * outputs)
                .map(|_| rng.symmetric(bound))
                .collect(),
            bias: vec![0.0; outputs],
            scratch: Vec::new(),
        }
    }

    /// `y += x[.., rows] W[rows, ..]`: the part of the product that inputs `rows` contribute.
    fn forward_rows(&self, x: &[f32], y: &mut [f32], rows: Range<usize>) {
        for i in rows {
            let w = &self.weights[i * self.outputs..][..self.outputs];
            for (x, y) in x
                .chunks_exact(self.inputs)
                .zip(y.chunks_exact_mut(self.outputs))
            {
                axpy(x[i], w, y);
            }
        }
    }

    /// `y = relu(x W + b)`, then `extra` percent more of the product, into the scratch buffer.
    fn forward(&mut self, x: &[f32], y: &mut [f32], extra: u32) {
        for y in y.chunks_exact_mut(self.outputs) {
            y.copy_from_slice(&self.bias);
        }
        self.forward_rows(x, y, 0..self.inputs);
        if self.relu {
            for v in y.iter_mut() {
                *v = v.max(0.0);
            }
        }
        if extra > 0 {
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            scratch.resize(y.len(), 0.0);
            for rows in extra_rows(extra, self.inputs) {
                self.forward_rows(x, &mut scratch, rows);
            }
            // Used, so that the optimizer keeps the work.
            std::hint::black_box(&scratch);
            self.scratch = scratch;
        }
    }

    /// `gx[.., rows] = g W[rows, ..]^T`: the input gradient of inputs `rows`.
    fn backward_rows(&self, g: &[f32], gx: &mut [f32], rows: Range<usize>) {
        for i in rows {
            let w = &self.weights[i * self.outputs..][..self.outputs];
            for (g, gx) in g
                .chunks_exact(self.outputs)
                .zip(gx.chunks_exact_mut(self.inputs))
            {
                gx[i] = dot(w, g);
            }
        }
    }

    /// Given the gradient w.r.t. the output `y` in `g`, masks it by the ReLU's derivative (`g`
    /// becomes the gradient w.r.t. the pre-activation, which `update` uses) and, when asked,
    /// writes the gradient w.r.t. the input into `gx`, then `extra` percent more of it.
    fn backward(&mut self, y: &[f32], g: &mut [f32], gx: Option<&mut [f32]>, extra: u32) {
        if self.relu {
            for (g, &y) in g.iter_mut().zip(y) {
                if y <= 0.0 {
                    *g = 0.0;
                }
            }
        }
        let Some(gx) = gx else { return };
        self.backward_rows(g, gx, 0..self.inputs);
        if extra > 0 {
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            scratch.resize(gx.len(), 0.0);
            for rows in extra_rows(extra, self.inputs) {
                self.backward_rows(g, &mut scratch, rows);
            }
            std::hint::black_box(&scratch);
            self.scratch = scratch;
        }
    }

    /// SGD: `W -= lr x^T g`, `b -= lr sum(g)`, the weight gradient applied as it is computed (a
    /// separate gradient matrix would double the memory traffic of an update).
    fn update(&mut self, x: &[f32], g: &[f32], lr: f32) {
        for g in g.chunks_exact(self.outputs) {
            axpy(-lr, g, &mut self.bias);
        }
        for (i, w) in self.weights.chunks_exact_mut(self.outputs).enumerate() {
            for (x, g) in x
                .chunks_exact(self.inputs)
                .zip(g.chunks_exact(self.outputs))
            {
                axpy(-lr * x[i], g, w);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

struct Mlp {
    layers: Vec<Dense>,
    /// The batch, `batch x WIDTHS[0]`: the input and the target.
    input: Vec<f32>,
    /// Each layer's output, `batch x WIDTHS[l + 1]`.
    outputs: Vec<Vec<f32>>,
    /// The gradient w.r.t. each layer's output (then pre-activation).
    grads: Vec<Vec<f32>>,
    /// The patterns the inputs mix, `PATTERNS x WIDTHS[0]`.
    patterns: Vec<f32>,
    batch: usize,
    /// `--slow`: the slowed layer's index, and by how many percent (0 until `--slow-from`).
    slow: Option<usize>,
    slow_by: u32,
}

impl Mlp {
    /// Runs once, before the loop: its event gets no window of the schedule.
    #[profiled(name = "build_model", phase = "init")]
    fn new(batch: usize, rng: &mut Rng) -> Self {
        let layers = WIDTHS
            .windows(2)
            .enumerate()
            .map(|(l, w)| Dense::new(w[0], w[1], l + 1 < LAYERS, rng))
            .collect();
        let bound = (3.0 / PATTERNS as f32).sqrt();
        Mlp {
            layers,
            input: vec![0.0; batch * WIDTHS[0]],
            outputs: WIDTHS[1..].iter().map(|&w| vec![0.0; batch * w]).collect(),
            grads: WIDTHS[1..].iter().map(|&w| vec![0.0; batch * w]).collect(),
            patterns: (0..PATTERNS * WIDTHS[0])
                .map(|_| rng.symmetric(bound))
                .collect(),
            batch,
            slow: None,
            slow_by: 0,
        }
    }

    /// A new batch: each input a random mix of the patterns.
    #[profiled(layer = "data", phase = "data")]
    fn draw(&mut self, rng: &mut Rng) {
        let width = WIDTHS[0];
        for x in self.input.chunks_exact_mut(width) {
            x.fill(0.0);
            for p in self.patterns.chunks_exact(width) {
                axpy(rng.symmetric(1.0), p, x);
            }
        }
    }

    /// The extra percent of work of layer `l` (0 unless it is the slowed one).
    fn extra(&self, l: usize) -> u32 {
        if self.slow == Some(l) {
            self.slow_by
        } else {
            0
        }
    }

    fn forward_layer(&mut self, l: usize) {
        let extra = self.extra(l);
        let (done, rest) = self.outputs.split_at_mut(l);
        let x = done.last().unwrap_or(&self.input);
        self.layers[l].forward(x, &mut rest[0], extra);
    }

    fn backward_layer(&mut self, l: usize) {
        let extra = self.extra(l);
        let (below, here) = self.grads.split_at_mut(l);
        let gx = below.last_mut().map(Vec::as_mut_slice);
        self.layers[l].backward(&self.outputs[l], &mut here[0], gx, extra);
    }

    fn update_layer(&mut self, l: usize) {
        let x = if l == 0 {
            &self.input
        } else {
            &self.outputs[l - 1]
        };
        self.layers[l].update(x, &self.grads[l], LEARNING_RATE);
    }

    // One annotated method per layer and pass: the annotations' values are literals.
    #[profiled(layer = "dense1", phase = "fwd")]
    fn dense1_forward(&mut self) {
        self.forward_layer(0);
    }
    #[profiled(layer = "dense2", phase = "fwd")]
    fn dense2_forward(&mut self) {
        self.forward_layer(1);
    }
    #[profiled(layer = "dense3", phase = "fwd")]
    fn dense3_forward(&mut self) {
        self.forward_layer(2);
    }
    #[profiled(layer = "dense4", phase = "fwd")]
    fn dense4_forward(&mut self) {
        self.forward_layer(3);
    }
    #[profiled(layer = "dense4", phase = "bwd")]
    fn dense4_backward(&mut self) {
        self.backward_layer(3);
    }
    #[profiled(layer = "dense3", phase = "bwd")]
    fn dense3_backward(&mut self) {
        self.backward_layer(2);
    }
    #[profiled(layer = "dense2", phase = "bwd")]
    fn dense2_backward(&mut self) {
        self.backward_layer(1);
    }
    #[profiled(layer = "dense1", phase = "bwd")]
    fn dense1_backward(&mut self) {
        self.backward_layer(0);
    }
    #[profiled(layer = "dense1", phase = "update")]
    fn dense1_update(&mut self) {
        self.update_layer(0);
    }
    #[profiled(layer = "dense2", phase = "update")]
    fn dense2_update(&mut self) {
        self.update_layer(1);
    }
    #[profiled(layer = "dense3", phase = "update")]
    fn dense3_update(&mut self) {
        self.update_layer(2);
    }
    #[profiled(layer = "dense4", phase = "update")]
    fn dense4_update(&mut self) {
        self.update_layer(3);
    }

    /// The mean squared error of the reconstruction, and its gradient w.r.t. the output.
    fn loss(&mut self) -> f32 {
        let y = &self.outputs[LAYERS - 1];
        let n = y.len() as f32;
        let loss = probe!("loss", layer = "loss", phase = "fwd" => {
            y.iter().zip(&self.input).map(|(y, x)| (y - x) * (y - x)).sum::<f32>() / n
        });
        let _p = probe!("loss_grad", layer = "loss", phase = "bwd");
        // Per sample rather than per number: the gradient of a sample's squared error, averaged
        // over the batch (the mean over the numbers would make the steps 1024 times smaller).
        let scale = 2.0 / self.batch as f32;
        for ((g, y), x) in self.grads[LAYERS - 1].iter_mut().zip(y).zip(&self.input) {
            *g = scale * (y - x);
        }
        loss
    }

    /// One step of training on a new batch; returns the batch's loss before the step.
    fn train_step(&mut self, rng: &mut Rng) -> f32 {
        self.draw(rng);
        self.dense1_forward();
        self.dense2_forward();
        self.dense3_forward();
        self.dense4_forward();
        let loss = self.loss();
        self.dense4_backward();
        self.dense3_backward();
        self.dense2_backward();
        self.dense1_backward();
        self.dense1_update();
        self.dense2_update();
        self.dense3_update();
        self.dense4_update();
        loss
    }

    /// A sum over every weight: printed at the end, so that all the work is used.
    fn checksum(&self) -> f64 {
        self.layers
            .iter()
            .flat_map(|l| l.weights.iter().chain(&l.bias))
            .map(|&w| f64::from(w))
            .sum()
    }
}

// ---------------------------------------------------------------------------------------------
// Command line and training loop
// ---------------------------------------------------------------------------------------------

struct Args {
    iters: usize,
    batch: usize,
    seed: u64,
    slow: Option<usize>,
    slow_by: u32,
    slow_from: usize,
}

impl Args {
    /// Parses `--flag N` and `--flag=N`. `Ok(None)` means that help was asked for.
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
        let mut parsed = Args {
            iters: 2000,
            batch: 2,
            seed: 42,
            slow: None,
            slow_by: 10,
            slow_from: 1,
        };
        let mut slow_by_given = false;
        while let Some(arg) = args.next() {
            // The profiler acts on `--list-probes` before `main`'s body runs; in a build without
            // profiling it means nothing, and is ignored.
            if arg.starts_with("--list-probes") {
                continue;
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
                None => (arg, None),
            };
            let mut value = || inline.clone().or_else(|| args.next());
            match flag.as_str() {
                "-h" | "--help" => return Ok(None),
                "--iters" => parsed.iters = number(&flag, value())?,
                "--batch" => parsed.batch = number(&flag, value())?,
                "--seed" => parsed.seed = number(&flag, value())?,
                "--slow-from" => parsed.slow_from = number(&flag, value())?,
                "--slow-by" => {
                    parsed.slow_by = number(&flag, value())?;
                    slow_by_given = true;
                }
                "--slow" => {
                    let layer = value().unwrap_or_default();
                    let index = LAYER_NAMES.iter().position(|&n| n == layer);
                    parsed.slow = Some(index.ok_or_else(|| {
                        format!("--slow takes {}, not `{layer}`", LAYER_NAMES.join(", "))
                    })?);
                }
                _ => return Err(format!("unknown argument `{flag}`")),
            }
        }
        if parsed.batch == 0 {
            return Err("--batch must be at least 1".to_owned());
        }
        if slow_by_given && parsed.slow.is_none() {
            return Err("--slow-by needs --slow LAYER".to_owned());
        }
        Ok(Some(parsed))
    }
}

fn number<T: FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .parse()
        .map_err(|_| format!("{flag}: `{value}` is not a non-negative integer"))
}

#[profiler_core::main]
fn main() {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            // Exit rather than return: the profiler writes its results when `main` returns.
            std::process::exit(0);
        }
        Err(message) => {
            eprintln!("mlp: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };

    let mut rng = Rng(args.seed);
    let mut model = Mlp::new(args.batch, &mut rng);
    let start = Instant::now();
    let mut iterations = 0;
    let (mut window_sum, mut window_len, mut reported) = (0.0f64, 0usize, f64::NAN);
    for iter in 1..=args.iters {
        if iter == args.slow_from {
            model.slow = args.slow;
            model.slow_by = args.slow_by;
        }
        let loss = model.train_step(&mut rng);
        iterations = iter;
        window_sum += f64::from(loss);
        window_len += 1;
        if iter % REPORT_EVERY == 0 {
            reported = window_sum / window_len as f64;
            (window_sum, window_len) = (0.0, 0);
            println!("iter {iter:>6}  loss {reported:.4}");
        }
        profiler_core::step();
        if profiler_core::finished() {
            break;
        }
    }
    let final_loss = if window_len > 0 {
        window_sum / window_len as f64
    } else {
        reported
    };
    println!(
        "done: {iterations} iterations, final loss {final_loss:.4}, weights checksum {:.6}, \
         wall time {:.3} s",
        model.checksum(),
        start.elapsed().as_secs_f64()
    );
}
