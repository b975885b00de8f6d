//! A two-layer MLP trained on a CUDA GPU with kernels compiled at run time by NVRTC, on two
//! streams: the example of `profiler-core`'s CUDA timing.
//!
//! ```text
//!   stream_b:  make_batch(it + 1)          make_batch(it + 2)  ...
//!                   |  (cudarc orders the streams through the batch's events)
//!   stream_a:  hidden fwd -> output fwd -> loss -> output bwd -> hidden bwd -> update
//!              32 inputs -> 256 ReLU units -> 1 output, mean squared error, plain SGD
//! ```
//!
//! Each iteration, `stream_b` generates the *next* batch (uniform inputs and the targets of a
//! hidden smooth function of them) while `stream_a` trains on the current one, so the data
//! preparation overlaps the compute. The layer methods carry
//! `#[profiled(layer = .., phase = .., stream = &self.stream_a)]` and the data preparation a
//! `probe!(.., stream = &self.stream)` guard: with the `cuda` feature each measurement is a
//! pair of CUDA events recorded on that stream, so the times are GPU times, not the few
//! microseconds the launches take on the CPU. The loss starts near 0.5 and goes down to about
//! 0.03 in 400 iterations.
//!
//! Run it (it needs an NVIDIA GPU with its driver, and NVRTC, `libnvrtc.so`, from a CUDA
//! toolkit; without them it says so and exits with status 1):
//!
//! ```sh
//! # Profile every probe, one per iteration, with CUDA events; write prof.json.
//! cargo run --release --example cuda_mlp --features cuda
//!
//! # Only the backward passes, with NVTX ranges, recorded by Nsight Systems over the measured
//! # iterations only.
//! cargo build --release --example cuda_mlp --features cuda
//! PROF_FILTER='phase=bwd' PROF_NVTX=1 PROF_CAPTURE=1 \
//!   nsys profile -c cudaProfilerApi -t cuda,nvtx target/release/examples/cuda_mlp
//!
//! # A bigger batch, more iterations.
//! cargo run --release --example cuda_mlp --features cuda -- --iters 2000 --batch 4096
//! ```

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use profiler_core::{probe, profiled};

/// Inputs per sample.
const INPUTS: usize = 32;
/// Units of the hidden layer.
const HIDDEN: usize = 256;
/// SGD step size (the gradients are means over the batch).
const LEARNING_RATE: f32 = 0.1;
/// Iterations between two lines of progress.
const REPORT_EVERY: usize = 100;
/// Threads per block of every kernel.
const BLOCK: u32 = 256;

/// The kernels, compiled by NVRTC when the program starts. Every matrix is row-major; a layer's
/// weights are `in_dim x out_dim`.
const KERNELS: &str = r#"
__device__ float uniform(unsigned int seed, unsigned int i) {
    unsigned int h = (seed * 0x9E3779B9u) ^ (i * 0x85EBCA6Bu);
    h ^= h >> 16; h *= 0x7FEB352Du; h ^= h >> 15; h *= 0x846CA68Bu; h ^= h >> 16;
    return (float)(h >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
}

// One sample per thread: inputs uniform in [-1, 1), the target a smooth function of them.
extern "C" __global__ void make_batch(float* x, float* y, int batch, int in_dim, unsigned int seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= batch) return;
    float t = 0.0f;
    for (int j = 0; j < in_dim; ++j) {
        float v = uniform(seed, (unsigned int)(i * in_dim + j));
        x[i * in_dim + j] = v;
        t += v * cosf(1.7f * (float)j);
    }
    t *= rsqrtf((float)in_dim);
    y[i] = sinf(2.0f * t) + 0.3f * x[i * in_dim] * x[i * in_dim + 1];
}

// out = x w + b, then ReLU if relu != 0. One output per thread.
extern "C" __global__ void linear_forward(const float* x, const float* w, const float* b, float* out,
                                          int batch, int in_dim, int out_dim, int relu) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * out_dim) return;
    int i = idx / out_dim, o = idx % out_dim;
    float acc = b[o];
    for (int j = 0; j < in_dim; ++j) acc += x[i * in_dim + j] * w[j * out_dim + o];
    out[idx] = relu ? fmaxf(acc, 0.0f) : acc;
}

