//! `prof report`: one row per event (and per group) of a `prof.json`, and the end-of-run summary
//! printed on stderr. Both are built here, by [`build`], so that they never disagree.
//!
//! # Definitions
//!
//! - **Measured iterations** are the iterations after warmup (index `>= run.warmup` in
//!   `iterations.wall_ns`); if there are none (the program stopped during warmup), all
//!   iterations. The iteration row (median, mean, p90, CV) describes them.
//! - **Warmup baseline**: the median wall time of the warmup iterations, leaving out iteration 0
//!   (it includes the program's start-up). It therefore needs `run.warmup >= 2` and at least one
//!   such iteration in the file; otherwise there is no baseline and no perturbation is reported.
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
//!   baseline (reported as `ratio`); `flagged` when `ratio - 1 > perturbation_threshold` (default
//!   0.05). Absent without a baseline or without an iteration after warmup.
//! - **Groups** (`--group-by layer|phase|layer,phase`): events are grouped by their `layer`, their
//!   `phase`, or both (`"top_mlp/bwd"`); an event without the field goes in the group `"-"`
//!   (`"-/bwd"` for a missing layer with both). A group's total is the sum of the totals of its
//!   members whose ancestors include no other member of the same group, so that nesting is never
//!   counted twice; its self is the sum of its members' self times; its calls per iteration the
//!   sum of its members'. Totals of different groups may overlap (an event of one group may run
//!   inside an event of another); self times do not.
//! - **Sorting**: `order` (execution order), `median` (descending median), `total` (descending
//!   total); ties keep execution order. Groups are always sorted by descending total.
//!
//! # Formats
//!
//! - `table`: a header (program, mode, iterations, perturbation), the events as aligned columns
//!   in human units (names indented by depth when the rows are in execution order), then, after
//!   a blank line, the groups, then a legend. Noisy events are marked `!` in the last column.
//! - `csv`: one header row, then one row per event and one per group, told apart by the first
//!   column, `row_type` (`event` or `group`). Group rows fill `calls_per_iter`, `total_ns`,
//!   `self_ns`, `share`, `group` and `events`, and leave the event columns empty. Times are in
//!   nanoseconds, ratios (`cv`, `share`, `perturbation`) as fractions, absent values empty.
//! - `json`: the whole [`Report`], pretty-printed; times in nanoseconds.
//! - `markdown`: the header as a paragraph, the events and the groups as pipe tables, the legend.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use serde::Serialize;

use super::{stats, text};
use crate::analysis::Format;
use crate::output::json::{Event, Profile};

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
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            group_by: None,
            sort: SortBy::Order,
            cv_threshold: 0.25,
            perturbation_threshold: 0.05,
        }
    }
}

/// One event of the report. Times in nanoseconds; see the module documentation for the
/// definitions.
#[derive(Clone, Debug, Serialize)]
pub struct EventRow {
    /// Position in the iteration's execution order.
    pub order: u32,
    /// The probe's id.
    pub id: String,
    /// The probe's name.
    pub name: String,
    /// The `layer` key.
    pub layer: Option<String>,
    /// The `phase` key.
    pub phase: Option<String>,
    /// Which run of the probe within an iteration (the first one held, when merged).
    pub occurrence: u32,
    /// True when the event holds every run of its probe from `occurrence` on.
    pub merged: bool,
    /// The `order` of the enclosing event, if any.
    pub parent: Option<u32>,
    /// Nesting depth following the parents (0: top level).
    pub depth: u32,
    /// Number of runs measured (`stats.count`).
    pub samples: u64,
    /// Runs per iteration.
    pub calls_per_iter: f64,
    /// Median duration of one run.
    pub median_ns: f64,
    /// Mean duration of one run.
    pub mean_ns: f64,
    /// Shortest run.
    pub min_ns: f64,
    /// Longest run.
    pub max_ns: f64,
    /// Sample standard deviation of the runs.
    pub stddev_ns: f64,
    /// 90th percentile of the runs.
    pub p90_ns: f64,
    /// Coefficient of variation, `stddev / mean`.
    pub cv: f64,
    /// Time per iteration: `mean × calls_per_iter`.
    pub total_ns: f64,
    /// Total minus the children's totals (never negative).
    pub self_ns: f64,
    /// `total_ns` over the mean measured iteration.
    pub share: f64,
    /// `cv` above the threshold (with at least two samples).
    pub noisy: bool,
    /// Median wall time of the iterations this event was armed in over the warmup baseline,
    /// minus 1; `None` without a baseline or armed iteration.
    pub perturbation: Option<f64>,
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

/// The iterations of the run.
#[derive(Clone, Debug, Serialize)]
pub struct IterationRow {
    /// Iterations completed (`iterations.count`).
    pub count: u64,
    /// Warmup iterations asked for (`run.warmup`).
    pub warmup: u32,
    /// Measured iterations (after warmup, or all if none is).
    pub measured: u64,
    /// Median wall time of the measured iterations.
    pub median_ns: f64,
    /// Mean wall time of the measured iterations.
    pub mean_ns: f64,
    /// 90th percentile of the measured iterations.
    pub p90_ns: f64,
    /// Coefficient of variation of the measured iterations.
    pub cv: f64,
}

/// The profiler's own effect on the iteration time.
#[derive(Clone, Debug, Serialize)]
pub struct Perturbation {
    /// Median warmup iteration, iteration 0 left out.
    pub warmup_median_ns: f64,
    /// Median measured iteration.
    pub armed_median_ns: f64,
    /// `armed_median_ns / warmup_median_ns`.
    pub ratio: f64,
    /// `ratio - 1` above the threshold.
    pub flagged: bool,
}

/// A report on one profile: what [`render`] prints.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The program's name.
    pub program: String,
    /// `sample` or `trace`.
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
    /// The CV threshold the `noisy` flags were set with.
    pub cv_threshold: f64,
}

