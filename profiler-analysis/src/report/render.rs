//! Rendering a [`Report`] as a table, CSV, JSON or Markdown, and the end-of-run summary.

use super::*;
use profiler_tables::columns::{self, calls, Families, Place};
use profiler_tables::summary::{perturbation_line, status, status_in};
use profiler_tables::table_text::human_ns;
use profiler_tables::table_text::{num, percent, signed_percent};

/// Aligned lines: the first `left` columns left-aligned, the others right-aligned; each line
/// starts with two spaces.
fn aligned(headers: &[&str], rows: &[Vec<String>], left: usize) -> Vec<String> {
    text::aligned(headers, rows, left)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn headline(report: &Report) -> String {
    let it = &report.iteration;
    let program = text::printable(&report.program);
    if report.mode == "continuous" {
        return format!(
            "{}: continuous mode, {} iterations ({} warmup); {} {} iterations (from iteration \
             {}) and {} events below, {}",
            program,
            it.count,
            it.warmup,
            // A complete run closed a window (PROF_WINDOWS is at least 1).
            if report.windows_kept == 0 && !report.complete {
                "no window closed: the open window's"
            } else {
                "the last window's"
            },
            it.measured,
            it.first,
            report.events.len(),
            status_in(&report.mode, report.complete, report.windows_kept)
        );
    }
    format!(
        "{}: {} mode, {} iterations ({} warmup, {} measured), {} events, {}",
        program,
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

const GROUP_HEADERS: [&str; 6] = ["group", "events", "calls", "total", "self", "share"];

/// Bytes in human units, `-` for none.
fn bytes(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), profiler_tables::table_text::human_bytes)
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

/// The table of the events split by input shape (`shape` key): one row per shape kept and one
/// for the others, beside the event's name; `None` when no event has shapes. The headers and
/// the cells as `prof report` prints them (the HTML page shows the same texts).
pub fn shape_table(report: &Report) -> Option<(Vec<&'static str>, Vec<Vec<String>>)> {
    use profiler_tables::work::{human_rate, utilization};
    let events: Vec<&EventRow> = report
        .events
        .iter()
        .filter(|e| !e.shapes.is_empty())
        .collect();
    if events.is_empty() {
        return None;
    }
    let work = events
        .iter()
        .flat_map(|e| &e.shapes)
        .any(|s| s.work.is_some());
    let mut headers = vec![
        "layer", "phase", "name", "occ", "shape", "samples", "median", "p90",
    ];
    if work {
        headers.extend(["FLOP/s", "B/s", "MFU"]);
    }
    let mut rows = Vec::new();
    for e in events {
        for s in &e.shapes {
            let id = &e.identity;
            let shape = if s.shape == profiler_tables::shapes::OTHERS {
                let plural = if s.shapes == 1 { "" } else { "s" };
                format!("{} ({} shape{plural})", s.shape, s.shapes)
            } else {
                s.shape.clone()
            };
            let mut row = vec![
                id.layer.clone().unwrap_or_else(|| "-".to_owned()),
                id.phase.clone().unwrap_or_else(|| "-".to_owned()),
                id.display_name().into_owned(),
                id.occurrence.to_string(),
                shape,
                s.samples.to_string(),
                human_ns(s.median_ns),
                human_ns(s.p90_ns),
            ];
            if work {
                let w = s.work.as_ref();
                let rate = |r: Option<profiler_tables::work::Rate>| {
                    r.map_or_else(|| "-".to_owned(), |r| human_rate(r.median))
                };
                row.push(rate(w.and_then(|w| w.flops_per_s)));
                row.push(rate(w.and_then(|w| w.bytes_per_s)));
                row.push(
                    w.and_then(|w| w.mfu)
                        .map_or_else(|| "-".to_owned(), utilization),
                );
            }
            rows.push(row);
        }
    }
    Some((headers, rows))
}

/// The line above the shape table.
const SHAPE_TITLE: &str = "by input shape (`shape` key; PROF_SHAPES bounds the shapes kept \
                           per event, the rest are `others`):";

const BEFORE_LOOP_TITLE: &str = "ran before the loop (seen only before the first step(): not \
                                 scheduled; each one's first run, and when it started):";

const BEFORE_LOOP_HEADERS: [&str; 6] = ["layer", "phase", "name", "occ", "time", "start"];

/// The rows of the events that ran only before the loop.
fn before_loop_rows(report: &Report) -> Vec<Vec<String>> {
    let ns = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |ns| human_ns(ns as f64));
    report
        .before_loop
        .iter()
        .map(|b| {
            vec![
                b.layer.clone().unwrap_or_else(|| "-".to_owned()),
                b.phase.clone().unwrap_or_else(|| "-".to_owned()),
                b.name.clone(),
                if b.merged {
                    format!("{}+", b.occurrence)
                } else {
                    b.occurrence.to_string()
                },
                ns(b.duration_ns),
                ns(b.offset_ns),
            ]
        })
        .collect()
}

/// The `before_loop` rows of the CSV: each event's identity, and its one run as its only sample
/// (`samples` 1, or 0 when it was not timed).
fn before_loop_csv(report: &Report, headers: &[&str]) -> Vec<Vec<String>> {
    let at = |header: &str| headers.iter().position(|h| *h == header);
    report
        .before_loop
        .iter()
        .map(|b| {
            let mut cells = vec![String::new(); headers.len()];
            let mut set = |header: &str, value: String| {
                if let Some(i) = at(header) {
                    cells[i] = value;
                }
            };
            set("row_type", "before_loop".to_owned());
            set("id", text::csv_field(&b.id));
            set("name", text::csv_field(&b.name));
            set("layer", text::csv_field(b.layer.as_deref().unwrap_or("")));
            set("phase", text::csv_field(b.phase.as_deref().unwrap_or("")));
            set("occurrence", b.occurrence.to_string());
            set("merged", b.merged.to_string());
            set("samples", u8::from(b.duration_ns.is_some()).to_string());
            if let Some(ns) = b.duration_ns {
                for column in ["median_ns", "mean_ns", "min_ns", "max_ns"] {
                    set(column, ns.to_string());
                }
            }
            cells
        })
        .collect()
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
    let place = Place::Report {
        indent: in_execution_order(report),
    };
    let families = families(report, false);
    let rows: Vec<Vec<String>> = report
        .events
        .iter()
        .map(|e| columns::cells(e, place, families))
        .collect();
    lines.extend(aligned(&columns::headers(place, families), &rows, 3));
    if !report.groups.is_empty() {
        lines.push(String::new());
        let rows: Vec<Vec<String>> = report.groups.iter().map(group_cells).collect();
        lines.extend(aligned(&GROUP_HEADERS, &rows, 1));
    }
    if let Some((headers, rows)) = shape_table(report) {
        lines.push(String::new());
        lines.push(SHAPE_TITLE.to_owned());
        lines.extend(aligned(&headers, &rows, 5));
    }
    if !report.before_loop.is_empty() {
        lines.push(String::new());
        lines.push(BEFORE_LOOP_TITLE.to_owned());
        lines.extend(aligned(&BEFORE_LOOP_HEADERS, &before_loop_rows(report), 3));
    }
    if let Some(b) = &report.breakdown {
        lines.push(String::new());
        lines.extend(super::breakdown_section::lines(b, false));
    }
    lines.push(String::new());
    lines.push(legend(report));
    if let Some(work) = &report.work {
        lines.push(work.clone());
    }
    lines.push(String::new());
    lines.extend(advice_lines(report));
    if let Some(w) = &report.windows {
        lines.push(String::new());
        lines.push(windows_line(w));
        lines.push(drift_line(w));
        let rows = windows_rows(w);
        lines.extend(aligned(&WINDOW_HEADERS, &rows, 5));
        lines.push(drifted_line(w));
    }
    lines.join("\n") + "\n"
}

/// The advice section: a title, then one line per finding (`prof advise`'s first lines).
fn advice_lines(report: &Report) -> Vec<String> {
    if report.advice.is_empty() {
        return vec![
            "what to do about it: no rule fired (`prof advise` lists the rules)".to_owned(),
        ];
    }
    let mut lines = vec![format!(
        "what to do about it ({} finding{}, the most time at stake first; `prof advise` for the \
         evidence and what to try):",
        report.advice.len(),
        if report.advice.len() == 1 { "" } else { "s" }
    )];
    lines.extend(
        report
            .advice
            .iter()
            .map(|f| format!("  {}", f.line(report.iteration.mean_ns))),
    );
    lines
}

const WINDOW_HEADERS: [&str; 11] = [
    "layer",
    "phase",
    "name",
    "occ",
    "median per window",
    "first",
    "last",
    "change",
    "drift",
    "since start",
    "recent past",
];

/// `windows: 13 kept of 40 closed (the first 3, and the last 10: PROF_WINDOWS=10), 500
/// iterations each`.
fn windows_line(w: &drift::Windows) -> String {
    let cap = w
        .cap
        .map(|c| format!("PROF_WINDOWS={c}"))
        .unwrap_or_default();
    let which = match (w.baseline_windows, cap.is_empty()) {
        (0, true) => String::new(),
        (0, false) => format!(" ({cap})"),
        (b, true) => format!(" (the first {b}, and the last {})", w.kept - b),
        (b, false) => format!(" (the first {b}, and the last {}: {cap})", w.kept - b),
    };
    format!(
        "windows: {} kept of {} closed{which}, {} iterations each",
        w.kept, w.closed, w.iterations_per_window
    )
}

/// `drift: the change points of each series of fastest-5% times per window (...); and the
/// recent windows 38-39 (2): since the start, against the baseline windows 0-2 (3); in the
/// recent past, against windows 3-7 (5); by prof diff's statistics`, and why a comparison is
/// missing.
pub fn drift_line(w: &drift::Windows) -> String {
    let changes = format!(
        "drift: the change points of each series of fastest-5% times per window (at least {} \
         windows; threshold {}, alpha {}, Holm over the series; intervals {:.0}%)",
        drift::MIN_CHANGE_WINDOWS,
        percent(w.threshold),
        w.alpha,
        100.0 * (1.0 - w.alpha)
    );
    let Some(recent) = &w.recent else {
        return format!("{changes}; {}", w.notes.join("; "));
    };
    let mut parts = Vec::new();
    if let Some(start) = &w.start {
        parts.push(format!(
            "since the start, against the baseline {}",
            span(start)
        ));
    }
    if let Some(earlier) = &w.earlier {
        parts.push(format!("in the recent past, against {}", span(earlier)));
    }
    parts.extend(w.notes.iter().cloned());
    format!(
        "{changes}; and the recent {}: {}; by prof diff's statistics",
        span(recent),
        parts.join("; "),
    )
}

/// A change point: `slower from window 12 (iteration 3010): +20.1% (95% CI +18.0% .. +22.3%)`,
/// with `after window 2, the windows between not kept` when windows were dropped before it.
pub fn change_point_text(c: &drift::ChangePoint, alpha: f64) -> String {
    let change = crate::diff::change;
    let gap = if c.index > c.previous_index + 1 {
        format!(
            ", after window {}: those between not kept",
            c.previous_index
        )
    } else {
        String::new()
    };
    format!(
        "{} from window {} (iteration {}{gap}): {} ({:.0}% CI {} .. {})",
        c.drift.as_str(),
        c.index,
        c.first_iteration,
        change(c.ratio),
        100.0 * (1.0 - alpha),
        change(c.ci_low),
        change(c.ci_high)
    )
}

/// The headline drift cell of a series, short enough for a table cell (the drifted line
/// below the table has the full text): its change point (`SLOWER from window 12 (it. 3010):
/// +20.1% (+18.0% .. +22.3%)`, the interval at `1 - alpha`; `, +1 more` when binary
/// segmentation found others), `stable`, `inconclusive (window 7?: +1.2% (-0.8% .. +3.2%))`
/// (the most likely change, not ruled out); where the series has too few windows for change
/// points, the comparison's cell and which one it is; or `-`.
pub fn headline_cell(s: &drift::Series, alpha: f64) -> String {
    let change = crate::diff::change;
    match s.drift_basis {
        drift::Basis::ChangePoints => match (&s.change_point, &s.most_likely_change) {
            (Some(c), _) => {
                let more = s.change_points.len().saturating_sub(1);
                format!(
                    "{} from window {} (it. {}): {} ({} .. {}){}",
                    c.drift.as_str().to_uppercase(),
                    c.index,
                    c.first_iteration,
                    change(c.ratio),
                    change(c.ci_low),
                    change(c.ci_high),
                    if more > 0 {
                        format!(", +{more} more")
                    } else {
                        String::new()
                    }
                )
            }
            (None, Some(m)) if s.drift == drift::DriftStatus::Inconclusive => format!(
                "inconclusive (window {}?: {} ({} .. {}))",
                m.index,
                change(m.ratio),
                change(m.ci_low),
                change(m.ci_high)
            ),
            _ => s.drift.as_str().to_owned(),
        },
        drift::Basis::Comparison => {
            let j = drift::Judgement {
                comparison: s.comparison.clone(),
                drift: s.drift,
            };
            match s.drift_against {
                Some(a) => format!("{} {}", drift_cell(&j, alpha), a.phrase()),
                None => drift_cell(&j, alpha),
            }
        }
        drift::Basis::None => "-".to_owned(),
    }
}

fn span(s: &drift::Span) -> String {
    if s.first == s.last {
        format!("window {}", s.first)
    } else {
        format!("windows {}-{} ({})", s.first, s.last, s.windows)
    }
}

/// A drift cell: `SLOWER +20.1% (95% CI +15.0% .. +25.3%)`, `stable`, `inconclusive (95% CI
/// -4.0% .. +5.1%)` (a drift of the threshold's size not ruled out), or `-`.
pub fn drift_cell(j: &drift::Judgement, alpha: f64) -> String {
    // From 10 times on as a factor, past 100 times `>x100`, where a percentage is only noise.
    let change = crate::diff::change;
    match (j.drift, &j.comparison) {
        (drift::DriftStatus::Slower | drift::DriftStatus::Faster, Some(c)) => format!(
            "{} {} ({:.0}% CI {} .. {})",
            j.drift.as_str().to_uppercase(),
            change(c.ratio),
            100.0 * (1.0 - alpha),
            change(c.ci_low),
            change(c.ci_high)
        ),
        (drift::DriftStatus::Stable, _) => "stable".to_owned(),
        // Significant alone, not once adjusted over every series compared (Holm): the
        // interval, the series' alone, may exclude no drift; the adjusted p-value says why the
        // verdict is inconclusive all the same.
        (drift::DriftStatus::Inconclusive, Some(c))
            if c.ci_low.is_finite() && c.p_value < alpha && c.p_adjusted >= alpha =>
        {
            format!(
                "inconclusive (p adj {}; {:.0}% CI {} .. {})",
                p_adjusted_text(c.p_adjusted),
                100.0 * (1.0 - alpha),
                change(c.ci_low),
                change(c.ci_high)
            )
        }
        (drift::DriftStatus::Inconclusive, Some(c)) if c.ci_low.is_finite() => format!(
            "inconclusive ({:.0}% CI {} .. {})",
            100.0 * (1.0 - alpha),
            change(c.ci_low),
            change(c.ci_high)
        ),
        (drift::DriftStatus::Inconclusive, _) => "inconclusive".to_owned(),
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
                w.sparkline(s),
                known(s.first_median_ns),
                known(s.last_median_ns),
                s.change
                    .map(signed_percent)
                    .unwrap_or_else(|| "-".to_owned()),
                headline_cell(s, w.alpha),
                drift_cell(&s.since_start, w.alpha),
                drift_cell(&s.recent_past, w.alpha),
            ]);
            cells
        })
        .collect()
}

