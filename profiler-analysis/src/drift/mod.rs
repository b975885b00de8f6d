//! `continuous` mode: each event's median per window over time, where its fastest-5% time per
//! window changes (the headline), and whether an event's recent windows *drift*, from the run's
//! start and within its recent past. `prof report` and
//! `prof html` show what [`windows`] computes.
//!
//! # The series
//!
//! For every kept window (`windows`, oldest first) and every event measured in at least one of
//! them (matched by `order`; merged events are not in windows), the median of the event's samples
//! in that window (`stats.median_ns`; none where the event had no sample in the window). The
//! iteration has a series too: the median wall time of each window's iterations.
//!
//! # The windows compared
//!
//! A file keeps two kinds of windows, oldest first: the run's **baseline** windows (its first
//! windows after warmup, `baseline: true`, kept for the whole run: `PROF_BASELINE_WINDOWS`), then
//! the R most **recent** windows after them (`PROF_WINDOWS`, the oldest dropped first). Of those
//! R:
//!
//! - **recent** = the last quarter, `max(1, R / 4)` windows (rounded down);
//! - **earlier** = the first half, `max(1, R / 2)` windows (rounded down; needs R >= 2).
//!
//! The recent windows are judged twice:
//!
//! - **since the start**: against the baseline windows. This is what finds a change that began
//!   long ago, before every window kept now but the baseline ones (a run that slowed at
//!   iteration 4,000 and keeps its last 20 windows).
//! - **in the recent past**: against the earlier windows (the windows between the two sides are
//!   left out, so that a change under way does not blur both). This is what finds a change that
//!   began recently, whatever happened before.
//!
//! With R = 2: the first against the second; 3: the first against the third; 8: the first 4
//! against the last 2. A file without baseline windows (written with `PROF_BASELINE_WINDOWS=0`,
//! or before they existed) gets the recent-past comparison only.
//!
//! # The statistics: those of `prof diff`
//!
//! Each side becomes a synthetic [`Profile`]: one event per event of the file (same identity),
//! whose samples are the samples of all that side's windows pooled, and whose iterations are the
//! wall times of all that side's windows, in order (no warmup; blocks of `run.repeat` iterations
//! for the iteration's block bootstrap). The two are compared by [`diff::diff`] with
//! [`DiffOptions::default`] (the baseline or earlier windows = before, the recent ones = after),
//! so the ratio, the confidence interval, the p-value, the Holm adjustment over the iteration and
//! every event (per comparison), the noise allowance (here the spread of the events' ratios
//! between the two sides: windows do not record which iteration each sample was taken in, so no
//! per-sample adjustment and no per-event drift of the machine is applied) and the verdict are
//! exactly `prof diff`'s. An event is **slower** when the verdict is `regressed`, **faster** when
//! it is `improved`, **stable** when it is `no change` or `within noise` (the windows could have
//! shown a change of the threshold's size), **inconclusive** when it is `inconclusive` (they
//! could not: too few or too scattered samples), and **unknown** when a side has no sample (or
//! the comparison cannot be made).
//!
//! # The verdict shown first: change points
//!
//! Each series also has the **fastest-5% time** of each kept window ([`Series::fast_ns`]:
//! [`stats::fast`] of the window's samples; of its wall times for the iteration). Where at least
//! [`MIN_CHANGE_WINDOWS`] windows have one, the headline ([`Series::drift`]) is where that
//! series changes ([`change`]: the most likely split of its logs, a permutation test at alpha
//! and a Student max-t p-value adjusted by Holm over the series, then binary segmentation; each
//! change's size by Welch's interval between its neighbouring changes): `slower` or `faster`
//! when a significant change's interval lies beyond `1 ± threshold` ([`Series::change_point`],
//! all of them in [`Series::change_points`]); `stable` when none does and the most likely
//! change's interval (Student's, variance pooled) and every significant change's lie inside
//! `1 ± threshold`; else `inconclusive` ([`Series::most_likely_change`] says where and how much).
//! [`Series::drift_basis`] is then [`Basis::ChangePoints`].
//!
//! With fewer windows, the headline is one of the two judgements ([`Series::since_start`],
//! [`Series::recent_past`], with [`Series::drift_against`] saying which): the drift since the
//! start if there is one, else the drift in the recent past, else `stable` (since the start when
//! that is known), else `inconclusive` (likewise), else `unknown`. Both judgements are kept in
//! every case, as secondary verdicts.