/// Median warmup iteration, leaving out iteration 0 (start-up); `None` if there is none or it
/// is 0.
fn warmup_baseline(profile: &Profile) -> Option<f64> {
    let walls = &profile.iterations.wall_ns;
    let end = (profile.run.warmup as usize).min(walls.len());
    if end < 2 {
        return None;
    }
    let base = stats::median(&stats::as_f64(&walls[1..end]));
    (base > 0.0).then_some(base)
}

/// Index of each event's parent in `events` (`None`: top level, missing or itself).
fn parent_indices(events: &[Event]) -> Vec<Option<usize>> {
    let mut by_order: HashMap<u32, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        by_order.entry(e.order).or_insert(i);
    }
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            e.parent
                .and_then(|p| by_order.get(&p).copied())
                .filter(|&j| j != i)
        })
        .collect()
}

/// The ancestors of event `i`, nearest first, each at most once.
fn ancestors(i: usize, parents: &[Option<usize>]) -> Vec<usize> {
    let mut seen = HashSet::from([i]);
    let mut chain = Vec::new();
    let mut cur = parents[i];
    while let Some(j) = cur {
        if !seen.insert(j) {
            break;
        }
        chain.push(j);
        cur = parents[j];
    }
    chain
}

fn group_key(e: &Event, by: GroupBy) -> String {
    let field = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
    match by {
        GroupBy::Layer => field(&e.layer),
        GroupBy::Phase => field(&e.phase),
        GroupBy::LayerPhase => format!("{}/{}", field(&e.layer), field(&e.phase)),
    }
}

fn ratio_or_zero(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Computes the report of a profile (see the module documentation for every definition).
pub fn build(profile: &Profile, options: &ReportOptions) -> Report {
    let walls = &profile.iterations.wall_ns;
    let measured = stats::as_f64(crate::analysis::measured_walls(profile));
    let measured_sorted = stats::sorted(&measured);
    let iteration = IterationRow {
        count: profile.iterations.count,
        warmup: profile.run.warmup,
        measured: measured.len() as u64,
        median_ns: stats::quantile_sorted(&measured_sorted, 0.5),
        mean_ns: stats::mean(&measured),
        p90_ns: stats::quantile_sorted(&measured_sorted, 0.9),
        cv: stats::cv(&measured),
    };
    let iter_mean = iteration.mean_ns;
    let baseline = warmup_baseline(profile);
    let after_warmup = walls.len() > profile.run.warmup as usize;
    let perturbation = baseline.filter(|_| after_warmup).map(|base| {
        let armed = iteration.median_ns;
        let ratio = armed / base;
        Perturbation {
            warmup_median_ns: base,
            armed_median_ns: armed,
            ratio,
            flagged: ratio - 1.0 > options.perturbation_threshold,
        }
    });

    let events = &profile.events;
    let parents = parent_indices(events);
    let chains: Vec<Vec<usize>> = (0..events.len()).map(|i| ancestors(i, &parents)).collect();

    let mut rows: Vec<EventRow> = events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let s = &e.stats;
            let armed: Vec<u32> = {
                let mut v = e.sample_iters.clone();
                v.sort_unstable();
                v.dedup();
                v
            };
            let calls_per_iter = if e.merged {
                s.count as f64 / armed.len().max(1) as f64
            } else {
                1.0
            };
            let mean_ns = s.mean_ns as f64;
            let stddev_ns = s.stddev_ns as f64;
            let cv = ratio_or_zero(stddev_ns, mean_ns);
            let total_ns = mean_ns * calls_per_iter;
            let armed_walls: Vec<f64> = armed
                .iter()
                .filter_map(|&it| walls.get(it as usize).map(|&w| w as f64))
                .collect();
            let perturbation = match baseline {
                Some(base) if !armed_walls.is_empty() => {
                    Some(stats::median(&armed_walls) / base - 1.0)
                }
                _ => None,
            };
            EventRow {
                order: e.order,
                id: e.id.clone(),
                name: e.name.clone(),
                layer: e.layer.clone(),
                phase: e.phase.clone(),
                occurrence: e.occurrence,
                merged: e.merged,
                parent: e.parent,
                depth: chains[i].len() as u32,
                samples: s.count,
                calls_per_iter,
                median_ns: s.median_ns as f64,
                mean_ns,
                min_ns: s.min_ns as f64,
                max_ns: s.max_ns as f64,
                stddev_ns,
                p90_ns: s.p90_ns as f64,
                cv,
                total_ns,
                self_ns: 0.0,
                share: ratio_or_zero(total_ns, iter_mean),
                noisy: s.count >= 2 && cv > options.cv_threshold,
                perturbation,
            }
        })
        .collect();

    let mut children_total = vec![0.0; rows.len()];
    for (i, p) in parents.iter().enumerate() {
        if let Some(j) = *p {
            children_total[j] += rows[i].total_ns;
        }
    }
    for (row, children) in rows.iter_mut().zip(&children_total) {
        row.self_ns = (row.total_ns - children).max(0.0);
    }

    let mut groups: Vec<GroupRow> = Vec::new();
    if let Some(by) = options.group_by {
        let keys: Vec<String> = events.iter().map(|e| group_key(e, by)).collect();
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
            if !chains[i].iter().any(|&a| keys[a] == *key) {
                group.total_ns += row.total_ns;
            }
        }
        for group in &mut groups {
            group.share = ratio_or_zero(group.total_ns, iter_mean);
        }
        groups.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns));
    }

    rows.sort_by_key(|r| r.order);
    match options.sort {
        SortBy::Order => {}
        SortBy::Median => rows.sort_by(|a, b| b.median_ns.total_cmp(&a.median_ns)),
        SortBy::Total => rows.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns)),
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
        cv_threshold: options.cv_threshold,
    }
}

