//! `continuous` mode: each event's median per window over time, and whether an event's recent
//! windows *drift* from the earlier ones. `prof report` and `prof html` show what [`windows`]
//! computes.
//!
//! # The series
//!
//! For every kept window (`windows`, oldest first) and every event measured in at least one of
//! them (matched by `order`; merged events are not in windows), the median of the event's samples
//! in that window (`stats.median_ns`; none where the event had no sample in the window). The
//! iteration has a series too: the median wall time of each window's iterations.
//!
//! # The split
//!
//! With K kept windows (K >= [`MIN_WINDOWS`]):
//!
//! - **baseline** = the first half, `max(1, K / 2)` windows (rounded down: windows 0..K/2);
//! - **recent** = the last quarter, `max(1, K / 4)` windows (rounded down).
//!
//! The windows between the two are left out, so that a change that is under way does not blur
//! both sides. With 2 windows: the first against the second; 3: the first against the third; 8:
//! the first 4 against the last 2. With fewer than [`MIN_WINDOWS`] windows there is no
//! comparison ("not enough windows").
//!
//! # The statistics: those of `prof diff`
//!
//! Each side becomes a synthetic [`Profile`]: one event per event of the file (same identity),
//! whose samples are the samples of all that side's windows pooled, and whose iterations are the
//! wall times of all that side's windows, in order (no warmup; blocks of `run.repeat` iterations
//! for the iteration's block bootstrap). The two are compared by [`diff::diff`] with
//! [`DiffOptions::default`] (baseline = before, recent = after), so the ratio, the confidence
//! interval, the p-value, the Holm adjustment over the iteration and every event, the noise
//! allowance (here the spread of the events' ratios between the two sides: windows do not record
//! which iteration each sample was taken in, so no per-sample adjustment and no per-event drift
//! of the machine is applied) and the verdict are exactly `prof diff`'s. An event is **slower**
//! when the verdict is `regressed`, **faster** when it is `improved`, **stable** otherwise, and
//! **unknown** when a side has no sample (or there are not enough windows).

use std::collections::HashMap;

use serde::Serialize;

use super::diff::{self, DiffOptions, EventDiff, Verdict};
use super::{event_key, stats};
use profiler_format::{Event, Identity, Iterations, Profile, Stats, Window};

/// Fewest kept windows for a comparison.
pub const MIN_WINDOWS: usize = 2;

/// What the comparison says about one event (or the iteration).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftStatus {
    /// The recent windows are slower (`prof diff` would say `regressed`).
    Slower,
    /// The recent windows are faster (`prof diff` would say `improved`).
    Faster,
    /// No change beyond the noise (`no change` or `within noise`).
    Stable,
    /// Not enough windows, or no sample on one side.
    Unknown,
}

impl DriftStatus {
    /// `"slower"`, `"faster"`, `"stable"` or `"unknown"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftStatus::Slower => "slower",
            DriftStatus::Faster => "faster",
            DriftStatus::Stable => "stable",
            DriftStatus::Unknown => "unknown",
        }
    }

    /// Slower or faster.
    pub fn drifted(self) -> bool {
        matches!(self, DriftStatus::Slower | DriftStatus::Faster)
    }
}

/// A run of consecutive kept windows, by their `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    /// `index` of the first window.
    pub first: u64,
    /// `index` of the last window.
    pub last: u64,
    /// How many windows.
    pub windows: usize,
}

/// One event's (or the iteration's) median per window, and its drift.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// The event's `order` (`None` for the iteration).
    pub order: Option<u32>,
    /// Which event (`id` and `name` `"iteration"` for the whole iteration); flattened, so that
    /// JSON has its `id`, `name`, `layer`, `phase` and `occurrence` as keys of the row.
    #[serde(flatten)]
    pub identity: Identity,
    /// Median per kept window, oldest first; `None` where it had no sample.
    pub medians_ns: Vec<Option<u64>>,
    /// The first known median.
    pub first_median_ns: Option<u64>,
    /// The last known median.
    pub last_median_ns: Option<u64>,
    /// `last / first - 1`; `None` when either is unknown or the first is 0.
    pub change: Option<f64>,
    /// Recent windows against the baseline, as `prof diff` compares two runs; `None` without a
    /// comparison.
    pub comparison: Option<EventDiff>,
    /// The verdict.
    pub drift: DriftStatus,
}

