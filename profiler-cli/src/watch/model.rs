//! What `prof watch` shows, without a terminal: each followed file's last good profile made
//! into a [`Snapshot`] (the report and the drift that `prof report` computes), the state the
//! keys change ([`Watch`]: the rank shown, the sort, the filter, the pause, the help), the keys
//! themselves ([`Watch::handle_key`]) and the rows of the table ([`Watch::rows`]). Nothing here
//! reads a file, draws or sleeps: `source.rs` reads, `view.rs` draws, `term.rs` runs the loop,
//! so that all of this is tested as plain data.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use profiler_analysis::drift::{DriftStatus, Series, Windows};
use profiler_analysis::report::{self, EventRow, GroupBy, GroupRow, Report, ReportOptions};
use profiler_format::{Profile, Run};

/// What the `t` key calls with the run of the rank shown (its `pid`, `host` and `rank` say
/// which process): a trace of the next iterations requested, or why not. The text either way
/// goes to the status line.
pub type Trigger = Box<dyn FnMut(&Run) -> Result<String, String>>;

/// One profile, as shown: the run, the report `prof report` would print (groups by layer) and
/// which layer each event counts towards.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// `run` of the file: program, pid, host, rank, mode.
    pub run: Run,
    /// The file's `complete`: in `continuous` mode, true only once the program ended by itself.
    pub complete: bool,
    /// `iterations.count`: iterations completed, warmup included.
    pub iterations: u64,
    /// The report of the profile (the last closed window's rows in `continuous` mode), with
    /// one group per layer and, in `continuous` mode, the windows and their drift.
    pub report: Report,
    /// The layer (group key of `--group-by layer`, inherited from ancestors) of each event, by
    /// `order`.
    layer_of: HashMap<u32, String>,
}

impl Snapshot {
    /// The snapshot of `profile`, drift judged against `drift_threshold` (as `prof report
    /// --drift-threshold`).
    pub fn new(profile: &Profile, drift_threshold: f64) -> Snapshot {
        let options = ReportOptions {
            group_by: Some(GroupBy::Layer),
            drift_threshold,
            ..ReportOptions::default()
        };
        let report = report::build(profile, &options);
        let layer_of = report
            .groups
            .iter()
            .flat_map(|g| g.members.iter().map(move |&o| (o, g.key.clone())))
            .collect();
        Snapshot {
            run: profile.run.clone(),
            complete: profile.complete,
            iterations: profile.iterations.count,
            report,
            layer_of,
        }
    }

    /// The windows and their drift; `None` outside `continuous` mode.
    pub fn windows(&self) -> Option<&Windows> {
        self.report.windows.as_ref()
    }

    /// The layer event `order` counts towards (`-` for none).
    pub fn layer_of(&self, order: u32) -> &str {
        self.layer_of.get(&order).map_or("-", String::as_str)
    }

    /// About how long a window takes: iterations per window × the median iteration; `None`
    /// without windows.
    pub fn window_duration(&self) -> Option<Duration> {
        let w = self.windows()?;
        let ns = w.iterations_per_window as f64 * self.report.iteration.median_ns;
        (ns.is_finite() && ns >= 0.0).then(|| Duration::from_nanos(ns as u64))
    }
}

/// What one poll of a file found: a profile (made into a snapshot) or why not.
#[derive(Debug)]
pub enum Update {
    /// The file was read.
    Loaded {
        /// Its modification time.
        modified: Option<SystemTime>,
        /// What it holds.
        snapshot: Box<Snapshot>,
    },
    /// The file is missing, half-written, malformed, or not a profile.
    Failed {
        /// Its modification time, when it exists.
        modified: Option<SystemTime>,
        /// Why, as `prof` says it (the first line of the error).
        message: String,
    },
}

