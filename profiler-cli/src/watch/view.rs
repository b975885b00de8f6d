//! Drawing a [`Watch`] into a ratatui [`Frame`]: the header (the run, its window, its
//! iterations and the file's age, with a warning when the job stopped rewriting it), the tabs
//! of the files followed, the table of [`Watch::rows`], the drift and breakdown lines, the
//! status line and the keys, and the help over it all. [`render_once`] draws one frame into a
//! buffer, as tall as what it shows, and returns it as text (`prof watch --once`).

use std::time::{Duration, SystemTime};

use ratatui::backend::TestBackend;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Clear, Paragraph, Row as TableRow, Table, Wrap};
use ratatui::{Frame, Terminal};

use profiler_analysis::drift::DriftStatus;
use profiler_analysis::report;
use profiler_analysis::{human_ns, percent, printable};

use super::model::{Rank, Row, RowKind, Snapshot, ViewMode, Watch, HELP};

/// A file not rewritten for this long, nor for three windows' time, is stale.
pub const STALE_AFTER: Duration = Duration::from_secs(10);

/// Draws the whole screen at time `now` (which the file's age is counted to).
pub fn draw(frame: &mut Frame, watch: &Watch, now: SystemTime) {
    draw_in(frame, watch, now, None);
}

/// How tall the parts of a frame drawn to fit its content are ([`render_once`]).
#[derive(Clone, Copy)]
struct Fit {
    /// The table's lines: its header and every row.
    body: u16,
    /// At least the summary's lines once wrapped.
    summary: u16,
}

/// The most rows `--once` prints of one table (a profile of a million events would make a
/// frame of a million lines, and a buffer of as many cells times the width).
const MAX_ONCE_ROWS: usize = 10_000;

/// Draws the screen (see [`draw`]); with `fit`, the table and the summary get the heights it
/// gives instead of sharing the screen's.
fn draw_in(frame: &mut Frame, watch: &Watch, now: SystemTime, fit: Option<Fit>) {
    let area = frame.area();
    let rank = watch.current();
    let tabs = u16::from(watch.ranks.len() > 1);
    let (body_height, summary_height) = match fit {
        Some(f) => (Constraint::Length(f.body), Constraint::Length(f.summary)),
        None => (Constraint::Min(3), Constraint::Length(4)),
    };
    let [header, tab_bar, body, summary, message, keys] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(tabs),
        body_height,
        summary_height,
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(header_lines(watch, rank, now)), header);
    if tabs > 0 {
        frame.render_widget(Paragraph::new(tab_line(watch)), tab_bar);
    }
    match &rank.shown {
        Some(snapshot) => {
            draw_table(frame, watch, body);
            frame.render_widget(
                Paragraph::new(summary_lines(snapshot)).wrap(Wrap { trim: true }),
                summary,
            );
        }
        None => {
            let text = match &rank.error {
                Some(e) => format!("waiting for {}: {}", printable(&rank.path), printable(e)),
                None => format!("reading {} ...", printable(&rank.path)),
            };
            frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), body);
        }
    }
    frame.render_widget(Paragraph::new(message_line(watch)), message);
    frame.render_widget(
        Paragraph::new(key_line(watch)).style(Style::new().add_modifier(Modifier::REVERSED)),
        keys,
    );
    if watch.help {
        let windows = rank.shown.as_ref().and_then(|s| s.windows());
        draw_help(frame, area, windows.map(report::drift_line));
    }
}

/// One frame of `width` × `height` cells as text, one line per row, trailing blanks trimmed: a
/// screen as the interactive view draws it (the tests' frames).
#[cfg(test)]
pub fn render_text(watch: &Watch, width: u16, height: u16, now: SystemTime) -> String {
    match lines_of(watch, width, height, now, None) {
        Ok(lines) => lines.iter().map(|l| format!("{l}\n")).collect(),
        Err(e) => e,
    }
}

/// The lines of one frame, trailing blanks trimmed, or the error's text.
fn lines_of(
    watch: &Watch,
    width: u16,
    height: u16,
    now: SystemTime,
    fit: Option<Fit>,
) -> Result<Vec<String>, String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height))
        .map_err(|e| format!("error: cannot draw: {e}\n"))?;
    terminal
        .draw(|f| draw_in(f, watch, now, fit))
        .map_err(|e| format!("error: cannot draw: {e}\n"))?;
    let buffer = terminal.backend().buffer();
    Ok((0..buffer.area.height)
        .map(|y| {
            let mut line = String::new();
            for x in 0..buffer.area.width {
                line.push_str(buffer[(x, y)].symbol());
            }
            line.trim_end().to_owned()
        })
        .collect())
}

