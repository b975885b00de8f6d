//! What is read: the clocks ([`clock`]), the devices whose streams are timed ([`device`]),
//! and the counting allocator ([`alloc`]).

pub(crate) mod alloc;
#[cfg(feature = "enable")]
pub(crate) mod clock;
#[cfg(feature = "enable")]
pub mod device;
