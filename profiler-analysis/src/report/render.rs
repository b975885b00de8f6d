//! Rendering a [`Report`] as a table, CSV, JSON or Markdown, and the end-of-run summary.

use super::*;
use profiler_format::summary::{occ, perturbation_line, status};
pub use profiler_format::summary::{summary, summary_unwritten};
pub use profiler_format::text::human_ns;
use profiler_format::text::{opt, percent, signed_percent};

/// Aligned lines: the first `left` columns left-aligned, the others right-aligned; each line
/// starts with two spaces.
fn aligned(headers: &[&str], rows: &[Vec<String>], left: usize) -> Vec<String> {
    text::aligned(headers, rows, left)
        .lines()
        .map(str::to_owned)
        .collect()
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

fn headline(report: &Report) -> String {
    let it = &report.iteration;
    if report.mode == "continuous" {
        return format!(
            "{}: continuous mode, {} iterations ({} warmup); the last window's {} iterations \
             (from iteration {}) and {} events below, {}",
            report.program,
            it.count,
            it.warmup,
            it.measured,
            it.first,
            report.events.len(),
            status(report.complete)
        );
    }
    format!(
        "{}: {} mode, {} iterations ({} warmup, {} measured), {} events, {}",
        report.program,
        report.mode,
        it.count,
        it.warmup,
        it.measured,
        report.events.len(),
        status(report.complete)
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

/// The columns a report adds when its events carry memory figures (`profiler_core::Alloc`),
/// before the noisy mark.
const MEMORY_HEADERS: [&str; 3] = ["alloc", "allocs", "peak"];
/// Their CSV columns, after every other.
const MEMORY_CSV_HEADERS: [&str; 4] = ["alloc_bytes", "freed_bytes", "allocs", "peak_bytes"];

/// The columns a report adds when its events carry device memory figures, after the memory
/// columns.
const DEVICE_HEADERS: [&str; 2] = ["dev used", "dev change"];
/// Their CSV columns, and those of the `device` rows, after every other.
const DEVICE_CSV_HEADERS: [&str; 7] = [
    "device_used_bytes",
    "device_change_bytes",
    "device",
    "device_steps",
    "device_min_bytes",
    "device_max_bytes",
    "device_last_bytes",
];

/// Which memory columns the event table has.
#[derive(Clone, Copy)]
struct Columns {
    /// The events carry memory figures (`profiler_core::Alloc`).
    memory: bool,
    /// The events carry device memory figures.
    device: bool,
}

impl Columns {
    fn of(report: &Report) -> Columns {
        Columns {
            memory: report.events.iter().any(|e| e.memory.is_some()),
            device: report.events.iter().any(|e| e.device_memory.is_some()),
        }
    }
}

/// The event table's headers: [`EVENT_HEADERS`], with [`MEMORY_HEADERS`] and
/// [`DEVICE_HEADERS`] before the last (the noisy mark) when the events carry those figures.
fn event_headers(columns: Columns) -> Vec<&'static str> {
    let mut headers = EVENT_HEADERS.to_vec();
    let last = headers.len() - 1;
    if columns.device {
        headers.splice(last..last, DEVICE_HEADERS);
    }
    if columns.memory {
        headers.splice(last..last, MEMORY_HEADERS);
    }
    headers
}

/// Bytes in human units, `-` for none.
fn bytes(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), profiler_format::text::human_bytes)
}

/// A change in bytes in human units with its sign (`+1.50MiB`, `-512B`, `0B`), `-` for none.
fn signed_bytes(v: Option<f64>) -> String {
    match v {
        Some(v) if v > 0.0 => format!("+{}", profiler_format::text::human_bytes(v)),
        v => bytes(v),
    }
}

/// An event's cells of the event table, with its memory cells as `columns` says.
fn event_row(e: &EventRow, indent: bool, columns: Columns) -> Vec<String> {
    let mut cells = event_cells(e, indent);
    let last = cells.len() - 1;
    if columns.device {
        let d = e.device_memory.as_ref();
        cells.splice(
            last..last,
            [
                bytes(d.map(|d| d.used_bytes)),
                signed_bytes(d.map(|d| d.change_bytes)),
            ],
        );
    }
    if columns.memory {
        let m = e.memory.as_ref();
        cells.splice(
            last..last,
            [
                bytes(m.map(|m| m.alloc_bytes)),
                m.map_or_else(|| "-".to_owned(), |m| calls(m.allocs)),
                bytes(m.map(|m| m.peak_bytes)),
            ],
        );
    }
    cells
}