/// One frame `width` cells wide as text for `prof watch --once`, as tall as what it shows: the
/// header, every row of the table (at most [`MAX_ONCE_ROWS`]), the summary, the status line
/// when it says something, and the keys; no blank line fills a screen's height.
pub fn render_once(watch: &Watch, width: u16, now: SystemTime) -> String {
    let fit = match &watch.current().shown {
        Some(snapshot) => {
            let rows = watch.rows().len().min(MAX_ONCE_ROWS);
            // Word-wrapped, a line fills more than half of each row but its last, save for a
            // word longer than half a row, which then fills more than half of its own.
            let half = usize::from(width / 2).max(1);
            let summary: usize = summary_lines(snapshot)
                .iter()
                .map(|l| l.width() / half + 2)
                .sum();
            Fit {
                body: (rows + 1) as u16,
                summary: summary.min(1000) as u16,
            }
        }
        None => Fit {
            body: 3,
            summary: 0,
        },
    };
    let tabs = u16::from(watch.ranks.len() > 1);
    let height = 3 + tabs + fit.body + fit.summary + 2;
    match lines_of(watch, width, height, now, Some(fit)) {
        // Every line of a frame that says something is not empty: the empty ones are the
        // room left in the summary, the status line with nothing to say, and the header's last
        // line before anything was read.
        Ok(lines) => lines
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| format!("{l}\n"))
            .collect(),
        Err(e) => e,
    }
}

/// `45s`, `2m 05s`, `1h 02m`.
pub fn age_text(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    }
}

fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

fn header_lines<'a>(watch: &Watch, rank: &'a Rank, now: SystemTime) -> Vec<Line<'a>> {
    let Some(s) = &rank.shown else {
        return vec![
            Line::from(vec![
                Span::styled("prof watch", bold()),
                Span::raw(format!("  {}", printable(&rank.path))),
            ]),
            Line::from("no profile read yet"),
            Line::from(""),
        ];
    };
    let run = &s.run;
    let first = Line::from(vec![
        Span::styled("prof watch", bold()),
        Span::raw("  "),
        Span::styled(printable(&run.program).into_owned(), bold()),
        Span::raw(format!(
            "  rank {}  pid {}  host {}  {} mode  {}",
            run.rank,
            run.pid,
            printable(&run.host),
            printable(&run.mode),
            printable(&rank.path)
        )),
    ]);
    let age = rank.age(now);
    let mut second = Vec::new();
    if let Some(w) = s.windows() {
        second.push(format!(
            "window {} ({} kept of {} closed, {} iterations each)",
            w.closed.saturating_sub(1),
            w.kept,
            w.closed,
            w.iterations_per_window
        ));
    }
    second.push(format!("iterations {}", s.iterations));
    second.push(format!(
        "median iteration {}",
        human_ns(s.report.iteration.median_ns)
    ));
    if let Some(age) = age {
        second.push(format!("file {} old", age_text(age)));
    }
    vec![
        first,
        Line::from(second.join("  ")),
        state_line(watch, rank, s, age),
    ]
}