/// One followed file.
#[derive(Debug)]
pub struct Rank {
    /// The path, as given.
    pub path: String,
    /// What the view shows: the last good snapshot (frozen while paused).
    pub shown: Option<Box<Snapshot>>,
    /// A newer good snapshot read while paused, shown on resume.
    pub pending: Option<Box<Snapshot>>,
    /// The last poll's error, cleared by the next good read.
    pub error: Option<String>,
    /// The file's modification time at the last poll.
    pub modified: Option<SystemTime>,
}

impl Rank {
    /// A file not read yet.
    pub fn new(path: impl Into<String>) -> Rank {
        Rank {
            path: path.into(),
            shown: None,
            pending: None,
            error: None,
            modified: None,
        }
    }

    /// The tab's name: `rank N` once read, else the file's name.
    pub fn label(&self) -> String {
        match &self.shown {
            Some(s) => format!("rank {}", s.run.rank),
            None => std::path::Path::new(&self.path)
                .file_name()
                .map_or_else(|| self.path.clone(), |n| n.to_string_lossy().into_owned()),
        }
    }

    /// How long ago the file was last rewritten, at `now` (zero for a time in the future).
    pub fn age(&self, now: SystemTime) -> Option<Duration> {
        self.modified
            .map(|m| now.duration_since(m).unwrap_or(Duration::ZERO))
    }
}

/// The order of the rows (the iteration stays first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sort {
    /// Largest share of the iteration first.
    #[default]
    Share,
    /// Largest median first.
    Median,
    /// Drifted first (slower, then faster, by the size of the change), then inconclusive,
    /// stable, unknown.
    Drift,
    /// By name (layer name for layer rows).
    Name,
    /// Execution order.
    Order,
}

impl Sort {
    const ALL: [Sort; 5] = [
        Sort::Share,
        Sort::Median,
        Sort::Drift,
        Sort::Name,
        Sort::Order,
    ];

    /// Its name in the key bar.
    pub fn name(self) -> &'static str {
        match self {
            Sort::Share => "share",
            Sort::Median => "median",
            Sort::Drift => "drift",
            Sort::Name => "name",
            Sort::Order => "order",
        }
    }

    fn step(self, by: isize) -> Sort {
        let i = Sort::ALL.iter().position(|&s| s == self).unwrap_or(0) as isize;
        Sort::ALL[(i + by).rem_euclid(Sort::ALL.len() as isize) as usize]
    }
}

/// Which rows the table holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ViewMode {
    /// One row per layer, its events indented under it.
    #[default]
    Layers,
    /// One row per event.
    Events,
}

/// Which events are shown; every part that is set must match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewFilter {
    /// Only the events of this layer (as grouped: inherited from ancestors).
    pub layer: Option<String>,
    /// Only the events of this phase (`-`: without one).
    pub phase: Option<String>,
    /// Only the events whose `layer/phase name#occ` or id contains this, ignoring case.
    pub text: String,
}

impl ViewFilter {
    /// `layer=top_mlp phase=bwd "loss"`, or `none`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(l) = &self.layer {
            parts.push(format!("layer={l}"));
        }
        if let Some(p) = &self.phase {
            parts.push(format!("phase={p}"));
        }
        if !self.text.is_empty() {
            parts.push(format!("\"{}\"", self.text));
        }
        if parts.is_empty() {
            "none".to_owned()
        } else {
            parts.join(" ")
        }
    }

    fn matches(&self, snapshot: &Snapshot, e: &EventRow) -> bool {
        let layer = snapshot.layer_of(e.order);
        let phase = e.identity.phase.as_deref().unwrap_or("-");
        let text = self.text.to_lowercase();
        self.layer.as_deref().is_none_or(|l| l == layer)
            && self.phase.as_deref().is_none_or(|p| p == phase)
            && (text.is_empty()
                || e.identity.label().to_lowercase().contains(&text)
                || e.identity.id.to_lowercase().contains(&text))
    }
}

