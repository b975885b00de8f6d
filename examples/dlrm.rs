//! A small DLRM-style recommendation model, trained on the CPU in plain Rust: the main example of
//! `profiler-core`.
//!
//! The model has DLRM's shape (Naumov et al., 2019) at toy scale:
//!
//! ```text
//!   13 dense features               8 sparse features, 3 ids each
//!           |                                   |
//!   bottom MLP 13-64-16           8 embedding tables, ids summed
//!           |                                   |
//!           +--------->   interaction   <-------+
//!                    (16 + 36 pairwise dots)
//!                               |
//!                       top MLP 52-64-1
//!                               |
//!                       sigmoid, BCE loss
//! ```
//!
//! The interaction takes the dot product of every pair among a sample's 9 vectors (the bottom
//! MLP's output and the 8 pooled embeddings: 36 numbers) and appends them to the bottom MLP's
//! output (16 numbers): the top MLP's 52 inputs.
//!
//! Each iteration draws a fresh synthetic batch whose click labels follow a hidden rule (a logistic
//! model of the dense features, of one hidden value per embedding row, and of a product of two of
//! those), then runs the forward pass, the backward pass, written out by hand, and an SGD step:
//! dense for the MLPs, sparse (only the rows the batch touched) for the embeddings. The loss
//! starts at ln 2 ~ 0.69 and goes down (the hidden rule's own loss is about 0.36).
//!
//! Every layer is annotated in the forward and backward passes, and every layer with parameters in
//! the update: `#[profiled]` on functions and methods, `probe!` on regions. `linear_forward`,
//! `linear_backward` and `sgd` carry no layer: they run once per linear layer of both MLPs, so
//! each is several events per iteration, told apart by their occurrence.
//!
//! Run it:
//!
//! ```sh
//! # Profile every probe, one per iteration (the `sample` schedule), and write prof.json.
//! # The loop stops as soon as the schedule is complete, before --iters.
//! cargo run --release --example dlrm
//!
//! # Only the top MLP's backward pass.
//! PROF_FILTER='layer=top_mlp&phase=bwd' cargo run --release --example dlrm
//!
//! # List the probes (add PROF_FILTER=... to see which it selects), then exit.
//! cargo run --release --example dlrm -- --list-probes
//!
//! # The same program with no profiling compiled in: it trains for all of --iters.
//! cargo run --release --example dlrm --no-default-features -- --iters 1000 --batch 64 --seed 7
//! ```

use std::str::FromStr;
use std::time::Instant;

use profiler_core::{probe, profiled};

/// With the `profile` feature (`cargo run --release --example dlrm --features profile`), memory
/// per layer: profiler-core's counting allocator counts what each armed event allocates on its
/// thread (one thread-local load and a branch per allocation otherwise).
#[cfg(feature = "profile")]
#[global_allocator]
static ALLOC: profiler_core::Alloc = profiler_core::Alloc::system();

/// Dense (continuous) features per sample, as in the Criteo data sets DLRM was built for.
const DENSE_FEATURES: usize = 13;
/// Rows of each embedding table, one table per categorical feature.
const TABLE_ROWS: [usize; 8] = [4000, 4000, 3000, 3000, 2000, 2000, 1000, 1000];
const TABLES: usize = TABLE_ROWS.len();
/// Width of the embeddings and of the bottom MLP's output: the interaction takes dot products
/// between them, so the two must match.
const EMBEDDING_DIM: usize = 16;
/// Ids per table and sample (a multi-hot feature), summed into one vector.
const POOLING: usize = 3;
const BOTTOM_WIDTHS: [usize; 3] = [DENSE_FEATURES, 64, EMBEDDING_DIM];
const TOP_HIDDEN: usize = 64;

/// Step size of the MLPs at `TUNED_BATCH` samples per batch.
const LEARNING_RATE: f32 = 0.2;
/// Step size of the embeddings at `TUNED_BATCH`. Larger than the MLPs': the loss is a mean over
/// the batch and a row appears in only a few of its samples, so its gradient is much smaller than
/// a weight's.
const EMBEDDING_LEARNING_RATE: f32 = 5.0;
/// The batch size the step sizes were tuned for (see `Dlrm::new`).
const TUNED_BATCH: usize = 128;

/// Iterations between two lines of progress.
const REPORT_EVERY: usize = 200;

