//! Turning `prof.json` into answers: reports, comparisons between runs, scaling, multi-rank
//! merges, Perfetto traces and an HTML report. The end-of-run summary and the `prof` command-line
//! tool share these functions. Available with the `analysis` feature (implied by `enable`).

pub mod diff;
pub mod drift;
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

/// The wall times of the measured iterations: those listed in `iterations.wall_ns` whose
/// index is `>= run.warmup` (`wall_ns[k]` is iteration `iterations.first + k`), or all listed
/// iterations when the run stopped during warmup. In `continuous` mode the listed iterations are
/// the last window's, long after the warmup, so all of them are measured ones.
pub fn measured_walls(profile: &crate::Profile) -> &[u64] {
    let walls = &profile.iterations.wall_ns;
    let warmup = warmup_listed(profile);
    if walls.len() > warmup {
        &walls[warmup..]
    } else {
        walls
    }
}

/// How many of the iterations listed in `iterations.wall_ns` are warmup iterations (index
/// `< run.warmup`): 0 when the list starts after the warmup (`continuous` mode).
pub fn warmup_listed(profile: &crate::Profile) -> usize {
    let walls = &profile.iterations.wall_ns;
    let warmup = u64::from(profile.run.warmup).saturating_sub(profile.iterations.first);
    usize::try_from(warmup)
        .unwrap_or(usize::MAX)
        .min(walls.len())
}