/// The windows of a `continuous`-mode profile: per event, the series and the drift.
#[derive(Clone, Debug, Serialize)]
pub struct Windows {
    /// Windows kept in the file.
    pub kept: usize,
    /// Windows closed by the run (kept or dropped): the last one's `index` + 1.
    pub closed: u64,
    /// The most windows kept (`run.windows`, `PROF_WINDOWS`).
    pub cap: Option<u32>,
    /// Median number of iterations per window.
    pub iterations_per_window: u64,
    /// `index` of each kept window, oldest first (the x axis of every series).
    pub indices: Vec<u64>,
    /// First iteration of each kept window.
    pub first_iterations: Vec<u64>,
    /// The windows compared as the baseline (`None`: not enough windows).
    pub baseline: Option<Span>,
    /// The windows compared as recent (`None`: not enough windows).
    pub recent: Option<Span>,
    /// Why there is no comparison, when there is none.
    pub note: Option<String>,
    /// The iteration: median wall time per window.
    pub iteration: Series,
    /// The events measured in at least one kept window, in execution order.
    pub events: Vec<Series>,
    /// The threshold of the comparison.
    pub threshold: f64,
    /// The significance level of the comparison.
    pub alpha: f64,
}

impl Windows {
    /// The events that drifted (slower or faster).
    pub fn drifted(&self) -> impl Iterator<Item = &Series> {
        self.events.iter().filter(|s| s.drift.drifted())
    }
}

/// The indices (into the kept windows) of the baseline and of the recent windows, for `k`
/// kept windows; `None` below [`MIN_WINDOWS`]. See the module documentation.
pub fn split(k: usize) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    if k < MIN_WINDOWS {
        return None;
    }
    let baseline = (k / 2).max(1);
    let recent = (k / 4).max(1);
    Some((0..baseline, k - recent..k))
}

/// The series and the drift of every event of a profile with windows; `None` when it has none.
pub fn windows(profile: &Profile, options: &DiffOptions) -> Option<Windows> {
    let kept = &profile.windows;
    if kept.is_empty() {
        return None;
    }
    let k = kept.len();
    let measured = window_events(profile);
    let mut iteration = series(None, Identity::named("iteration"), wall_medians(kept));
    let mut events: Vec<Series> = measured
        .iter()
        .map(|e| series(Some(e.order), e.identity(), event_medians(kept, e.order)))
        .collect();

    let (baseline, recent, note) = match split(k) {
        Some((b, r)) => {
            let sides = (&kept[b.clone()], &kept[r.clone()]);
            compare(
                profile,
                &measured,
                sides,
                options,
                &mut iteration,
                &mut events,
            );
            (Some(span(kept, &b)), Some(span(kept, &r)), None)
        }
        None => (
            None,
            None,
            Some(format!(
                "not enough windows: {k} kept, {MIN_WINDOWS} needed to compare recent windows \
                 with earlier ones"
            )),
        ),
    };

    let mut lengths: Vec<u64> = kept.iter().map(Window::iterations).collect();
    lengths.sort_unstable();
    Some(Windows {
        kept: k,
        closed: kept.last().map_or(0, |w| w.index + 1),
        cap: profile.run.windows,
        iterations_per_window: lengths[lengths.len() / 2],
        indices: kept.iter().map(|w| w.index).collect(),
        first_iterations: kept.iter().map(|w| w.first_iteration).collect(),
        baseline,
        recent,
        note,
        iteration,
        events,
        threshold: options.threshold,
        alpha: options.alpha,
    })
}