/// A duration for people: `850ns`, `12.3µs`, `4.56ms`, `1.20s`.
pub fn human_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".to_owned();
    }
    let a = ns.abs();
    if a < 999.5 {
        format!("{ns:.0}ns")
    } else if a < 999_950.0 {
        format!("{:.1}µs", ns / 1e3)
    } else if a < 999_995_000.0 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// A fraction as a percentage with one decimal: `0.067` → `6.7%`.
fn percent(v: f64) -> String {
    format!("{:.1}%", 100.0 * v)
}

/// A signed percentage: `+1.2%`, `-0.3%`.
fn signed_percent(v: f64) -> String {
    format!("{:+.1}%", 100.0 * v)
}

/// Calls per iteration: `1`, or `2.50` when not whole.
fn calls(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.2}")
    }
}

/// A number for CSV: at most `digits` decimals, trailing zeros dropped.
fn num(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let s = format!("{v:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    };
    if s == "-0" {
        "0".to_owned()
    } else {
        s
    }
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "-".to_owned())
}

/// Aligned lines: the first `left` columns left-aligned, the others right-aligned; each line
/// starts with two spaces.
fn aligned(headers: &[&str], rows: &[Vec<String>], left: usize) -> Vec<String> {
    text::aligned(headers, rows, left)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn status(report: &Report) -> &'static str {
    if report.complete {
        "complete"
    } else {
        "INCOMPLETE (the program ended before the schedule did)"
    }
}

fn headline(report: &Report) -> String {
    let it = &report.iteration;
    format!(
        "{}: {} mode, {} iterations ({} warmup, {} measured), {} events, {}",
        report.program,
        report.mode,
        it.count,
        it.warmup,
        it.measured,
        report.events.len(),
        status(report)
    )
}

fn iteration_line(report: &Report) -> String {
    let it = &report.iteration;
    format!(
        "iteration: median {}, mean {}, p90 {}, cv {}",
        human_ns(it.median_ns),
        human_ns(it.mean_ns),
        human_ns(it.p90_ns),
        percent(it.cv)
    )
}

fn perturbation_line(report: &Report) -> String {
    match &report.perturbation {
        Some(p) => format!(
            "perturbation: median iteration {} while measuring vs {} in warmup ({}){}",
            human_ns(p.armed_median_ns),
            human_ns(p.warmup_median_ns),
            signed_percent(p.ratio - 1.0),
            if p.flagged {
                ", FLAGGED: the profiler may be distorting this program's timing"
            } else {
                ""
            }
        ),
        None => "perturbation: unknown (needs 2 or more warmup iterations and one after them)"
            .to_owned(),
    }
}

fn noisy_line(report: &Report) -> String {
    let noisy: Vec<&EventRow> = report.events.iter().filter(|e| e.noisy).collect();
    if noisy.is_empty() {
        format!("no noisy event (cv above {})", percent(report.cv_threshold))
    } else {
        let names: Vec<String> = noisy
            .iter()
            .take(5)
            .map(|e| format!("{}#{}", e.name, e.occurrence))
            .collect();
        let more = if noisy.len() > 5 {
            format!(", +{} more", noisy.len() - 5)
        } else {
            String::new()
        };
        format!(
            "! {} noisy event{} (cv above {}; repeat more to trust them): {}{more}",
            noisy.len(),
            if noisy.len() == 1 { "" } else { "s" },
            percent(report.cv_threshold),
            names.join(", ")
        )
    }
}

fn legend(report: &Report) -> String {
    format!(
        "! = noisy (cv above {}); calls = runs per iteration; total = mean x calls; self = total \
         minus nested events' totals; share = total / mean iteration; perturb = median iteration \
         while the event was armed / median warmup iteration - 1; every sample includes the \
         timer's own {} (an empty measurement)",
        percent(report.cv_threshold),
        human_ns(report.timer_floor_ns as f64)
    )
}

const EVENT_HEADERS: [&str; 17] = [
    "layer", "phase", "name", "occ", "calls", "median", "mean", "min", "max", "stddev", "p90",
    "cv", "total", "self", "share", "perturb", "",
];
const GROUP_HEADERS: [&str; 6] = ["group", "events", "calls", "total", "self", "share"];

fn occ(e: &EventRow) -> String {
    if e.merged {
        format!("{}+", e.occurrence)
    } else {
        e.occurrence.to_string()
    }
}

