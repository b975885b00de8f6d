//! `prof diff` on memory: what a run of each event allocates, before and after, for the events
//! that carry memory figures in both runs (`profiler_core::Alloc`).
//!
//! These are counts, not times: a run of the same code on the same input allocates the same
//! bytes however busy the machine is, so there is no noise to test against. A median that
//! differs is a change in what the code allocates, reported as it is, with no interval and no
//! p-value. (A run whose allocations depend on the data, or on a cache warmed by earlier runs,
//! varies from sample to sample; the medians compare its typical run.) Memory changes do not
//! make `--fail-on-regression` fail: they are listed beside the time verdicts.

use serde::Serialize;

use profiler_format::{Event, Identity};
use profiler_tables::rows::MemoryRow;
use profiler_tables::table_text::human_bytes;

/// One event's memory, before and after.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryDiff {
    /// Which event; flattened into the row's keys.
    #[serde(flatten)]
    pub identity: Identity,
    /// Medians of the `before` run's figures.
    pub before: MemoryRow,
    /// Medians of the `after` run's figures.
    pub after: MemoryRow,
    /// Whether any of the medians differs.
    pub changed: bool,
}

/// The events of `pairs` (before, after) with memory figures on both sides, in order.
pub fn compare(pairs: &[(&Event, &Event)]) -> Vec<MemoryDiff> {
    pairs
        .iter()
        .filter_map(|(b, a)| {
            let before = MemoryRow::of(b.memory.as_ref().filter(|m| !m.is_empty())?);
            let after = MemoryRow::of(a.memory.as_ref().filter(|m| !m.is_empty())?);
            let figures = |m: &MemoryRow| [m.alloc_bytes, m.freed_bytes, m.allocs, m.peak_bytes];
            let changed = figures(&before) != figures(&after);
            Some(MemoryDiff {
                identity: a.identity(),
                before,
                after,
                changed,
            })
        })
        .collect()
}

/// The lines `prof diff` prints about memory (none when no event has figures on both sides).
pub fn lines(diffs: &[MemoryDiff]) -> Vec<String> {
    if diffs.is_empty() {
        return Vec::new();
    }
    let changed: Vec<&MemoryDiff> = diffs.iter().filter(|d| d.changed).collect();
    let mut out = vec![format!(
        "memory (exact counts, not statistics: a change is a change in what the code \
         allocates): {} of {} events changed",
        changed.len(),
        diffs.len()
    )];
    for d in changed {
        let (b, a) = (&d.before, &d.after);
        out.push(format!(
            "  {}: allocated {} -> {}, allocations {} -> {}, peak {} -> {}",
            crate::text::label(&d.identity),
            human_bytes(b.alloc_bytes),
            human_bytes(a.alloc_bytes),
            b.allocs,
            a.allocs,
            human_bytes(b.peak_bytes),
            human_bytes(a.peak_bytes)
        ));
    }
    out
}
