//! `prof.json`, the file profiler-core writes (schema `profiler-core/prof/v1`): its types
//! ([`json`]); the [`Identity`] every report row names its event by ([`identity`]); reading it
//! back with its schema checks, a clear message for every way a file can be wrong ([`read`]:
//! [`load_profile`], [`LoadError`]); and the atomic write used for every result file
//! ([`write`](mod@write)); and the `PROF_FILTER` language ([`filter`]), which the profiled program
//! applies to its probes and `prof flame` to a profile's events; and the control file of
//! `continuous` mode's traces on demand ([`control`]).
//!
//! A profiled program reaches this crate through profiler-core; `profiler-tables` computes the
//! measures and the end-of-run summary from these types, and `profiler-analysis` and the `prof`
//! tool build on both without the runtime or the macros.
//!
//! `prof.json` is described field by field in the repository's `docs/reference.md` (section
//! "prof.json"), with how result files are written and what a bad input is told ("Bad input");
//! `docs/architecture.md` shows where this crate sits in the pipeline.
#![warn(missing_docs)]

pub mod control;
pub mod filter;
pub mod identity;
pub mod json;
pub mod peak;
pub mod read;
pub mod write;

pub use identity::Identity;
pub use json::*;
pub use read::{load_profile, parse_profile, LoadError};
pub use write::{check_target, write_atomic, write_atomic_with};