/// Live, stale, ended, or a static view; and paused.
fn state_line<'a>(watch: &Watch, rank: &Rank, s: &Snapshot, age: Option<Duration>) -> Line<'a> {
    let mut spans = Vec::new();
    if watch.paused {
        let newer = if rank.pending.is_some() {
            ": newer data read, shown on resume"
        } else {
            ""
        };
        spans.push(Span::styled(
            format!("PAUSED (space resumes{newer})  "),
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    let warn = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
    match s.window_duration() {
        None if s.run.mode == "continuous" => spans.push(Span::styled(
            "continuous mode, written before its first window closed: no windows, no drift yet; \
             read again when the file changes",
            Style::new().fg(Color::Cyan),
        )),
        None => spans.push(Span::styled(
            format!(
                "static view: a {} profile, not continuous mode (no windows, no drift); read again \
                 if the file changes",
                printable(&s.run.mode)
            ),
            Style::new().fg(Color::Cyan),
        )),
        Some(_) if s.complete => spans.push(Span::styled(
            "the run ended: the file is complete, it will not change",
            Style::new().fg(Color::Cyan),
        )),
        Some(window) => {
            let limit = STALE_AFTER.max(window.saturating_mul(3));
            match age {
                Some(age) if age > limit => spans.push(Span::styled(
                    format!(
                        "STALE: not rewritten for {} (a window takes about {}): has the job \
                         stopped?",
                        age_text(age),
                        human_ns(window.as_nanos() as f64)
                    ),
                    warn,
                )),
                _ => spans.push(Span::styled(
                    format!(
                        "live: rewritten as windows close (a window takes about {}; read every \
                         {}s)",
                        human_ns(window.as_nanos() as f64),
                        watch.interval.as_secs_f64()
                    ),
                    Style::new().fg(Color::Green),
                )),
            }
        }
    }
    Line::from(spans)
}

fn tab_line(watch: &Watch) -> Line<'static> {
    let labels: Vec<String> = watch.ranks.iter().map(Rank::label).collect();
    let mut spans = Vec::new();
    for (i, r) in watch.ranks.iter().enumerate() {
        let mark = if r.error.is_some() { " !" } else { "" };
        // Two files of the same rank (two runs, or a rank variable left unset) are told apart
        // by their names.
        let label = if labels.iter().filter(|l| **l == labels[i]).count() > 1 {
            let name = std::path::Path::new(&r.path).file_name();
            let name = name.map_or_else(|| r.path.clone(), |n| n.to_string_lossy().into_owned());
            format!("{} {name}", labels[i])
        } else {
            labels[i].clone()
        };
        let style = if i == watch.selected {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::new()
        };
        spans.push(Span::styled(
            format!(" {}{mark} ", printable(&label)),
            style,
        ));
        spans.push(Span::raw(" "));
    }
    Line::from(spans)
}

const HEADERS: [&str; 8] = [
    "layer",
    "phase",
    "name",
    "calls",
    "median",
    "share",
    "median per window",
    "drift",
];

fn cells(row: &Row, view: ViewMode) -> [String; 8] {
    let (layer, name) = match (row.kind, view) {
        (RowKind::Layer, _) => (row.layer.clone(), String::new()),
        (RowKind::Event { nested: true }, _) => (String::new(), format!("  {}", row.name)),
        _ => (row.layer.clone(), row.name.clone()),
    };
    let calls = row.calls.map_or_else(
        || "-".to_owned(),
        |c| {
            if (c - c.round()).abs() < 1e-9 {
                format!("{c:.0}")
            } else {
                format!("{c:.2}")
            }
        },
    );
    [
        printable(&layer).into_owned(),
        printable(&row.phase).into_owned(),
        printable(&name).into_owned(),
        calls,
        row.median_ns.map_or_else(|| "-".to_owned(), human_ns),
        row.share.map_or_else(|| "-".to_owned(), percent),
        row.spark.clone(),
        row.drift.clone(),
    ]
}

fn drift_style(status: Option<DriftStatus>) -> Style {
    match status {
        Some(DriftStatus::Slower) => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        Some(DriftStatus::Faster) => Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
        Some(DriftStatus::Inconclusive) => Style::new().fg(Color::Yellow),
        Some(DriftStatus::Unknown) => Style::new().fg(Color::DarkGray),
        _ => Style::new(),
    }
}

/// Column widths: each as wide as its widest cell (names at most 28, the sparkline at most
/// its 40 characters and the `┊`), the drift column what is left.
fn widths(all: &[[String; 8]], width: u16) -> Vec<u16> {
    let caps = [14, 8, 28, 6, 9, 7, 41, u16::MAX];
    let mut w: Vec<u16> = HEADERS
        .iter()
        .zip(caps)
        .enumerate()
        .map(|(i, (h, cap))| {
            let widest = all
                .iter()
                .map(|c| c[i].chars().count())
                .max()
                .unwrap_or(0)
                .max(h.chars().count());
            (widest.min(usize::from(cap))) as u16
        })
        .collect();
    // One space between columns.
    let fixed: u16 = w[..7].iter().sum::<u16>() + 7;
    w[7] = width.saturating_sub(fixed);
    w
}

fn draw_table(frame: &mut Frame, watch: &Watch, area: Rect) {
    let rows = watch.rows();
    let all: Vec<[String; 8]> = rows.iter().map(|r| cells(r, watch.view)).collect();
    let widths = widths(&all, area.width);
    // The header and the iteration's row stay; the others scroll.
    let visible = usize::from(area.height.saturating_sub(2));
    let body = rows.len().saturating_sub(1);
    let start = watch.scroll.min(body.saturating_sub(visible));
    let shown = std::iter::once(0).chain((1 + start..rows.len()).take(visible));
    let table_rows: Vec<TableRow> = shown
        .map(|i| {
            let row = &rows[i];
            let style = match row.kind {
                RowKind::Iteration | RowKind::Layer => bold(),
                RowKind::Event { .. } => Style::new(),
            };
            // The numbers (calls, median, share) right-aligned.
            let mut c: Vec<Cell> = all[i][..7]
                .iter()
                .enumerate()
                .map(|(j, t)| match j {
                    3..=5 => Cell::from(Line::from(t.clone()).alignment(Alignment::Right)),
                    _ => Cell::from(t.clone()),
                })
                .collect();
            c.push(Cell::from(all[i][7].clone()).style(drift_style(row.status)));
            TableRow::new(c).style(style)
        })
        .collect();
    let constraints: Vec<Constraint> = widths.iter().map(|&w| Constraint::Length(w)).collect();
    let table = Table::new(table_rows, constraints)
        .header(
            TableRow::new(HEADERS.iter().enumerate().map(|(j, h)| match j {
                3..=5 => Cell::from(Line::from(*h).alignment(Alignment::Right)),
                _ => Cell::from(*h),
            }))
            .style(bold().add_modifier(Modifier::UNDERLINED)),
        )
        .column_spacing(1);
    frame.render_widget(table, area);
}

fn summary_lines(s: &Snapshot) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let Some(w) = s.windows() {
        let drifted = report::drifted_line(w);
        let style = if w.drifted().next().is_some() {
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        lines.push(Line::styled(drifted, style));
    }
    if let Some(b) = &s.report.breakdown {
        let parts: Vec<String> = b
            .categories
            .iter()
            .map(|c| format!("{} {}", printable(&c.name), percent(c.share)))
            .collect();
        lines.push(Line::from(format!(
            "breakdown of the mean iteration ({}): {}",
            human_ns(b.iteration_ns),
            parts.join(", ")
        )));
    }
    lines
}

fn message_line(watch: &Watch) -> Line<'static> {
    if let Some(text) = &watch.editing {
        return Line::from(format!("filter: /{text}_  (Enter applies, Esc cancels)"));
    }
    let rank = watch.current();
    if let Some(e) = &rank.error {
        let kept = if rank.shown.is_some() {
            " (showing the last good read)"
        } else {
            ""
        };
        return Line::styled(
            format!("{}{kept}", printable(e)),
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        );
    }
    Line::from(watch.status.clone().unwrap_or_default())
}

fn key_line(watch: &Watch) -> String {
    let view = match watch.view {
        ViewMode::Layers => "layers",
        ViewMode::Events => "events",
    };
    let rows = watch.rows().len().saturating_sub(1);
    format!(
        " ? help  q quit  s sort: {}  v view: {view}  l/p// filter: {}  c clear  space {}  t trace  \
         {rows} rows",
        watch.sort.name(),
        watch.filter.describe(),
        if watch.paused { "resume" } else { "pause" },
    )
}

/// The keys, and which windows the drift compares in the file shown (`drift`).
fn draw_help(frame: &mut Frame, area: Rect, drift: Option<String>) {
    let width = area.width.saturating_sub(4).min(90);
    // The drift line wraps on the width inside the border.
    let inner = usize::from(width.saturating_sub(4)).max(1);
    let drift_lines = drift
        .as_ref()
        .map_or(0, |d| d.chars().count().div_ceil(inner) + 1);
    let height = (HELP.len() as u16 + 4 + drift_lines as u16).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let mut lines: Vec<Line> = HELP
        .iter()
        .map(|(key, what)| {
            Line::from(vec![
                Span::styled(format!(" {key:<16}"), bold()),
                Span::raw(*what),
            ])
        })
        .collect();
    if let Some(d) = drift {
        lines.push(Line::from(""));
        lines.push(Line::from(format!(" {d}")));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(" any other key closes this help"));
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" prof watch: keys ")),
        popup,
    );
}
