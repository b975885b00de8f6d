//! (b) A generic wrapper that times any `candle_nn::Module` under a name chosen at run time,
//! and counts the work of its forward when told how.

use candle_core::{Result, Tensor};
use candle_nn::Module;
use profiler_core::{RuntimeProbe, WorkKeys};

use crate::work::LinearWork;

/// What one forward of a module computes, from the module and its input's shape.
pub type WorkOf<M> = fn(&M, &Tensor) -> LinearWork;

/// `inner`, whose every `forward` is one run of a probe named at run time (`"layers.0"`,
/// `"layers.1"`, ... built in a loop), which `#[profiled]` cannot do: its names are literals.
///
/// The probe is registered when the wrapper is made, before the first iteration, so it is
/// listed by `--list-probes` and selected by `PROF_FILTER` (`kind=runtime`, `name=layers.0`)
/// like an annotation. Wrapping the same `(name, layer, phase)` twice gives the same probe.
///
/// Given `work`, the probe counts FLOPs and bytes (`RuntimeProbe::with_work`): `work` is called
/// only in the runs the profiler measures, before the clock starts, so it costs nothing in the
/// others.
#[derive(Clone, Debug)]
pub struct Timed<M> {
    inner: M,
    probe: RuntimeProbe,
    work: Option<WorkOf<M>>,
}

impl<M: Module> Timed<M> {
    /// Wraps `inner`, timing its forward as probe `name` with an optional layer and phase, and
    /// counting the work `work` gives, if any.
    pub fn new(
        inner: M,
        name: &str,
        layer: Option<&str>,
        phase: Option<&str>,
        work: Option<WorkOf<M>>,
    ) -> Self {
        let keys = if work.is_some() {
            WorkKeys::BOTH
        } else {
            WorkKeys::NONE
        };
        Self {
            inner,
            probe: RuntimeProbe::with_work(name, layer, phase, keys),
            work,
        }
    }
}

impl<M: Module> Module for Timed<M> {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        match self.work {
            Some(work) => self
                .probe
                .measure_work(|| work(&self.inner, xs).pair(), || self.inner.forward(xs)),
            None => self.probe.measure(|| self.inner.forward(xs)),
        }
    }
}
