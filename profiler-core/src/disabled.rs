//! The API of a build without `enable`: the same names, doing nothing, inlined away.

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

/// Which work a runtime probe counts, as in the enabled build (nothing is counted in this one).
///
/// ```
/// use profiler_core::WorkKeys;
/// assert_eq!(WorkKeys::BOTH, WorkKeys { flops: true, bytes: true, shape: false });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WorkKeys {
    /// It counts floating-point operations (the `flops` key).
    pub flops: bool,
    /// It counts bytes moved (the `bytes` key).
    pub bytes: bool,
    /// It keeps each run's input shape (the `shape` key; [`RuntimeProbe::enter_shaped`]).
    pub shape: bool,
}

impl WorkKeys {
    /// No key: a probe that times only.
    pub const NONE: WorkKeys = WorkKeys {
        flops: false,
        bytes: false,
        shape: false,
    };
    /// Floating-point operations only.
    pub const FLOPS: WorkKeys = WorkKeys {
        flops: true,
        bytes: false,
        shape: false,
    };
    /// Bytes moved only.
    pub const BYTES: WorkKeys = WorkKeys {
        flops: false,
        bytes: true,
        shape: false,
    };
    /// Both counts.
    pub const BOTH: WorkKeys = WorkKeys {
        flops: true,
        bytes: true,
        shape: false,
    };
    /// Both counts and the input shape.
    pub const ALL: WorkKeys = WorkKeys {
        flops: true,
        bytes: true,
        shape: true,
    };
}

/// A number a runtime probe's work may be counted in: any primitive integer or float, as in the
/// enabled build (negative values count as 0, a float is rounded down, counts saturate at
/// `u64::MAX - 1`), so that code that compiles in one build compiles in the other.
///
/// ```
/// use profiler_core::Count;
/// assert_eq!(Count::count(-3i32), 0);
/// assert_eq!(Count::count(2.9f64), 2);
/// ```
#[diagnostic::on_unimplemented(
    message = "a `flops` or `bytes` key counts with an integer or a float, not `{Self}`",
    label = "not a number"
)]
pub trait Count {
    /// The count as a `u64`.
    fn count(self) -> u64;
}

macro_rules! count_unsigned {
    ($($t:ty),*) => {$(
        impl Count for $t {
            #[inline(always)]
            fn count(self) -> u64 {
                u64::try_from(self).unwrap_or(u64::MAX).min(u64::MAX - 1)
            }
        }
    )*};
}
count_unsigned!(u8, u16, u32, u64, u128, usize);

macro_rules! count_signed {
    ($($t:ty),*) => {$(
        impl Count for $t {
            #[inline(always)]
            fn count(self) -> u64 {
                // Negative: 0 (`try_from` would fail, and saturate it to the top).
                u64::try_from(self.max(0)).unwrap_or(u64::MAX).min(u64::MAX - 1)
            }
        }
    )*};
}
count_signed!(i8, i16, i32, i64, i128, isize);

macro_rules! count_float {
    ($($t:ty),*) => {$(
        impl Count for $t {
            #[inline(always)]
            fn count(self) -> u64 {
                (self.max(0.0) as u64).min(u64::MAX - 1)
            }
        }
    )*};
}
count_float!(f32, f64);

// The `shape` key's trait, the same file as in the enabled build, so that an implementation of
// it for a tensor type compiles in both (this build never calls it).
#[allow(dead_code)]
#[path = "store/shape.rs"]
mod shape;
pub use shape::{Dims, Shape};