use std::collections::HashMap;
use std::ops::Range;

use serde::Serialize;

use super::diff::{self, DiffOptions, EventDiff, Verdict};
use super::{event_key, stats};
use profiler_format::{Event, Identity, Iterations, Profile, Stats, Window};

pub mod change;

/// Fewest kept recent windows for the recent-past comparison.
pub const MIN_WINDOWS: usize = 2;

/// Fewest kept windows with a sample for the change points to be the headline: with fewer, a
/// permutation test cannot find a change two windows from an end at alpha 0.05 (only
/// `2 / C(n, 2)` of the shuffles put those two windows together at an end: 0.03 for 12).
pub const MIN_CHANGE_WINDOWS: usize = 12;

/// What a series' headline verdict rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The change points of its fastest-5% times ([`MIN_CHANGE_WINDOWS`] windows or more).
    ChangePoints,
    /// The comparison `drift_against` names (too few windows for change points).
    Comparison,
    /// Nothing: no change points and no comparison.
    None,
}

/// A change in a series of windows: the series steps between two kept windows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChangePoint {
    /// `index` of the first window after the change.
    pub index: u64,
    /// The first iteration of that window.
    pub first_iteration: u64,
    /// `index` of the last kept window before the change (windows between the two, if any, were
    /// not kept: the change happened in one of them or at `index`).
    pub previous_index: u64,
    /// Windows (with a sample) of the segment before: from the previous change, or the start.
    pub before_windows: usize,
    /// Windows (with a sample) of the segment after: up to the next change, or the end.
    pub after_windows: usize,
    /// The geometric mean of the fastest-5% times of the windows before.
    pub before_fast_ns: u64,
    /// The geometric mean of the fastest-5% times of the windows after.
    pub after_fast_ns: u64,
    /// `after / before` (of the geometric means).
    pub ratio: f64,
    /// Lower end of the interval (level `1 - alpha`) of the ratio: Welch's on the two segments'
    /// logs (Student's with pooled variance for [`Series::most_likely_change`]).
    pub ci_low: f64,
    /// Upper end of that interval.
    pub ci_high: f64,
    /// The Student max-t p-value of the split within its segment ([`change::max_t_p`]).
    pub p: f64,
    /// `p` adjusted over the series: Holm for each series' most likely change, Bonferroni for
    /// the further ones found inside a segment.
    pub p_adjusted: f64,
    /// The permutation p-value of the split within its segment ([`change::permutation_p`],
    /// not adjusted: see [`change`] for why). Significant: `p_adjusted` and this below alpha.
    pub p_permutation: f64,
    /// `slower` or `faster`: significant and its interval beyond the threshold; `stable`: the
    /// interval inside `1 ± threshold`; else `inconclusive`.
    pub drift: DriftStatus,
}

/// What the comparison says about one event (or the iteration).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftStatus {
    /// The recent windows are slower (`prof diff` would say `regressed`).
    Slower,
    /// The recent windows are faster (`prof diff` would say `improved`).
    Faster,
    /// No change beyond the noise (`no change` or `within noise`): a change of the threshold's
    /// size would have been seen.
    Stable,
    /// No change seen, but one of the threshold's size could have gone unseen (`prof diff`'s
    /// `inconclusive`).
    Inconclusive,
    /// No comparison, or no sample on one side.
    Unknown,
}

impl DriftStatus {
    /// `"slower"`, `"faster"`, `"stable"`, `"inconclusive"` or `"unknown"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftStatus::Slower => "slower",
            DriftStatus::Faster => "faster",
            DriftStatus::Stable => "stable",
            DriftStatus::Inconclusive => "inconclusive",
            DriftStatus::Unknown => "unknown",
        }
    }

    /// Slower or faster.
    pub fn drifted(self) -> bool {
        matches!(self, DriftStatus::Slower | DriftStatus::Faster)
    }
}

/// Which windows the recent ones were compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Against {
    /// The run's baseline windows, its first after warmup: the drift since the start.
    Start,
    /// The earlier of the recent windows kept: the drift in the recent past.
    RecentPast,
}