/// What `s` drifted by: `slower from window 12 (iteration 3010): +20.1% (...)` (each change
/// point), or, with too few windows for change points, `slower since the start`.
fn drifted_how(s: &drift::Series, alpha: f64) -> String {
    if s.drift_basis == drift::Basis::ChangePoints {
        return s
            .change_points
            .iter()
            .map(|c| change_point_text(c, alpha))
            .collect::<Vec<_>>()
            .join("; ");
    }
    s.drift_against
        .map(|a| format!("{} {}", s.drift.as_str(), a.phrase()))
        .unwrap_or_default()
}

/// A p-value in three significant digits, `<1e-4` below.
fn p_adjusted_text(p: f64) -> String {
    if p < 1e-4 {
        "<1e-4".to_owned()
    } else {
        format!("{p:.3}")
    }
}

/// `! drifted: top_mlp/bwd top_backward (slower since the start), ... (2 of 25 events)` or
/// `no event drifted`, saying which events are inconclusive (a drift of the threshold's size
/// could have gone unseen in them).
pub fn drifted_line(w: &drift::Windows) -> String {
    let drifted: Vec<String> = w
        .drifted()
        .map(|s| format!("{} ({})", text::label(&s.identity), drifted_how(s, w.alpha)))
        .collect();
    // Inconclusive, but significant alone: a drift is likely, not shown once adjusted for the
    // series compared, rather than one that could have gone unseen.
    let beyond = |s: &&drift::Series| {
        s.comparison
            .as_ref()
            .is_some_and(|c| c.p_value < w.alpha && c.p_adjusted >= w.alpha)
    };
    let inconclusive: Vec<String> = w
        .events
        .iter()
        .filter(|s| s.drift == drift::DriftStatus::Inconclusive && !beyond(s))
        .map(|s| text::label(&s.identity))
        .collect();
    let unshown: Vec<String> = w
        .events
        .iter()
        .filter(|s| s.drift == drift::DriftStatus::Inconclusive && beyond(s))
        .map(|s| text::label(&s.identity))
        .collect();
    // Without windows after the baseline ones there is no recent side, but from 12 windows on
    // the change points still judge each series: only when no series has a verdict is there
    // none (before, this line said so beside a table of SLOWER verdicts).
    let judged = w.iteration.drift != drift::DriftStatus::Unknown
        || w.events
            .iter()
            .any(|s| s.drift != drift::DriftStatus::Unknown);
    let listed = |names: &[String]| {
        let shown = names.len().min(5);
        format!(
            "{}{}",
            names[..shown].join(", "),
            if names.len() > shown {
                format!(", +{} more", names.len() - shown)
            } else {
                String::new()
            }
        )
    };
    if w.recent.is_none() && !judged {
        "no drift verdict: not enough windows yet".to_owned()
    } else if drifted.is_empty() && !unshown.is_empty() {
        format!(
            "? no event drifted by the test over all {} series, but {} of them changed by its \
             own test, not once adjusted for the series compared (p adj above {}: a drift is \
             likely, not shown; more windows or a larger PROF_REPEAT settle it): {}{}",
            w.events.len() + 1,
            unshown.len(),
            w.alpha,
            listed(&unshown),
            if inconclusive.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} more inconclusive (a drift of {:.1}% could have gone unseen): {}",
                    inconclusive.len(),
                    100.0 * w.threshold,
                    listed(&inconclusive)
                )
            }
        )
    } else if drifted.is_empty() && !inconclusive.is_empty() {
        let shown = inconclusive.len().min(5);
        format!(
            "? no event drifted, but {} of {} events are inconclusive (a drift of {:.1}% could \
             have gone unseen in their windows: too few or too scattered samples; a larger \
             PROF_REPEAT or --drift-threshold settles it): {}{}",
            inconclusive.len(),
            w.events.len(),
            100.0 * w.threshold,
            inconclusive[..shown].join(", "),
            if inconclusive.len() > shown {
                format!(", +{} more", inconclusive.len() - shown)
            } else {
                String::new()
            }
        )
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

/// The columns a report with windows adds to the base CSV columns: on a window row, the window;
/// on an event row, its headline drift, which comparison that is, and both comparisons.
pub(super) const WINDOW_CSV_HEADERS: [&str; 19] = [
    "window",
    "first_iteration",
    "baseline_window",
    "drift",
    "drift_against",
    "drift_ratio",
    "drift_ci_low",
    "drift_ci_high",
    "drift_p_adjusted",
    "start_drift",
    "start_ratio",
    "start_ci_low",
    "start_ci_high",
    "start_p_adjusted",
    "recent_past_drift",
    "recent_past_ratio",
    "recent_past_ci_low",
    "recent_past_ci_high",
    "recent_past_p_adjusted",
];

/// The header row: the base event columns, [`WINDOW_CSV_HEADERS`] for a report with windows,
/// and the memory and device columns of the `families` the report has.
fn csv_headers(windows: bool, families: Families) -> Vec<&'static str> {
    let all = columns::headers(Place::Csv, families);
    let base = columns::headers(Place::Csv, Families::default()).len();
    let mut headers = all[..base].to_vec();
    if windows {
        headers.extend(WINDOW_CSV_HEADERS);
    }
    headers.extend_from_slice(&all[base..]);
    headers
}