/// `device 0 memory at the steps: min 1.20GiB, max 3.40GiB, last 3.40GiB (110 steps)`, one
/// line per device.
fn device_lines(report: &Report) -> Vec<String> {
    report
        .device_memory
        .iter()
        .map(|d| {
            format!(
                "device {} memory in use at the steps: min {}, max {}, last {} ({} steps)",
                d.device,
                bytes(Some(d.min_bytes as f64)),
                bytes(Some(d.max_bytes as f64)),
                bytes(Some(d.last_bytes as f64)),
                d.steps
            )
        })
        .collect()
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
        format!("{}{}", "  ".repeat(e.depth as usize), e.identity.name)
    } else {
        e.identity.name.clone()
    };
    vec![
        opt(&e.identity.layer),
        opt(&e.identity.phase),
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
        perturbation_line(&report.mode, report.perturbation.as_ref()),
    ];
    lines.extend(device_lines(report));
    let indent = in_execution_order(report);
    let columns = Columns::of(report);
    let rows: Vec<Vec<String>> = report
        .events
        .iter()
        .map(|e| event_row(e, indent, columns))
        .collect();
    lines.extend(aligned(&event_headers(columns), &rows, 3));
    if !report.groups.is_empty() {
        lines.push(String::new());
        let rows: Vec<Vec<String>> = report.groups.iter().map(group_cells).collect();
        lines.extend(aligned(&GROUP_HEADERS, &rows, 1));
    }
    if let Some(b) = &report.breakdown {
        lines.push(String::new());
        lines.extend(super::breakdown::lines(b, false));
    }
    lines.push(String::new());
    lines.push(legend(report));
    if let Some(w) = &report.windows {
        lines.push(String::new());
        lines.push(windows_line(w));
        let rows = windows_rows(w);
        lines.extend(aligned(&WINDOW_HEADERS, &rows, 5));
        lines.push(drifted_line(w));
    }
    lines.join("\n") + "\n"
}

const WINDOW_HEADERS: [&str; 9] = [
    "layer",
    "phase",
    "name",
    "occ",
    "median per window",
    "first",
    "last",
    "change",
    "drift",
];

/// `windows: 12 kept of 40 closed (PROF_WINDOWS=12), 500 iterations each; ...`.
fn windows_line(w: &drift::Windows) -> String {
    let cap = w
        .cap
        .map(|c| format!(" (PROF_WINDOWS={c})"))
        .unwrap_or_default();
    let compared = match (&w.baseline, &w.recent) {
        (Some(b), Some(r)) => format!(
            "drift: recent {} against baseline {}, by prof diff's statistics (threshold {}, \
             alpha {})",
            span(r),
            span(b),
            percent(w.threshold),
            w.alpha
        ),
        _ => format!("drift: {}", w.note.as_deref().unwrap_or("no comparison")),
    };
    format!(
        "windows: {} kept of {} closed{cap}, {} iterations each; {compared}",
        w.kept, w.closed, w.iterations_per_window
    )
}

fn span(s: &drift::Span) -> String {
    if s.first == s.last {
        format!("window {}", s.first)
    } else {
        format!("windows {}-{} ({})", s.first, s.last, s.windows)
    }
}

/// The drift cell: `SLOWER +20.1% (95% CI +15.0% .. +25.3%)`, `stable`, or `-`.
fn drift_cell(s: &drift::Series, alpha: f64) -> String {
    let change = |r: f64| {
        if r.is_finite() {
            signed_percent(r - 1.0)
        } else {
            "-".to_owned()
        }
    };
    match (s.drift, &s.comparison) {
        (drift::DriftStatus::Slower | drift::DriftStatus::Faster, Some(c)) => format!(
            "{} {} ({:.0}% CI {} .. {})",
            s.drift.as_str().to_uppercase(),
            change(c.ratio),
            100.0 * (1.0 - alpha),
            change(c.ci_low),
            change(c.ci_high)
        ),
        (drift::DriftStatus::Stable, _) => "stable".to_owned(),
        _ => "-".to_owned(),
    }
}

