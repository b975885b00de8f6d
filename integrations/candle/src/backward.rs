//! candle's backward pass by layer: identity markers at a layer's boundaries whose backward
//! opens and closes the event `<layer>/bwd`.
//!
//! candle's `Tensor::backward` (candle-core 0.11) walks the graph's nodes in reverse
//! topological order, in one loop with no span, hook or callback, and a backend cannot be
//! wrapped. What it does call is a custom op's backward, when its walk reaches the op's node.
//! [`Layer`] (or [`layer`]) runs a module's forward between two identity [`CustomOp1`]s:
//!
//! ```text
//! forward:   xs -> [input marker] -> the layer's ops -> [output marker] -> ys
//! backward:  grad(ys) -> [output marker: opens <layer>/bwd] -> the layer's backward steps
//!                     -> [input marker: closes <layer>/bwd] -> the previous layer's ...
//! ```
//!
//! The walk is a depth-first post-order of the graph, reversed: a node comes before every node
//! it was computed from, so the output marker's backward runs before the backward steps of the
//! layer's ops, and every node the input marker depends on (the layers before) comes after the
//! input marker's. The layer's ops that depend on its input therefore run between the two
//! markers. The forward is one run of `<layer>/fwd` (layer `<layer>`, phase `fwd`) and the
//! backward steps between the markers one run of `<layer>/bwd` (layer `<layer>`, phase `bwd`),
//! both [`RuntimeProbe`]s, as `profiler-burn` names them, so the summary, `prof report`, the
//! flame graph and `prof ab` see `layers.0/bwd` beside `layers.0/fwd`.
//!
//! Call [`backward`] instead of `loss.backward()`: the first layer's input (the batch) needs no
//! gradient, so candle never reaches its input marker, and `backward` closes the runs still
//! open when the walk ends. The markers open and close runs only inside [`backward`]: a walk
//! it did not start (`loss.backward()`, candle-nn's `backward_step`) measures none (said once
//! on stderr) rather than leave the first layer's run open.
//!
//! **Costs.** A custom op must return new storage: each marker copies its tensor in the
//! forward pass (the layer's input and output, once each), and candle adds each marker's
//! gradient into a fresh zero tensor in the backward pass. A layer whose input needs no
//! gradient gets no input marker. Without the `profile` feature there are no markers: `Layer`
//! and `layer` only call the module, `backward` is `loss.backward()`.
//!
//! **Limits.** An op of the layer that does not depend on its input (a transpose of a weight
//! made before the input is read, `w.t()?.matmul(xs)`) is placed by the walk where the graph
//! first reached it, which may be outside the layer's markers: its (small) backward step goes
//! to whatever run is open then. A tensor read by two layers is walked once: the ops of both
//! are ordered by candle, and a residual connection's add outside every layer belongs to none.
//! Nested layers nest their runs. A layer returns one tensor.

#[cfg(feature = "profile")]
use std::cell::RefCell;
#[cfg(feature = "profile")]
use std::collections::HashMap;
#[cfg(feature = "profile")]
use std::sync::{Mutex, OnceLock};

#[cfg(feature = "profile")]
use candle_core::backend::{BackendDevice, BackendStorage};
use candle_core::backprop::GradStore;
#[cfg(feature = "profile")]
use candle_core::{CpuStorage, CudaStorage, CustomOp1, Layout, Shape};
use candle_core::{Result, Tensor};
use candle_nn::Module;
#[cfg(feature = "profile")]
use profiler_core::ProbeGuard;
use profiler_core::RuntimeProbe;

/// A layer's number: its index in the table of layers' names.
#[cfg(feature = "profile")]
type LayerId = u32;

/// The layers' names, by number.
#[cfg(feature = "profile")]
fn names() -> &'static Mutex<Vec<String>> {
    static NAMES: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    NAMES.get_or_init(|| Mutex::new(Vec::new()))
}

#[cfg(feature = "profile")]
fn lock_names() -> std::sync::MutexGuard<'static, Vec<String>> {
    names()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The number of the layer `name`, given on first use.
#[cfg(feature = "profile")]
fn layer_id(name: &str) -> LayerId {
    let mut names = lock_names();
    if let Some(i) = names.iter().position(|n| n == name) {
        return i as LayerId;
    }
    names.push(name.to_owned());
    (names.len() - 1) as LayerId
}

/// This thread's backward pass: the `<layer>/bwd` runs open (innermost last), and how many
/// runs each layer's event had.
#[cfg(feature = "profile")]
#[derive(Default)]
struct Thread {
    open: Vec<(LayerId, ProbeGuard)>,
    runs: HashMap<LayerId, u64>,
    /// How many [`backward`] calls are under way: the markers open and close runs only inside
    /// one, where the runs still open at the end are closed.
    walking: u32,
}