/// A verdict and its comparison's ratio, interval and adjusted p-value, as CSV cells.
fn judgement_csv(drift: drift::DriftStatus, c: Option<&crate::diff::EventDiff>) -> [String; 5] {
    let cell = |v: Option<f64>| v.map(|v| num(v, 6)).unwrap_or_default();
    [
        drift.as_str().to_owned(),
        cell(c.map(|c| c.ratio)),
        cell(c.map(|c| c.ci_low)),
        cell(c.map(|c| c.ci_high)),
        cell(c.map(|c| c.p_adjusted)),
    ]
}

/// The [`WINDOW_CSV_HEADERS`] cells of the event of `order`: its drift verdicts and comparisons
/// (the window columns stay empty on an event row); none without windows.
fn drift_csv(windows: Option<&drift::Windows>, order: u32) -> Vec<String> {
    let Some(w) = windows else {
        return Vec::new();
    };
    let mut cells = vec![String::new(); 3];
    match w.events.iter().find(|s| s.order == Some(order)) {
        Some(s) => {
            let [drift, rest @ ..] = judgement_csv(s.drift, s.comparison.as_ref());
            cells.push(drift);
            cells.push(match (s.drift_basis, s.drift_against) {
                (drift::Basis::ChangePoints, _) => "change_point".to_owned(),
                (_, Some(drift::Against::Start)) => "start".to_owned(),
                (_, Some(drift::Against::RecentPast)) => "recent_past".to_owned(),
                (_, None) => String::new(),
            });
            // On change points: the headline change, else the most likely one.
            match s.change_point.as_ref().or(s.most_likely_change.as_ref()) {
                Some(c) if s.drift_basis == drift::Basis::ChangePoints => {
                    cells.extend([c.ratio, c.ci_low, c.ci_high, c.p_adjusted].map(|v| num(v, 6)));
                }
                _ => cells.extend(rest),
            }
            for j in [&s.since_start, &s.recent_past] {
                cells.extend(judgement_csv(j.drift, j.comparison.as_ref()));
            }
        }
        None => cells.extend(std::iter::repeat_n(String::new(), 16)),
    }
    cells
}