/// Every event measured in at least one window, in execution order: the file's event of that
/// `order` (the first, if several share it), or a [`placeholder`] named after the order when
/// `events` lacks it, so that every series has an identity to show.
fn window_events(profile: &Profile) -> Vec<Event> {
    let mut orders: Vec<u32> = profile
        .windows
        .iter()
        .flat_map(|w| w.events.iter().map(|e| e.order))
        .collect();
    orders.sort_unstable();
    orders.dedup();
    let by_order: HashMap<u32, &Event> =
        profile.events.iter().rev().map(|e| (e.order, e)).collect();
    orders
        .iter()
        .map(|&o| match by_order.get(&o) {
            Some(e) => (*e).clone(),
            None => placeholder(o),
        })
        .collect()
}

/// The median of the event of `order` in each window; `None` where it had no sample.
fn event_medians(kept: &[Window], order: u32) -> Vec<Option<u64>> {
    kept.iter()
        .map(|w| {
            w.events
                .iter()
                .find(|e| e.order == order)
                .filter(|e| e.stats.count > 0)
                .map(|e| e.stats.median_ns)
        })
        .collect()
}

/// The median wall time of each window's iterations; `None` for a window without any.
fn wall_medians(kept: &[Window]) -> Vec<Option<u64>> {
    kept.iter()
        .map(|w| (!w.wall_ns.is_empty()).then(|| Stats::of(&w.wall_ns).median_ns))
        .collect()
}

/// The kept windows at positions `r`, by their `index`.
fn span(kept: &[Window], r: &std::ops::Range<usize>) -> Span {
    Span {
        first: kept[r.start].index,
        last: kept[r.end - 1].index,
        windows: r.len(),
    }
}

/// Compares the `(baseline, recent)` windows as `prof diff` compares two runs, and sets the
/// comparison and the verdict of the iteration and of every series of `events` (one per event
/// of `measured`, in the same order).
fn compare(
    profile: &Profile,
    measured: &[Event],
    (baseline, recent): (&[Window], &[Window]),
    options: &DiffOptions,
    iteration: &mut Series,
    events: &mut [Series],
) {
    let before = pooled(profile, measured, baseline);
    let after = pooled(profile, measured, recent);
    // Windows of one run: code and data stay where they are, so no event is given the least
    // instability that two runs of a program need.
    let same_run = DiffOptions {
        min_instability: 0.0,
        ..options.clone()
    };
    let d = diff::diff(&before, &after, &same_run);
    let by_key: HashMap<(String, u32), &EventDiff> = d
        .events
        .iter()
        .map(|e| ((e.identity.id.clone(), e.identity.occurrence), e))
        .collect();
    for (s, e) in events.iter_mut().zip(measured) {
        if let Some(c) = by_key.get(&event_key(e)) {
            s.comparison = Some((*c).clone());
        }
        s.drift = status(s.comparison.as_ref());
    }
    iteration.comparison = Some(d.iteration.clone());
    iteration.drift = status(iteration.comparison.as_ref());
}

/// The drift verdict of a comparison: `prof diff`'s verdict, unknown without a sample on
/// each side.
fn status(c: Option<&EventDiff>) -> DriftStatus {
    match c {
        Some(c) if c.before_n > 0 && c.after_n > 0 => match c.verdict {
            Verdict::Regressed => DriftStatus::Slower,
            Verdict::Improved => DriftStatus::Faster,
            Verdict::NoChange | Verdict::WithinNoise => DriftStatus::Stable,
        },
        _ => DriftStatus::Unknown,
    }
}