/// A key, as the model sees it (`term.rs` translates the terminal's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPress {
    /// A printable character.
    Char(char),
    /// A character with Ctrl held.
    Ctrl(char),
    /// Enter.
    Enter,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Tab.
    Tab,
    /// Shift-Tab.
    BackTab,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Home.
    Home,
    /// End.
    End,
}

/// What the loop does after a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Go on (redraw).
    Continue,
    /// Restore the terminal and exit.
    Quit,
}

/// What a row stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// The whole iteration (always first).
    Iteration,
    /// A layer (layers view).
    Layer,
    /// An event; `nested` under its layer's row in the layers view.
    Event {
        /// Indented under a layer row.
        nested: bool,
    },
}

/// One row of the table, figures as numbers and the drift as `prof report` writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What it stands for.
    pub kind: RowKind,
    /// The layer (`-` for none).
    pub layer: String,
    /// The phase (`-` for none; empty on layer rows).
    pub phase: String,
    /// The event's name, `#N` after it for an occurrence above 0; the layer's for layer rows.
    pub name: String,
    /// Runs per iteration (a layer's: the sum of its events').
    pub calls: Option<f64>,
    /// The median run (a layer's: the sum of its outer events' medians × calls).
    pub median_ns: Option<f64>,
    /// Time per iteration over the mean iteration.
    pub share: Option<f64>,
    /// The median per kept window as a sparkline, `prof report`'s (empty without windows).
    pub spark: String,
    /// The headline drift verdict, `prof report`'s cell, with which comparison it is
    /// (`since start`, `recent past`); a layer's: its events' verdicts counted.
    pub drift: String,
    /// The headline drift status, for colour and sorting (a layer's: its worst event's).
    pub status: Option<DriftStatus>,
    /// The size of the headline change, `|ln ratio|`, for sorting by drift.
    pub magnitude: f64,
    /// Execution order of the event (a layer's: its first event's).
    pub order: u32,
}

/// The whole state of `prof watch`.
pub struct Watch {
    /// The followed files, in the order given.
    pub ranks: Vec<Rank>,
    /// Which one is shown.
    pub selected: usize,
    /// The order of the rows.
    pub sort: Sort,
    /// Layers or events.
    pub view: ViewMode,
    /// Which events are shown.
    pub filter: ViewFilter,
    /// The view is frozen (files are still read; what they hold is shown on resume).
    pub paused: bool,
    /// The help is shown.
    pub help: bool,
    /// The text filter being typed after `/`.
    pub editing: Option<String>,
    /// The first row shown below the iteration's.
    pub scroll: usize,
    /// The last message for the status line (trigger results, key hints).
    pub status: Option<String>,
    /// How often the files are polled.
    pub interval: Duration,
    trigger: Trigger,
}

impl Watch {
    /// The state of a watch of `paths`, polled every `interval`; `t` calls `trigger`.
    pub fn new(paths: &[String], interval: Duration, trigger: Trigger) -> Watch {
        Watch {
            ranks: paths.iter().map(Rank::new).collect(),
            selected: 0,
            sort: Sort::default(),
            view: ViewMode::default(),
            filter: ViewFilter::default(),
            paused: false,
            help: false,
            editing: None,
            scroll: 0,
            status: None,
            interval,
            trigger,
        }
    }

    /// The rank shown.
    pub fn current(&self) -> &Rank {
        &self.ranks[self.selected]
    }

    /// Takes what a poll of file `index` found: a good profile replaces the one shown (or
    /// waits for the resume while paused); an error is kept beside the last good view.
    pub fn apply(&mut self, index: usize, update: Update) {
        let Some(rank) = self.ranks.get_mut(index) else {
            return;
        };
        match update {
            Update::Loaded { modified, snapshot } => {
                rank.modified = modified;
                rank.error = None;
                if self.paused && rank.shown.is_some() {
                    rank.pending = Some(snapshot);
                } else {
                    rank.shown = Some(snapshot);
                }
            }
            Update::Failed { modified, message } => {
                rank.modified = modified.or(rank.modified);
                rank.error = Some(message);
            }
        }
    }