#[cfg(feature = "profile")]
thread_local! {
    static THREAD: RefCell<Thread> = RefCell::new(Thread::default());
}

/// Opens a run of `bwd`, the event of layer `id`.
#[cfg(feature = "profile")]
fn open(id: LayerId, bwd: RuntimeProbe) {
    let guard = bwd.enter();
    THREAD.with(|t| {
        let mut t = t.borrow_mut();
        *t.runs.entry(id).or_insert(0) += 1;
        t.open.push((id, guard));
    });
}

/// Closes the run of layer `id`, and the runs opened inside it that are still open (a nested
/// layer whose input needs no gradient); nothing if it is not open.
#[cfg(feature = "profile")]
fn close(id: LayerId) {
    let closed = THREAD.with(|t| {
        let mut t = t.borrow_mut();
        match t.open.iter().rposition(|(open, _)| *open == id) {
            Some(at) => t.open.split_off(at),
            None => Vec::new(),
        }
    });
    // Innermost first, outside the borrow.
    for run in closed.into_iter().rev() {
        drop(run);
    }
}

/// Closes every run still open on this thread.
#[cfg(feature = "profile")]
fn close_all() {
    let closed = THREAD.with(|t| std::mem::take(&mut t.borrow_mut().open));
    for run in closed.into_iter().rev() {
        drop(run);
    }
}

/// A marker's backward ran outside [`backward`]: said once per process.
#[cfg(feature = "profile")]
fn outside_backward() {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        // Never a panic on a stderr whose reader is gone: inside the training process.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "candle-example: warning: a layer's backward ran outside `backward::backward(&loss)` \
             (`loss.backward()`, or candle-nn's `backward_step`): the layers' `bwd` runs are not \
             measured; call `backward::backward(&loss)`, then the optimizer's `step(&grads)`"
        );
    });
}

/// Which boundary of a layer a marker sits on.
#[cfg(feature = "profile")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edge {
    /// At the layer's input: its backward closes the run.
    Input,
    /// At the layer's output: its backward opens the run.
    Output,
}

/// The identity op at one boundary of a layer.
#[cfg(feature = "profile")]
struct Marker {
    id: LayerId,
    bwd: RuntimeProbe,
    edge: Edge,
}

/// A copy of `storage` as `layout` reads it, contiguous.
#[cfg(feature = "profile")]
fn copy<S>(storage: &S, layout: &Layout) -> Result<(S, Shape)>
where
    S: BackendStorage,
    S::Device: BackendDevice<Storage = S>,
{
    // SAFETY: every element of `dst` is written by `copy_strided_src` before it is read.
    let mut dst = unsafe {
        storage
            .device()
            .alloc_uninit(layout.shape(), storage.dtype())?
    };
    storage.copy_strided_src(&mut dst, 0, layout)?;
    Ok((dst, layout.shape().clone()))
}

#[cfg(feature = "profile")]
impl CustomOp1 for Marker {
    fn name(&self) -> &'static str {
        match self.edge {
            Edge::Input => "profiler-layer-input",
            Edge::Output => "profiler-layer-output",
        }
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        copy(storage, layout)
    }

    fn cuda_fwd(&self, storage: &CudaStorage, layout: &Layout) -> Result<(CudaStorage, Shape)> {
        copy(storage, layout)
    }

    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        // A walk that [`backward`] did not start (`loss.backward()`, candle-nn's
        // `backward_step`) would leave its first layer's run open for ever, one more each
        // iteration, and that layer's `bwd` would never be measured: outside, nothing is opened.
        if THREAD.with(|t| t.borrow().walking) == 0 {
            outside_backward();
            return Ok(Some(grad.clone()));
        }
        match self.edge {
            Edge::Output => open(self.id, self.bwd),
            Edge::Input => close(self.id),
        }
        Ok(Some(grad.clone()))
    }
}

/// The events of one layer: `<name>/fwd` around its forward, `<name>/bwd` around its backward
/// steps, and (with profiling compiled in) the markers that find them in candle's walk.
#[derive(Clone, Copy, Debug)]
pub struct LayerProbes {
    #[cfg(feature = "profile")]
    id: LayerId,
    fwd: RuntimeProbe,
    #[cfg_attr(not(feature = "profile"), allow(dead_code))]
    bwd: RuntimeProbe,
}

impl LayerProbes {
    /// Registers the events `<name>/fwd` and `<name>/bwd` (layer `name`, phases `fwd` and
    /// `bwd`); the same name gives the same events. Costs a lock and a registry lookup: make it
    /// once per layer, with the model.
    pub fn new(name: &str) -> LayerProbes {
        LayerProbes {
            #[cfg(feature = "profile")]
            id: layer_id(name),
            fwd: RuntimeProbe::new(&format!("{name}/fwd"), Some(name), Some("fwd")),
            bwd: RuntimeProbe::new(&format!("{name}/bwd"), Some(name), Some("bwd")),
        }
    }

