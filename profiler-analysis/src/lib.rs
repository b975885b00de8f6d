//! Turning `prof.json` into answers: reports, comparisons between runs, drift, scaling,
//! multi-rank merges, Perfetto traces, flame graphs and an HTML report; what the `prof` command-line tool
//! prints. It reads the file through `profiler-format` (reading and its checks are that crate's:
//! [`load_profile`]), and needs neither the runtime nor the macros of profiler-core: a profiled
//! program does not compile it. The rows of `prof report` and the end-of-run summary come from
//! the same [`profiler_tables::rows`].
//!
//! The exact definitions of `prof report`'s and `prof diff`'s figures are in the repository's
//! `docs/reference.md` ("Definitions of `prof report`", "Definitions of `prof diff`"); those of
//! the others on the modules here ([`drift`], [`scale`], [`merge`], [`trace`]). How to read the reports is in the repository's
//! `docs/guide.md` ("Reading the reports", "Continuous mode and drift"); every `prof` command,
//! its flags and outputs in `docs/reference.md`; the measurements of `prof` on large profiles
//! and of `prof diff`'s verdicts in `docs/overhead.md`.
#![warn(missing_docs)]

pub mod advise;
pub mod cpu;
pub mod diff;
pub mod drift;
pub mod flame;
pub mod html;
pub mod merge;
pub mod report;
pub mod scale;
pub mod stats;
pub mod trace;
pub mod whatif;

pub(crate) mod student;
pub(crate) mod text;

pub use profiler_format::read::{load_profile, LoadError};
/// Names made safe to show in a terminal or in XML (control characters as visible escapes):
/// what every text output here uses, for the callers that print a name of their own; and
/// durations and fractions as every output writes them (`1.23ms`, `6.7%`).
pub use profiler_tables::table_text::{human_ns, percent, printable, printable_lines};

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

/// Median of an event's samples, or its recorded median when no sample was kept (the time
/// `prof scale` and `prof merge` compare).
pub(crate) fn event_time(e: &profiler_format::Event) -> Option<f64> {
    if !e.samples_ns.is_empty() {
        Some(stats::median(&stats::as_f64(&e.samples_ns)))
    } else if e.stats.count > 0 {
        Some(e.stats.median_ns as f64)
    } else {
        None
    }
}

/// The identity of an event across runs: its probe's id and its occurrence.
pub fn event_key(event: &profiler_format::Event) -> (String, u32) {
    (event.id.clone(), event.occurrence)
}

/// Warnings when `profiles` ran different programs, modes or filters (`who`: `the ranks`, `the
/// runs compared`): their events are matched by probe id and occurrence all the same, which
/// across programs pairs unrelated code (`prof merge`, `prof diff`, `prof ab`).
pub(crate) fn run_differences<'a>(
    profiles: impl IntoIterator<Item = &'a profiler_format::Profile> + Clone,
    who: &str,
) -> Vec<String> {
    let mut warnings = Vec::new();
    for (what, get) in [
        (
            "programs",
            (|p: &profiler_format::Profile| p.run.program.clone())
                as fn(&profiler_format::Profile) -> String,
        ),
        ("modes", |p| p.run.mode.clone()),
        ("filters", |p| format!("{:?}", p.run.filter)),
    ] {
        let mut distinct: Vec<String> = profiles.clone().into_iter().map(get).collect();
        distinct.sort();
        distinct.dedup();
        if distinct.len() > 1 {
            warnings.push(format!(
                "{who} ran different {what}: {}",
                distinct.join(", ")
            ));
        }
    }
    warnings
}

/// A warning when some profile holds events that share a probe id and occurrence (one probe
/// run on two streams: occurrences are counted per stream): matched by [`event_key`], only the
/// first of them is compared (`prof diff`, `prof merge`), which is said rather than done
/// silently.
pub(crate) fn shared_key_warning<'a>(
    profiles: impl IntoIterator<Item = &'a profiler_format::Profile>,
) -> Option<String> {
    let mut shared: Vec<String> = Vec::new();
    for p in profiles {
        let mut seen = std::collections::HashSet::new();
        for e in &p.events {
            if !seen.insert(event_key(e)) {
                let label = profiler_format::Identity::of(e).label();
                if !shared.contains(&label) {
                    shared.push(label);
                }
            }
        }
    }
    let first = shared.first()?;
    Some(format!(
        "{} event{} of one probe and occurrence on several streams ({first}{}): only the first \
         of each is compared (events are matched by probe id and occurrence)",
        shared.len(),
        if shared.len() == 1 { "" } else { "s" },
        if shared.len() > 1 { ", ..." } else { "" }
    ))
}
