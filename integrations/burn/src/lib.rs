//! Profiling for [burn](https://burn.dev) models with profiler-core: every tensor op timed with
//! its name and shapes (the operator view), and the backward pass attributed to the layers
//! whose forward made it (`<layer>/bwd` beside `<layer>/fwd`).
//!
//! ```no_run
//! use burn::backend::NdArray;
//! type B = profiler_burn::Backend<NdArray>; // Autodiff<Profiled<NdArray>>
//! ```
//!
//! - [`Profiled<B>`] is a backend decorator: its tensor primitives wrap `B`'s, and each op runs
//!   on `B` inside a runtime probe named after the op (`conv2d`, `float_matmul`,
//!   `conv2d_weight_backward`) that keeps its input shapes, so `sample` mode measures one op per
//!   iteration and `trace` mode every op, as for any probe.
//! - [`layer`] runs a layer's forward pass as the event `<name>/fwd` and tags what it makes and
//!   reads; [`backward`] runs `loss.backward()` so that each backward op is attributed to the
//!   layer whose tensors it reads, and measured as part of `<name>/bwd` (layer `<name>`, phase
//!   `bwd`). How the layer is chosen: see [`layer`]'s module docs in `attribution.rs` and the
//!   guide's "burn" section.
//! - Outside every [`layer`], a forward op belongs to the innermost open `#[profiled]` function
//!   or probe with a `layer` key (`#[profiled(layer = "block1", phase = "fwd")]` on a
//!   `forward`): the decorator has profiler-core publish the open events from its first op on
//!   (`profiler_core::publish_open_events`).
//!
//! Without the `enable` feature (on by default; it turns on profiler-core's), [`Backend<B>`]
//! is `Autodiff<B>` and [`Profiled<B>`] is `B` itself, and [`layer`] and [`backward`] only call
//! their closure: the decorator is not in the build.
//!
//! The decorator is generic over the inner backend. The `flex` feature (off by default) adds
//! burn's Flex CPU backend (`burn_flex`, burn 0.21's pure-Rust successor to ndarray) so that
//! `Backend<burn_flex::Flex>` can be named here; the tests and the cnn example (`--backend
//! flex`) use it (a user's crate names it `Backend<burn::backend::Flex>` with burn's `flex`
//! feature). burn-candle cannot train a model with max-pooling (its `max_pool2d_with_indices`
//! panics), and burn's other backends need a GPU or libtorch.

#[cfg(feature = "enable")]
mod attribution;
#[cfg(feature = "enable")]
mod decorator;
#[cfg(feature = "enable")]
#[allow(clippy::too_many_arguments)]
mod ops;

#[cfg(feature = "enable")]
pub use attribution::{backward, count_ops, layer, op_counts, OpKey};
#[cfg(feature = "enable")]
pub use decorator::{Profiled, Tagged};

/// The backend to train with: burn's autodiff over the profiling decorator over `B`
/// (`Autodiff<Profiled<B>>`); without the `enable` feature, `Autodiff<B>`.
pub type Backend<B> = burn::backend::Autodiff<Profiled<B>>;

/// Without the `enable` feature: the inner backend itself.
#[cfg(not(feature = "enable"))]
pub type Profiled<B> = B;

/// Without the `enable` feature: calls `f`.
#[cfg(not(feature = "enable"))]
#[inline(always)]
pub fn layer<T>(_name: &str, f: impl FnOnce() -> T) -> T {
    f()
}

/// Without the `enable` feature: calls `f`.
#[cfg(not(feature = "enable"))]
#[inline(always)]
pub fn backward<T>(f: impl FnOnce() -> T) -> T {
    f()
}
