#![cfg(feature = "enable")]
//! The backward pass's attribution to layers, checked by counting ops (no timing): which layer
//! and phase each op of a small model's forward and backward pass is measured under.

use burn::backend::NdArray;
use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d, Relu};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Distribution, Tensor};

type B = profiler_burn::Backend<NdArray>;

/// The decorator over burn's Flex backend (the `flex` feature): the same checks as over ndarray.
#[cfg(feature = "flex")]
type F = profiler_burn::Backend<burn_flex::Flex>;

type Counts = Vec<(
    (&'static str, Option<&'static str>, Option<&'static str>),
    u64,
)>;

/// The ops counted under `layer` and `phase`, by name.
fn under(counts: &Counts, layer: Option<&str>, phase: &str) -> Vec<(&'static str, u64)> {
    counts
        .iter()
        .filter(|((_, l, p), _)| *l == layer && *p == Some(phase))
        .map(|((op, _, _), n)| (*op, *n))
        .collect()
}

#[derive(Module, Debug)]
struct Mlp<B: Backend> {
    l1: Linear<B>,
    l2: Linear<B>,
    relu: Relu,
}

#[test]
fn each_linear_layers_backward_ops_are_its_own() {
    linear_layers::<B>();
}

#[cfg(feature = "flex")]
#[test]
fn each_linear_layers_backward_ops_are_its_own_over_flex() {
    linear_layers::<F>();
}

fn linear_layers<B: AutodiffBackend>() {
    let device = Default::default();
    let model: Mlp<B> = Mlp {
        l1: LinearConfig::new(4, 8).init(&device),
        l2: LinearConfig::new(8, 3).init(&device),
        relu: Relu::new(),
    };
    let x = Tensor::<B, 2>::random([5, 4], Distribution::Normal(0.0, 1.0), &device);
    // burn initializes parameters on first use: once before counting.
    let _ = model.l2.forward(model.l1.forward(x.clone()));

    profiler_burn::count_ops();
    let h = profiler_burn::layer("l1", || model.relu.forward(model.l1.forward(x)));
    let y = profiler_burn::layer("l2", || model.l2.forward(h));
    let loss = y.powi_scalar(2).mean();
    let _grads = profiler_burn::backward(|| loss.backward());
    let counts = profiler_burn::op_counts();
    eprintln!("{counts:#?}");

    assert_eq!(
        under(&counts, Some("l1"), "fwd"),
        vec![("linear", 1), ("relu", 1)]
    );
    assert_eq!(under(&counts, Some("l2"), "fwd"), vec![("linear", 1)]);
    // l2's backward: the gradients of its weight, bias and input (l1's output).
    assert_eq!(
        under(&counts, Some("l2"), "bwd"),
        vec![
            ("linear_bias_backward", 1),
            ("linear_weight_backward", 1),
            ("linear_x_backward", 1)
        ]
    );
    // l1's: its ReLU (read as the forward op's output, made by l1), weight and bias; the
    // input batch needs no gradient.
    assert_eq!(
        under(&counts, Some("l1"), "bwd"),
        vec![
            ("linear_bias_backward", 1),
            ("linear_weight_backward", 1),
            ("relu_backward", 1)
        ]
    );
}

/// Two linear layers with no activation between them, and the loss in a layer of its own:
/// each layer's bias gradient is its own. `linear_bias_backward` reads only the output's
/// gradient, which the next layer's backward made; it runs in its own node's backward step,
/// after that node's weight gradient. Before, it went to the next layer (`a`'s to `b`, `b`'s
/// to `loss`).
#[test]
fn a_linear_layer_without_activation_keeps_its_bias_gradient() {
    let device = Default::default();
    let (la, lb): (Linear<B>, Linear<B>) = (
        LinearConfig::new(4, 4).init(&device),
        LinearConfig::new(4, 3).init(&device),
    );
    let x = Tensor::<B, 2>::random([5, 4], Distribution::Normal(0.0, 1.0), &device);
    let _ = lb.forward(la.forward(x.clone()));

    profiler_burn::count_ops();
    let h = profiler_burn::layer("a", || la.forward(x));
    let y = profiler_burn::layer("b", || lb.forward(h));
    let loss = profiler_burn::layer("loss", || y.powi_scalar(2).mean());
    let _grads = profiler_burn::backward(|| loss.backward());
    let counts = profiler_burn::op_counts();
    assert_eq!(
        under(&counts, Some("b"), "bwd"),
        vec![
            ("linear_bias_backward", 1),
            ("linear_weight_backward", 1),
            ("linear_x_backward", 1)
        ],
        "{counts:#?}"
    );
    assert_eq!(
        under(&counts, Some("a"), "bwd"),
        vec![("linear_bias_backward", 1), ("linear_weight_backward", 1)],
        "{counts:#?}"
    );
    assert!(
        !under(&counts, Some("loss"), "bwd")
            .iter()
            .any(|(op, _)| op.starts_with("linear")),
        "{counts:#?}"
    );
}

#[derive(Module, Debug)]
struct Block<B: Backend> {
    conv: Conv2d<B>,
    pool: MaxPool2d,
    relu: Relu,
}

impl<B: Backend> Block<B> {
    fn new(channels: [usize; 2], device: &B::Device) -> Self {
        Block {
            conv: Conv2dConfig::new(channels, [3, 3])
                .with_padding(PaddingConfig2d::Same)
                .init(device),
            pool: MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init(),
            relu: Relu::new(),
        }
    }

    fn forward(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        self.pool.forward(self.relu.forward(self.conv.forward(x)))
    }
}

#[test]
fn conv_blocks_backward_ops_are_their_own_and_none_is_lost() {
    conv_blocks::<B>();
}

#[cfg(feature = "flex")]
#[test]
fn conv_blocks_backward_ops_are_their_own_and_none_is_lost_over_flex() {
    conv_blocks::<F>();
}

fn conv_blocks<B: AutodiffBackend>() {
    let device = Default::default();
    let b1: Block<B> = Block::new([2, 4], &device);
    let b2: Block<B> = Block::new([4, 4], &device);
    let head: Linear<B> = LinearConfig::new(4 * 2 * 2, 3).init(&device);
    let x = Tensor::<B, 4>::random([2, 2, 8, 8], Distribution::Normal(0.0, 1.0), &device);
    let _ = head.forward::<2>(b2.forward(b1.forward(x.clone())).flatten(1, 3));

    profiler_burn::count_ops();
    let x = profiler_burn::layer("b1", || b1.forward(x));
    let x = profiler_burn::layer("b2", || b2.forward(x));
    let x: Tensor<B, 2> = x.flatten(1, 3);
    let y = profiler_burn::layer("head", || head.forward(x));
    let loss = y.powi_scalar(2).mean();
    let _grads = profiler_burn::backward(|| loss.backward());
    let counts = profiler_burn::op_counts();
    eprintln!("{counts:#?}");

    let block_bwd = |layer| {
        vec![
            ("conv2d_bias_backward", 1),
            ("conv2d_weight_backward", 1),
            ("conv2d_x_backward", 1),
            ("max_pool2d_with_indices_backward", 1),
            ("relu_backward", 1),
        ]
        .into_iter()
        .filter(move |(op, _)| !(layer == "b1" && *op == "conv2d_x_backward"))
        .collect::<Vec<_>>()
    };
    assert_eq!(under(&counts, Some("b2"), "bwd"), block_bwd("b2"));
    assert_eq!(under(&counts, Some("b1"), "bwd"), block_bwd("b1"));
    // The flatten between the blocks and the loss belong to no layer: their backward ops are
    // counted without one.
    let unattributed = under(&counts, None, "bwd");
    assert!(
        unattributed
            .iter()
            .all(|(op, _)| !op.contains("conv") && !op.contains("linear")),
        "{unattributed:?}"
    );
}

/// The MLP's layers annotated with `#[profiled]` instead of wrapped in
/// [`profiler_burn::layer`]: the annotations' `layer` keys are the layers.
struct Annotated<'a> {
    model: &'a Mlp<B>,
}

