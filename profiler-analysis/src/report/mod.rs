//! `prof report`: one row per event (and per group) of a `prof.json`, and the end-of-run summary
//! printed on stderr. Both are built here, by [`build`], so that they never disagree.
//!
//! # Definitions
//!
//! - **Measured iterations** are the iterations after warmup (index `>= run.warmup`;
//!   `iterations.wall_ns[k]` is iteration `iterations.first + k`); if there are none (the program
//!   stopped during warmup), all iterations. The iteration row (median, mean, p90, CV) describes
//!   them. In `continuous` mode only the last completed window's iterations are listed, all of
//!   them measured, and the events are that window's too.
//! - **Warmup baseline**: the median wall time of the warmup iterations, leaving out iteration 0
//!   (it includes the program's start-up). It therefore needs `run.warmup >= 2` and at least one
//!   such iteration in the file; otherwise there is no baseline and no perturbation is reported
//!   (never in `continuous` mode, whose file no longer lists the warmup).
//! - **Calls per iteration**: 1 for an ordinary (probe, occurrence) event; for a merged event
//!   (which holds every run of its probe from `occurrence` on), `stats.count` divided by the
//!   number of distinct iterations in its `sample_iters` (at least 1).
//! - **median, mean, min, max, stddev, p90** are the event's `stats` (exact even for merged
//!   events, except median and p90, which come from a bounded sample), in nanoseconds.
//!   **CV** (coefficient of variation) is `stddev / mean` (0 when the mean is 0).
//! - **Total** is the event's time per iteration: `mean × calls per iteration`.
//! - **Self**: the children of an event are the events whose `parent` is its `order` (the parent
//!   is learned during warmup: the event that was running on the same thread when this one
//!   started). `self = max(0, total - Σ children's total)`. A merged event's parent is that of
//!   its first run, so self times around merged events are approximate.
//! - **Depth**: the number of ancestors reached by following `parent` (0: top level). A parent
//!   that is not in the file ends the chain; a cycle is followed only once.
//! - **Share**: `total / mean measured iteration` (normally between 0 and 1; shares of nested
//!   events overlap with their parents').
//! - **Noisy**: `CV > cv_threshold` (default 0.25) with at least two samples. Such an event's
//!   numbers move too much from one run to the next to be trusted without more repeats.
//! - **Perturbation of an event**: the median wall time of the iterations in which the event was
//!   armed (the distinct values of its `sample_iters`) over the warmup baseline, minus 1. In
//!   `trace` mode every event is armed in every measured iteration, so all events show the same.
//! - **Overall perturbation**: the median wall time of the measured iterations over the warmup
//!   baseline (reported as `ratio`), with a 95% interval (`ratio_low`, `ratio_high`) from the
//!   two medians' order-statistic intervals; `flagged` when `ratio_low - 1 >
//!   perturbation_threshold` (default 0.05), `reliable` when flagged or when the interval rules
//!   out a slowdown beyond the threshold. Absent without a baseline or without an iteration
//!   after warmup.
//! - **Groups** (`--group-by layer|phase|layer,phase`): events are grouped by their `layer`, their
//!   `phase`, or both (`"top_mlp/bwd"`). An event without the field takes it from its nearest
//!   ancestor that has it (a `linear_forward` without a layer, called inside the `top_mlp`
//!   probe, counts towards `top_mlp`); with no such ancestor it goes in the group `"-"` (`"-/bwd"`
//!   for a missing layer with both). A group's total is the sum of the totals of its
//!   members whose ancestors include no other member of the same group, so that nesting is never
//!   counted twice; its self is the sum of its members' self times; its calls per iteration the
//!   sum of its members'. Totals of different groups may overlap (an event of one group may run
//!   inside an event of another); self times do not.
//! - **Sorting**: `order` (execution order), `median` (descending median), `total` (descending
//!   total); ties keep execution order. Groups are always sorted by descending total.
//! - **Windows** (`continuous` mode): each event's median per kept window, and whether its recent
//!   windows drifted from the earlier ones, by the statistics of `prof diff`; see
//!   [`drift`] for the split and the verdicts.
//! - **Device memory** (a profile with device memory figures; nothing is shown without them):
//!   per event timed on a stream, `dev used` is the median of the bytes in use on its device
//!   when a run ended and `dev change` the median change over a run (`gpu.memory`); per device,
//!   the fewest, most and last bytes in use at the steps listed (`iterations.device_memory`,
//!   warmup included, steps without a reading left out).
//!
//! # Formats
//!
//! - `table`: a header (program, mode, iterations, perturbation, and a line per device with its
//!   memory over the steps when the profile has it), the events as aligned columns
//!   in human units (names indented by depth when the rows are in execution order), then, after
//!   a blank line, the groups, then a legend. Noisy events are marked `!` in the last column.
//!   With windows, then a `windows` section: a line with the windows kept, closed and their
//!   length and which windows were compared, then one row per event (the iteration first) with
//!   its median per window as a sparkline (`▁▂▃▅▇`, see [`drift::sparkline`]), its first and
//!   last median, the change between them, and the drift verdict (`SLOWER` or `FASTER` with the
//!   change of the median and its confidence interval, `stable`, or `-` when unknown), and a
//!   line naming the drifted events.
//! - `csv`: one header row, then one row per event and one per group, told apart by the first
//!   column, `row_type` (`event` or `group`). Group rows fill `calls_per_iter`, `total_ns`,
//!   `self_ns`, `share`, `group` and `events`, and leave the event columns empty. Times are in
//!   nanoseconds, ratios (`cv`, `share`, `perturbation`) as fractions, absent values empty.
//!   With windows, seven more columns: `window`, `first_iteration`, `drift`, `drift_ratio`,
//!   `drift_ci_low`, `drift_ci_high`, `drift_p_adjusted`; event rows fill the drift columns, and
//!   rows of type `window` (one per event, the iteration first with id `iteration`, and kept
//!   window where it was measured) give the window's `index`, its first iteration and the
//!   event's `median_ns` in it. With host memory figures, four more columns (`alloc_bytes`,
//!   `freed_bytes`, `allocs`, `peak_bytes`); with device memory, seven more, after every other:
//!   `device_used_bytes` and `device_change_bytes` on event rows, and on rows of type `device`
//!   (one per device) `device`, `device_steps`, `device_min_bytes`, `device_max_bytes` and
//!   `device_last_bytes`.
//! - `json`: the whole [`Report`], pretty-printed; times in nanoseconds. With windows, its
//!   `windows` member is [`drift::Windows`]: per event the series (`medians_ns`), the
//!   `comparison` (as in `prof diff --format json`) and the `drift` verdict.
//! - `markdown`: the header as a paragraph, the events and the groups as pipe tables, the legend;
//!   with windows, the windows section as a paragraph and a pipe table.