impl Against {
    /// `"since the start"` or `"in the recent past"`, as the reports write it.
    pub fn phrase(self) -> &'static str {
        match self {
            Against::Start => "since the start",
            Against::RecentPast => "in the recent past",
        }
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

/// One comparison of the recent windows, for one series.
#[derive(Clone, Debug, Serialize)]
pub struct Judgement {
    /// The recent windows against the other side, as `prof diff` compares two runs; `None`
    /// without this comparison.
    pub comparison: Option<EventDiff>,
    /// The verdict.
    pub drift: DriftStatus,
}

impl Judgement {
    /// No comparison.
    fn none() -> Judgement {
        Judgement {
            comparison: None,
            drift: DriftStatus::Unknown,
        }
    }
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
    /// The recent windows against the run's baseline windows.
    pub since_start: Judgement,
    /// The recent windows against the earlier windows of the recent past.
    pub recent_past: Judgement,
    /// The headline verdict (see the module documentation).
    pub drift: DriftStatus,
    /// Which comparison the headline is; `None` when unknown.
    pub drift_against: Option<Against>,
    /// The headline's comparison (`None` when the headline rests on the change points).
    pub comparison: Option<EventDiff>,
    /// What the headline rests on.
    pub drift_basis: Basis,
    /// The fastest-5% time ([`stats::fast`]) per kept window, oldest first; `None` where it had
    /// no sample: the series the change points are found in.
    pub fast_ns: Vec<Option<u64>>,
    /// The change the headline names: the most likely single change of the series when it is
    /// beyond the threshold, else the first such change in window order; `None` without one.
    pub change_point: Option<ChangePoint>,
    /// Every change beyond the threshold found (binary segmentation), in window order.
    pub change_points: Vec<ChangePoint>,
    /// The most likely single change of the whole series, significant or not, with the interval
    /// that decides `stable` (Student's, the variance pooled over both sides); `None` under
    /// [`MIN_CHANGE_WINDOWS`] windows with a sample.
    pub most_likely_change: Option<ChangePoint>,
}

impl Series {
    /// The judgement against `against`.
    pub fn judgement(&self, against: Against) -> &Judgement {
        match against {
            Against::Start => &self.since_start,
            Against::RecentPast => &self.recent_past,
        }
    }
}

/// The windows of a `continuous`-mode profile: per event, the series and the drift.
#[derive(Clone, Debug, Serialize)]
pub struct Windows {
    /// Windows kept in the file.
    pub kept: usize,
    /// Windows closed by the run (kept or dropped): the last one's `index` + 1.
    pub closed: u64,
    /// The most recent windows kept (`run.windows`, `PROF_WINDOWS`).
    pub cap: Option<u32>,
    /// How many of the kept windows are the run's baseline windows (the first ones).
    pub baseline_windows: usize,
    /// Median number of iterations per window.
    pub iterations_per_window: u64,
    /// `index` of each kept window, oldest first (the x axis of every series).
    pub indices: Vec<u64>,
    /// First iteration of each kept window.
    pub first_iterations: Vec<u64>,
    /// The baseline windows the recent ones were compared with (`None`: no such comparison).
    pub start: Option<Span>,
    /// The earlier windows the recent ones were compared with (`None`: no such comparison).
    pub earlier: Option<Span>,
    /// The recent windows compared (`None`: no comparison at all).
    pub recent: Option<Span>,
    /// Why a comparison is missing, one line each.
    pub notes: Vec<String>,
    /// The iteration: median wall time per window.
    pub iteration: Series,
    /// The events measured in at least one kept window, in execution order.
    pub events: Vec<Series>,
    /// The threshold of the comparisons.
    pub threshold: f64,
    /// The significance level of the comparisons.
    pub alpha: f64,
}

impl Windows {
    /// The events whose headline verdict is a drift (slower or faster).
    pub fn drifted(&self) -> impl Iterator<Item = &Series> {
        self.events.iter().filter(|s| s.drift.drifted())
    }