// Mean squared error: its gradient per sample, and the loss added into loss_sum.
extern "C" __global__ void mse(const float* pred, const float* y, float* dpred, float* loss_sum, int batch) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= batch) return;
    float d = pred[i] - y[i];
    dpred[i] = 2.0f * d / (float)batch;
    atomicAdd(loss_sum, d * d / (float)batch);
}

// dw = x^T dout (one weight per thread), then db = column sums of dout.
extern "C" __global__ void linear_backward_params(const float* x, const float* dout, float* dw, float* db,
                                                  int batch, int in_dim, int out_dim) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < in_dim * out_dim) {
        int j = idx / out_dim, o = idx % out_dim;
        float acc = 0.0f;
        for (int i = 0; i < batch; ++i) acc += x[i * in_dim + j] * dout[i * out_dim + o];
        dw[idx] = acc;
    } else if (idx < in_dim * out_dim + out_dim) {
        int o = idx - in_dim * out_dim;
        float acc = 0.0f;
        for (int i = 0; i < batch; ++i) acc += dout[i * out_dim + o];
        db[o] = acc;
    }
}

// din = (dout w^T) masked by the ReLU that produced act (= the layer's input).
extern "C" __global__ void linear_backward_input(const float* dout, const float* w, const float* act,
                                                 float* din, int batch, int in_dim, int out_dim) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * in_dim) return;
    int i = idx / in_dim, j = idx % in_dim;
    float acc = 0.0f;
    for (int o = 0; o < out_dim; ++o) acc += dout[i * out_dim + o] * w[j * out_dim + o];
    din[idx] = act[idx] > 0.0f ? acc : 0.0f;
}

extern "C" __global__ void sgd(float* p, const float* g, float lr, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] -= lr * g[i];
}
"#;

const USAGE: &str = "\
usage: cuda_mlp [--iters N] [--batch N] [--list-probes[=json]]
  --iters N   train for at most N iterations (default 400); a profiling run
              stops as soon as its schedule is complete
  --batch N   samples per iteration (default 512)";

/// Any failure: a message for the user.
type Result<T, E = String> = std::result::Result<T, E>;