/// The human cells of an event row (`indent`: indent the name by depth).
fn event_cells(e: &EventRow, indent: bool) -> Vec<String> {
    let times = |v: f64| {
        if e.samples == 0 {
            "-".to_owned()
        } else {
            human_ns(v)
        }
    };
    let name = if indent {
        format!("{}{}", "  ".repeat(e.depth as usize), e.name)
    } else {
        e.name.clone()
    };
    vec![
        opt(&e.layer),
        opt(&e.phase),
        name,
        occ(e),
        calls(e.calls_per_iter),
        times(e.median_ns),
        times(e.mean_ns),
        times(e.min_ns),
        times(e.max_ns),
        times(e.stddev_ns),
        times(e.p90_ns),
        if e.samples == 0 {
            "-".to_owned()
        } else {
            percent(e.cv)
        },
        times(e.total_ns),
        times(e.self_ns),
        percent(e.share),
        e.perturbation
            .map(signed_percent)
            .unwrap_or_else(|| "-".to_owned()),
        if e.noisy { "!" } else { "" }.to_owned(),
    ]
}

fn group_cells(g: &GroupRow) -> Vec<String> {
    vec![
        g.key.clone(),
        g.events.to_string(),
        calls(g.calls_per_iter),
        human_ns(g.total_ns),
        human_ns(g.self_ns),
        percent(g.share),
    ]
}

fn in_execution_order(report: &Report) -> bool {
    report.events.windows(2).all(|w| w[0].order < w[1].order)
}

fn render_table(report: &Report) -> String {
    let mut lines = vec![
        headline(report),
        iteration_line(report),
        perturbation_line(report),
    ];
    let indent = in_execution_order(report);
    let rows: Vec<Vec<String>> = report
        .events
        .iter()
        .map(|e| event_cells(e, indent))
        .collect();
    lines.extend(aligned(&EVENT_HEADERS, &rows, 3));
    if !report.groups.is_empty() {
        lines.push(String::new());
        let rows: Vec<Vec<String>> = report.groups.iter().map(group_cells).collect();
        lines.extend(aligned(&GROUP_HEADERS, &rows, 1));
    }
    lines.push(String::new());
    lines.push(legend(report));
    lines.join("\n") + "\n"
}

const CSV_HEADERS: [&str; 26] = [
    "row_type",
    "order",
    "id",
    "name",
    "layer",
    "phase",
    "occurrence",
    "merged",
    "parent",
    "depth",
    "samples",
    "calls_per_iter",
    "median_ns",
    "mean_ns",
    "min_ns",
    "max_ns",
    "stddev_ns",
    "p90_ns",
    "cv",
    "total_ns",
    "self_ns",
    "share",
    "noisy",
    "perturbation",
    "group",
    "events",
];