    /// The windows compared with the recent ones for `against`.
    pub fn side(&self, against: Against) -> Option<&Span> {
        match against {
            Against::Start => self.start.as_ref(),
            Against::RecentPast => self.earlier.as_ref(),
        }
    }
}

/// Of `k` recent windows (those after the baseline ones), the earlier and the recent ones
/// compared in the recent past; `None` below [`MIN_WINDOWS`]. See the module documentation.
pub fn split(k: usize) -> Option<(Range<usize>, Range<usize>)> {
    if k < MIN_WINDOWS {
        return None;
    }
    let earlier = (k / 2).max(1);
    let recent = (k / 4).max(1);
    Some((0..earlier, k - recent..k))
}

/// Which kept windows (positions in `windows`) each comparison uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sides {
    /// The baseline windows compared since the start.
    pub start: Option<Range<usize>>,
    /// The earlier windows compared in the recent past.
    pub earlier: Option<Range<usize>>,
    /// The recent windows, compared with both.
    pub recent: Option<Range<usize>>,
}

/// The sides of the comparisons of `kept` windows (oldest first, the baseline ones first).
pub fn sides(kept: &[Window]) -> Sides {
    let b = kept.iter().take_while(|w| w.baseline).count();
    let r = kept.len() - b;
    if r == 0 {
        return Sides::default();
    }
    let start = (b > 0).then_some(0..b);
    let earlier = split(r).map(|(e, _)| b + e.start..b + e.end);
    let recent =
        (start.is_some() || earlier.is_some()).then_some(kept.len() - (r / 4).max(1)..kept.len());
    Sides {
        start,
        earlier,
        recent,
    }
}

/// Why a comparison of `sides` (of `kept`) is missing, one line each.
fn notes(kept: &[Window], sides: &Sides) -> Vec<String> {
    let b = kept.iter().take_while(|w| w.baseline).count();
    let r = kept.len() - b;
    let mut notes = Vec::new();
    if sides.start.is_none() {
        notes.push(if b == 0 {
            "since the start: no baseline windows in this file (PROF_BASELINE_WINDOWS=0, or \
             written before profiler-core kept them)"
                .to_owned()
        } else {
            format!(
                "since the start: not enough windows: the first {b} are the baseline; the \
                 comparison needs one more"
            )
        });
    }
    if sides.earlier.is_none() {
        notes.push(format!(
            "in the recent past: not enough windows: {r} kept after the baseline, \
             {MIN_WINDOWS} needed"
        ));
    }
    notes
}

/// The series and the drift of every event of a profile with windows; `None` when it has none.
pub fn windows(profile: &Profile, options: &DiffOptions) -> Option<Windows> {
    let kept = &profile.windows;
    if kept.is_empty() {
        return None;
    }
    let measured = window_events(profile);
    let mut iteration = series(None, Identity::named("iteration"), wall_medians(kept));
    iteration.fast_ns = wall_fast(kept);
    let mut events: Vec<Series> = measured
        .iter()
        .map(|e| {
            let mut s = series(Some(e.order), e.identity(), event_medians(kept, e.order));
            s.fast_ns = event_fast(kept, e.order);
            s
        })
        .collect();
    let sides = sides(kept);
    if let Some(recent) = &sides.recent {
        for (against, side) in [
            (Against::Start, &sides.start),
            (Against::RecentPast, &sides.earlier),
        ] {
            if let Some(side) = side {
                let pair = (&kept[side.clone()], &kept[recent.clone()]);
                let compared = (&mut iteration, &mut events[..]);
                compare(profile, &measured, pair, options, against, compared);
            }
        }
    }
    for s in std::iter::once(&mut iteration).chain(&mut events) {
        headline(s);
    }
    let mut all: Vec<&mut Series> = std::iter::once(&mut iteration).chain(&mut events).collect();
    change_points(kept, &mut all, options.threshold, options.alpha);
    let mut lengths: Vec<u64> = kept.iter().map(Window::iterations).collect();
    lengths.sort_unstable();
    Some(Windows {
        kept: kept.len(),
        closed: kept.last().map_or(0, |w| w.index + 1),
        cap: profile.run.windows,
        baseline_windows: kept.iter().take_while(|w| w.baseline).count(),
        iterations_per_window: lengths[lengths.len() / 2],
        indices: kept.iter().map(|w| w.index).collect(),
        first_iterations: kept.iter().map(|w| w.first_iteration).collect(),
        start: sides.start.as_ref().map(|r| span(kept, r)),
        earlier: sides.earlier.as_ref().map(|r| span(kept, r)),
        recent: sides.recent.as_ref().map(|r| span(kept, r)),
        notes: notes(kept, &sides),
        iteration,
        events,
        threshold: options.threshold,
        alpha: options.alpha,
    })
}

