//! `prof report`: one row per event (and per group) of a `prof.json`, and the end-of-run summary
//! printed on stderr. Both are built here, by [`build`] from the rows of
//! [`profiler_tables::rows`], so that they never disagree; [`render`] prints a [`Report`] as
//! a table, CSV, JSON or Markdown.
//!
//! Each figure (measured iterations, warmup baseline, calls per iteration, self, depth, share,
//! noisy, perturbation, groups, sorting, windows, device memory) and each format is defined in
//! the repository's `docs/reference.md`, section "Definitions of `prof report`"; the columns in
//! its table of `prof report`.

use std::collections::HashMap;

use serde::Serialize;

use super::diff::DiffOptions;
use super::{drift, text};
use crate::Format;
use profiler_format::{Event, Profile};
use profiler_tables::breakdown::Breakdown;
use profiler_tables::rows::{ratio_or_zero, Ancestry, ProfileRows};
pub use profiler_tables::rows::{
    DeviceMemoryRow, DeviceUsageRow, EventRow, IterationRow, MemoryRow, Perturbation,
};
use profiler_tables::tables::{profile_tables, ProfileTables};

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
    /// The `order` of each member event, in execution order (not serialized: the outputs show
    /// the count, `events`).
    #[serde(skip)]
    pub members: Vec<u32>,
    /// The members whose total counts towards the group's (those without an ancestor in the
    /// same group), in execution order (not serialized).
    #[serde(skip)]
    pub outer: Vec<u32>,
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
    /// The peak the rates are judged against (`run.peak`, or `prof report --peak`'s); absent
    /// when none is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak: Option<profiler_format::peak::Peak>,
    /// The line on the work (the step's FLOPs and MFU, the peak, the definitions), when some
    /// event counts its work ([`profiler_tables::tables::work_line`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<String>,
    /// The events that ran only before the loop (not scheduled), each with its first run, as
    /// the profile lists them (`before_loop`); absent when there is none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before_loop: Vec<profiler_format::BeforeLoop>,
    /// What to do about it: `prof advise`'s findings on this profile, the most time at stake
    /// first ([`crate::advise::findings_of`]); empty when no rule fired.
    pub advice: Vec<crate::advise::Finding>,
    /// Windows in the profile (`continuous` mode; 0 when it was written before the first one
    /// closed: its events are then the open window's). Not serialized (`windows` is).
    #[serde(skip)]
    pub windows_kept: usize,
}

/// The group of event `i`. A missing layer (or phase) is inherited from the nearest ancestor
/// that has one, so a helper shared by several layers (a `linear_forward` without a layer)
/// counts towards the layer that called it; `-` when no ancestor has one either.
fn group_key(i: usize, events: &[Event], chains: &Ancestry, by: GroupBy) -> String {
    let field = |get: fn(&Event) -> &Option<String>| {
        std::iter::once(i)
            .chain(chains.of(i))
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
    chains: &Ancestry,
    by: GroupBy,
    iter_mean: f64,
) -> Vec<GroupRow> {
    let keys: Vec<String> = (0..events.len())
        .map(|i| group_key(i, events, chains, by))
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
                members: Vec::new(),
                outer: Vec::new(),
            });
            groups.len() - 1
        });
        let row = &rows[i];
        let group = &mut groups[g];
        group.events += 1;
        group.calls_per_iter += row.calls_per_iter;
        group.self_ns += row.self_ns;
        group.members.push(row.order);
        // Nesting within the group is counted once: a member inside another adds no total.
        if !chains.of(i).any(|a| keys[a] == *key) {
            group.total_ns += row.total_ns;
            group.outer.push(row.order);
        }
    }
    for group in &mut groups {
        group.share = ratio_or_zero(group.total_ns, iter_mean);
    }
    groups.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns));
    groups
}

/// Computes the report of a profile (see the module documentation for every definition): the
/// tables of [`profile_tables`] (rows, breakdown, work, device memory), then what only the
/// report has (groups, windows, advice) and the order asked for.
pub fn build(profile: &Profile, options: &ReportOptions) -> Report {
    let tables = profile_tables(
        profile,
        options.cv_threshold,
        options.perturbation_threshold,
    );
    build_from(profile, tables, options)
}

/// The groups of `by` (as [`build`] makes them) from `measures`, the rows that
/// [`profile_rows`](profiler_tables::rows::profile_rows) computed for `profile`: for a caller
/// that groups the same rows twice.
pub fn groups(profile: &Profile, measures: &ProfileRows, by: GroupBy) -> Vec<GroupRow> {
    group_rows(
        &profile.events,
        &measures.events,
        &measures.ancestors,
        by,
        measures.iteration.mean_ns,
    )
}

/// [`build`] from the tables that [`profile_tables`] computed for `profile` with `options`'
/// thresholds (`cv_threshold`, `perturbation_threshold`), so that a caller that needs them too
/// computes them once.
pub fn build_from(profile: &Profile, tables: ProfileTables, options: &ReportOptions) -> Report {
    let windows = options
        .windows
        .then(|| {
            let options = DiffOptions {
                threshold: options.drift_threshold,
                ..DiffOptions::default()
            };
            drift::windows(profile, &options)
        })
        .flatten();
    let advice = crate::advise::findings_of(
        profile,
        &tables.rows,
        tables.breakdown.as_ref(),
        windows.as_ref(),
        &crate::advise::AdviceOptions {
            cv_threshold: options.cv_threshold,
        },
    );
    let ProfileTables {
        rows:
            ProfileRows {
                iteration,
                perturbation,
                events: mut rows,
                ancestors: chains,
            },
        breakdown,
        work,
        device_memory,
        ..
    } = tables;
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
        breakdown,
        cv_threshold: options.cv_threshold,
        windows,
        device_memory,
        work,
        peak: profile.run.peak.clone(),
        before_loop: profile.before_loop.clone(),
        advice,
        windows_kept: profile.windows.len(),
    }
}

/// Rows by descending `key` of their memory figures; rows without figures last, in order.
fn sort_by_memory(rows: &mut [EventRow], key: fn(&MemoryRow) -> f64) {
    let value = |r: &EventRow| r.memory.as_ref().map_or(f64::NEG_INFINITY, key);
    rows.sort_by(|a, b| value(b).total_cmp(&value(a)));
}

mod breakdown_section;
mod render;
pub use render::{
    change_point_text, drift_cell, drift_line, drifted_line, headline_cell, render, shape_table,
};

#[cfg(test)]
mod tests;
