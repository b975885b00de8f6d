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

pub(crate) mod text;

pub use load::{load_profile, LoadError};

/// How a report, diff, scaling or merge is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns with human units, for a terminal.
    #[default]
    Table,
    /// Comma-separated values with a header row; times in nanoseconds.
    Csv,
    /// JSON; times in nanoseconds.
    Json,
    /// A GitHub-flavoured Markdown table.
    Markdown,
}

/// The identity of an event across runs: its probe's id and its occurrence.
pub fn event_key(event: &crate::Event) -> (String, u32) {
    (event.id.clone(), event.occurrence)
}

/// The wall times of the measured iterations (those after warmup: index `>= run.warmup` in
/// `iterations.wall_ns`), or of all iterations when the run stopped during warmup.
pub fn measured_walls(profile: &crate::Profile) -> &[u64] {
    let walls = &profile.iterations.wall_ns;
    let warmup = (profile.run.warmup as usize).min(walls.len());
    if walls.len() > warmup {
        &walls[warmup..]
    } else {
        walls
    }
}