use std::collections::HashMap;

use serde::Serialize;

use super::diff::DiffOptions;
use super::{drift, text};
use crate::Format;
use profiler_format::{Event, Profile};
use profiler_tables::breakdown::{breakdown, Breakdown};
use profiler_tables::measure::{device_usage, measure, ratio_or_zero, Measures};
pub use profiler_tables::measure::{
    DeviceMemoryRow, DeviceUsageRow, EventRow, IterationRow, MemoryRow, Perturbation,
};

/// What [`ReportOptions::group_by`] groups events by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// The `layer` key.
    Layer,
    /// The `phase` key.
    Phase,
    /// Both, as `layer/phase`.
    LayerPhase,
}

/// The order of the event rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortBy {
    /// Execution order (`order`).
    #[default]
    Order,
    /// Descending median.
    Median,
    /// Descending total time per iteration.
    Total,
    /// Descending median bytes allocated per run (events without memory figures last).
    Alloc,
    /// Descending median peak of live bytes per run (events without memory figures last).
    Peak,
}

/// How [`build`] makes a report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Also make one row per group (`None`: no group rows).
    pub group_by: Option<GroupBy>,
    /// The order of the event rows.
    pub sort: SortBy,
    /// Events whose coefficient of variation is above this are flagged noisy (default 0.25).
    pub cv_threshold: f64,
    /// The overall perturbation is flagged above this fraction (default 0.05, that is 5%).
    pub perturbation_threshold: f64,
    /// For a profile with windows (`continuous` mode): also compute each event's median per
    /// window and its drift ([`drift::windows`], default true). The comparison costs about as
    /// much as a `prof diff`.
    pub windows: bool,
    /// The smallest drift that matters (default 0.02, `prof diff`'s threshold): an event is
    /// `stable` only where its windows rule out a drift of this size, else `inconclusive`.
    pub drift_threshold: f64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            group_by: None,
            sort: SortBy::Order,
            cv_threshold: 0.25,
            perturbation_threshold: 0.05,
            windows: true,
            drift_threshold: DiffOptions::default().threshold,
        }
    }
}

/// One group of events (see [`GroupBy`]).
#[derive(Clone, Debug, Serialize)]
pub struct GroupRow {
    /// `top_mlp`, `bwd` or `top_mlp/bwd`; `-` stands for a missing field.
    pub key: String,
    /// Number of events in the group.
    pub events: usize,
    /// Sum of the members' calls per iteration.
    pub calls_per_iter: f64,
    /// Time per iteration, nesting within the group counted once.
    pub total_ns: f64,
    /// Sum of the members' self times.
    pub self_ns: f64,
    /// `total_ns` over the mean measured iteration.
    pub share: f64,
}