    /// Runs `f` on `xs` as one forward of the layer: `f` is one run of `<name>/fwd`, and its
    /// input and output are marked so that [`backward`] measures the layer's backward steps
    /// as one run of `<name>/bwd`. Without the `profile` feature, `f(xs)`.
    pub fn forward(
        &self,
        xs: &Tensor,
        f: impl FnOnce(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        #[cfg(feature = "profile")]
        {
            let marker = |edge| Marker {
                id: self.id,
                bwd: self.bwd,
                edge,
            };
            // An input that needs no gradient (the batch) is never reached by the walk: no
            // marker, no copy; `backward` closes the run.
            let input = if xs.track_op() {
                xs.apply_op1(marker(Edge::Input))?
            } else {
                xs.clone()
            };
            let ys = self.fwd.measure(|| f(&input))?;
            if ys.track_op() {
                ys.apply_op1(marker(Edge::Output))
            } else {
                Ok(ys)
            }
        }
        #[cfg(not(feature = "profile"))]
        {
            self.fwd.measure(|| f(xs))
        }
    }
}

/// `inner`, a layer whose forward is timed as `<name>/fwd` and whose backward steps are timed
/// as `<name>/bwd` by [`backward`] (see the module's docs).
///
/// ```no_run
/// # fn f(vb: candle_nn::VarBuilder, xs: &candle_core::Tensor) -> candle_core::Result<()> {
/// use candle_nn::Module;
/// let fc1 = candle_example::backward::Layer::new("fc1", candle_nn::linear(4, 8, vb)?);
/// let loss = fc1.forward(xs)?.sqr()?.mean_all()?;
/// let grads = candle_example::backward::backward(&loss)?; // fc1/bwd
/// # let _ = grads; Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Layer<M> {
    inner: M,
    probes: LayerProbes,
}

impl<M> Layer<M> {
    /// Wraps `inner` as the layer `name`.
    pub fn new(name: &str, inner: M) -> Layer<M> {
        Layer {
            inner,
            probes: LayerProbes::new(name),
        }
    }

    /// The wrapped module.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

impl<M: Module> Module for Layer<M> {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.probes.forward(xs, |xs| self.inner.forward(xs))
    }
}

/// Runs `f` on `xs` as one forward of the layer `name` (see [`LayerProbes::forward`]). Looks
/// the name up on every call (a lock and a registry lookup); [`Layer`] or [`LayerProbes`]
/// look it up once.
pub fn layer(name: &str, xs: &Tensor, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    LayerProbes::new(name).forward(xs, f)
}

/// `loss.backward()`, with the backward steps of each layer made by [`Layer`] or [`layer`]
/// measured as runs of `<layer>/bwd`; the runs still open when candle's walk ends (the first
/// layer's, whose input needs no gradient) are closed here, also on an error.
pub fn backward(loss: &Tensor) -> Result<GradStore> {
    #[cfg(feature = "profile")]
    {
        struct CloseAll;
        impl Drop for CloseAll {
            fn drop(&mut self) {
                let outermost = THREAD.with(|t| {
                    let mut t = t.borrow_mut();
                    t.walking -= 1;
                    t.walking == 0
                });
                if outermost {
                    close_all();
                }
            }
        }
        THREAD.with(|t| t.borrow_mut().walking += 1);
        let _close = CloseAll;
        loss.backward()
    }
    #[cfg(not(feature = "profile"))]
    {
        loss.backward()
    }
}

/// The layers whose `<layer>/bwd` run is open on this thread, outermost first: inside a
/// custom op's backward, which layer's backward step is running (tests use it to check the
/// markers). Empty outside [`backward`], and always without the `profile` feature.
pub fn open_layers() -> Vec<String> {
    #[cfg(feature = "profile")]
    {
        let ids: Vec<LayerId> = THREAD.with(|t| t.borrow().open.iter().map(|r| r.0).collect());
        let names = lock_names();
        ids.iter().map(|&id| names[id as usize].clone()).collect()
    }
    #[cfg(not(feature = "profile"))]
    {
        Vec::new()
    }
}

/// How many runs of `<layer>/bwd` this thread opened, by layer name, sorted by name (whether
/// the profiler measured them or not). Always empty without the `profile` feature.
pub fn bwd_runs() -> Vec<(String, u64)> {
    #[cfg(feature = "profile")]
    {
        let runs: Vec<(LayerId, u64)> =
            THREAD.with(|t| t.borrow().runs.iter().map(|(&id, &n)| (id, n)).collect());
        let names = lock_names();
        let mut runs: Vec<(String, u64)> = runs
            .into_iter()
            .map(|(id, n)| (names[id as usize].clone(), n))
            .collect();
        runs.sort();
        runs
    }
    #[cfg(not(feature = "profile"))]
    {
        Vec::new()
    }
}
