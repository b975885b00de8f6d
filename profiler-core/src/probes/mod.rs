//! What annotations call at run time: the guard of `#[profiled]` and `probe!`, the hot path
//! ([`timer`]); probes made at run time ([`runtime`]); `tracing` spans ([`bridge`]).

#[cfg(feature = "tracing")]
pub(crate) mod bridge;
pub(crate) mod runtime;
pub(crate) mod timer;
