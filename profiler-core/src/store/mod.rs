//! Storage reserved when the schedule is built: `sample` mode's slots and their resolution
//! into nanoseconds ([`samples`]), `trace` mode's per-thread buffers ([`buffer`]).

pub(crate) mod buffer;
pub(crate) mod samples;