/// A group row, `width` cells: only the columns a group has are filled.
fn group_csv(g: &GroupRow, width: usize) -> Vec<String> {
    let mut cells = vec![String::new(); width];
    let mut set = |header: &str, value: String| cells[csv_at(header)] = value;
    set("row_type", "group".to_owned());
    set("calls_per_iter", num(g.calls_per_iter, 6));
    set("total_ns", num(g.total_ns, 3));
    set("self_ns", num(g.self_ns, 3));
    set("share", num(g.share, 6));
    set("group", text::csv_field(&g.key));
    set("events", g.events.to_string());
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
            let mut set = |header: &str, value: String| cells[csv_at(header)] = value;
            set("row_type", "window".to_owned());
            set("order", s.order.map(|o| o.to_string()).unwrap_or_default());
            let [id, name, layer, phase, occurrence] = text::identity_csv(&s.identity);
            set("id", id);
            set("name", name);
            set("layer", layer);
            set("phase", phase);
            set("occurrence", occurrence);
            set("median_ns", median.to_string());
            // The window columns follow the base ones.
            let base = columns::headers(Place::Csv, Families::default()).len();
            cells[base] = w.indices[k].to_string();
            cells[base + 1] = w.first_iterations[k].to_string();
            cells[base + 2] = (k < w.baseline_windows).to_string();
            rows.push(cells);
        }
    }
    rows
}