fn windows_rows(w: &drift::Windows) -> Vec<Vec<String>> {
    let known = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| human_ns(v as f64));
    std::iter::once(&w.iteration)
        .chain(&w.events)
        .map(|s| {
            // Only the iteration's series has no order.
            let mut cells = text::identity_cells(&s.identity, s.order.is_none());
            cells.extend([
                drift::sparkline(&s.medians_ns),
                known(s.first_median_ns),
                known(s.last_median_ns),
                s.change
                    .map(signed_percent)
                    .unwrap_or_else(|| "-".to_owned()),
                drift_cell(s, w.alpha),
            ]);
            cells
        })
        .collect()
}

/// `drifted: top_mlp/bwd top_backward (slower), ... (2 of 25 events)` or `no event drifted`.
fn drifted_line(w: &drift::Windows) -> String {
    let drifted: Vec<String> = w
        .drifted()
        .map(|s| format!("{} ({})", s.identity.label(), s.drift.as_str()))
        .collect();
    if w.baseline.is_none() {
        "no drift verdict: not enough windows yet".to_owned()
    } else if drifted.is_empty() {
        format!("no event drifted ({} events compared)", w.events.len())
    } else {
        format!(
            "! drifted: {} ({} of {} events)",
            drifted.join(", "),
            drifted.len(),
            w.events.len()
        )
    }
}

pub(super) const CSV_HEADERS: [&str; 26] = [
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

/// The columns a report with windows adds to [`CSV_HEADERS`].
pub(super) const WINDOW_CSV_HEADERS: [&str; 7] = [
    "window",
    "first_iteration",
    "drift",
    "drift_ratio",
    "drift_ci_low",
    "drift_ci_high",
    "drift_p_adjusted",
];

/// The header row: [`CSV_HEADERS`], and [`WINDOW_CSV_HEADERS`] for a report with windows.
fn csv_headers(windows: bool) -> Vec<&'static str> {
    let mut headers = CSV_HEADERS.to_vec();
    if windows {
        headers.extend(WINDOW_CSV_HEADERS);
    }
    headers
}

/// The [`WINDOW_CSV_HEADERS`] cells of the event of `order`: its drift verdict and comparison
/// (the window columns stay empty on an event row); none without windows.
fn drift_csv(windows: Option<&drift::Windows>, order: u32) -> Vec<String> {
    let Some(w) = windows else {
        return Vec::new();
    };
    let mut cells = vec![String::new(); 2];
    match w.events.iter().find(|s| s.order == Some(order)) {
        Some(s) => {
            cells.push(s.drift.as_str().to_owned());
            let c = s.comparison.as_ref();
            for v in [
                c.map(|c| c.ratio),
                c.map(|c| c.ci_low),
                c.map(|c| c.ci_high),
                c.map(|c| c.p_adjusted),
            ] {
                cells.push(v.map(|v| num(v, 6)).unwrap_or_default());
            }
        }
        None => cells.extend(std::iter::repeat_n(String::new(), 5)),
    }
    cells
}

/// The [`CSV_HEADERS`] cells of an event row (the group columns empty).
fn event_csv(e: &EventRow) -> Vec<String> {
    let mut cells = vec!["event".to_owned(), e.order.to_string()];
    cells.extend(text::identity_csv(&e.identity));
    cells.extend([
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
    ]);
    cells
}

/// A group row, `width` cells: only the columns a group has are filled.
fn group_csv(g: &GroupRow, width: usize) -> Vec<String> {
    let mut cells = vec![String::new(); width];
    cells[0] = "group".to_owned();
    cells[11] = num(g.calls_per_iter, 6);
    cells[19] = num(g.total_ns, 3);
    cells[20] = num(g.self_ns, 3);
    cells[21] = num(g.share, 6);
    cells[24] = text::csv_field(&g.key);
    cells[25] = g.events.to_string();
    cells
}

/// The `window` rows, `width` cells each: per series (the iteration first) and window where it
/// was measured, its identity, the window and its median there.
fn window_csv(w: &drift::Windows, width: usize) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for s in std::iter::once(&w.iteration).chain(&w.events) {
        for (k, median) in s.medians_ns.iter().enumerate() {
            let Some(median) = median else { continue };
            let mut cells = vec![String::new(); width];
            cells[0] = "window".to_owned();
            cells[1] = s.order.map(|o| o.to_string()).unwrap_or_default();
            cells.splice(2..7, text::identity_csv(&s.identity));
            cells[12] = median.to_string();
            cells[26] = w.indices[k].to_string();
            cells[27] = w.first_iterations[k].to_string();
            rows.push(cells);
        }
    }
    rows
}

