//! What a site says of the work of its runs, in both builds: the numbers a `flops` or `bytes`
//! key counts with ([`Count`]), the keys a runtime probe is registered with ([`WorkKeys`]), and
//! the bits a descriptor keeps of them. One definition, so that code compiles the same with and
//! without `enable`.

/// `StaticInfo::work`'s bit for a `flops` key.
#[cfg(feature = "enable")]
pub const WORK_FLOPS: u8 = 1;
/// `StaticInfo::work`'s bit for a `bytes` key.
#[cfg(feature = "enable")]
pub const WORK_BYTES: u8 = 2;
/// `StaticInfo::work`'s bit for a `shape` key.
#[cfg(feature = "enable")]
pub const WORK_SHAPE: u8 = 4;

/// A number a `flops` or `bytes` key may give: any primitive integer or float. Negative values
/// count as 0; a float is rounded down; values past `u64::MAX - 1` saturate there (the last
/// value stands for "not given"). What [`RuntimeProbe::enter_work`](crate::RuntimeProbe::enter_work)'s
/// closure returns.
///
/// ```
/// use profiler_core::Count;
/// assert_eq!(Count::count(-3i32), 0);
/// assert_eq!(Count::count(2.9f64), 2);
/// assert_eq!(Count::count(6usize), 6);
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
                // `as` saturates, and makes NaN 0.
                (self.max(0.0) as u64).min(u64::MAX - 1)
            }
        }
    )*};
}
count_float!(f32, f64);

/// Which work a `RuntimeProbe` counts: its `flops` and `bytes` keys, as on
/// [`#[profiled]`](crate::profiled). Each sample of a probe with a key keeps its run's count
/// (`work` in `prof.json`), and the reports show its FLOP/s, bytes/s and MFU.
///
/// ```
/// use profiler_core::WorkKeys;
/// assert_eq!(WorkKeys::BOTH, WorkKeys { flops: true, bytes: true, shape: false });
/// assert_eq!(WorkKeys::default(), WorkKeys::NONE);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WorkKeys {
    /// It counts floating-point operations (the `flops` key).
    pub flops: bool,
    /// It counts bytes moved (the `bytes` key).
    pub bytes: bool,
    /// It keeps each run's input shape (the `shape` key; `RuntimeProbe::enter_shaped`).
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

    /// `StaticInfo::work`'s bits for these keys.
    #[cfg(feature = "enable")]
    pub(crate) fn bits(self) -> u8 {
        (if self.flops { WORK_FLOPS } else { 0 })
            | (if self.bytes { WORK_BYTES } else { 0 })
            | (if self.shape { WORK_SHAPE } else { 0 })
    }
}