/// A series of medians, without comparison yet.
fn series(order: Option<u32>, identity: Identity, medians_ns: Vec<Option<u64>>) -> Series {
    let first = medians_ns.iter().flatten().next().copied();
    let last = medians_ns.iter().rev().flatten().next().copied();
    let change = match (first, last) {
        (Some(f), Some(l)) if f > 0 => Some(l as f64 / f as f64 - 1.0),
        _ => None,
    };
    Series {
        order,
        identity,
        medians_ns,
        first_median_ns: first,
        last_median_ns: last,
        change,
        comparison: None,
        drift: DriftStatus::Unknown,
    }
}

/// An event measured in a window but absent from `events`: named after its order.
fn placeholder(order: u32) -> Event {
    Event {
        id: format!("order {order}"),
        name: format!("order {order}"),
        layer: None,
        phase: None,
        kind: "fn".to_owned(),
        module: String::new(),
        file: String::new(),
        line: 0,
        occurrence: 0,
        order,
        device: None,
        stream: None,
        merged: false,
        parent: None,
        samples_ns: Vec::new(),
        offsets_ns: Vec::new(),
        sample_iters: Vec::new(),
        stats: Stats::default(),
        gpu: None,
        memory: None,
    }
}

/// A synthetic profile of some windows: per event of `measured`, its samples in those windows
/// pooled; the windows' iterations in order, none of them warmup.
fn pooled(profile: &Profile, measured: &[Event], windows: &[Window]) -> Profile {
    let events = measured
        .iter()
        .map(|e| {
            let samples: Vec<u64> = windows
                .iter()
                .flat_map(|w| w.events.iter().filter(|we| we.order == e.order))
                .flat_map(|we| we.samples_ns.iter().copied())
                .collect();
            Event {
                stats: Stats::of(&samples),
                samples_ns: samples,
                offsets_ns: Vec::new(),
                sample_iters: Vec::new(),
                merged: false,
                gpu: None,
                memory: None,
                ..e.clone()
            }
        })
        .collect();
    let wall_ns: Vec<u64> = windows
        .iter()
        .flat_map(|w| w.wall_ns.iter().copied())
        .collect();
    let mut run = profile.run.clone();
    run.mode = "sample".to_owned();
    run.warmup = 0;
    Profile {
        schema: profile.schema.clone(),
        complete: true,
        run,
        iterations: Iterations {
            count: wall_ns.len() as u64,
            first: 0,
            wall_ns,
            device_memory: Vec::new(),
        },
        events,
        windows: Vec::new(),
    }
}

/// Eight levels, lowest first.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The most characters of a sparkline: longer series are shown as the median of consecutive
/// groups of windows.
pub const SPARK_WIDTH: usize = 40;

/// A series as a unicode sparkline (`▁▂▃▅▇`), at most [`SPARK_WIDTH`] characters (each the
/// median of consecutive windows when there are more), `·` where unknown. The scale runs from
/// the series' minimum to its maximum, but spans at least 10% of its median, centred, so that a
/// steady series with a little noise stays flat.
pub fn sparkline(values: &[Option<u64>]) -> String {
    let group = values.len().div_ceil(SPARK_WIDTH).max(1);
    let points: Vec<Option<f64>> = values
        .chunks(group)
        .map(|c| {
            let known: Vec<f64> = c.iter().flatten().map(|&v| v as f64).collect();
            (!known.is_empty()).then(|| stats::median(&known))
        })
        .collect();
    let known: Vec<f64> = points.iter().flatten().copied().collect();
    if known.is_empty() {
        return "·".repeat(points.len());
    }
    let (mut lo, mut hi) = known
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let least = 0.1 * stats::median(&known);
    if hi - lo < least {
        let mid = (lo + hi) / 2.0;
        lo = mid - least / 2.0;
        hi = mid + least / 2.0;
    }
    points
        .iter()
        .map(|p| match p {
            None => '·',
            Some(v) if hi > lo => {
                let level = ((v - lo) / (hi - lo) * BARS.len() as f64) as usize;
                BARS[level.min(BARS.len() - 1)]
            }
            Some(_) => BARS[0],
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
