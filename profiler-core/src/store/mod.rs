//! Storage reserved when the schedule is built: `sample` mode's slots and their resolution
//! into nanoseconds ([`samples`]), `trace` mode's per-thread buffers ([`buffer`]), and what a
//! `shape` key stores ([`shape`]).

pub(crate) mod buffer;
pub(crate) mod samples;
pub(crate) mod shape;