/// The `device` rows, `width` cells each (`headers` names them): per device, its memory over
/// the steps.
fn device_rows_csv(report: &Report, headers: &[&str]) -> Vec<Vec<String>> {
    let at = |header: &str| headers.iter().position(|h| *h == header);
    report
        .device_memory
        .iter()
        .map(|d| {
            let mut cells = vec![String::new(); headers.len()];
            cells[0] = "device".to_owned();
            for (header, value) in [
                ("device", d.device as u64),
                ("device_steps", d.steps),
                ("device_min_bytes", d.min_bytes),
                ("device_max_bytes", d.max_bytes),
                ("device_last_bytes", d.last_bytes),
            ] {
                if let Some(i) = at(header) {
                    cells[i] = value.to_string();
                }
            }
            cells
        })
        .collect()
}

/// The `shape` rows: per event with a `shape` key, one per shape of its table (and `others`),
/// with the event's identity, the shape, its samples, median, p90 and, with work, its rates.
fn shape_rows_csv(report: &Report, headers: &[&str]) -> Vec<Vec<String>> {
    let at = |header: &str| headers.iter().position(|h| *h == header);
    let mut rows = Vec::new();
    for e in &report.events {
        for s in &e.shapes {
            let mut cells = vec![String::new(); headers.len()];
            let mut set = |header: &str, value: String| {
                if let Some(i) = at(header) {
                    cells[i] = value;
                }
            };
            let id = &e.identity;
            set("row_type", "shape".to_owned());
            set("order", e.order.to_string());
            set("id", text::csv_field(&id.id));
            set("name", text::csv_field(&id.name));
            set("layer", text::csv_field(id.layer.as_deref().unwrap_or("")));
            set("phase", text::csv_field(id.phase.as_deref().unwrap_or("")));
            set("occurrence", id.occurrence.to_string());
            set("samples", s.samples.to_string());
            set("median_ns", num(s.median_ns, 3));
            set("p90_ns", num(s.p90_ns, 3));
            set("shape", text::csv_field(&s.shape));
            set("events", s.shapes.to_string());
            if let Some(w) = &s.work {
                let rate =
                    |r: Option<profiler_tables::work::Rate>,
                     pick: fn(&profiler_tables::work::Rate) -> f64| {
                        r.map_or_else(String::new, |r| num(pick(&r), 0))
                    };
                set("flops_per_s", rate(w.flops_per_s, |r| r.median));
                set("flops_per_s_low", rate(w.flops_per_s, |r| r.low));
                set("flops_per_s_high", rate(w.flops_per_s, |r| r.high));
                set("bytes_per_s", rate(w.bytes_per_s, |r| r.median));
                set("bytes_per_s_low", rate(w.bytes_per_s, |r| r.low));
                set("bytes_per_s_high", rate(w.bytes_per_s, |r| r.high));
                set(
                    "intensity",
                    w.intensity.map_or_else(String::new, |v| num(v, 6)),
                );
                set(
                    "bound",
                    w.bound.map_or_else(String::new, |b| b.as_str().to_owned()),
                );
                set("mfu", w.mfu.map_or_else(String::new, |v| num(v, 4)));
            }
            rows.push(cells);
        }
    }
    rows
}

