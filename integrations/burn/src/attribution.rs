//! Which layer an op belongs to, and the probes that measure it.
//!
//! Forward: an op that runs inside [`layer`] belongs to the innermost open layer (else, inside
//! an annotated function or probe with a `layer` key, such as a `forward` under
//! `#[profiled(layer = "block1", phase = "fwd")]`, to that key's layer: the innermost such
//! event profiler-core publishes on the thread, `profiler_core::open_layer`; an event whose
//! `phase` is another than `fwd`, an optimizer's `update`, keeps its phase and is no forward
//! pass: its reads stamp nothing); its output
//! is stamped with that layer (the producer), and each of its inputs is stamped as last read by
//! it (the consumer: a stamp is shared by the clones of a tensor, so autodiff's saved copy sees
//! it). Backward (inside [`backward`], no layer open): an op belongs to the layer of its
//! strongest input:
//!
//! 1. a tensor made outside the backward pass (a saved activation, a parameter, the input
//!    batch): the layer that last read it in the forward pass (autodiff saves the inputs of a
//!    forward op to compute its gradients: the op's layer read them), or for the `output` of
//!    `relu_backward`/`sigmoid_backward`, the layer that made it;
//! 2. a tensor made in the backward pass from such a tensor (`transpose(weight)`);
//! 3. a gradient (made in the backward pass from gradients only): the layer of the op that
//!    made it.
//!
//! Ties go to the first argument. Inputs that belong to no layer do not count. An op that
//! reads no tensor of the first kind continues the `<layer>/bwd` run open, if one is: burn
//! runs a node's backward steps one after the other, and `linear_bias_backward` (the output's
//! gradient alone) follows its node's `linear_weight_backward`, though that gradient was made
//! by the next layer; rules 2 and 3 decide only while no run is open. An op none of whose
//! inputs belongs to a layer belongs to the layer of the op before it. The backward ops
//! of one layer that run one after another are measured together as one run of the event
//! `<layer>/bwd` (layer `<layer>`, phase `bwd`), beside the forward's `<layer>/fwd`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

use profiler_core::{ProbeGuard, RuntimeProbe, WorkKeys};

/// A layer's number (0: none).
type LayerId = u32;

/// How a tensor was made, for the backward pass's choice (see the module's docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Outside the backward pass: a forward activation, a parameter, the data.
    Outside,
    /// In the backward pass, from at least one tensor made outside it.
    Derived,
    /// In the backward pass, from gradients only.
    Grad,
}

/// What a tensor primitive of the decorator carries besides the inner primitive.
#[derive(Clone, Debug)]
pub(crate) struct Stamp {
    producer: LayerId,
    origin: Origin,
    /// The layer that last read it in a forward pass; shared by its clones.
    consumer: Arc<AtomicU32>,
}

/// How an op reads an input: as one of the forward op's inputs, or as its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Input,
    Output,
}

/// The most inputs an op's attribution looks at (burn's ops take at most 7 tensors).
const MAX_INPUTS: usize = 8;