/// A report on one profile: what [`render`] prints.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The program's name.
    pub program: String,
    /// `sample`, `trace` or `continuous`.
    pub mode: String,
    /// False when the program ended before the schedule completed.
    pub complete: bool,
    /// Duration of an empty measurement, included in every sample.
    pub timer_floor_ns: u64,
    /// The measured iterations.
    pub iteration: IterationRow,
    /// Measured iterations against warmup; `None` without a usable warmup iteration.
    pub perturbation: Option<Perturbation>,
    /// The events, sorted as asked.
    pub events: Vec<EventRow>,
    /// The groups, by descending total; empty unless grouping was asked for.
    pub groups: Vec<GroupRow>,
    /// Where the mean iteration goes, by category, and the stretches no probe covers; absent
    /// without a measured iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
    /// The CV threshold the `noisy` flags were set with.
    pub cv_threshold: f64,
    /// `continuous` mode: each event's median per window and its drift; absent (`null` is
    /// never written) without windows or when [`ReportOptions::windows`] is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<drift::Windows>,
    /// Each device's memory in use over the steps, by device ordinal; absent without device
    /// memory figures.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_memory: Vec<DeviceUsageRow>,
}

/// The group of event `i`. A missing layer (or phase) is inherited from the nearest ancestor
/// that has one, so a helper shared by several layers (a `linear_forward` without a layer)
/// counts towards the layer that called it; `-` when no ancestor has one either.
fn group_key(i: usize, events: &[Event], chain: &[usize], by: GroupBy) -> String {
    let field = |get: fn(&Event) -> &Option<String>| {
        std::iter::once(i)
            .chain(chain.iter().copied())
            .find_map(|j| get(&events[j]).clone())
            .unwrap_or_else(|| "-".to_owned())
    };
    let layer = || field(|e| &e.layer);
    let phase = || field(|e| &e.phase);
    match by {
        GroupBy::Layer => layer(),
        GroupBy::Phase => phase(),
        GroupBy::LayerPhase => format!("{}/{}", layer(), phase()),
    }
}

/// One row per group of `by`, by descending total (see the module documentation): `rows` and
/// `chains` (each event's ancestors) are in the order of `events`, and `iter_mean` is the mean
/// measured iteration the shares are of.
fn group_rows(
    events: &[Event],
    rows: &[EventRow],
    chains: &[Vec<usize>],
    by: GroupBy,
    iter_mean: f64,
) -> Vec<GroupRow> {
    let keys: Vec<String> = (0..events.len())
        .map(|i| group_key(i, events, &chains[i], by))
        .collect();
    let mut groups: Vec<GroupRow> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, key) in keys.iter().enumerate() {
        let g = *index.entry(key.as_str()).or_insert_with(|| {
            groups.push(GroupRow {
                key: key.clone(),
                events: 0,
                calls_per_iter: 0.0,
                total_ns: 0.0,
                self_ns: 0.0,
                share: 0.0,
            });
            groups.len() - 1
        });
        let row = &rows[i];
        let group = &mut groups[g];
        group.events += 1;
        group.calls_per_iter += row.calls_per_iter;
        group.self_ns += row.self_ns;
        // Nesting within the group is counted once: a member inside another adds no total.
        if !chains[i].iter().any(|&a| keys[a] == *key) {
            group.total_ns += row.total_ns;
        }
    }
    for group in &mut groups {
        group.share = ratio_or_zero(group.total_ns, iter_mean);
    }
    groups.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns));
    groups
}

/// Computes the report of a profile (see the module documentation for every definition).
pub fn build(profile: &Profile, options: &ReportOptions) -> Report {
    let Measures {
        iteration,
        perturbation,
        events: mut rows,
        ancestors: chains,
    } = measure(
        profile,
        options.cv_threshold,
        options.perturbation_threshold,
    );
    let groups = options.group_by.map_or_else(Vec::new, |by| {
        group_rows(&profile.events, &rows, &chains, by, iteration.mean_ns)
    });

    rows.sort_by_key(|r| r.order);
    match options.sort {
        SortBy::Order => {}
        SortBy::Median => rows.sort_by(|a, b| b.median_ns.total_cmp(&a.median_ns)),
        SortBy::Total => rows.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns)),
        SortBy::Alloc => sort_by_memory(&mut rows, |m| m.alloc_bytes),
        SortBy::Peak => sort_by_memory(&mut rows, |m| m.peak_bytes),
    }

    Report {
        program: profile.run.program.clone(),
        mode: profile.run.mode.clone(),
        complete: profile.complete,
        timer_floor_ns: profile.run.timer_floor_ns,
        iteration,
        perturbation,
        events: rows,
        groups,
        breakdown: breakdown(profile),
        cv_threshold: options.cv_threshold,
        windows: options
            .windows
            .then(|| {
                let options = DiffOptions {
                    threshold: options.drift_threshold,
                    ..DiffOptions::default()
                };
                drift::windows(profile, &options)
            })
            .flatten(),
        device_memory: device_usage(profile),
    }
}

/// Rows by descending `key` of their memory figures; rows without figures last, in order.
fn sort_by_memory(rows: &mut [EventRow], key: fn(&MemoryRow) -> f64) {
    let value = |r: &EventRow| r.memory.as_ref().map_or(f64::NEG_INFINITY, key);
    rows.sort_by(|a, b| value(b).total_cmp(&value(a)));
}

mod breakdown_section;
mod render;
pub use render::{human_ns, render, summary, summary_unwritten};

#[cfg(test)]
mod tests;