fn cuda(what: &str) -> impl FnOnce(DriverError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// One launch per `n` threads, in blocks of [`BLOCK`].
fn grid(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(BLOCK).max(1), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The compiled kernels.
struct Kernels {
    make_batch: CudaFunction,
    linear_forward: CudaFunction,
    mse: CudaFunction,
    linear_backward_params: CudaFunction,
    linear_backward_input: CudaFunction,
    sgd: CudaFunction,
}

impl Kernels {
    fn compile(ctx: &Arc<CudaContext>) -> Result<Kernels> {
        let ptx = cudarc::nvrtc::compile_ptx(KERNELS).map_err(|e| format!("NVRTC: {e}"))?;
        let module = ctx.load_module(ptx).map_err(cuda("loading the kernels"))?;
        let load = |name: &str| module.load_function(name).map_err(cuda(name));
        Ok(Kernels {
            make_batch: load("make_batch")?,
            linear_forward: load("linear_forward")?,
            mse: load("mse")?,
            linear_backward_params: load("linear_backward_params")?,
            linear_backward_input: load("linear_backward_input")?,
            sgd: load("sgd")?,
        })
    }
}

/// One mini-batch on the GPU, sample-major.
struct Batch {
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
}

/// Generates batches on its own stream.
struct DataPipe {
    stream: Arc<CudaStream>,
    kernels: Arc<Kernels>,
    size: usize,
}

impl DataPipe {
    fn alloc(&self) -> Result<Batch> {
        Ok(Batch {
            x: self
                .stream
                .alloc_zeros(self.size * INPUTS)
                .map_err(cuda("alloc"))?,
            y: self.stream.alloc_zeros(self.size).map_err(cuda("alloc"))?,
        })
    }

    /// Queues the generation of batch number `seed` into `batch`.
    fn fill(&self, batch: &mut Batch, seed: u32) -> Result<()> {
        let _p = probe!(
            "make_batch",
            layer = "data",
            phase = "data",
            stream = &self.stream
        );
        let (n, inputs) = (self.size as i32, INPUTS as i32);
        let mut launch = self.stream.launch_builder(&self.kernels.make_batch);
        launch
            .arg(&mut batch.x)
            .arg(&mut batch.y)
            .arg(&n)
            .arg(&inputs)
            .arg(&seed);
        // SAFETY: the arguments match the kernel's signature; the buffers hold `size` samples.
        unsafe { launch.launch(grid(self.size)) }.map_err(cuda("make_batch"))?;
        Ok(())
    }
}

/// A fully connected layer's parameters and their gradients.
struct Linear {
    w: CudaSlice<f32>,
    b: CudaSlice<f32>,
    dw: CudaSlice<f32>,
    db: CudaSlice<f32>,
    inputs: usize,
    outputs: usize,
}

impl Linear {
    /// Glorot-uniform weights, zero biases.
    fn new(stream: &Arc<CudaStream>, inputs: usize, outputs: usize, rng: &mut Rng) -> Result<Self> {
        let scale = (6.0 / (inputs + outputs) as f32).sqrt();
        let w: Vec<f32> = (0..inputs * outputs)
            .map(|_| rng.uniform() * scale)
            .collect();
        Ok(Linear {
            w: stream.clone_htod(&w).map_err(cuda("upload"))?,
            b: stream.alloc_zeros(outputs).map_err(cuda("alloc"))?,
            dw: stream
                .alloc_zeros(inputs * outputs)
                .map_err(cuda("alloc"))?,
            db: stream.alloc_zeros(outputs).map_err(cuda("alloc"))?,
            inputs,
            outputs,
        })
    }
}

/// The model, its activations and the compute stream.
struct Mlp {
    stream_a: Arc<CudaStream>,
    kernels: Arc<Kernels>,
    batch: usize,
    hidden: Linear,
    output: Linear,
    /// Hidden activations, `batch x HIDDEN`.
    h: CudaSlice<f32>,
    /// Predictions, `batch x 1`.
    pred: CudaSlice<f32>,
    dpred: CudaSlice<f32>,
    dh: CudaSlice<f32>,
    /// Sum of the per-iteration losses since the last report.
    loss_sum: CudaSlice<f32>,
}

impl Mlp {
    fn new(stream_a: Arc<CudaStream>, kernels: Arc<Kernels>, batch: usize) -> Result<Mlp> {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let alloc = |n: usize| stream_a.alloc_zeros::<f32>(n).map_err(cuda("alloc"));
        Ok(Mlp {
            hidden: Linear::new(&stream_a, INPUTS, HIDDEN, &mut rng)?,
            output: Linear::new(&stream_a, HIDDEN, 1, &mut rng)?,
            h: alloc(batch * HIDDEN)?,
            pred: alloc(batch)?,
            dpred: alloc(batch)?,
            dh: alloc(batch * HIDDEN)?,
            loss_sum: alloc(1)?,
            stream_a: stream_a.clone(),
            kernels,
            batch,
        })
    }

    fn train_step(&mut self, batch: &Batch) -> Result<()> {
        self.hidden_forward(batch)?;
        self.output_forward()?;
        self.loss(batch)?;
        self.output_backward()?;
        self.hidden_backward(batch)?;
        self.update()
    }

    /// `dst = src w + b` (with ReLU if `relu`), queued on `stream`.
    fn forward(
        stream: &CudaStream,
        kernels: &Kernels,
        layer: &Linear,
        src: &CudaSlice<f32>,
        dst: &mut CudaSlice<f32>,
        batch: usize,
        relu: bool,
    ) -> Result<()> {
        let (n, i, o, r) = (
            batch as i32,
            layer.inputs as i32,
            layer.outputs as i32,
            i32::from(relu),
        );
        let mut launch = stream.launch_builder(&kernels.linear_forward);
        launch
            .arg(src)
            .arg(&layer.w)
            .arg(&layer.b)
            .arg(dst)
            .arg(&n)
            .arg(&i)
            .arg(&o)
            .arg(&r);
        // SAFETY: the arguments match the kernel; the buffers have the sizes it indexes.
        unsafe { launch.launch(grid(batch * layer.outputs)) }.map_err(cuda("linear_forward"))?;
        Ok(())
    }

    /// The gradients of `layer`'s parameters, from its input `src` and output gradient `dout`.
    fn backward_params(
        stream: &CudaStream,
        kernels: &Kernels,
        layer: &mut Linear,
        src: &CudaSlice<f32>,
        dout: &CudaSlice<f32>,
        batch: usize,
    ) -> Result<()> {
        let (n, i, o) = (batch as i32, layer.inputs as i32, layer.outputs as i32);
        let mut launch = stream.launch_builder(&kernels.linear_backward_params);
        launch
            .arg(src)
            .arg(dout)
            .arg(&mut layer.dw)
            .arg(&mut layer.db)
            .arg(&n)
            .arg(&i)
            .arg(&o);
        let threads = layer.inputs * layer.outputs + layer.outputs;
        // SAFETY: the arguments match the kernel; the buffers have the sizes it indexes.
        unsafe { launch.launch(grid(threads)) }.map_err(cuda("linear_backward_params"))?;
        Ok(())
    }

    #[profiled(layer = "hidden", phase = "fwd", stream = &self.stream_a)]
    fn hidden_forward(&mut self, batch: &Batch) -> Result<()> {
        let k = &self.kernels;
        Self::forward(
            &self.stream_a,
            k,
            &self.hidden,
            &batch.x,
            &mut self.h,
            self.batch,
            true,
        )
    }

    #[profiled(layer = "output", phase = "fwd", stream = &self.stream_a)]
    fn output_forward(&mut self) -> Result<()> {
        let k = &self.kernels;
        Self::forward(
            &self.stream_a,
            k,
            &self.output,
            &self.h,
            &mut self.pred,
            self.batch,
            false,
        )
    }

    #[profiled(layer = "loss", phase = "fwd", stream = &self.stream_a)]
    fn loss(&mut self, batch: &Batch) -> Result<()> {
        let n = self.batch as i32;
        let mut launch = self.stream_a.launch_builder(&self.kernels.mse);
        launch
            .arg(&self.pred)
            .arg(&batch.y)
            .arg(&mut self.dpred)
            .arg(&mut self.loss_sum)
            .arg(&n);
        // SAFETY: the arguments match the kernel; the buffers hold `batch` samples.
        unsafe { launch.launch(grid(self.batch)) }.map_err(cuda("mse"))?;
        Ok(())
    }

    #[profiled(layer = "output", phase = "bwd", stream = &self.stream_a)]
    fn output_backward(&mut self) -> Result<()> {
        let (stream, k, batch) = (&self.stream_a, &self.kernels, self.batch);
        Self::backward_params(stream, k, &mut self.output, &self.h, &self.dpred, batch)?;
        // The gradient flowing into the hidden layer, through its ReLU.
        let (n, i, o) = (batch as i32, HIDDEN as i32, 1i32);
        let mut launch = stream.launch_builder(&k.linear_backward_input);
        launch
            .arg(&self.dpred)
            .arg(&self.output.w)
            .arg(&self.h)
            .arg(&mut self.dh)
            .arg(&n)
            .arg(&i)
            .arg(&o);
        // SAFETY: the arguments match the kernel; the buffers have the sizes it indexes.
        unsafe { launch.launch(grid(batch * HIDDEN)) }.map_err(cuda("linear_backward_input"))?;
        Ok(())
    }

    #[profiled(layer = "hidden", phase = "bwd", stream = &self.stream_a)]
    fn hidden_backward(&mut self, batch: &Batch) -> Result<()> {
        let (stream, k) = (&self.stream_a, &self.kernels);
        Self::backward_params(stream, k, &mut self.hidden, &batch.x, &self.dh, self.batch)
    }

    #[profiled(layer = "optimizer", phase = "update", stream = &self.stream_a)]
    fn update(&mut self) -> Result<()> {
        let (stream, k) = (&self.stream_a, &self.kernels);
        for layer in [&mut self.hidden, &mut self.output] {
            for (p, g) in [(&mut layer.w, &layer.dw), (&mut layer.b, &layer.db)] {
                let n = p.len();
                let (lr, n32) = (LEARNING_RATE, n as i32);
                let mut launch = stream.launch_builder(&k.sgd);
                launch.arg(p).arg(g).arg(&lr).arg(&n32);
                // SAFETY: the arguments match the kernel; both buffers hold `n` floats.
                unsafe { launch.launch(grid(n)) }.map_err(cuda("sgd"))?;
            }
        }
        Ok(())
    }

    /// The mean loss since the last call (waits for the stream), and starts a new window.
    fn take_loss(&mut self, iterations: usize) -> Result<f64> {
        let sum = self
            .stream_a
            .clone_dtoh(&self.loss_sum)
            .map_err(cuda("reading the loss"))?;
        self.stream_a
            .memset_zeros(&mut self.loss_sum)
            .map_err(cuda("memset"))?;
        Ok(f64::from(sum.first().copied().unwrap_or(f32::NAN)) / iterations.max(1) as f64)
    }
}

/// A xorshift generator for the initial weights.
struct Rng(u64);

impl Rng {
    /// Uniform in [-1, 1).
    fn uniform(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

struct Args {
    iters: usize,
    batch: usize,
}

impl Args {
    /// Parses `--flag N` and `--flag=N`. `Ok(None)` means that help was asked for.
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Args>> {
        let mut parsed = Args {
            iters: 400,
            batch: 512,
        };
        while let Some(arg) = args.next() {
            // The profiler acts on `--list-probes` before `main`'s body runs.
            if arg.starts_with("--list-probes") {
                continue;
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) => (flag.to_owned(), Some(value.to_owned())),
                None => (arg, None),
            };
            let mut value = || inline.clone().or_else(|| args.next());
            let mut number = |flag: &str| -> Result<usize> {
                let text = value().ok_or_else(|| format!("{flag} needs a number"))?;
                text.parse()
                    .map_err(|_| format!("{flag} takes a number, not `{text}`"))
            };
            match flag.as_str() {
                "-h" | "--help" => return Ok(None),
                "--iters" => parsed.iters = number(&flag)?,
                "--batch" => parsed.batch = number(&flag)?,
                _ => return Err(format!("unknown argument `{flag}`")),
            }
        }
        if parsed.batch == 0 || parsed.batch > 1 << 20 {
            return Err("--batch must be between 1 and 1048576".to_owned());
        }
        Ok(Some(parsed))
    }
}

/// GPU 0, or why there is none. Checks the libraries first: `cudarc` panics when it calls
/// into one it cannot load.
fn open_gpu() -> Result<Arc<CudaContext>> {
    // SAFETY: only tries to open the driver library by its usual names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("libcuda could not be loaded".to_owned());
    }
    // SAFETY: only tries to open the NVRTC library by its usual names.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc) could not be loaded".to_owned());
    }
    let count = CudaContext::device_count().map_err(|e| e.to_string())?;
    if count < 1 {
        return Err("no CUDA device".to_owned());
    }
    CudaContext::new(0).map_err(|e| e.to_string())
}

fn train(ctx: Arc<CudaContext>, args: &Args) -> Result<(usize, f64)> {
    let kernels = Arc::new(Kernels::compile(&ctx)?);
    let stream_a = ctx.new_stream().map_err(cuda("stream"))?;
    let stream_b = ctx.new_stream().map_err(cuda("stream"))?;
    let data = DataPipe {
        stream: stream_b,
        kernels: kernels.clone(),
        size: args.batch,
    };
    let mut model = Mlp::new(stream_a, kernels, args.batch)?;
    let mut batches = [data.alloc()?, data.alloc()?];
    data.fill(&mut batches[0], 0)?;

    let (mut iterations, mut window, mut loss) = (0, 0, f64::NAN);
    for it in 0..args.iters {
        // The next batch is made on stream_b while stream_a trains on this one.
        data.fill(&mut batches[(it + 1) % 2], it as u32 + 1)?;
        model.train_step(&batches[it % 2])?;
        iterations = it + 1;
        window += 1;
        if iterations % REPORT_EVERY == 0 {
            loss = model.take_loss(window)?;
            window = 0;
            println!("iter {iterations:>6}  loss {loss:.4}");
        }
        profiler_core::step();
        if profiler_core::finished() {
            break;
        }
    }
    if window > 0 {
        loss = model.take_loss(window)?;
    }
    Ok((iterations, loss))
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
            eprintln!("cuda_mlp: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let ctx = match open_gpu() {
        Ok(ctx) => ctx,
        Err(why) => {
            eprintln!("cuda_mlp: no CUDA GPU available ({why}); this example needs one");
            std::process::exit(1);
        }
    };
    let start = Instant::now();
    match train(ctx, &args) {
        Ok((iterations, loss)) => println!(
            "done: {iterations} iterations, final loss {loss:.4}, wall time {:.3} s",
            start.elapsed().as_secs_f64()
        ),
        Err(message) => {
            eprintln!("cuda_mlp: {message}");
            std::process::exit(1);
        }
    }
}