const USAGE: &str = "\
usage: dlrm [--iters N] [--batch N] [--seed N] [--slow LAYER [--slow-by P] [--slow-from N]]
            [--list-probes[=json]]
  --iters N   train for at most N iterations (default 3000); a profiling run
              stops earlier, as soon as its schedule is complete
  --batch N   samples per iteration (default 128)
  --seed N    seed of the synthetic data and of the initial weights (default 42)
  --slow L    make layer L's backward pass slower on purpose (bottom_mlp or top_mlp),
              with extra work that leaves the results alone: a regression for `prof diff`
  --slow-by P the extra work is a wait of P percent of the time the layer's backward work
              took (default: a fixed amount of arithmetic), a known slowdown on any machine
  --slow-from N  only from iteration N on (default 1): a regression in the middle of a
              run, for the drift that `prof report` flags in PROF_MODE=continuous";

// ---------------------------------------------------------------------------------------------
// Random numbers and synthetic data
// ---------------------------------------------------------------------------------------------

/// SplitMix64: tiny, fast and good enough for synthetic data. Seeded, so that every run with the
/// same arguments computes the same thing.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in [0, 1), from the top 24 bits: all that an `f32` mantissa holds.
    fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in [-bound, bound).
    fn symmetric(&mut self, bound: f32) -> f32 {
        (2.0 * self.uniform() - 1.0) * bound
    }

    /// A row id of a table of `rows` rows. Real categorical features are heavy-tailed, a few ids
    /// being far more frequent than the rest; squaring a uniform number gives the low ids most of
    /// the draws.
    fn row_id(&mut self, rows: usize) -> u32 {
        let u = self.uniform();
        let id = ((u * u * rows as f32) as usize).min(rows - 1);
        u32::try_from(id).expect("tables have fewer than 2^32 rows")
    }
}

/// SplitMix64's output function: a bijective mix of all 64 bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One mini-batch, sample-major.
#[derive(Default)]
struct Batch {
    /// `len x DENSE_FEATURES`.
    dense: Vec<f32>,
    /// `len x TABLES x POOLING` row ids.
    ids: Vec<u32>,
    /// 1 for a click, 0 otherwise.
    labels: Vec<f32>,
}

impl Batch {
    fn len(&self) -> usize {
        self.labels.len()
    }
}

/// The hidden rule the labels follow, so that there is something to learn. Its logit is a linear
/// function of the dense features, plus, for each table, the mean of a hidden value attached to
/// each of the sample's ids, plus the product of the first two tables' means: a cross-feature
/// effect, the kind the interaction's dot products are there to model.
struct Teacher {
    dense_weights: [f32; DENSE_FEATURES],
    row_seed: u64,
}

impl Teacher {
    fn new(rng: &mut Rng) -> Self {
        Teacher {
            dense_weights: std::array::from_fn(|_| rng.symmetric(1.0)),
            row_seed: rng.next_u64(),
        }
    }