    /// Handles one key; see the help ([`HELP`]) for what each does.
    pub fn handle_key(&mut self, key: KeyPress) -> Action {
        if key == KeyPress::Ctrl('c') {
            return Action::Quit;
        }
        if let Some(text) = &mut self.editing {
            match key {
                KeyPress::Char(c) => text.push(c),
                KeyPress::Backspace => {
                    text.pop();
                }
                KeyPress::Enter => {
                    self.filter.text = self.editing.take().unwrap_or_default();
                    self.scroll = 0;
                }
                KeyPress::Esc => self.editing = None,
                _ => {}
            }
            return Action::Continue;
        }
        if self.help {
            return match key {
                KeyPress::Char('q') => Action::Quit,
                _ => {
                    self.help = false;
                    Action::Continue
                }
            };
        }
        match key {
            KeyPress::Char('q') | KeyPress::Esc => return Action::Quit,
            KeyPress::Char('?') | KeyPress::Char('h') => self.help = true,
            KeyPress::Tab => self.select((self.selected + 1) % self.ranks.len()),
            KeyPress::BackTab => {
                self.select((self.selected + self.ranks.len() - 1) % self.ranks.len())
            }
            KeyPress::Char(c @ '0'..='9') => self.select_rank(u32::from(c as u8 - b'0')),
            KeyPress::Char('s') => self.sort = self.sort.step(1),
            KeyPress::Char('S') => self.sort = self.sort.step(-1),
            KeyPress::Char('v') => {
                self.view = match self.view {
                    ViewMode::Layers => ViewMode::Events,
                    ViewMode::Events => ViewMode::Layers,
                };
                self.scroll = 0;
            }
            KeyPress::Char('l') => {
                self.filter.layer = next_of(&self.layers(), self.filter.layer.take());
                self.scroll = 0;
            }
            KeyPress::Char('p') => {
                self.filter.phase = next_of(&self.phases(), self.filter.phase.take());
                self.scroll = 0;
            }
            KeyPress::Char('/') => self.editing = Some(self.filter.text.clone()),
            KeyPress::Char('c') => {
                self.filter = ViewFilter::default();
                self.scroll = 0;
            }
            KeyPress::Char(' ') => self.toggle_pause(),
            KeyPress::Char('t') => self.request_trace(),
            KeyPress::Up | KeyPress::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyPress::Down | KeyPress::Char('j') => self.scroll_to(self.scroll + 1),
            KeyPress::PageUp => self.scroll = self.scroll.saturating_sub(10),
            KeyPress::PageDown => self.scroll_to(self.scroll + 10),
            KeyPress::Home => self.scroll = 0,
            KeyPress::End => self.scroll_to(usize::MAX),
            _ => {}
        }
        Action::Continue
    }

    fn select(&mut self, index: usize) {
        if index != self.selected {
            self.selected = index;
            self.scroll = 0;
        }
    }

    /// The tab of rank `n` (by `run.rank`), else the `n`-th tab (0 first), else none.
    fn select_rank(&mut self, n: u32) {
        let by_rank = self
            .ranks
            .iter()
            .position(|r| r.shown.as_ref().is_some_and(|s| s.run.rank == n));
        let by_position = ((n as usize) < self.ranks.len()).then_some(n as usize);
        match by_rank.or(by_position) {
            Some(i) => self.select(i),
            None => self.status = Some(format!("no rank {n} among the files watched")),
        }
    }

    fn scroll_to(&mut self, row: usize) {
        // The iteration's row is pinned; the others scroll.
        let last = self.rows().len().saturating_sub(2);
        self.scroll = row.min(last);
    }

    fn toggle_pause(&mut self) {
        self.paused = !self.paused;
        if !self.paused {
            for rank in &mut self.ranks {
                if let Some(s) = rank.pending.take() {
                    rank.shown = Some(s);
                }
            }
        }
    }