impl Annotated<'_> {
    #[profiler_core::profiled(layer = "a1", phase = "fwd")]
    fn first(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.model.relu.forward(self.model.l1.forward(x))
    }

    #[profiler_core::profiled(layer = "a2", phase = "fwd")]
    fn second(&self, h: Tensor<B, 2>) -> Tensor<B, 2> {
        // A probe without a layer inside the layer does not hide it.
        let _p = profiler_core::probe!("a2_inner");
        self.model.l2.forward(h)
    }
}

/// An optimizer step annotated as a layer's `update` (not its forward pass).
struct Optimizer;

impl Optimizer {
    #[profiler_core::profiled(layer = "optim", phase = "update")]
    fn step(&self, w: Tensor<B, 2>) -> Tensor<B, 2> {
        w.mul_scalar(0.9).add_scalar(1.0)
    }
}

/// A profiling session writing into a folder of its own (`tag`), one at a time in this binary
/// (a second `init_with` while one runs is refused); `config` sets the rest. Dropped in that
/// order: the session, then the lock.
struct Session {
    session: Option<profiler_core::InitGuard>,
    dir: std::path::PathBuf,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Session {
    fn start(tag: &str, config: profiler_core::Config) -> Session {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let one = ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let dir = std::env::temp_dir().join(format!("prof-burn-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = profiler_core::Config {
            out: dir.join("prof.json").display().to_string(),
            summary: false,
            ..config
        };
        Session {
            session: Some(profiler_core::init_with(config, None).unwrap()),
            dir,
            _one: one,
        }
    }

    /// Ends the session (its results written) and gives its `prof.json` back as text.
    fn end(mut self) -> String {
        drop(self.session.take());
        std::fs::read_to_string(self.dir.join("prof.json")).unwrap_or_default()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        drop(self.session.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn profiled_layers_are_the_layers_of_their_ops_forward_and_backward() {
    let device = Default::default();
    let model: Mlp<B> = Mlp {
        l1: LinearConfig::new(4, 8).init(&device),
        l2: LinearConfig::new(8, 3).init(&device),
        relu: Relu::new(),
    };
    let x = Tensor::<B, 2>::random([5, 4], Distribution::Normal(0.0, 1.0), &device);
    let session = Session::start("annotated", profiler_core::Config::default());
    // burn initializes parameters on first use, and the decorator's first op asks for the
    // open events: once before counting.
    let _ = model.l2.forward(model.l1.forward(x.clone()));

    profiler_burn::count_ops();
    let annotated = Annotated { model: &model };
    let h = annotated.first(x);
    let y = annotated.second(h);
    let loss = y.powi_scalar(2).mean();
    let _grads = profiler_burn::backward(|| loss.backward());
    let counts = profiler_burn::op_counts();
    drop(session);
    eprintln!("{counts:#?}");

    assert_eq!(
        under(&counts, Some("a1"), "fwd"),
        vec![("linear", 1), ("relu", 1)]
    );
    assert_eq!(under(&counts, Some("a2"), "fwd"), vec![("linear", 1)]);
    assert_eq!(
        under(&counts, Some("a2"), "bwd"),
        vec![
            ("linear_bias_backward", 1),
            ("linear_weight_backward", 1),
            ("linear_x_backward", 1)
        ]
    );
    assert_eq!(
        under(&counts, Some("a1"), "bwd"),
        vec![
            ("linear_bias_backward", 1),
            ("linear_weight_backward", 1),
            ("relu_backward", 1)
        ]
    );
}

/// The ops inside an annotated event of a phase other than `fwd` keep that phase: an optimizer
/// step under `#[profiled(layer = "optim", phase = "update")]` counts its ops as `optim`'s
/// `update`. Before, every annotated layer was taken for a forward pass (`optim`'s `fwd`), and
/// its reads stamped as the forward's.
#[test]
fn an_annotated_event_of_another_phase_keeps_its_phase() {
    let device = Default::default();
    let session = Session::start("phase", profiler_core::Config::default());
    let w = Tensor::<B, 2>::random([4, 4], Distribution::Normal(0.0, 1.0), &device);
    // The decorator's first op asks for the open events.
    let _ = w.clone().add_scalar(0.0);
    profiler_burn::count_ops();
    let _ = Optimizer.step(w);
    let counts = profiler_burn::op_counts();
    drop(session);
    assert_eq!(
        under(&counts, Some("optim"), "update"),
        vec![("float_add_scalar", 1), ("float_mul_scalar", 1)],
        "{counts:#?}"
    );
    assert!(
        under(&counts, Some("optim"), "fwd").is_empty(),
        "{counts:#?}"
    );
}

/// An op that returns a future (`float_into_data`) is measured while its future runs, where the
/// backend does the work: each of its runs holds most of the probe around the call (which adds
/// only the future's creation; a busy machine's delays fall on both alike). Before, its run
/// ended when the op returned the future, and read about 0 ns beside hundreds of microseconds.
#[test]
fn a_future_returning_op_is_measured_while_it_runs() {
    let device = Default::default();
    let config = profiler_core::Config {
        mode: profiler_core::Mode::Trace,
        warmup: 1,
        repeat: 4,
        ..profiler_core::Config::default()
    };
    let session = Session::start("future", config);
    let big = Tensor::<B, 2>::random([600, 600], Distribution::Normal(0.0, 1.0), &device);
    for _ in 0..6 {
        let data = {
            let _p = profiler_core::probe!("around_into_data");
            big.clone().transpose().into_data()
        };
        drop(data);
        profiler_core::step();
    }
    let profile: serde_json::Value = serde_json::from_str(&session.end()).unwrap();
    let median = |name: &str| {
        let e = profile["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {profile}"));
        e["stats"]["median_ns"].as_f64().unwrap()
    };
    let (op, around) = (median("float_into_data"), median("around_into_data"));
    assert!(op >= 0.5 * around, "float_into_data {op} ns in {around} ns");
}
