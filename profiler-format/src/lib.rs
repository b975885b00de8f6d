//! `prof.json`, the file profiler-core writes (schema `profiler-core/prof/v1`): its types, which
//! also read it back ([`json`]); the [`Identity`] every report row names its event by
//! ([`identity`]); the atomic write used for every result file ([`write`](mod@write)); and the
//! measures and end-of-run summary that the profiled program and the `prof` tool share
//! ([`measure`], [`summary`]), so that both print the same numbers.
//!
//! A profiled program reaches this crate through profiler-core; `profiler-analysis` and the
//! `prof` tool build on it without the runtime or the macros.
//!
//! `prof.json` is described field by field in the repository's `docs/reference.md` (section
//! "prof.json"), with how result files are written; `docs/guide.md` shows how to read the
//! summary, and `docs/architecture.md` where this crate sits in the pipeline.
#![warn(missing_docs)]

pub mod breakdown;
pub mod columns;
pub mod identity;
pub mod json;
pub mod measure;
pub mod read;
pub mod stats;
pub mod summary;
pub mod text;
pub mod write;

pub use identity::Identity;
pub use json::*;
pub use read::{load_profile, parse_profile, LoadError};
pub use write::{check_target, write_atomic, write_atomic_with};