    fn request_trace(&mut self) {
        let Some(shown) = &self.ranks[self.selected].shown else {
            self.status = Some("trace: no profile read yet for this rank".to_owned());
            return;
        };
        self.status = Some(match (self.trigger)(&shown.run) {
            Ok(text) => text,
            Err(text) => format!("trace not requested: {text}"),
        });
    }

    /// The layers of the rank shown, in the order of their first event.
    pub fn layers(&self) -> Vec<String> {
        let Some(s) = &self.current().shown else {
            return Vec::new();
        };
        let mut groups: Vec<&GroupRow> = s.report.groups.iter().collect();
        groups.sort_by_key(|g| g.members.first().copied());
        groups.iter().map(|g| g.key.clone()).collect()
    }

    /// The phases of the rank shown (`-` for events without one), in execution order.
    pub fn phases(&self) -> Vec<String> {
        let Some(s) = &self.current().shown else {
            return Vec::new();
        };
        let mut events: Vec<&EventRow> = s.report.events.iter().collect();
        events.sort_by_key(|e| e.order);
        let mut phases: Vec<String> = Vec::new();
        for e in events {
            let p = e.identity.phase.clone().unwrap_or_else(|| "-".to_owned());
            if !phases.contains(&p) {
                phases.push(p);
            }
        }
        phases
    }

    /// The rows of the table for the rank shown: the iteration first, then the layers (their
    /// events under them) or the events, filtered and sorted. Empty before a good read.
    pub fn rows(&self) -> Vec<Row> {
        let Some(s) = &self.current().shown else {
            return Vec::new();
        };
        let windows = s.windows();
        let series: HashMap<u32, &Series> = windows
            .map(|w| {
                w.events
                    .iter()
                    .filter_map(|x| Some((x.order?, x)))
                    .collect()
            })
            .unwrap_or_default();
        let event_row = |e: &EventRow, nested: bool| {
            let (spark, drift, status, magnitude) = match (windows, series.get(&e.order)) {
                (Some(w), Some(x)) => verdict(w, x),
                _ => (String::new(), String::new(), None, 0.0),
            };
            Row {
                kind: RowKind::Event { nested },
                layer: s.layer_of(e.order).to_owned(),
                phase: e.identity.phase.clone().unwrap_or_else(|| "-".to_owned()),
                name: if e.identity.occurrence > 0 {
                    format!("{}#{}", e.identity.name, e.identity.occurrence)
                } else {
                    e.identity.name.clone()
                },
                calls: Some(e.calls_per_iter),
                median_ns: Some(e.median_ns),
                share: Some(e.share),
                spark,
                drift,
                status,
                magnitude,
                order: e.order,
            }
        };
        let shown: Vec<&EventRow> = s
            .report
            .events
            .iter()
            .filter(|e| self.filter.matches(s, e))
            .collect();
        let mut rows = vec![iteration_row(s)];
        match self.view {
            ViewMode::Events => {
                let mut events: Vec<Row> = shown.iter().map(|e| event_row(e, false)).collect();
                self.sort_rows(&mut events);
                rows.extend(events);
            }
            ViewMode::Layers => {
                let mut by_layer: HashMap<&str, Vec<Row>> = HashMap::new();
                for e in &shown {
                    let layer = s.layer_of(e.order);
                    by_layer.entry(layer).or_default().push(event_row(e, true));
                }
                let events: HashMap<u32, &EventRow> =
                    s.report.events.iter().map(|e| (e.order, e)).collect();
                let mut layers: Vec<(Row, Vec<Row>)> = s
                    .report
                    .groups
                    .iter()
                    .filter_map(|g| {
                        let mut members = by_layer.remove(g.key.as_str())?;
                        self.sort_rows(&mut members);
                        Some((layer_row(g, &events, &series, windows), members))
                    })
                    .collect();
                layers.sort_by(|a, b| self.compare(&a.0, &b.0));
                for (layer, members) in layers {
                    rows.push(layer);
                    rows.extend(members);
                }
            }
        }
        rows
    }