/// Shuffles of a permutation test (at most: it stops early, see [`change::STOP_AFTER`]).
pub const PERMUTATIONS: usize = 999;

/// Finds the change points of every series of `all` (the iteration first, then the events) and
/// makes them the headline where the series has [`MIN_CHANGE_WINDOWS`] windows with a sample
/// (see the module documentation).
fn change_points(kept: &[Window], all: &mut [&mut Series], threshold: f64, alpha: f64) {
    // Per series: the kept windows with a sample (positions in `kept`) and their logs.
    let points: Vec<(Vec<usize>, Vec<f64>)> = all
        .iter()
        .map(|s| {
            s.fast_ns
                .iter()
                .enumerate()
                .filter_map(|(k, v)| v.filter(|&v| v > 0).map(|v| (k, (v as f64).ln())))
                .unzip()
        })
        .collect();
    let seed_of = |i: usize| change::SEED ^ (i as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let tops: Vec<Option<change::Found>> = points
        .iter()
        .enumerate()
        .map(|(i, (_, x))| {
            (x.len() >= MIN_CHANGE_WINDOWS)
                .then(|| change::test(x, PERMUTATIONS, seed_of(i)))
                .flatten()
        })
        .collect();
    let tested: Vec<usize> = (0..all.len()).filter(|&i| tops[i].is_some()).collect();
    let family = tested.len();
    let adjusted = stats::holm(
        &tested
            .iter()
            .filter_map(|&i| tops[i].map(|t| t.p))
            .collect::<Vec<_>>(),
    );
    for (&i, p_adjusted) in tested.iter().zip(adjusted) {
        let (Some(top), (at_window, x)) = (tops[i], &points[i]) else {
            continue;
        };
        let first = change::Found { p_adjusted, ..top };
        let found = if first.significant(alpha) {
            change::segment(x, first, family, alpha, PERMUTATIONS, seed_of(i))
        } else {
            Vec::new()
        };
        let point = |f: &change::Found, (from, to): (usize, usize), size: change::Size| {
            let significant = f.significant(alpha);
            let drift = match (significant, size.beyond(threshold)) {
                (true, Some(true)) => DriftStatus::Slower,
                (true, Some(false)) => DriftStatus::Faster,
                _ if size.within(threshold) => DriftStatus::Stable,
                _ => DriftStatus::Inconclusive,
            };
            let gmean = |r: &[f64]| (r.iter().sum::<f64>() / r.len() as f64).exp().round() as u64;
            let (after, before) = (&kept[at_window[f.at]], &kept[at_window[f.at - 1]]);
            ChangePoint {
                index: after.index,
                first_iteration: after.first_iteration,
                previous_index: before.index,
                before_windows: f.at - from,
                after_windows: to - f.at,
                before_fast_ns: gmean(&x[from..f.at]),
                after_fast_ns: gmean(&x[f.at..to]),
                ratio: size.ratio,
                ci_low: size.ci_low,
                ci_high: size.ci_high,
                p: f.p,
                p_adjusted: f.p_adjusted,
                p_permutation: f.p_permutation,
                drift,
            }
        };
        // Each change measured between its neighbours: from the previous change (or the start)
        // to the next (or the end).
        let bounds: Vec<usize> = std::iter::once(0)
            .chain(found.iter().map(|f| f.at))
            .chain(std::iter::once(x.len()))
            .collect();
        let judged: Vec<ChangePoint> = found
            .iter()
            .enumerate()
            .map(|(j, f)| {
                let (from, to) = (bounds[j], bounds[j + 2]);
                let size = change::welch(&x[from..f.at], &x[f.at..to], alpha);
                point(f, (from, to), size)
            })
            .collect();
        let most_likely = point(
            &first,
            (0, x.len()),
            change::pooled(&x[..top.at], &x[top.at..], alpha),
        );
        let s = &mut *all[i];
        s.change_points = judged
            .iter()
            .filter(|c| c.drift.drifted())
            .cloned()
            .collect();
        s.change_point = found
            .iter()
            .zip(&judged)
            .find(|(f, c)| f.at == top.at && c.drift.drifted())
            .map(|(_, c)| c.clone())
            .or_else(|| s.change_points.first().cloned());
        // Stable: no change beyond the threshold, and neither the most likely change nor any
        // significant one can be as large as the threshold.
        let ruled_out = most_likely.drift == DriftStatus::Stable
            && judged.iter().all(|c| c.drift == DriftStatus::Stable);
        s.drift = match &s.change_point {
            Some(c) => c.drift,
            None if ruled_out => DriftStatus::Stable,
            None => DriftStatus::Inconclusive,
        };
        s.most_likely_change = Some(most_likely);
        s.drift_basis = Basis::ChangePoints;
        s.drift_against = None;
        s.comparison = None;
    }
}

/// Sets the headline verdict of `s` from its two judgements (see the module documentation).
fn headline(s: &mut Series) {
    let (start, past) = (s.since_start.drift, s.recent_past.drift);
    let against = if start.drifted() {
        Some(Against::Start)
    } else if past.drifted() {
        Some(Against::RecentPast)
    } else if start == DriftStatus::Stable {
        Some(Against::Start)
    } else if past == DriftStatus::Stable {
        Some(Against::RecentPast)
    } else if start == DriftStatus::Inconclusive {
        Some(Against::Start)
    } else if past == DriftStatus::Inconclusive {
        Some(Against::RecentPast)
    } else {
        None
    };
    s.drift_against = against;
    s.drift_basis = if against.is_some() {
        Basis::Comparison
    } else {
        Basis::None
    };
    match against {
        Some(a) => {
            let j = s.judgement(a).clone();
            (s.drift, s.comparison) = (j.drift, j.comparison);
        }
        None => (s.drift, s.comparison) = (DriftStatus::Unknown, None),
    }
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

/// The fastest-5% time ([`stats::fast`]) of the event of `order` in each window; `None` where it
/// had no sample.
fn event_fast(kept: &[Window], order: u32) -> Vec<Option<u64>> {
    kept.iter()
        .map(|w| {
            w.events
                .iter()
                .find(|e| e.order == order)
                .filter(|e| !e.samples_ns.is_empty())
                .map(|e| fast_ns(&e.samples_ns))
        })
        .collect()
}

/// The fastest-5% wall time of each window's iterations; `None` for a window without any.
fn wall_fast(kept: &[Window]) -> Vec<Option<u64>> {
    kept.iter()
        .map(|w| (!w.wall_ns.is_empty()).then(|| fast_ns(&w.wall_ns)))
        .collect()
}

fn fast_ns(samples: &[u64]) -> u64 {
    stats::fast(&stats::as_f64(samples)).round() as u64
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

/// Compares the `(before, recent)` windows as `prof diff` compares two runs, and sets the
/// judgement `against` of the iteration and of every series of `events` (one per event of
/// `measured`, in the same order).
fn compare(
    profile: &Profile,
    measured: &[Event],
    (before, recent): (&[Window], &[Window]),
    options: &DiffOptions,
    against: Against,
    (iteration, events): (&mut Series, &mut [Series]),
) {
    // Windows of one run: code and data stay where they are, so no event is given the least
    // instability that two runs of a program need.
    let same_run = DiffOptions {
        min_instability: 0.0,
        ..options.clone()
    };
    let d = diff::diff(
        &pooled(profile, measured, before),
        &pooled(profile, measured, recent),
        &same_run,
    );
    let by_key: HashMap<(String, u32), &EventDiff> = d
        .events
        .iter()
        .map(|e| ((e.identity.id.clone(), e.identity.occurrence), e))
        .collect();
    let judge = |c: Option<EventDiff>| Judgement {
        drift: status(c.as_ref(), options.threshold),
        comparison: c,
    };
    let set = |s: &mut Series, j: Judgement| match against {
        Against::Start => s.since_start = j,
        Against::RecentPast => s.recent_past = j,
    };
    for (s, e) in events.iter_mut().zip(measured) {
        let c = by_key.get(&event_key(e)).map(|c| (*c).clone());
        set(s, judge(c));
    }
    set(iteration, judge(Some(d.iteration.clone())));
}

/// The drift verdict of a comparison: `prof diff`'s verdict, unknown without a sample on
/// each side. *Stable* only where a drift of `threshold` is ruled out: a change that is real
/// but whose interval reaches past the threshold (`prof diff`'s *within noise*, say 1.041
/// within [1.019, 1.063] against 2%) is *inconclusive*, as the guide says (it was stable).
fn status(c: Option<&EventDiff>, threshold: f64) -> DriftStatus {
    match c {
        Some(c) if c.before_n > 0 && c.after_n > 0 => match c.verdict {
            Verdict::Regressed => DriftStatus::Slower,
            Verdict::Improved => DriftStatus::Faster,
            Verdict::NoChange => DriftStatus::Stable,
            Verdict::WithinNoise if c.ci_low >= 1.0 - threshold && c.ci_high <= 1.0 + threshold => {
                DriftStatus::Stable
            }
            Verdict::WithinNoise | Verdict::Inconclusive => DriftStatus::Inconclusive,
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
        since_start: Judgement::none(),
        recent_past: Judgement::none(),
        drift: DriftStatus::Unknown,
        drift_against: None,
        comparison: None,
        drift_basis: Basis::None,
        fast_ns: Vec::new(),
        change_point: None,
        change_points: Vec::new(),
        most_likely_change: None,
    }
}

/// An event measured in a window but absent from `events`: named after its order.
fn placeholder(order: u32) -> Event {
    Event {
        id: format!("order {order}"),
        name: format!("order {order}"),
        kind: "fn".to_owned(),
        order,
        ..Default::default()
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
        before_loop: Vec::new(),
        cpu_samples: None,
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
    sparkline_split(values, 0)
}

/// As [`sparkline`], with a `┊` before position `split` (none when it is 0 or the end): the
/// baseline windows, then the windows kept after a gap. Each side is grouped on its own (the
/// first side gets at most a quarter of [`SPARK_WIDTH`]); the scale is common.
pub fn sparkline_split(values: &[Option<u64>], split: usize) -> String {
    let split = if split >= values.len() { 0 } else { split };
    let (head, tail) = values.split_at(split);
    let head_width = head.len().min(SPARK_WIDTH / 4);
    let tail_width = SPARK_WIDTH - head_width - usize::from(split > 0);
    let head = points(head, head_width);
    let tail = points(tail, tail_width);
    let known: Vec<f64> = head.iter().chain(&tail).flatten().copied().collect();
    let (mut lo, mut hi) = known
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    if !known.is_empty() {
        let least = 0.1 * stats::median(&known);
        if hi - lo < least {
            let mid = (lo + hi) / 2.0;
            lo = mid - least / 2.0;
            hi = mid + least / 2.0;
        }
    }
    let bar = |p: &Option<f64>| match p {
        None => '·',
        Some(v) if hi > lo => {
            let level = ((v - lo) / (hi - lo) * BARS.len() as f64) as usize;
            BARS[level.min(BARS.len() - 1)]
        }
        Some(_) => BARS[0],
    };
    let mut line: String = head.iter().map(bar).collect();
    if split > 0 {
        line.push('┊');
    }
    line.extend(tail.iter().map(bar));
    line
}

/// `values` in at most `width` points, each the median of a group of consecutive values
/// (`None` where none of them is known).
fn points(values: &[Option<u64>], width: usize) -> Vec<Option<f64>> {
    let group = values.len().div_ceil(width.max(1)).max(1);
    values
        .chunks(group)
        .map(|c| {
            let known: Vec<f64> = c.iter().flatten().map(|&v| v as f64).collect();
            (!known.is_empty()).then(|| stats::median(&known))
        })
        .collect()
}

impl Windows {
    /// `s` as a sparkline: with a `┊` between the baseline windows and the recent ones when
    /// windows were dropped between them.
    pub fn sparkline(&self, s: &Series) -> String {
        self.sparkline_of(&s.medians_ns)
    }

    /// Any per-window series of these windows (one value per kept window, oldest first) as a
    /// sparkline, split as [`Windows::sparkline`] splits an event's: `prof watch` draws a
    /// layer's (the sum of its events' medians) with it.
    pub fn sparkline_of(&self, medians_ns: &[Option<u64>]) -> String {
        let b = self.baseline_windows;
        let gap = b > 0 && b < self.indices.len() && self.indices[b] > self.indices[b - 1] + 1;
        sparkline_split(medians_ns, if gap { b } else { 0 })
    }
}

#[cfg(test)]
pub(crate) mod tests;
