//! The API of a build without `enable`: the same names, doing nothing, inlined away.

use crate::{Count, WorkKeys};

/// Measures nothing in this build: a zero-sized guard with the methods and auto traits
/// (`Send`, `Sync`) of the enabled build's guard.
#[must_use = "a probe measures until its guard is dropped; bind it with `let _p = probe!(..)`"]
#[derive(Debug)]
pub struct ProbeGuard(());

impl ProbeGuard {
    /// A guard that measures nothing.
    #[inline(always)]
    pub const fn inert() -> ProbeGuard {
        ProbeGuard(())
    }

    /// Always false in this build.
    #[inline(always)]
    pub fn is_recording(&self) -> bool {
        false
    }

    /// Ends the measurement (nothing to end in this build).
    #[inline(always)]
    pub fn stop(self) {}

    /// Ends the measurement without a sample (nothing to end in this build).
    #[inline(always)]
    pub fn discard(self) {}
}

// An empty destructor, as the enabled build's guard has one: without it `probe!` in a `const fn`
// compiled in this build only (the guard is made by a `const fn` and would need no drop), while
// the enabled build refuses it. Inlined, it leaves no code (tests/suite/zero_overhead.rs).
impl Drop for ProbeGuard {
    #[inline(always)]
    fn drop(&mut self) {}
}

/// Returned by [`init`]; does nothing in this build.
#[must_use = "the results are written when this guard is dropped; keep it alive until the end of main"]
#[derive(Debug)]
pub struct InitGuard(());

impl InitGuard {
    /// A guard that does nothing.
    pub const fn inert() -> InitGuard {
        InitGuard(())
    }
}

/// Marks the end of one iteration; empty in this build.
#[inline(always)]
pub fn step() {}

/// Always false in this build (there is no schedule).
#[inline(always)]
pub fn finished() -> bool {
    false
}

/// Does nothing in this build; `--list-probes` is not handled.
#[inline(always)]
pub fn init() -> InitGuard {
    InitGuard(())
}

/// No probe is registered in this build.
#[inline(always)]
pub fn probes() -> Vec<crate::ProbeInfo> {
    Vec::new()
}

/// A probe whose name is known only at run time; does nothing in this build (a zero-sized type
/// with the methods of the enabled build's).
#[derive(Clone, Copy, Debug)]
pub struct RuntimeProbe(());

impl RuntimeProbe {
    /// Registers nothing in this build.
    #[inline(always)]
    pub fn new(_name: &str, _layer: Option<&str>, _phase: Option<&str>) -> RuntimeProbe {
        RuntimeProbe(())
    }

    /// An inert guard.
    #[inline(always)]
    pub fn enter(&self) -> ProbeGuard {
        ProbeGuard::inert()
    }

    /// Calls `f`.
    #[inline(always)]
    pub fn measure<T>(&self, f: impl FnOnce() -> T) -> T {
        f()
    }

    /// No name is kept in this build.
    #[inline(always)]
    pub fn name(&self) -> &'static str {
        ""
    }

    /// Registers nothing in this build.
    ///
    /// ```
    /// use profiler_core::{RuntimeProbe, WorkKeys};
    /// let gemm = RuntimeProbe::with_work("gemm", Some("block"), None, WorkKeys::BOTH);
    /// let n = gemm.measure_work(|| -> (usize, usize) { unreachable!() }, || 42);
    /// assert_eq!(n, 42);
    /// ```
    #[inline(always)]
    pub fn with_work(
        _name: &str,
        _layer: Option<&str>,
        _phase: Option<&str>,
        _keys: WorkKeys,
    ) -> RuntimeProbe {
        RuntimeProbe(())
    }

    /// No keys are kept in this build: [`WorkKeys::NONE`].
    #[inline(always)]
    pub fn work_keys(&self) -> WorkKeys {
        WorkKeys::NONE
    }

    /// An inert guard; `work` is never called.
    #[inline(always)]
    pub fn enter_work<F: Count, B: Count>(&self, work: impl FnOnce() -> (F, B)) -> ProbeGuard {
        let _ = work;
        ProbeGuard::inert()
    }

    /// An inert guard; `work` is never called.
    #[inline(always)]
    pub fn enter_shaped<F: Count, B: Count, S: Shape>(
        &self,
        work: impl FnOnce() -> (F, B, S),
    ) -> ProbeGuard {
        let _ = work;
        ProbeGuard::inert()
    }

    /// Calls `f`; `work` is never called.
    #[inline(always)]
    pub fn measure_work<T, F: Count, B: Count>(
        &self,
        work: impl FnOnce() -> (F, B),
        f: impl FnOnce() -> T,
    ) -> T {
        let _ = work;
        f()
    }
}

// The `shape` key's trait, the same file as in the enabled build, so that an implementation of
// it for a tensor type compiles in both (this build never calls it).
#[allow(dead_code)]
#[path = "store/shape.rs"]
mod shape;
pub use shape::{Dims, Shape};

/// The innermost annotated event open on a thread (never known in this build).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenEvent {
    /// The probe's unique id.
    pub id: String,
    /// The probe's name.
    pub name: &'static str,
    /// The `layer` key, if given.
    pub layer: Option<&'static str>,
    /// The `phase` key, if given.
    pub phase: Option<&'static str>,
}

/// Always `None` in this build (nothing is published).
#[inline(always)]
pub fn open_event() -> Option<OpenEvent> {
    None
}

/// Does nothing in this build (no sampler).
#[inline(always)]
pub fn sample_this_thread() {}

/// The innermost open event with a `layer` key (never known in this build).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenLayer {
    /// The event's probe, numbered as in the registry.
    pub index: u32,
    /// The probe's name.
    pub name: &'static str,
    /// The `layer` key.
    pub layer: &'static str,
    /// The `phase` key, if given.
    pub phase: Option<&'static str>,
}

/// Always `None` in this build (nothing is published).
#[inline(always)]
pub fn open_layer() -> Option<OpenLayer> {
    None
}

/// Does nothing in this build (nothing is published).
#[inline(always)]
pub fn publish_open_events() {}