/// The [`MEMORY_CSV_HEADERS`] cells of an event row (empty without figures).
fn memory_csv(e: &EventRow) -> Vec<String> {
    match &e.memory {
        Some(m) => [m.alloc_bytes, m.freed_bytes, m.allocs, m.peak_bytes]
            .map(|v| num(v, 1))
            .to_vec(),
        None => vec![String::new(); MEMORY_CSV_HEADERS.len()],
    }
}

/// The [`DEVICE_CSV_HEADERS`] cells of an event row: its device memory (empty without it),
/// the `device` rows' columns empty.
fn device_csv(e: &EventRow) -> Vec<String> {
    let mut cells = vec![String::new(); DEVICE_CSV_HEADERS.len()];
    if let Some(d) = &e.device_memory {
        cells[0] = num(d.used_bytes, 1);
        cells[1] = num(d.change_bytes, 1);
    }
    cells
}

/// The `device` rows, `width` cells each: per device, its memory over the steps in the last
/// five columns.
fn device_rows_csv(report: &Report, width: usize) -> Vec<Vec<String>> {
    report
        .device_memory
        .iter()
        .map(|d| {
            let mut cells = vec![String::new(); width];
            cells[0] = "device".to_owned();
            let tail = [
                d.device as u64,
                d.steps,
                d.min_bytes,
                d.max_bytes,
                d.last_bytes,
            ];
            cells.splice(width - tail.len().., tail.map(|v| v.to_string()));
            cells
        })
        .collect()
}

fn render_csv(report: &Report) -> String {
    let windows = report.windows.as_ref();
    let columns = Columns::of(report);
    let device = columns.device || !report.device_memory.is_empty();
    let mut headers = csv_headers(windows.is_some());
    if columns.memory {
        headers.extend(MEMORY_CSV_HEADERS);
    }
    if device {
        headers.extend(DEVICE_CSV_HEADERS);
    }
    let width = headers.len();
    let mut rows: Vec<Vec<String>> = report
        .events
        .iter()
        .map(|e| {
            let mut cells = event_csv(e);
            cells.extend(drift_csv(windows, e.order));
            if columns.memory {
                cells.extend(memory_csv(e));
            }
            if device {
                cells.extend(device_csv(e));
            }
            cells
        })
        .collect();
    rows.extend(report.groups.iter().map(|g| group_csv(g, width)));
    if let Some(w) = windows {
        rows.extend(window_csv(w, width));
    }
    if device {
        rows.extend(device_rows_csv(report, width));
    }
    let mut out = headers.join(",") + "\n";
    for cells in rows {
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

pub(super) fn md_table(headers: &[&str], rows: &[Vec<String>], left: usize) -> Vec<String> {
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
        text::md_cell(&perturbation_line(
            &report.mode,
            report.perturbation.as_ref(),
        )),
        String::new(),
    ];
    for line in device_lines(report) {
        lines.push(text::md_cell(&line));
        lines.push(String::new());
    }
    let columns = Columns::of(report);
    let rows: Vec<Vec<String>> = report
        .events
        .iter()
        .map(|e| event_row(e, false, columns))
        .collect();
    let mut headers = event_headers(columns);
    if let Some(last) = headers.last_mut() {
        *last = "noisy";
    }
    lines.extend(md_table(&headers, &rows, 3));
    if !report.groups.is_empty() {
        lines.push(String::new());
        let rows: Vec<Vec<String>> = report.groups.iter().map(group_cells).collect();
        lines.extend(md_table(&GROUP_HEADERS, &rows, 1));
    }
    if let Some(b) = &report.breakdown {
        lines.push(String::new());
        lines.extend(super::breakdown::lines(b, true).into_iter().map(|l| {
            if l.starts_with('|') {
                l
            } else {
                text::md_cell(&l)
            }
        }));
    }
    lines.push(String::new());
    lines.push(text::md_cell(&legend(report)));
    if let Some(w) = &report.windows {
        lines.push(String::new());
        lines.push(format!("**{}**", text::md_cell(&windows_line(w))));
        lines.push(String::new());
        lines.extend(md_table(&WINDOW_HEADERS, &windows_rows(w), 5));
        lines.push(String::new());
        lines.push(text::md_cell(&drifted_line(w)));
    }
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