    fn sort_rows(&self, rows: &mut [Row]) {
        rows.sort_by(|a, b| self.compare(a, b));
    }

    fn compare(&self, a: &Row, b: &Row) -> std::cmp::Ordering {
        let by_order = a.order.cmp(&b.order);
        let value = |x: Option<f64>| x.unwrap_or(f64::NEG_INFINITY);
        match self.sort {
            Sort::Share => value(b.share).total_cmp(&value(a.share)),
            Sort::Median => value(b.median_ns).total_cmp(&value(a.median_ns)),
            Sort::Drift => severity(a.status)
                .cmp(&severity(b.status))
                .then(b.magnitude.total_cmp(&a.magnitude)),
            Sort::Name => a.name.cmp(&b.name).then(a.layer.cmp(&b.layer)),
            Sort::Order => std::cmp::Ordering::Equal,
        }
        .then(by_order)
    }
}

/// The value after `current` in `values`, cycling through none: none, the first, ..., the
/// last, none.
fn next_of(values: &[String], current: Option<String>) -> Option<String> {
    match current.and_then(|c| values.iter().position(|v| *v == c)) {
        None => values.first().cloned(),
        Some(i) => values.get(i + 1).cloned(),
    }
}

/// Drifted first, then inconclusive, stable, unknown, no windows.
fn severity(status: Option<DriftStatus>) -> u8 {
    match status {
        Some(DriftStatus::Slower) => 0,
        Some(DriftStatus::Faster) => 1,
        Some(DriftStatus::Inconclusive) => 2,
        Some(DriftStatus::Stable) => 3,
        Some(DriftStatus::Unknown) => 4,
        None => 5,
    }
}

/// The size of a series' headline change, `|ln ratio|` (0 without one): its change point's
/// where the headline rests on change points, else its comparison's. A layer row is sorted by
/// its members' (it took the comparison's alone, which change points leave empty: every
/// layer sized 0, in execution order).
fn change_size(s: &Series) -> f64 {
    let ratio = if s.drift_basis == profiler_analysis::drift::Basis::ChangePoints {
        s.change_point.as_ref().map(|c| c.ratio)
    } else {
        s.comparison.as_ref().map(|c| c.ratio)
    };
    ratio
        .map(|r| r.ln().abs())
        .filter(|m| m.is_finite())
        .unwrap_or(0.0)
}

/// The sparkline, the headline drift cell (`prof report`'s, and against what), its status
/// and the size of its change, of one series.
fn verdict(w: &Windows, s: &Series) -> (String, String, Option<DriftStatus>, f64) {
    // Where the headline rests on change points: `SLOWER +20.1% from window 12` (the report's
    // cell, without the interval the column has no room for), `stable` or `inconclusive`.
    if s.drift_basis == profiler_analysis::drift::Basis::ChangePoints {
        let cell = match &s.change_point {
            Some(c) => format!(
                "{} {:+.1}% from window {}",
                c.drift.as_str().to_uppercase(),
                100.0 * (c.ratio - 1.0),
                c.index
            ),
            None => s.drift.as_str().to_owned(),
        };
        return (w.sparkline(s), cell, Some(s.drift), change_size(s));
    }
    let mut cell = report::drift_cell(
        &profiler_analysis::drift::Judgement {
            comparison: s.comparison.clone(),
            drift: s.drift,
        },
        w.alpha,
    );
    if let Some(against) = s.drift_against {
        cell.push_str(match against {
            profiler_analysis::drift::Against::Start => " since start",
            profiler_analysis::drift::Against::RecentPast => " recent past",
        });
    }
    (w.sparkline(s), cell, Some(s.drift), change_size(s))
}