fn render_csv(report: &Report) -> String {
    let windows = report.windows.as_ref();
    let families = families(report, true);
    let headers = csv_headers(windows.is_some(), families);
    let width = headers.len();
    let base = columns::headers(Place::Csv, Families::default()).len();
    let mut rows: Vec<Vec<String>> = report
        .events
        .iter()
        .map(|e| {
            let all = columns::cells(e, Place::Csv, families);
            let (mut cells, memory_cells) = (all[..base].to_vec(), &all[base..]);
            cells.extend(drift_csv(windows, e.order));
            cells.extend_from_slice(memory_cells);
            cells
        })
        .collect();
    rows.extend(shape_rows_csv(report, &headers));
    rows.extend(before_loop_csv(report, &headers));
    rows.extend(report.groups.iter().map(|g| group_csv(g, width)));
    if let Some(w) = windows {
        rows.extend(window_csv(w, width));
    }
    rows.extend(device_rows_csv(report, &headers));
    let mut out = headers.join(",") + "\n";
    for cells in rows {
        out.push_str(&cells.join(","));
        out.push('\n');
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
    let families = families(report, false);
    let place = Place::Report { indent: false };
    let rows: Vec<Vec<String>> = report
        .events
        .iter()
        .map(|e| columns::cells(e, place, families))
        .collect();
    let mut headers = columns::headers(place, families);
    if let Some(last) = headers.last_mut() {
        *last = "noisy";
    }
    lines.extend(text::md_table(&headers, &rows, 3));
    if !report.groups.is_empty() {
        lines.push(String::new());
        let rows: Vec<Vec<String>> = report.groups.iter().map(group_cells).collect();
        lines.extend(text::md_table(&GROUP_HEADERS, &rows, 1));
    }
    if let Some((headers, rows)) = shape_table(report) {
        lines.push(String::new());
        lines.push(text::md_cell(SHAPE_TITLE));
        lines.push(String::new());
        lines.extend(text::md_table(&headers, &rows, 5));
    }
    if !report.before_loop.is_empty() {
        lines.push(String::new());
        lines.push(text::md_cell(BEFORE_LOOP_TITLE));
        lines.push(String::new());
        let rows = before_loop_rows(report);
        lines.extend(text::md_table(&BEFORE_LOOP_HEADERS, &rows, 3));
    }
    if let Some(b) = &report.breakdown {
        lines.push(String::new());
        lines.extend(
            super::breakdown_section::lines(b, true)
                .into_iter()
                .map(|l| {
                    if l.starts_with('|') {
                        l
                    } else {
                        text::md_cell(&l)
                    }
                }),
        );
    }
    lines.push(String::new());
    lines.push(text::md_cell(&legend(report)));
    if let Some(work) = &report.work {
        lines.push(String::new());
        lines.push(text::md_cell(work));
    }
    lines.push(String::new());
    for (k, line) in advice_lines(report).into_iter().enumerate() {
        lines.push(if k == 0 {
            format!("**{}**", text::md_cell(&line))
        } else {
            format!("- {}", text::md_cell(line.trim_start()))
        });
    }
    if let Some(w) = &report.windows {
        lines.push(String::new());
        lines.push(format!("**{}**", text::md_cell(&windows_line(w))));
        lines.push(String::new());
        lines.push(text::md_cell(&drift_line(w)));
        lines.push(String::new());
        lines.extend(text::md_table(&WINDOW_HEADERS, &windows_rows(w), 5));
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
        Format::Table => text::for_terminal(render_table(report)),
        Format::Csv => render_csv(report),
        Format::Json => match serde_json::to_string_pretty(report) {
            Ok(s) => s + "\n",
            Err(e) => format!("{{\"error\": \"cannot encode the report: {e}\"}}\n"),
        },
        Format::Markdown => text::for_terminal(render_markdown(report)),
    }
}

/// The families of columns the report's tables have: memory when its events carry memory
/// figures, device memory when they carry device figures (in CSV, also when the profile lists
/// the devices' memory at the steps: the `device` rows need their columns).
fn families(report: &Report, csv: bool) -> Families {
    Families {
        memory: report.events.iter().any(|e| e.memory.is_some()),
        device: report.events.iter().any(|e| e.device_memory.is_some())
            || (csv && !report.device_memory.is_empty()),
        work: report.events.iter().any(|e| e.work.is_some()),
    }
}

/// The position of a base CSV column, by its header.
fn csv_at(header: &str) -> usize {
    columns::csv_index(header).unwrap_or_else(|| panic!("no CSV column {header}"))
}