    /// The hidden value of one row, in [-1, 1), computed from a hash rather than stored.
    fn row_value(&self, table: usize, row: u32) -> f32 {
        let key = ((table as u64) << 32) | u64::from(row);
        let bits = mix(self.row_seed ^ key);
        (bits >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    fn logit(&self, dense: &[f32], ids: &[u32]) -> f32 {
        let dense_part = dot(&self.dense_weights, dense);
        let means: [f32; TABLES] = std::array::from_fn(|table| {
            let bag = &ids[table * POOLING..][..POOLING];
            bag.iter()
                .map(|&row| self.row_value(table, row))
                .sum::<f32>()
                / POOLING as f32
        });
        2.0 * (dense_part + means.iter().sum::<f32>() + 4.0 * means[0] * means[1])
    }

    /// Replaces `batch` with `size` new samples, reusing its memory.
    fn fill(&self, rng: &mut Rng, size: usize, batch: &mut Batch) {
        batch.dense.clear();
        batch.ids.clear();
        batch.labels.clear();
        for sample in 0..size {
            batch
                .dense
                .extend((0..DENSE_FEATURES).map(|_| rng.symmetric(1.0)));
            for rows in TABLE_ROWS {
                batch.ids.extend((0..POOLING).map(|_| rng.row_id(rows)));
            }
            let logit = self.logit(
                &batch.dense[sample * DENSE_FEATURES..],
                &batch.ids[sample * TABLES * POOLING..],
            );
            // Drawn, not thresholded: real clicks are noisy, and the best achievable loss stays
            // above zero.
            let click = rng.uniform() < sigmoid(logit);
            batch.labels.push(if click { 1.0 } else { 0.0 });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Arithmetic
// ---------------------------------------------------------------------------------------------

/// `y += alpha * x`: the loop most of the model is made of. No reduction, so it vectorises.
fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// Binary cross-entropy of `sigmoid(z)` against `y`, as `max(z, 0) - z y + ln(1 + e^-|z|)`:
/// the same value as `-y ln p - (1 - y) ln(1 - p)`, without overflow or `ln 0` for large `|z|`.
fn bce_with_logit(z: f32, y: f32) -> f32 {
    z.max(0.0) - z * y + (-z.abs()).exp().ln_1p()
}

/// Plain SGD over a layer's (parameter, gradient) pairs. Generic over how the pairs are handed
/// over, so that a layer passes all of its own in one call: one event per layer.
#[profiled(phase = "update")]
fn sgd<'a, I>(pairs: I, lr: f32)
where
    I: IntoIterator<Item = (&'a mut [f32], &'a [f32])>,
{
    for (params, grads) in pairs {
        axpy(-lr, grads, params);
    }
}

// ---------------------------------------------------------------------------------------------
// Embeddings
// ---------------------------------------------------------------------------------------------

/// Marks a row that has no slot in its table's sparse gradient.
const UNTOUCHED: u32 = u32::MAX;

/// One embedding table and its sparse gradient.
struct Table {
    dim: usize,
    /// `rows x dim`.
    weights: Vec<f32>,
    /// The rows the current batch touched, in first-touch order. Their gradients are
    /// `grads[k * dim..][..dim]`: repeated ids (frequent rows repeat often) are coalesced, so
    /// each row gets one update per step, as with PyTorch's sparse gradients.
    touched: Vec<u32>,
    grads: Vec<f32>,
    /// Each row's index in `touched`, or `UNTOUCHED`. `apply` resets only the touched rows, so a
    /// step costs in proportion to the batch, not to the table.
    slot: Vec<u32>,
}

impl Table {
    fn new(rows: usize, dim: usize, rng: &mut Rng) -> Self {
        // DLRM's reference code draws from U(-1/sqrt(rows), 1/sqrt(rows)). The interaction
        // multiplies embeddings with each other, so weights that small would start training on
        // a near-flat plateau; a fixed, larger bound avoids it at this scale.
        let weights = (0..rows * dim).map(|_| rng.symmetric(0.1)).collect();
        Table {
            dim,
            weights,
            touched: Vec::new(),
            grads: Vec::new(),
            slot: vec![UNTOUCHED; rows],
        }
    }

    fn row(&self, id: u32) -> &[f32] {
        &self.weights[id as usize * self.dim..][..self.dim]
    }

    /// Adds `grad` to the gradient of row `id`.
    fn accumulate(&mut self, id: u32, grad: &[f32]) {
        let slot = match self.slot[id as usize] {
            UNTOUCHED => {
                let slot = self.touched.len();
                self.slot[id as usize] = u32::try_from(slot).expect("fewer slots than rows");
                self.touched.push(id);
                // Capacity survives `clear`, so this allocates only in the first iterations.
                self.grads.resize(self.grads.len() + self.dim, 0.0);
                slot
            }
            slot => slot as usize,
        };
        axpy(1.0, grad, &mut self.grads[slot * self.dim..][..self.dim]);
    }

    /// Applies the sparse gradient to the touched rows and clears it.
    fn apply(&mut self, lr: f32) {
        for (&id, grad) in self.touched.iter().zip(self.grads.chunks_exact(self.dim)) {
            axpy(
                -lr,
                grad,
                &mut self.weights[id as usize * self.dim..][..self.dim],
            );
            self.slot[id as usize] = UNTOUCHED;
        }
        self.touched.clear();
        self.grads.clear();
    }
}

/// The sparse half of the model: a sample's ids in each table are looked up and summed
/// ("pooled") into one vector per table.
struct Embedding {
    dim: usize,
    tables: Vec<Table>,
}

impl Embedding {
    fn new(rows: &[usize], dim: usize, rng: &mut Rng) -> Self {
        let tables = rows
            .iter()
            .map(|&rows| Table::new(rows, dim, rng))
            .collect();
        Embedding { dim, tables }
    }

    /// Writes each sample's pooled vectors, `batch x tables x dim`, into `pooled`.
    // Bytes: the ids and each id's row read, the pooled vectors written (4-byte values).
    #[profiled(layer = "embedding", phase = "fwd",
               bytes = 4 * (ids.len() + ids.len() * self.dim + pooled.len()))]
    fn lookup(&self, ids: &[u32], pooled: &mut [f32]) {
        let bags = ids.chunks_exact(POOLING);
        for (table, (bag, out)) in (0..self.tables.len())
            .cycle()
            .zip(bags.zip(pooled.chunks_exact_mut(self.dim)))
        {
            let table = &self.tables[table];
            out.fill(0.0);
            for &id in bag {
                axpy(1.0, table.row(id), out);
            }
        }
    }

    /// Turns the gradient w.r.t. the pooled vectors into the tables' sparse gradients. Pooling is
    /// a sum, so each id of a bag receives the bag's whole gradient.
    #[profiled(layer = "embedding", phase = "bwd")]
    fn backward(&mut self, ids: &[u32], grad_pooled: &[f32]) {
        let bags = ids.chunks_exact(POOLING);
        let tables = self.tables.len();
        for (table, (bag, grad)) in (0..tables)
            .cycle()
            .zip(bags.zip(grad_pooled.chunks_exact(self.dim)))
        {
            for &id in bag {
                self.tables[table].accumulate(id, grad);
            }
        }
    }

    #[profiled(layer = "embedding", phase = "update")]
    fn update(&mut self, lr: f32) {
        for table in &mut self.tables {
            table.apply(lr);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// MLPs
// ---------------------------------------------------------------------------------------------

/// A fully connected layer over a batch (one row per sample): `y = relu(x W + b)`, or
/// `y = x W + b` for a layer that outputs logits.
struct Linear {
    inputs: usize,
    outputs: usize,
    relu: bool,
    /// `inputs x outputs`, input-major, so that the inner loops of `forward` and of the weight
    /// gradient run over contiguous outputs and vectorise.
    weights: Vec<f32>,
    bias: Vec<f32>,
    /// Gradients of the last batch, overwritten by each `backward`.
    grad_weights: Vec<f32>,
    grad_bias: Vec<f32>,
}

impl Linear {
    fn new(inputs: usize, outputs: usize, relu: bool, rng: &mut Rng) -> Self {
        // Glorot's variance, 2 / (inputs + outputs), as in DLRM's reference code (which draws
        // from a normal distribution rather than a uniform one).
        let bound = (6.0 / (inputs + outputs) as f32).sqrt();
        Linear {
            inputs,
            outputs,
            relu,
            weights: (0..inputs * outputs)
                .map(|_| rng.symmetric(bound))
                .collect(),
            bias: vec![0.0; outputs],
            grad_weights: vec![0.0; inputs * outputs],
            grad_bias: vec![0.0; outputs],
        }
    }

    // 2 x batch x inputs x outputs FLOPs (a multiply and an add per weight and sample); bytes:
    // the weights, the input and the output (f32s); shape: the input's and the weights'.
    #[profiled(name = "linear_forward", phase = "fwd",
               shape = ([input.len() / self.inputs, self.inputs], [self.inputs, self.outputs]),
               flops = 2 * input.len() * self.outputs,
               bytes = 4 * (self.inputs * self.outputs + input.len() + output.len()))]
    fn forward(&self, input: &[f32], output: &mut [f32]) {
        let samples = input.chunks_exact(self.inputs);
        for (x, y) in samples.zip(output.chunks_exact_mut(self.outputs)) {
            y.copy_from_slice(&self.bias);
            for (&xi, w) in x.iter().zip(self.weights.chunks_exact(self.outputs)) {
                axpy(xi, w, y);
            }
            if self.relu {
                for v in y.iter_mut() {
                    *v = v.max(0.0);
                }
            }
        }
    }

    /// Given the loss's gradient w.r.t. `output` in `grad_output` (masked in place by the ReLU's
    /// derivative), sets the parameters' gradients and, if asked, writes the gradient w.r.t.
    /// `input` into `grad_input`.
    // Twice the forward's FLOPs (the weights' gradient and the input's); bytes: the weights and
    // their gradient, the input, the output and its gradient (f32s).
    #[profiled(name = "linear_backward", phase = "bwd",
               shape = ([input.len() / self.inputs, self.inputs], [self.inputs, self.outputs]),
               flops = 4 * input.len() * self.outputs,
               bytes = 4 * (2 * self.inputs * self.outputs + input.len() + 2 * output.len()))]
    fn backward(
        &mut self,
        input: &[f32],
        output: &[f32],
        grad_output: &mut [f32],
        mut grad_input: Option<&mut [f32]>,
    ) {
        if self.relu {
            // y = max(z, 0): dy/dz is 1 where y > 0, else 0.
            for (g, &y) in grad_output.iter_mut().zip(output) {
                if y <= 0.0 {
                    *g = 0.0;
                }
            }
        }
        self.grad_weights.fill(0.0);
        self.grad_bias.fill(0.0);
        let samples = input.chunks_exact(self.inputs);
        for (sample, (x, g)) in samples
            .zip(grad_output.chunks_exact(self.outputs))
            .enumerate()
        {
            // dL/db = sum over samples of g; dL/dW[i] = sum over samples of x[i] g.
            axpy(1.0, g, &mut self.grad_bias);
            for (&xi, gw) in x
                .iter()
                .zip(self.grad_weights.chunks_exact_mut(self.outputs))
            {
                axpy(xi, g, gw);
            }
            // dL/dx[i] = W[i] . g
            if let Some(grad_input) = grad_input.as_deref_mut() {
                let gx = &mut grad_input[sample * self.inputs..][..self.inputs];
                for (gx, w) in gx.iter_mut().zip(self.weights.chunks_exact(self.outputs)) {
                    *gx = dot(w, g);
                }
            }
        }
    }

    fn update(&mut self, lr: f32) {
        sgd(
            [
                (&mut self.weights[..], &self.grad_weights[..]),
                (&mut self.bias[..], &self.grad_bias[..]),
            ],
            lr,
        );
    }
}

/// A stack of `Linear` layers, keeping what the backward pass needs: each layer's output, and a
/// buffer for the gradient w.r.t. it.
struct Mlp {
    layers: Vec<Linear>,
    outputs: Vec<Vec<f32>>,
    grad_outputs: Vec<Vec<f32>>,
}

impl Mlp {
    /// `widths[0]` inputs, then one layer per further width, each followed by a ReLU except, when
    /// `logits` is set, the last one.
    fn new(widths: &[usize], logits: bool, rng: &mut Rng) -> Self {
        assert!(widths.len() >= 2, "an MLP has at least one layer");
        let last = widths.len() - 2;
        let layers: Vec<Linear> = widths
            .windows(2)
            .enumerate()
            .map(|(l, w)| Linear::new(w[0], w[1], !(logits && l == last), rng))
            .collect();
        Mlp {
            outputs: vec![Vec::new(); layers.len()],
            grad_outputs: vec![Vec::new(); layers.len()],
            layers,
        }
    }

    fn output(&self) -> &[f32] {
        self.outputs.last().expect("an MLP has at least one layer")
    }

    fn forward(&mut self, input: &[f32], batch: usize) {
        for (l, layer) in self.layers.iter().enumerate() {
            let (done, rest) = self.outputs.split_at_mut(l);
            let x = done.last().map_or(input, Vec::as_slice);
            let y = &mut rest[0];
            y.resize(batch * layer.outputs, 0.0);
            layer.forward(x, y);
        }
    }

    /// Backpropagates `grad_output`, the gradient w.r.t. `output()`, through every layer. The
    /// first layer's input gradient is only computed when asked for with `grad_input`.
    fn backward(&mut self, input: &[f32], grad_output: &[f32], mut grad_input: Option<&mut [f32]>) {
        let last = self.grad_outputs.len() - 1;
        self.grad_outputs[last].clear();
        self.grad_outputs[last].extend_from_slice(grad_output);
        let batch = grad_output.len() / self.layers[last].outputs;
        for (l, layer) in self.layers.iter_mut().enumerate().rev() {
            let (below, here) = self.grad_outputs.split_at_mut(l);
            let (x, grad_x) = match below.last_mut() {
                Some(grad_x) => {
                    grad_x.resize(batch * layer.inputs, 0.0);
                    (&self.outputs[l - 1][..], Some(&mut grad_x[..]))
                }
                None => (input, grad_input.as_deref_mut()),
            };
            layer.backward(x, &self.outputs[l], &mut here[0], grad_x);
        }
    }

    fn update(&mut self, lr: f32) {
        for layer in &mut self.layers {
            layer.update(lr);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Interaction
// ---------------------------------------------------------------------------------------------

/// DLRM's "dot" interaction. A sample has `vectors` vectors of `dim` numbers: the bottom MLP's
/// output (vector 0), then its pooled embeddings. The output is the bottom MLP's output followed
/// by the dot product of each pair `(i, j)`, `j < i`, in the order (1,0), (2,0), (2,1), (3,0)...
struct Interaction {
    vectors: usize,
    dim: usize,
    /// One sample's gradient w.r.t. its vectors, all in one buffer, so that a pair's two
    /// gradients are two slices of it.
    grad_vectors: Vec<f32>,
}

impl Interaction {
    fn new(vectors: usize, dim: usize) -> Self {
        Interaction {
            vectors,
            dim,
            grad_vectors: vec![0.0; vectors * dim],
        }
    }

    fn output_dim(&self) -> usize {
        self.dim + self.vectors * (self.vectors - 1) / 2
    }

    #[profiled(layer = "interaction", phase = "fwd")]
    fn forward(&self, bottom: &[f32], pooled: &[f32], output: &mut [f32]) {
        let d = self.dim;
        let embedded = (self.vectors - 1) * d;
        let samples = bottom.chunks_exact(d).zip(pooled.chunks_exact(embedded));
        for ((x, e), out) in samples.zip(output.chunks_exact_mut(self.output_dim())) {
            let vector = |i: usize| if i == 0 { x } else { &e[(i - 1) * d..][..d] };
            let (pass, dots) = out.split_at_mut(d);
            pass.copy_from_slice(x);
            for (out, (i, j)) in dots.iter_mut().zip(pairs(self.vectors)) {
                *out = dot(vector(i), vector(j));
            }
        }
    }

    /// From the gradient w.r.t. the output, the gradients w.r.t. the bottom MLP's output and the
    /// pooled embeddings. d(v_i . v_j)/dv_i = v_j, and the pass-through's derivative is 1.
    #[profiled(layer = "interaction", phase = "bwd")]
    fn backward(
        &mut self,
        bottom: &[f32],
        pooled: &[f32],
        grad_output: &[f32],
        grad_bottom: &mut [f32],
        grad_pooled: &mut [f32],
    ) {
        let d = self.dim;
        let embedded = (self.vectors - 1) * d;
        let out_dim = self.output_dim();
        let samples = bottom.chunks_exact(d).zip(pooled.chunks_exact(embedded));
        let grads = grad_bottom
            .chunks_exact_mut(d)
            .zip(grad_pooled.chunks_exact_mut(embedded));
        for (((x, e), g_out), (g_x, g_e)) in
            samples.zip(grad_output.chunks_exact(out_dim)).zip(grads)
        {
            let vector = |i: usize| if i == 0 { x } else { &e[(i - 1) * d..][..d] };
            let (g_pass, g_dots) = g_out.split_at(d);
            let g = &mut self.grad_vectors;
            g.fill(0.0);
            g[..d].copy_from_slice(g_pass);
            for (&g_dot, (i, j)) in g_dots.iter().zip(pairs(self.vectors)) {
                // j < i, so vector j's gradient lies before vector i's.
                let (g_low, g_high) = g.split_at_mut(i * d);
                axpy(g_dot, vector(j), &mut g_high[..d]);
                axpy(g_dot, vector(i), &mut g_low[j * d..][..d]);
            }
            g_x.copy_from_slice(&g[..d]);
            g_e.copy_from_slice(&g[d..]);
        }
    }
}

/// The pairs `(i, j)`, `j < i`, of `vectors` vectors, in the interaction's output order.
fn pairs(vectors: usize) -> impl Iterator<Item = (usize, usize)> {
    (1..vectors).flat_map(|i| (0..i).map(move |j| (i, j)))
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

struct Dlrm {
    embedding: Embedding,
    bottom: Mlp,
    interaction: Interaction,
    top: Mlp,
    // What flows between the blocks, kept from one iteration to the next to reuse the memory.
    /// `batch x TABLES x EMBEDDING_DIM`: each table's pooled vector.
    pooled: Vec<f32>,
    /// `batch x interaction.output_dim()`: the top MLP's input.
    interacted: Vec<f32>,
    grad_logits: Vec<f32>,
    grad_interacted: Vec<f32>,
    grad_bottom: Vec<f32>,
    grad_pooled: Vec<f32>,
    learning_rate: f32,
    embedding_learning_rate: f32,
    /// `--slow`: the layer whose backward pass does extra, useless work.
    slow: Option<SlowLayer>,
    /// `--slow-by`: the extra work is a wait of this percentage of the time the layer's real
    /// backward work took, rather than a fixed amount of arithmetic.
    slow_by: Option<u32>,
}

/// A layer `--slow` can slow down.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SlowLayer {
    BottomMlp,
    TopMlp,
}

/// Runs `work`, then, when `slow_by` is set, spins for that percentage of the time it took: a
/// slowdown of a known proportion, whatever the speed of the machine.
fn slowed_by<T>(slow_by: Option<u32>, work: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = work();
    if let Some(percent) = slow_by {
        let extra = start.elapsed().mul_f64(f64::from(percent) / 100.0);
        let deadline = Instant::now() + extra;
        while Instant::now() < deadline {
            std::hint::spin_loop();
        }
    }
    value
}

/// Useless work the optimizer cannot remove: a serial chain of `steps` multiply-adds.
fn busy_work(steps: usize) -> f32 {
    let mut acc = 1.0f32;
    for i in 0..steps {
        acc = acc.mul_add(0.999_999, i as f32 * 1e-9);
    }
    std::hint::black_box(acc)
}

impl Dlrm {
    /// Runs once, before the loop: its event gets no window of the schedule, and the summary
    /// reports its one run apart ("ran before the loop").
    #[profiled(name = "build_model", phase = "init")]
    fn new(batch: usize, rng: &mut Rng) -> Self {
        // With a mean loss, a smaller batch gives a noisier gradient of the same size, and the
        // steps tuned for `TUNED_BATCH` diverge below about 8 samples. Shrinking them with the
        // square root of the batch keeps small batches stable and still learning; larger batches
        // keep the tuned steps.
        let lr_scale = (batch.min(TUNED_BATCH) as f32 / TUNED_BATCH as f32).sqrt();
        let interaction = Interaction::new(TABLES + 1, EMBEDDING_DIM);
        let top_widths = [interaction.output_dim(), TOP_HIDDEN, 1];
        Dlrm {
            embedding: Embedding::new(&TABLE_ROWS, EMBEDDING_DIM, rng),
            bottom: Mlp::new(&BOTTOM_WIDTHS, false, rng),
            top: Mlp::new(&top_widths, true, rng),
            interaction,
            pooled: Vec::new(),
            interacted: Vec::new(),
            grad_logits: Vec::new(),
            grad_interacted: Vec::new(),
            grad_bottom: Vec::new(),
            grad_pooled: Vec::new(),
            learning_rate: LEARNING_RATE * lr_scale,
            embedding_learning_rate: EMBEDDING_LEARNING_RATE * lr_scale,
            slow: None,
            slow_by: None,
        }
    }

    /// One step of training on `batch`; returns the batch's mean loss before the step.
    fn train_step(&mut self, batch: &Batch) -> f32 {
        self.resize(batch.len());
        self.forward(batch);
        let loss = self.loss(&batch.labels);
        self.backward(batch);
        self.update();
        loss
    }

    /// Sizes the buffers for `n` samples: a no-op once the batch size is known.
    fn resize(&mut self, n: usize) {
        let embedded = TABLES * EMBEDDING_DIM;
        self.pooled.resize(n * embedded, 0.0);
        self.interacted
            .resize(n * self.interaction.output_dim(), 0.0);
        self.grad_logits.resize(n, 0.0);
        self.grad_interacted
            .resize(n * self.interaction.output_dim(), 0.0);
        self.grad_bottom.resize(n * EMBEDDING_DIM, 0.0);
        self.grad_pooled.resize(n * embedded, 0.0);
    }

    fn forward(&mut self, batch: &Batch) {
        let n = batch.len();
        self.embedding.lookup(&batch.ids, &mut self.pooled);
        // `Mlp` serves both MLPs, so the layer is named where each one is called.
        probe!("bottom_forward", layer = "bottom_mlp", phase = "fwd" => {
            self.bottom.forward(&batch.dense, n);
        });
        self.interaction
            .forward(self.bottom.output(), &self.pooled, &mut self.interacted);
        probe!("top_forward", layer = "top_mlp", phase = "fwd" => {
            self.top.forward(&self.interacted, n);
        });
    }

    /// The mean binary cross-entropy of the batch, and its gradient w.r.t. each logit.
    fn loss(&mut self, labels: &[f32]) -> f32 {
        let logits = self.top.output();
        let n = labels.len() as f32;
        let loss = probe!("loss", layer = "top_mlp", phase = "fwd" => {
            let total: f32 = logits.iter().zip(labels).map(|(&z, &y)| bce_with_logit(z, y)).sum();
            total / n
        });
        // From here on, the backward pass: d(mean loss)/dz = (sigmoid(z) - y) / n.
        let _p = probe!("loss_grad", layer = "top_mlp", phase = "bwd");
        for ((g, &z), &y) in self.grad_logits.iter_mut().zip(logits).zip(labels) {
            *g = (sigmoid(z) - y) / n;
        }
        loss
    }

    fn backward(&mut self, batch: &Batch) {
        {
            let _p = probe!("top_backward", layer = "top_mlp", phase = "bwd");
            let slowed = self.slow == Some(SlowLayer::TopMlp);
            if slowed && self.slow_by.is_none() {
                busy_work(batch.len() * 128);
            }
            slowed_by(self.slow_by.filter(|_| slowed), || {
                self.top.backward(
                    &self.interacted,
                    &self.grad_logits,
                    Some(&mut self.grad_interacted),
                )
            });
        }
        self.interaction.backward(
            self.bottom.output(),
            &self.pooled,
            &self.grad_interacted,
            &mut self.grad_bottom,
            &mut self.grad_pooled,
        );
        probe!("bottom_backward", layer = "bottom_mlp", phase = "bwd" => {
            // The dense features are data, not parameters: no gradient w.r.t. them.
            let slowed = self.slow == Some(SlowLayer::BottomMlp);
            slowed_by(self.slow_by.filter(|_| slowed), || {
                self.bottom.backward(&batch.dense, &self.grad_bottom, None)
            });
            if slowed && self.slow_by.is_none() {
                busy_work(batch.len() * 256);
            }
        });
        self.embedding.backward(&batch.ids, &self.grad_pooled);
    }

    fn update(&mut self) {
        self.embedding.update(self.embedding_learning_rate);
        probe!("bottom_update", layer = "bottom_mlp", phase = "update" => {
            self.bottom.update(self.learning_rate);
        });
        probe!("top_update", layer = "top_mlp", phase = "update" => {
            self.top.update(self.learning_rate);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Command line and training loop
// ---------------------------------------------------------------------------------------------

struct Args {
    iters: usize,
    batch: usize,
    seed: u64,
    slow: Option<SlowLayer>,
    slow_by: Option<u32>,
    slow_from: usize,
}

impl Args {
    /// Parses `--flag N` and `--flag=N`. `Ok(None)` means that help was asked for.
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
        let mut parsed = Args {
            iters: 3000,
            batch: 128,
            seed: 42,
            slow: None,
            slow_by: None,
            slow_from: 1,
        };
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
                "--slow-by" => parsed.slow_by = Some(number(&flag, value())?),
                "--slow" => {
                    parsed.slow = match value().as_deref() {
                        Some("bottom_mlp") => Some(SlowLayer::BottomMlp),
                        Some("top_mlp") => Some(SlowLayer::TopMlp),
                        other => {
                            return Err(format!(
                                "--slow takes bottom_mlp or top_mlp, not {}",
                                other.unwrap_or("nothing")
                            ))
                        }
                    }
                }
                _ => return Err(format!("unknown argument `{flag}`")),
            }
        }
        if parsed.batch == 0 {
            return Err("--batch must be at least 1".to_owned());
        }
        if parsed.slow_by.is_some() && parsed.slow.is_none() {
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
            eprintln!("dlrm: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };

    let mut rng = Rng(args.seed);
    let teacher = Teacher::new(&mut rng);
    let mut model = Dlrm::new(args.batch, &mut rng);
    let mut batch = Batch::default();

    let start = Instant::now();
    let mut iterations = 0;
    // Mean loss over the iterations since the last report, and the last reported mean.
    let (mut window_sum, mut window_len, mut reported) = (0.0f64, 0usize, f64::NAN);
    for iter in 1..=args.iters {
        if iter == args.slow_from {
            model.slow = args.slow;
            model.slow_by = args.slow_by;
        }
        teacher.fill(&mut rng, args.batch, &mut batch);
        let loss = model.train_step(&batch);
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
        "done: {iterations} iterations, final loss {final_loss:.4}, wall time {:.3} s",
        start.elapsed().as_secs_f64()
    );
}