fn iteration_row(s: &Snapshot) -> Row {
    let it = &s.report.iteration;
    let (spark, drift, status, magnitude) = match s.windows() {
        Some(w) => verdict(w, &w.iteration),
        None => (String::new(), String::new(), None, 0.0),
    };
    Row {
        kind: RowKind::Iteration,
        layer: "-".to_owned(),
        phase: "-".to_owned(),
        name: "iteration".to_owned(),
        calls: None,
        median_ns: Some(it.median_ns),
        share: Some(1.0),
        spark,
        drift,
        status,
        magnitude,
        order: 0,
    }
}

/// A layer's row: its figures summed over its outer events (nesting counted once, as `prof
/// report --group-by layer` does), its sparkline the sum of their medians per window (`·` in a
/// window where one of them was not measured), its drift its events' verdicts counted.
fn layer_row(
    g: &GroupRow,
    events: &HashMap<u32, &EventRow>,
    series: &HashMap<u32, &Series>,
    windows: Option<&Windows>,
) -> Row {
    let median: f64 = g
        .outer
        .iter()
        .filter_map(|o| events.get(o))
        .map(|e| e.median_ns * e.calls_per_iter)
        .sum();
    let (mut spark, mut drift, mut status, mut magnitude) =
        (String::new(), String::new(), None, 0.0);
    if let Some(w) = windows {
        let outer: Vec<&Series> = g
            .outer
            .iter()
            .filter_map(|o| series.get(o).copied())
            .collect();
        let sums: Vec<Option<u64>> = (0..w.kept)
            .map(|i| {
                outer.iter().try_fold(0u64, |sum, x| {
                    Some(sum.saturating_add(x.medians_ns.get(i).copied().flatten()?))
                })
            })
            .collect();
        if !outer.is_empty() {
            spark = w.sparkline_of(&sums);
        }
        let members: Vec<&Series> = g
            .members
            .iter()
            .filter_map(|o| series.get(o).copied())
            .collect();
        let mut counts: Vec<(DriftStatus, usize)> = Vec::new();
        for x in &members {
            match counts.iter_mut().find(|(st, _)| *st == x.drift) {
                Some((_, n)) => *n += 1,
                None => counts.push((x.drift, 1)),
            }
        }
        counts.sort_by_key(|(st, _)| severity(Some(*st)));
        drift = counts
            .iter()
            .map(|(st, n)| format!("{n} {}", st.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        status = counts.first().map(|(st, _)| *st);
        magnitude = members
            .iter()
            .filter(|x| Some(x.drift) == status)
            .map(|x| change_size(x))
            .fold(0.0, f64::max);
    }
    Row {
        kind: RowKind::Layer,
        layer: g.key.clone(),
        phase: String::new(),
        name: g.key.clone(),
        calls: Some(g.calls_per_iter),
        median_ns: Some(median),
        share: Some(g.share),
        spark,
        drift,
        status,
        magnitude,
        order: g.members.first().copied().unwrap_or(u32::MAX),
    }
}

/// The keys, as the help shows them.
pub const HELP: [(&str, &str); 14] = [
    ("q, Esc, Ctrl-C", "quit (the terminal is restored)"),
    ("?", "this help (any key closes it)"),
    ("Tab, Shift-Tab", "next, previous file (rank)"),
    ("0-9", "the file of that rank (else the N-th file, 0 first)"),
    (
        "s, S",
        "sort: share, median, drift, name, order (S: backwards)",
    ),
    ("v", "layers (events under them) or events only"),
    ("l", "filter by layer: cycle through the layers, then none"),
    ("p", "filter by phase: cycle through the phases, then none"),
    (
        "/",
        "filter by text in names, layer/phase, ids (Enter applies, Esc not)",
    ),
    ("c", "clear the filters"),
    ("space", "pause: freeze the view (the files are still read)"),
    (
        "t",
        "request a trace of the next iterations of the rank shown",
    ),
    ("Up, Down, j, k", "scroll (PageUp, PageDown, Home, End)"),
    (
        "",
        "drift: prof report's headline verdict (change points; with few windows, since start or recent past)",
    ),
];
