//! Turning `prof.json` into answers: reports, comparisons between runs, scaling, multi-rank
//! merges, Perfetto traces and an HTML report. The end-of-run summary and the `prof` command-line
//! tool share these functions. Available with the `analysis` feature (implied by `enable`).

pub mod diff;
pub mod html;
pub mod load;
pub mod merge;
pub mod report;
pub mod scale;
pub mod stats;
pub mod trace;

pub use load::{load_profile, LoadError};