/// An op's tensor inputs, without allocating.
pub(crate) struct Inputs<'a> {
    items: [Option<(&'a Stamp, Role)>; MAX_INPUTS],
    len: usize,
}

impl<'a> Inputs<'a> {
    pub(crate) fn new() -> Inputs<'a> {
        Inputs {
            items: [None; MAX_INPUTS],
            len: 0,
        }
    }

    pub(crate) fn push(&mut self, stamp: &'a Stamp, role: Role) {
        if self.len < MAX_INPUTS {
            self.items[self.len] = Some((stamp, role));
            self.len += 1;
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&'a Stamp, Role)> + '_ {
        self.items[..self.len].iter().flatten().copied()
    }
}

/// One op being measured: its probe's guard, and what its outputs are stamped with.
pub(crate) struct OpRun {
    _guard: ProbeGuard,
    layer: LayerId,
    origin: Origin,
}

/// An op that returns a future (`float_into_data`, `bool_argwhere`): the backend does its work
/// when the future is polled, after the op returned, so each poll is one run of its probe (a
/// guard never held across a poll, so never ended on another thread). A future that completes
/// at its first poll, as a CPU backend's does, is one run that holds the whole work; before,
/// the run ended when the op returned the future, and read about 0 ns.
pub(crate) struct PolledRun {
    probe: RuntimeProbe,
    layer: LayerId,
    origin: Origin,
}

impl PolledRun {
    /// A stamp for the future's output.
    pub(crate) fn output(&self) -> Stamp {
        Stamp {
            producer: self.layer,
            origin: self.origin,
            consumer: Arc::new(AtomicU32::new(0)),
        }
    }

    /// `fut`, each of whose polls is one run of the op's probe.
    pub(crate) fn time<F: std::future::Future>(
        self,
        fut: F,
    ) -> impl std::future::Future<Output = F::Output> {
        let probe = self.probe;
        async move {
            let mut fut = std::pin::pin!(fut);
            std::future::poll_fn(move |cx| {
                let _run = probe.enter();
                fut.as_mut().poll(cx)
            })
            .await
        }
    }
}

impl OpRun {
    /// A stamp for one output of this op.
    pub(crate) fn output(&self) -> Stamp {
        Stamp {
            producer: self.layer,
            origin: self.origin,
            consumer: Arc::new(AtomicU32::new(0)),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Phase {
    None,
    Fwd,
    Bwd,
    /// The `phase` key of an annotated event that is not the forward pass (`update`, `data`,
    /// `loss`): its ops keep it.
    Other(&'static str),
}

impl Phase {
    fn as_str(self) -> Option<&'static str> {
        match self {
            Phase::None => None,
            Phase::Fwd => Some("fwd"),
            Phase::Bwd => Some("bwd"),
            Phase::Other(phase) => Some(phase),
        }
    }
}

/// An op's name, its layer and its phase, as [`op_counts`] counts them.
pub type OpKey = (&'static str, Option<&'static str>, Option<&'static str>);

/// The layers' names by number, and their numbers by name.
type Names = (Vec<&'static str>, HashMap<String, LayerId>);

/// This thread's state.
#[derive(Default)]
struct Thread {
    /// The open layers, innermost last.
    layers: Vec<LayerId>,
    /// How many [`backward`] calls are open.
    backward: u32,
    /// The `<layer>/bwd` run open in the backward pass.
    segment: Option<(LayerId, ProbeGuard)>,
    /// The probes of ops, by (op name's address, layer, phase).
    ops: HashMap<(usize, LayerId, Phase), RuntimeProbe>,
    /// The `<layer>/fwd` and `<layer>/bwd` probes.
    layer_probes: HashMap<(LayerId, Phase), RuntimeProbe>,
    /// Ops seen per (op name, layer name, phase), when counting is on (tests).
    counts: Option<HashMap<OpKey, u64>>,
    /// The layer numbers of the annotated events' `layer` keys, by the event's registry index.
    annotated: HashMap<u32, LayerId>,
}

/// The layer of the innermost annotated event with a `layer` key open on this thread, if any
/// (profiler-core publishes the open events once the decorator has asked, at its first op),
/// and its phase: the forward pass's (`fwd`) when its `phase` key is `fwd` or absent, else its
/// own (an optimizer step under `phase = "update"` is no forward pass).
fn annotated_layer(t: &mut Thread) -> Option<(LayerId, Phase)> {
    static ASKED: std::sync::Once = std::sync::Once::new();
    ASKED.call_once(profiler_core::publish_open_events);
    let open = profiler_core::open_layer()?;
    let layer = *t
        .annotated
        .entry(open.index)
        .or_insert_with(|| layer_id(open.layer));
    let phase = match open.phase {
        None | Some("fwd") => Phase::Fwd,
        Some("bwd") => Phase::Bwd,
        Some(other) => Phase::Other(other),
    };
    Some((layer, phase))
}

thread_local! {
    static THREAD: RefCell<Thread> = RefCell::new(Thread::default());
}

/// The layers' names, by number (index 0 is unused).
fn names() -> &'static Mutex<Names> {
    static NAMES: OnceLock<Mutex<Names>> = OnceLock::new();
    NAMES.get_or_init(|| Mutex::new((vec![""], HashMap::new())))
}

fn lock_names() -> std::sync::MutexGuard<'static, Names> {
    names()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn layer_id(name: &str) -> LayerId {
    let mut names = lock_names();
    if let Some(&id) = names.1.get(name) {
        return id;
    }
    let id = names.0.len() as LayerId;
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.0.push(leaked);
    names.1.insert(name.to_owned(), id);
    id
}

fn layer_name(id: LayerId) -> Option<&'static str> {
    if id == 0 {
        None
    } else {
        lock_names().0.get(id as usize).copied()
    }
}

impl Thread {
    fn layer_probe(&mut self, id: LayerId, phase: Phase) -> RuntimeProbe {
        *self.layer_probes.entry((id, phase)).or_insert_with(|| {
            let name = layer_name(id).unwrap_or("_");
            let phase = phase.as_str();
            RuntimeProbe::new(
                &format!("{name}/{}", phase.unwrap_or("_")),
                Some(name),
                phase,
            )
        })
    }

    fn op_probe(&mut self, op: &'static str, id: LayerId, phase: Phase) -> RuntimeProbe {
        *self
            .ops
            .entry((op.as_ptr() as usize, id, phase))
            .or_insert_with(|| {
                let keys = WorkKeys {
                    shape: true,
                    ..WorkKeys::NONE
                };
                RuntimeProbe::with_work(op, layer_name(id), phase.as_str(), keys)
            })
    }

    /// Ends the `<layer>/bwd` run, if one is open.
    fn close_segment(&mut self) {
        if let Some((_, guard)) = self.segment.take() {
            drop(guard);
        }
    }
}

/// The layer an op of the backward pass belongs to, and how its outputs are made.
fn backward_layer(ins: &Inputs<'_>, open: LayerId) -> (LayerId, Origin) {
    let mut best: (u8, LayerId) = (0, 0);
    for (stamp, role) in ins.iter() {
        let (strength, layer) = match stamp.origin {
            Origin::Outside => {
                let layer = match role {
                    Role::Output => stamp.producer,
                    Role::Input => stamp.consumer.load(Relaxed),
                };
                (3, layer)
            }
            Origin::Derived => (2, stamp.producer),
            Origin::Grad => (1, stamp.producer),
        };
        if layer != 0 && strength > best.0 {
            best = (strength, layer);
        }
    }
    // Nothing read that the forward pass made (only tensors made in the backward pass:
    // gradients, and what was computed from them; `best.0` is 0 when nothing of a layer was
    // read): the op belongs to the step that is running, the open `<layer>/bwd` run, if any.
    // burn runs a node's backward steps one after the other, and an op that reads only the
    // output's gradient (`linear_bias_backward`, after the same node's
    // `linear_weight_backward`, which read the layer's saved input) is that node's, though the
    // gradient was made by the next layer's backward.
    if best.0 <= 2 && open != 0 {
        best.1 = open;
    }
    let origin = if best.0 >= 2 {
        Origin::Derived
    } else {
        Origin::Grad
    };
    (best.1, origin)
}

/// Starts measuring one op `op` with inputs `ins`; `dims` gives the inputs' shapes, called
/// only when the op's event is armed.
pub(crate) fn begin(
    op: &'static str,
    ins: &Inputs<'_>,
    dims: impl FnOnce() -> Vec<Vec<usize>>,
) -> OpRun {
    let (probe, layer, origin) = attribute(op, ins);
    OpRun {
        _guard: probe.enter_shaped(|| (0u64, 0u64, dims())),
        layer,
        origin,
    }
}

/// [`begin`] for an op that returns a future: attributed now, measured as it is polled.
pub(crate) fn begin_polled(op: &'static str, ins: &Inputs<'_>) -> PolledRun {
    let (probe, layer, origin) = attribute(op, ins);
    PolledRun {
        probe,
        layer,
        origin,
    }
}

/// The layer and phase of op `op` with inputs `ins` (see the module's docs), its probe, and how
/// its outputs are made.
fn attribute(op: &'static str, ins: &Inputs<'_>) -> (RuntimeProbe, LayerId, Origin) {
    THREAD.with(|thread| {
        let mut t = thread.borrow_mut();
        let annotated = match t.layers.last() {
            Some(&layer) => Some((layer, Phase::Fwd)),
            None if t.backward == 0 => annotated_layer(&mut t),
            None => None,
        };
        let (layer, origin, phase) = if let Some((layer, phase)) = annotated {
            // Only a forward pass's reads tell the backward pass whose tensors these are.
            if phase == Phase::Fwd {
                for (stamp, _) in ins.iter() {
                    stamp.consumer.store(layer, Relaxed);
                }
            }
            (layer, Origin::Outside, phase)
        } else if t.backward > 0 {
            let open = t.segment.as_ref().map_or(0, |s| s.0);
            let (layer, origin) = backward_layer(ins, open);
            if t.segment.as_ref().map(|s| s.0) != Some(layer) {
                t.close_segment();
                if layer != 0 {
                    let guard = t.layer_probe(layer, Phase::Bwd).enter();
                    t.segment = Some((layer, guard));
                }
            }
            (layer, origin, Phase::Bwd)
        } else {
            (0, Origin::Outside, Phase::None)
        };
        if let Some(counts) = &mut t.counts {
            let key = (op, layer_name(layer), phase.as_str());
            *counts.entry(key).or_insert(0) += 1;
        }
        (t.op_probe(op, layer, phase), layer, origin)
    })
}

/// Runs `f` as the forward pass of the layer `name`: one run of the event `<name>/fwd`
/// (layer `name`, phase `fwd`), and every tensor op inside it belongs to the layer (the
/// innermost one, when layers nest), which is how the backward pass finds its layers (see the
/// crate's docs). Costs a lookup of the name (a lock and a hash) per call.
///
/// ```no_run
/// # use burn::tensor::{backend::Backend, Tensor};
/// # fn f<B: Backend>(block1: impl Fn(Tensor<B, 4>) -> Tensor<B, 4>, x: Tensor<B, 4>) {
/// let y = profiler_burn::layer("block1", || block1(x));
/// # }
/// ```
pub fn layer<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let id = layer_id(name);
    let probe = THREAD.with(|thread| {
        let mut t = thread.borrow_mut();
        t.layers.push(id);
        t.layer_probe(id, Phase::Fwd)
    });
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            THREAD.with(|thread| {
                thread.borrow_mut().layers.pop();
            });
        }
    }
    let _pop = Pop;
    let _guard = probe.enter();
    f()
}

/// Runs `f`, burn's `loss.backward()`, as the backward pass: its ops are attributed to the
/// layers whose forward made the tensors they read, and measured as `<layer>/bwd` runs (see
/// the crate's docs). Ops that belong to no layer (the loss's own backward, gradients
/// accumulated outside any layer) are measured under the enclosing event without a layer.
///
/// ```no_run
/// # use burn::tensor::{backend::AutodiffBackend, Tensor};
/// # fn f<B: AutodiffBackend>(loss: Tensor<B, 1>) {
/// let grads = profiler_burn::backward(|| loss.backward());
/// # drop(grads);
/// # }
/// ```
pub fn backward<T>(f: impl FnOnce() -> T) -> T {
    THREAD.with(|thread| thread.borrow_mut().backward += 1);
    struct End;
    impl Drop for End {
        fn drop(&mut self) {
            THREAD.with(|thread| {
                let mut t = thread.borrow_mut();
                t.backward -= 1;
                if t.backward == 0 {
                    t.close_segment();
                }
            });
        }
    }
    let _end = End;
    f()
}

/// Starts counting the ops this thread runs, by (op, layer, phase), for tests that check the
/// attribution without timing anything; [`op_counts`] reads and resets the counts.
#[doc(hidden)]
pub fn count_ops() {
    THREAD.with(|thread| thread.borrow_mut().counts = Some(HashMap::new()));
}

/// The op counts since [`count_ops`], sorted, and stops counting.
#[doc(hidden)]
pub fn op_counts() -> Vec<(OpKey, u64)> {
    let counts = THREAD.with(|thread| thread.borrow_mut().counts.take());
    let mut counts: Vec<_> = counts.unwrap_or_default().into_iter().collect();
    counts.sort();
    counts
}