fn render_csv(report: &Report) -> String {
    let mut out = CSV_HEADERS.join(",") + "\n";
    for e in &report.events {
        let cells = [
            "event".to_owned(),
            e.order.to_string(),
            text::csv_field(&e.id),
            text::csv_field(&e.name),
            text::csv_field(e.layer.as_deref().unwrap_or("")),
            text::csv_field(e.phase.as_deref().unwrap_or("")),
            e.occurrence.to_string(),
            e.merged.to_string(),
            e.parent.map(|p| p.to_string()).unwrap_or_default(),
            e.depth.to_string(),
            e.samples.to_string(),
            num(e.calls_per_iter, 6),
            num(e.median_ns, 3),
            num(e.mean_ns, 3),
            num(e.min_ns, 3),
            num(e.max_ns, 3),
            num(e.stddev_ns, 3),
            num(e.p90_ns, 3),
            num(e.cv, 6),
            num(e.total_ns, 3),
            num(e.self_ns, 3),
            num(e.share, 6),
            e.noisy.to_string(),
            e.perturbation.map(|p| num(p, 6)).unwrap_or_default(),
            String::new(),
            String::new(),
        ];
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    for g in &report.groups {
        let mut cells = vec![String::new(); CSV_HEADERS.len()];
        cells[0] = "group".to_owned();
        cells[11] = num(g.calls_per_iter, 6);
        cells[19] = num(g.total_ns, 3);
        cells[20] = num(g.self_ns, 3);
        cells[21] = num(g.share, 6);
        cells[24] = text::csv_field(&g.key);
        cells[25] = g.events.to_string();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

fn md_table(headers: &[&str], rows: &[Vec<String>], left: usize) -> Vec<String> {
    let row = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let mut out = vec![row(headers.iter().map(|h| text::md_cell(h)).collect())];
    out.push(format!(
        "|{}|",
        (0..headers.len())
            .map(|i| if i < left { ":---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    ));
    for r in rows {
        out.push(row(r.iter().map(|c| text::md_cell(c)).collect()));
    }
    out
}

fn render_markdown(report: &Report) -> String {
    let mut lines = vec![
        format!("**{}**", text::md_cell(&headline(report))),
        String::new(),
        text::md_cell(&iteration_line(report)),
        String::new(),
        text::md_cell(&perturbation_line(report)),
        String::new(),
    ];
    let rows: Vec<Vec<String>> = report
        .events
        .iter()
        .map(|e| event_cells(e, false))
        .collect();
    let mut headers = EVENT_HEADERS;
    headers[16] = "noisy";
    lines.extend(md_table(&headers, &rows, 3));
    if !report.groups.is_empty() {
        lines.push(String::new());
        let rows: Vec<Vec<String>> = report.groups.iter().map(group_cells).collect();
        lines.extend(md_table(&GROUP_HEADERS, &rows, 1));
    }
    lines.push(String::new());
    lines.push(text::md_cell(&legend(report)));
    lines.join("\n") + "\n"
}

/// Prints a report: an aligned table in human units, CSV (times in nanoseconds, `row_type`
/// column), pretty JSON of the whole [`Report`], or Markdown tables. The text ends with a
/// newline.
pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Table => render_table(report),
        Format::Csv => render_csv(report),
        Format::Json => match serde_json::to_string_pretty(report) {
            Ok(s) => s + "\n",
            Err(e) => format!("{{\"error\": \"cannot encode the report: {e}\"}}\n"),
        },
        Format::Markdown => render_markdown(report),
    }
}

/// The end-of-run summary printed on stderr (one row per event in execution order; a header
/// with mode, iterations, events, median iteration, complete or INCOMPLETE; a footnote with
/// what share means, the timer floor, noisy events, the perturbation, and `results in {path}`).
/// No trailing newline.
pub fn summary(profile: &Profile, path: &str) -> String {
    let report = build(profile, &ReportOptions::default());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "profiler-core: {} mode, {} iterations ({} warmup), {} events, median iteration {}, {}",
        report.mode,
        report.iteration.count,
        report.iteration.warmup,
        report.events.len(),
        human_ns(report.iteration.median_ns),
        status(&report)
    );
    let headers = [
        "layer", "phase", "name", "occ", "samples", "median", "mean", "min", "max", "share", "",
    ];
    let rows: Vec<Vec<String>> = report
        .events
        .iter()
        .map(|e| {
            let times = |v: f64| {
                if e.samples == 0 {
                    "-".to_owned()
                } else {
                    human_ns(v)
                }
            };
            vec![
                opt(&e.layer),
                opt(&e.phase),
                e.name.clone(),
                occ(e),
                e.samples.to_string(),
                times(e.median_ns),
                times(e.mean_ns),
                times(e.min_ns),
                times(e.max_ns),
                if e.samples == 0 {
                    "-".to_owned()
                } else {
                    percent(e.share)
                },
                if e.noisy { "!" } else { "" }.to_owned(),
            ]
        })
        .collect();
    for line in aligned(&headers, &rows, 3) {
        let _ = writeln!(out, "{line}");
    }
    if report.iteration.count == 0 {
        let _ = writeln!(
            out,
            "  (no iteration completed: call profiler_core::step() at the end of each iteration)"
        );
    } else if report.events.is_empty() {
        let _ = writeln!(out, "  (no event was measured)");
    }
    let _ = writeln!(
        out,
        "  share = mean x calls per iteration / mean iteration; every sample includes the \
         timer's own {} (an empty measurement)",
        human_ns(report.timer_floor_ns as f64)
    );
    let _ = writeln!(out, "  {}", noisy_line(&report));
    let _ = writeln!(out, "  {}", perturbation_line(&report));
    let _ = write!(
        out,
        "  results in {path} (`prof report {path}` for self times, p90, groups)"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::json::{Iterations, Run, Stats};

    /// An event with durations `samples` taken in iterations `iters`.
    fn ev(
        order: u32,
        name: &str,
        layer: Option<&str>,
        parent: Option<u32>,
        samples: &[u64],
        iters: &[u32],
    ) -> Event {
        Event {
            id: format!("m::{name}"),
            name: name.to_owned(),
            layer: layer.map(str::to_owned),
            phase: Some("fwd".to_owned()),
            kind: "fn".to_owned(),
            module: "m".to_owned(),
            file: "m.rs".to_owned(),
            line: 1,
            occurrence: 0,
            order,
            device: None,
            stream: None,
            merged: false,
            parent,
            samples_ns: samples.to_vec(),
            offsets_ns: vec![0; samples.len()],
            sample_iters: iters.to_vec(),
            stats: Stats::of(samples),
        }
    }

    /// An event of one sample of `ns`, armed in iteration 2.
    fn flat(order: u32, name: &str, layer: Option<&str>, parent: Option<u32>, ns: u64) -> Event {
        ev(order, name, layer, parent, &[ns], &[2])
    }

    fn profile(warmup: u32, walls: &[u64], events: Vec<Event>) -> Profile {
        Profile {
            schema: crate::output::json::SCHEMA.to_owned(),
            complete: true,
            run: Run {
                program: "toy".to_owned(),
                pid: 1,
                host: "h".to_owned(),
                rank: 0,
                mode: "sample".to_owned(),
                filter: String::new(),
                warmup,
                repeat: 1,
                clock: "fake".to_owned(),
                max_events: 4096,
                timer_floor_ns: 20,
                profiler_version: "0".to_owned(),
            },
            iterations: Iterations {
                count: walls.len() as u64,
                wall_ns: walls.to_vec(),
            },
            events,
        }
    }

    /// A -> {B -> D, C}; E top level. Means 100, 30, 20, 10, 40.
    fn nested() -> Profile {
        profile(
            2,
            &[1000, 1000, 1000, 1000],
            vec![
                flat(0, "a", Some("m"), None, 100),
                flat(1, "b", Some("m"), Some(0), 30),
                flat(2, "d", None, Some(1), 10),
                flat(3, "c", None, Some(0), 20),
                flat(4, "e", Some("m"), None, 40),
            ],
        )
    }

    fn by_name<'a>(r: &'a Report, name: &str) -> &'a EventRow {
        r.events.iter().find(|e| e.name == name).unwrap()
    }

    #[test]
    fn calls_per_iteration_of_merged_events() {
        let mut merged = ev(
            0,
            "sgd",
            None,
            None,
            &[10, 20, 30, 40, 50, 60],
            &[2, 2, 2, 3, 3, 3],
        );
        merged.merged = true;
        let plain = ev(1, "p", None, None, &[10, 30], &[4, 5]);
        let r = build(
            &profile(2, &[9, 9, 9, 9, 9, 9], vec![merged, plain]),
            &ReportOptions::default(),
        );
        let sgd = by_name(&r, "sgd");
        assert_eq!(sgd.calls_per_iter, 3.0);
        assert_eq!(sgd.mean_ns, 35.0);
        assert_eq!(sgd.total_ns, 105.0);
        assert_eq!(by_name(&r, "p").calls_per_iter, 1.0);
        assert_eq!(by_name(&r, "p").total_ns, 20.0);
        // A merged event with no sample: no division by zero.
        let mut empty = ev(0, "x", None, None, &[], &[]);
        empty.merged = true;
        let r = build(&profile(0, &[5], vec![empty]), &ReportOptions::default());
        assert_eq!(r.events[0].calls_per_iter, 0.0);
        assert_eq!(r.events[0].total_ns, 0.0);
    }

    #[test]
    fn self_time_subtracts_children_totals() {
        let r = build(&nested(), &ReportOptions::default());
        let selfs: Vec<(&str, f64, f64)> = r
            .events
            .iter()
            .map(|e| (e.name.as_str(), e.total_ns, e.self_ns))
            .collect();
        assert_eq!(
            selfs,
            [
                ("a", 100.0, 50.0),
                ("b", 30.0, 20.0),
                ("d", 10.0, 10.0),
                ("c", 20.0, 20.0),
                ("e", 40.0, 40.0)
            ]
        );
        // Children longer than their parent (other iterations, noise): self never negative.
        let p = profile(
            0,
            &[100],
            vec![
                flat(0, "p", None, None, 10),
                flat(1, "k", None, Some(0), 15),
            ],
        );
        let r = build(&p, &ReportOptions::default());
        assert_eq!(by_name(&r, "p").self_ns, 0.0);
        // A merged child counts with all its calls.
        let mut kid = ev(1, "k", None, Some(0), &[10, 10, 10, 10], &[0, 0, 1, 1]);
        kid.merged = true;
        let p = profile(0, &[100, 100], vec![flat(0, "p", None, None, 50), kid]);
        let r = build(&p, &ReportOptions::default());
        assert_eq!(by_name(&r, "p").self_ns, 30.0);
    }

    #[test]
    fn depth_follows_parents_and_survives_cycles() {
        let r = build(&nested(), &ReportOptions::default());
        let depths: Vec<u32> = r.events.iter().map(|e| e.depth).collect();
        assert_eq!(depths, [0, 1, 2, 1, 0]);
        let p = profile(
            0,
            &[100],
            vec![
                flat(0, "x", None, Some(1), 10),
                flat(1, "y", None, Some(0), 10),
                flat(2, "orphan", None, Some(99), 10),
                flat(3, "me", None, Some(3), 10),
            ],
        );
        let r = build(&p, &ReportOptions::default());
        let depths: Vec<u32> = r.events.iter().map(|e| e.depth).collect();
        assert_eq!(depths, [1, 1, 0, 0]);
        assert_eq!(by_name(&r, "orphan").self_ns, 10.0);
        assert_eq!(by_name(&r, "me").self_ns, 10.0);
    }

    #[test]
    fn groups_do_not_count_nesting_twice() {
        let options = ReportOptions {
            group_by: Some(GroupBy::Layer),
            ..ReportOptions::default()
        };
        let r = build(&nested(), &options);
        let groups: Vec<(&str, usize, f64, f64)> = r
            .groups
            .iter()
            .map(|g| (g.key.as_str(), g.events, g.total_ns, g.self_ns))
            .collect();
        // m: a (100, holding b) + e (40); self 50 + 20 + 40. "-": d and c, not nested in each
        // other (d's ancestors are b and a, both in m).
        assert_eq!(groups, [("m", 3, 140.0, 110.0), ("-", 2, 30.0, 30.0)]);
        // The mean measured iteration is 1000.
        assert!((r.groups[0].share - 0.14).abs() < 1e-12);
        assert_eq!(r.groups[0].calls_per_iter, 3.0);

        // A member nested in a member through an event of another group is still nested.
        let p = profile(
            0,
            &[1000],
            vec![
                flat(0, "a", Some("m"), None, 100),
                flat(1, "k", Some("n"), Some(0), 60),
                flat(2, "g", Some("m"), Some(1), 50),
            ],
        );
        let r = build(&p, &options);
        assert_eq!(r.groups[0].key, "m");
        assert_eq!(r.groups[0].total_ns, 100.0);
        assert_eq!(r.groups[0].self_ns, 40.0 + 50.0);

        let r = build(
            &nested(),
            &ReportOptions {
                group_by: Some(GroupBy::LayerPhase),
                ..ReportOptions::default()
            },
        );
        let keys: Vec<&str> = r.groups.iter().map(|g| g.key.as_str()).collect();
        assert_eq!(keys, ["m/fwd", "-/fwd"]);
        let r = build(
            &nested(),
            &ReportOptions {
                group_by: Some(GroupBy::Phase),
                ..ReportOptions::default()
            },
        );
        assert_eq!(r.groups.len(), 1);
        assert_eq!(r.groups[0].key, "fwd");
        assert_eq!(r.groups[0].total_ns, 140.0);
        assert!(build(&nested(), &ReportOptions::default())
            .groups
            .is_empty());
    }

    #[test]
    fn noisy_events_are_flagged_above_the_threshold() {
        let p = profile(
            0,
            &[100],
            vec![
                ev(0, "steady", None, None, &[100, 100, 101], &[0, 0, 0]),
                ev(1, "wild", None, None, &[10, 100, 1000], &[0, 0, 0]),
                ev(2, "one", None, None, &[100], &[0]),
            ],
        );
        let r = build(&p, &ReportOptions::default());
        assert!(!by_name(&r, "steady").noisy);
        assert!(by_name(&r, "wild").noisy);
        assert!(!by_name(&r, "one").noisy);
        let wild = by_name(&r, "wild");
        assert!((wild.cv - wild.stddev_ns / wild.mean_ns).abs() < 1e-12);
        let r = build(
            &p,
            &ReportOptions {
                cv_threshold: 10.0,
                ..ReportOptions::default()
            },
        );
        assert!(!by_name(&r, "wild").noisy);
        assert_eq!(r.cv_threshold, 10.0);
    }

    #[test]
    fn perturbation_compares_armed_iterations_with_warmup() {
        // Iteration 0 (start-up) is left out of the baseline: median(100, 110) = 105.
        let walls = [1000, 100, 110, 120, 130, 140, 200];
        let e = ev(0, "a", None, None, &[1, 2, 3], &[3, 3, 4]);
        let p = profile(3, &walls, vec![e.clone()]);
        let r = build(&p, &ReportOptions::default());
        let it = &r.iteration;
        assert_eq!((it.count, it.warmup, it.measured), (7, 3, 4));
        assert_eq!(it.median_ns, 135.0);
        assert_eq!(it.mean_ns, 147.5);
        let pert = r.perturbation.as_ref().unwrap();
        assert_eq!(pert.warmup_median_ns, 105.0);
        assert_eq!(pert.armed_median_ns, 135.0);
        assert!((pert.ratio - 135.0 / 105.0).abs() < 1e-12);
        assert!(pert.flagged);
        // Armed in iterations 3 and 4: median(120, 130) = 125.
        let event = r.events[0].perturbation.unwrap();
        assert!((event - (125.0 / 105.0 - 1.0)).abs() < 1e-12);
        let r = build(
            &p,
            &ReportOptions {
                perturbation_threshold: 0.5,
                ..ReportOptions::default()
            },
        );
        assert!(!r.perturbation.unwrap().flagged);
        // Share uses the mean measured iteration.
        assert!((r.events[0].share - 2.0 / 147.5).abs() < 1e-12);

        // No usable warmup iteration: no perturbation.
        for warmup in [0, 1] {
            let r = build(
                &profile(warmup, &walls, vec![e.clone()]),
                &ReportOptions::default(),
            );
            assert!(r.perturbation.is_none());
            assert!(r.events[0].perturbation.is_none());
        }
        // Stopped during warmup: every iteration is "measured", nothing to compare.
        let r = build(&profile(10, &walls, vec![]), &ReportOptions::default());
        assert_eq!(r.iteration.measured, 7);
        assert!(r.perturbation.is_none());
    }

    #[test]
    fn sort_orders() {
        let p = profile(
            0,
            &[1000],
            vec![
                ev(2, "c", None, None, &[50, 50], &[0, 0]),
                ev(0, "a", None, None, &[10, 10], &[0, 0]),
                ev(1, "b", None, None, &[30, 30, 300], &[0, 0, 0]),
                {
                    let mut m = ev(3, "m", None, None, &[20, 20, 20, 20], &[0, 0, 0, 0]);
                    m.merged = true;
                    m
                },
            ],
        );
        let names = |sort| {
            build(
                &p,
                &ReportOptions {
                    sort,
                    ..ReportOptions::default()
                },
            )
            .events
            .iter()
            .map(|e| e.name.clone())
            .collect::<Vec<_>>()
        };
        assert_eq!(names(SortBy::Order), ["a", "b", "c", "m"]);
        assert_eq!(names(SortBy::Median), ["c", "b", "m", "a"]);
        // b: mean 120; m: 20 ns x 4 calls per iteration = 80.
        assert_eq!(names(SortBy::Total), ["b", "m", "c", "a"]);
        let p = profile(
            0,
            &[1000],
            vec![
                flat(0, "a", Some("x"), None, 10),
                flat(1, "b", Some("y"), None, 30),
                flat(2, "c", Some("z"), None, 20),
            ],
        );
        let r = build(
            &p,
            &ReportOptions {
                group_by: Some(GroupBy::Layer),
                ..ReportOptions::default()
            },
        );
        let keys: Vec<&str> = r.groups.iter().map(|g| g.key.as_str()).collect();
        assert_eq!(keys, ["y", "z", "x"]);
    }

    /// Splits one CSV line, honouring quotes.
    fn csv_split(line: &str) -> Vec<String> {
        let mut fields = vec![String::new()];
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    chars.next();
                    fields.last_mut().unwrap().push('"');
                }
                '"' => quoted = !quoted,
                ',' if !quoted => fields.push(String::new()),
                c => fields.last_mut().unwrap().push(c),
            }
        }
        fields
    }

    fn grouped(p: &Profile) -> Report {
        build(
            p,
            &ReportOptions {
                group_by: Some(GroupBy::Layer),
                ..ReportOptions::default()
            },
        )
    }

    #[test]
    fn csv_has_a_header_and_one_row_per_event_and_group() {
        let mut p = nested();
        p.events[0].name = "a,\"b\"".to_owned();
        let r = grouped(&p);
        let text = render(&r, Format::Csv);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 5 + 2);
        let header = csv_split(lines[0]);
        assert_eq!(header, CSV_HEADERS);
        for line in &lines[1..] {
            assert_eq!(csv_split(line).len(), header.len(), "{line}");
        }
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let first = csv_split(lines[1]);
        assert_eq!(first[col("row_type")], "event");
        assert_eq!(first[col("name")], "a,\"b\"");
        assert_eq!(first[col("total_ns")], "100");
        assert_eq!(first[col("self_ns")], "50");
        assert_eq!(first[col("share")], "0.1");
        assert_eq!(first[col("perturbation")], "0");
        let group = csv_split(lines[6]);
        assert_eq!(group[col("row_type")], "group");
        assert_eq!(group[col("group")], "m");
        assert_eq!(group[col("total_ns")], "140");
        assert_eq!(group[col("events")], "3");
        assert_eq!(group[col("name")], "");
        // Without groups, only events.
        let text = render(&build(&p, &ReportOptions::default()), Format::Csv);
        assert_eq!(text.lines().count(), 6);
    }

    #[test]
    fn json_is_the_whole_report() {
        let r = grouped(&nested());
        let text = render(&r, Format::Json);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["program"], "toy");
        assert_eq!(v["mode"], "sample");
        assert_eq!(v["complete"], true);
        assert_eq!(v["iteration"]["measured"], 2);
        assert_eq!(v["events"].as_array().unwrap().len(), 5);
        assert_eq!(v["events"][0]["self_ns"], 50.0);
        assert_eq!(v["events"][1]["parent"], 0);
        assert_eq!(v["events"][2]["depth"], 2);
        for field in [
            "calls_per_iter",
            "p90_ns",
            "cv",
            "share",
            "noisy",
            "perturbation",
        ] {
            assert!(v["events"][0].get(field).is_some(), "{field}");
        }
        assert_eq!(v["groups"][0]["key"], "m");
        assert_eq!(v["groups"][0]["total_ns"], 140.0);
        assert_eq!(v["perturbation"]["ratio"], 1.0);
        assert_eq!(v["cv_threshold"], 0.25);
    }

    #[test]
    fn markdown_has_pipe_tables() {
        let mut p = nested();
        p.events[0].name = "a|b".to_owned();
        let text = render(&grouped(&p), Format::Markdown);
        let lines: Vec<&str> = text.lines().collect();
        let header = lines
            .iter()
            .position(|l| l.starts_with("| layer | phase | name"))
            .unwrap();
        let columns = lines[header].matches(" | ").count() + 1;
        assert!(
            lines[header + 1].starts_with("|:---|"),
            "{}",
            lines[header + 1]
        );
        assert_eq!(lines[header + 1].matches('|').count(), columns + 1);
        assert!(lines[header + 2].contains("a\\|b"));
        for line in &lines[header + 2..header + 7] {
            assert_eq!(line.replace("\\|", "").matches('|').count(), columns + 1);
        }
        assert_eq!(lines[header + 7], "");
        assert!(lines[header + 8].starts_with("| group |"));
        assert!(lines[header + 9].starts_with("|:---|---:|"));
    }

    #[test]
    fn table_is_aligned_and_marks_noisy_events() {
        let mut p = nested();
        p.events
            .push(ev(5, "wild", None, None, &[10, 100, 1000], &[2, 2, 2]));
        let text = render(&grouped(&p), Format::Table);
        let lines: Vec<&str> = text.lines().collect();
        let header = lines.iter().position(|l| l.contains("name")).unwrap();
        assert!(lines[header].contains("self") && lines[header].contains("p90"));
        // Six events, then a blank line and the group table.
        let events = &lines[header + 1..header + 7];
        assert!(events[5].contains("wild") && events[5].ends_with('!'));
        assert!(!events[0].ends_with('!'));
        // Nested names are indented by depth.
        assert!(events[2].contains("    d"));
        // The numbers are right-aligned: every row ends its median column at the same place.
        let median_end = lines[header].find("median").unwrap() + "median".len();
        for row in events {
            assert_ne!(row.as_bytes()[median_end - 1], b' ', "{row}");
        }
        assert_eq!(lines[header + 7], "");
        assert!(lines[header + 8].trim_start().starts_with("group"));
        assert!(text.contains("! = noisy (cv above 25.0%)"));
        assert!(text.contains("toy: sample mode"));
    }

    #[test]
    fn summary_says_complete_or_incomplete() {
        let mut p = nested();
        let text = summary(&p, "out/prof.json");
        assert!(text.starts_with("profiler-core: sample mode, 4 iterations (2 warmup), 5 events"));
        assert!(text.contains(", complete"));
        assert!(!text.contains("INCOMPLETE"));
        assert!(text.contains("share"));
        assert!(text.contains("results in out/prof.json"));
        assert!(text.contains("20ns"));
        assert!(!text.ends_with('\n'));
        // One row per event, in execution order.
        let names: Vec<&str> = text
            .lines()
            .skip(2)
            .take(5)
            .map(|l| l.split_whitespace().nth(2).unwrap())
            .collect();
        assert_eq!(names, ["a", "b", "d", "c", "e"]);
        p.complete = false;
        assert!(summary(&p, "prof.json").contains("INCOMPLETE"));
        let empty = profile(0, &[], vec![]);
        assert!(summary(&empty, "prof.json").contains("no iteration completed"));
    }

    #[test]
    fn human_units() {
        assert_eq!(human_ns(850.0), "850ns");
        assert_eq!(human_ns(12_345.0), "12.3µs");
        assert_eq!(human_ns(4_560_000.0), "4.56ms");
        assert_eq!(human_ns(1_200_000_000.0), "1.20s");
        assert_eq!(human_ns(999.7), "1.0µs");
        assert_eq!(human_ns(999_990.0), "1.00ms");
        assert_eq!(human_ns(0.0), "0ns");
    }
}
