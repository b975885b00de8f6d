//! (b) A generic wrapper that times any `candle_nn::Module` under a name chosen at run time.

use candle_core::{Result, Tensor};
use candle_nn::Module;
use profiler_core::RuntimeProbe;

/// `inner`, whose every `forward` is one run of a probe named at run time (`"layers.0"`,
/// `"layers.1"`, ... built in a loop), which `#[profiled]` cannot do: its names are literals.
///
/// The probe is registered when the wrapper is made, before the first iteration, so it is
/// listed by `--list-probes` and selected by `PROF_FILTER` (`kind=runtime`, `name=layers.0`)
/// like an annotation. Wrapping the same `(name, layer, phase)` twice gives the same probe.
#[derive(Clone, Debug)]
pub struct Timed<M> {
    inner: M,
    probe: RuntimeProbe,
}

impl<M: Module> Timed<M> {
    /// Wraps `inner`, timing its forward as probe `name` with an optional layer and phase.
    pub fn new(inner: M, name: &str, layer: Option<&str>, phase: Option<&str>) -> Self {
        Self {
            inner,
            probe: RuntimeProbe::new(name, layer, phase),
        }
    }
}

impl<M: Module> Module for Timed<M> {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.probe.measure(|| self.inner.forward(xs))
    }
}
