//! The measures of a profile that the end-of-run summary and `prof report` share, so that they
//! never disagree: the measured iterations, the warmup baseline and perturbation, and one row per
//! event (calls per iteration, total, self, share, noisy). `profiler-analysis` documents every
//! definition in its `report` module.

use std::collections::HashMap;

use serde::Serialize;

use crate::descriptive_stats as stats;
use profiler_format::{Event, Identity, Profile};

/// What [`profile_rows`] finds in a profile.
#[derive(Clone, Debug)]
pub struct ProfileRows {
    /// The measured iterations.
    pub iteration: IterationRow,
    /// Measured iterations against warmup; `None` without a usable warmup iteration.
    pub perturbation: Option<Perturbation>,
    /// One row per event, in the order of `profile.events`.
    pub events: Vec<EventRow>,
    /// The ancestors of each event (indices into `profile.events`), nearest first.
    pub ancestors: Ancestry,
}

/// The ancestors of every event, as its parent and how many distinct ancestors it has, not a
/// list per event: a profile whose events nest `n` deep would hold `n²` entries (a 20,000-deep
/// chain took 1.9 GB and 21 s in every command).
#[derive(Clone, Debug, Default)]
pub struct Ancestry {
    parents: Vec<Option<usize>>,
    depth: Vec<usize>,
}

impl Ancestry {
    /// The ancestry of events whose parents are `parents` (indices; a cycle, which a merged
    /// event can close, ends each walk where it would come back).
    pub fn new(parents: Vec<Option<usize>>) -> Ancestry {
        const UNKNOWN: usize = usize::MAX;
        let n = parents.len();
        let mut depth = vec![UNKNOWN; n];
        let mut on_path = vec![false; n];
        let mut path = Vec::new();
        for start in 0..n {
            // Up from `start` to a top-level event, an event already known, or back onto the
            // path (a cycle); then down the path, each one more than its parent.
            let mut cur = Some(start);
            let mut below = 0; // the depth of what the path ends on, plus one
            while let Some(i) = cur {
                if depth[i] != UNKNOWN {
                    below = depth[i] + 1;
                    break;
                }
                if on_path[i] {
                    // A cycle: each of its events has the others as ancestors.
                    let at = path.iter().rposition(|&j| j == i).unwrap_or(0);
                    let size = path.len() - at;
                    for &j in &path[at..] {
                        depth[j] = size - 1;
                        on_path[j] = false;
                    }
                    path.truncate(at);
                    below = size;
                    break;
                }
                on_path[i] = true;
                path.push(i);
                cur = parents[i].filter(|&p| p < n);
            }
            for &j in path.iter().rev() {
                depth[j] = below;
                on_path[j] = false;
                below += 1;
            }
            path.clear();
        }
        Ancestry { parents, depth }
    }

    /// The ancestors of event `i`, nearest first, each once.
    pub fn of(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let mut cur = self.parents.get(i).copied().flatten();
        (0..self.depth.get(i).copied().unwrap_or(0)).map_while(move |_| {
            let j = cur?;
            cur = self.parents[j];
            Some(j)
        })
    }

    /// How many ancestors event `i` has.
    pub fn depth(&self, i: usize) -> usize {
        self.depth.get(i).copied().unwrap_or(0)
    }
}

/// The wall times of the measured iterations: those listed in `iterations.wall_ns` whose
/// index is `>= run.warmup` (`wall_ns[k]` is iteration `iterations.first + k`), or all listed
/// iterations when the run stopped during warmup. In `continuous` mode the listed iterations are
/// the last window's, long after the warmup, so all of them are measured ones.
pub fn measured_walls(profile: &Profile) -> &[u64] {
    let walls = &profile.iterations.wall_ns;
    let warmup = warmup_listed(profile);
    if walls.len() > warmup {
        &walls[warmup..]
    } else {
        walls
    }
}

/// How many of the iterations listed in `iterations.wall_ns` are warmup iterations (index
/// `< run.warmup`): 0 when the list starts after the warmup (`continuous` mode).
pub fn warmup_listed(profile: &Profile) -> usize {
    let walls = &profile.iterations.wall_ns;
    let warmup = u64::from(profile.run.warmup).saturating_sub(profile.iterations.first);
    usize::try_from(warmup)
        .unwrap_or(usize::MAX)
        .min(walls.len())
}

/// One event of the report. Times in nanoseconds; see the module documentation for the
/// definitions.
#[derive(Clone, Debug, Serialize)]
pub struct EventRow {
    /// Position in the iteration's execution order.
    pub order: u32,
    /// Which event (its occurrence: the first run held, when merged); flattened, so that JSON
    /// has its `id`, `name`, `layer`, `phase` and `occurrence` as keys of the row.
    #[serde(flatten)]
    pub identity: Identity,
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
    /// What a run allocates, when the program counted it (`profiler_core::Alloc`); absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryRow>,
    /// The device memory around a run, for an event timed on a stream whose device reports it
    /// (`gpu.memory`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_memory: Option<DeviceMemoryRow>,
    /// The achieved rates, for an event whose annotation counts its work (`flops`, `bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<crate::work::WorkRow>,
    /// The event split by input shape, for an annotation with a `shape` key (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<crate::shapes::ShapeRow>,
}

/// The device memory around the runs of an event timed on a stream: medians over the samples
/// that have the figure (the typical run, as for [`MemoryRow`]).
#[derive(Clone, Debug, Serialize)]
pub struct DeviceMemoryRow {
    /// Median bytes in use on the event's device when a run ended.
    pub used_bytes: f64,
    /// Median change of the bytes in use over a run: what it left allocated (negative: it
    /// freed more than it allocated).
    pub change_bytes: f64,
}

impl DeviceMemoryRow {
    /// The medians of an event's device memory figures, or `None` when no sample has both.
    pub fn of(m: &profiler_format::DeviceMemory) -> Option<DeviceMemoryRow> {
        let used: Vec<f64> = m.used_bytes.iter().flatten().map(|&b| b as f64).collect();
        let change: Vec<f64> = m.change_bytes.iter().flatten().map(|&b| b as f64).collect();
        (!used.is_empty() && !change.is_empty()).then(|| DeviceMemoryRow {
            used_bytes: stats::median(&used),
            change_bytes: stats::median(&change),
        })
    }
}

/// One device's memory in use over the steps (`iterations.device_memory`), every listed step
/// that has a reading counted, warmup included.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceUsageRow {
    /// The device ordinal.
    pub device: u32,
    /// Steps with a reading.
    pub steps: u64,
    /// Fewest bytes in use at a step.
    pub min_bytes: u64,
    /// Most bytes in use at a step.
    pub max_bytes: u64,
    /// Bytes in use at the last step with a reading.
    pub last_bytes: u64,
}

impl DeviceUsageRow {
    /// The summary of a device's series, or `None` when it has no reading.
    pub fn of(u: &profiler_format::DeviceUsage) -> Option<DeviceUsageRow> {
        let last = u.readings().last()?;
        Some(DeviceUsageRow {
            device: u.device,
            steps: u.readings().count() as u64,
            min_bytes: u.readings().min()?,
            max_bytes: u.readings().max()?,
            last_bytes: last,
        })
    }
}

/// The summary of each device's memory over the steps of a profile, by device ordinal.
pub fn device_usage(profile: &Profile) -> Vec<DeviceUsageRow> {
    let mut rows: Vec<DeviceUsageRow> = profile
        .iterations
        .device_memory
        .iter()
        .filter_map(DeviceUsageRow::of)
        .collect();
    rows.sort_by_key(|r| r.device);
    rows
}

/// What one run of an event allocates: medians over its samples (exact counts, not times: a
/// run of the same code allocates the same, so the median is the typical run).
#[derive(Clone, Debug, Serialize)]
pub struct MemoryRow {
    /// Median bytes allocated by a run.
    pub alloc_bytes: f64,
    /// Median bytes freed by a run.
    pub freed_bytes: f64,
    /// Median number of allocations of a run.
    pub allocs: f64,
    /// Median peak of live bytes during a run, above what was live at its start.
    pub peak_bytes: f64,
}

impl MemoryRow {
    /// The medians of an event's memory figures.
    pub fn of(m: &profiler_format::Memory) -> MemoryRow {
        let median = |v: &[u64]| stats::median(&stats::as_f64(v));
        MemoryRow {
            alloc_bytes: median(&m.alloc_bytes),
            freed_bytes: median(&m.freed_bytes),
            allocs: median(&m.allocs),
            peak_bytes: median(&m.peak_bytes),
        }
    }
}

/// The iterations of the run.
#[derive(Clone, Debug, Serialize)]
pub struct IterationRow {
    /// Iterations completed (`iterations.count`).
    pub count: u64,
    /// The first iteration listed (`iterations.first`): 0, except in `continuous` mode, where
    /// the iterations described are the last window's.
    pub first: u64,
    /// Warmup iterations asked for (`run.warmup`).
    pub warmup: u32,
    /// Measured iterations (after warmup, or all if none is; in `continuous` mode, the last
    /// window's).
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
    /// The 95% interval of the ratio: from the distribution-free intervals of the two medians
    /// (order statistics), so that a few noisy iterations cannot move it; a short or scattered
    /// warmup makes it wide.
    pub ratio_low: f64,
    /// See [`Perturbation::ratio_low`].
    pub ratio_high: f64,
    /// `ratio_low - 1` above the threshold: the profiler slows the loop beyond its noise.
    pub flagged: bool,
    /// The interval settles the question: flagged, or it rules out a slowdown beyond the
    /// threshold (`ratio_high - 1` at most the threshold); otherwise the line says it is
    /// unreliable and why.
    pub reliable: bool,
    /// The warmup iterations the baseline is the median of (iteration 0 left out).
    pub warmup_iterations: usize,
}

/// The warmup iterations listed, leaving out iteration 0 (start-up).
pub fn warmup_walls(profile: &Profile) -> &[u64] {
    let walls = &profile.iterations.wall_ns;
    let start = usize::from(profile.iterations.first == 0);
    let end = warmup_listed(profile);
    if end <= start {
        return &[];
    }
    &walls[start..end]
}

/// The median warmup iteration listed, leaving out iteration 0 (start-up); `None` if there is none
/// (always so in `continuous` mode, whose listed iterations come long after the warmup) or it
/// is 0.
pub fn warmup_baseline(profile: &Profile) -> Option<f64> {
    // `wall_ns[k]` is iteration `first + k`: iteration 0, when listed, is `wall_ns[0]`.
    let walls = warmup_walls(profile);
    if walls.is_empty() {
        return None;
    }
    let base = stats::median(&stats::as_f64(walls));
    (base > 0.0).then_some(base)
}

/// Index of each event's parent in `events` (`None`: top level, missing or itself).
pub fn parent_indices(events: &[Event]) -> Vec<Option<usize>> {
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

/// `a / b`, or 0 when `b` is not positive.
pub fn ratio_or_zero(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Computes the measures of `profile`: events are `noisy` above `cv_threshold` (a fraction), and
/// the overall perturbation is flagged above `perturbation_threshold`.
pub fn profile_rows(
    profile: &Profile,
    cv_threshold: f64,
    perturbation_threshold: f64,
) -> ProfileRows {
    let iteration = iteration_row(profile);
    let baseline = warmup_baseline(profile);
    let after_warmup = profile.iterations.wall_ns.len() > warmup_listed(profile);
    let perturbation = baseline.filter(|_| after_warmup).map(|base| {
        let armed = iteration.median_ns;
        let ratio = armed / base;
        // Each median's 95% interval by order statistics: a noisy iteration moves neither.
        let interval = |walls: &[u64]| {
            let sorted = stats::sorted(&stats::as_f64(walls));
            let (lo, hi) = stats::median_interval_ranks(sorted.len(), 0.95);
            (sorted[lo], sorted[hi])
        };
        let warmup = warmup_walls(profile);
        let (w_lo, w_hi) = interval(warmup);
        let (a_lo, a_hi) = interval(measured_walls(profile));
        let (ratio_low, ratio_high) = (a_lo / w_hi, a_hi / w_lo);
        Perturbation {
            warmup_median_ns: base,
            armed_median_ns: armed,
            ratio,
            ratio_low,
            ratio_high,
            flagged: ratio_low - 1.0 > perturbation_threshold,
            reliable: ratio_low - 1.0 > perturbation_threshold
                || ratio_high - 1.0 <= perturbation_threshold,
            warmup_iterations: warmup.len(),
        }
    });

    let events = &profile.events;
    let parents = parent_indices(events);
    let chains = Ancestry::new(parents.clone());
    let context = RowContext {
        profile,
        baseline,
        iter_mean: iteration.mean_ns,
        cv_threshold,
    };
    let mut rows: Vec<EventRow> = events
        .iter()
        .enumerate()
        .map(|(i, e)| context.row(e, chains.depth(i) as u32))
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
    ProfileRows {
        iteration,
        perturbation,
        events: rows,
        ancestors: chains,
    }
}

/// The measured iterations of a profile.
pub fn iteration_row(profile: &Profile) -> IterationRow {
    let measured = stats::as_f64(measured_walls(profile));
    let measured_sorted = stats::sorted(&measured);
    IterationRow {
        count: profile.iterations.count,
        first: profile.iterations.first,
        warmup: profile.run.warmup,
        measured: measured.len() as u64,
        median_ns: stats::quantile_sorted(&measured_sorted, 0.5),
        mean_ns: stats::mean(&measured),
        p90_ns: stats::quantile_sorted(&measured_sorted, 0.9),
        cv: stats::cv(&measured),
    }
}

/// What an event's row is computed against.
struct RowContext<'a> {
    profile: &'a Profile,
    baseline: Option<f64>,
    iter_mean: f64,
    cv_threshold: f64,
}

impl RowContext<'_> {
    /// How many iterations an event whose runs fell in iterations `ran` (sorted, distinct) was
    /// armed in, where the file tells: in `sample` mode its `PROF_REPEAT` iterations (fewer
    /// where the listed iterations end before them: a run cut short, counted from its first
    /// run); in `trace` mode every measured iteration from its first run on (a probe first seen
    /// late is armed from then); at least those from its first run to its last. `None` without
    /// a run, and in `continuous` mode, where a window's schedule is interrupted by traces on
    /// demand, merged events count the whole run, and a sample resolved late lands in the next
    /// window: there the runs are counted per iteration run in, as before.
    fn armed_iterations(&self, ran: &[u32]) -> Option<f64> {
        let (&first, &last) = (ran.first()?, ran.last()?);
        let profile = self.profile;
        let span = u64::from(last - first) + 1;
        let iterations = &profile.iterations;
        let listed_end = iterations.first + iterations.wall_ns.len() as u64;
        let to_end = listed_end.saturating_sub(u64::from(first));
        let measured = measured_walls(profile).len() as u64;
        let armed = match profile.run.mode.as_str() {
            "trace" => to_end.min(measured),
            "sample" if profile.complete => u64::from(profile.run.repeat).min(measured),
            "sample" => u64::from(profile.run.repeat).min(to_end),
            _ => return None,
        };
        Some(armed.max(span) as f64)
    }

    /// The row of event `e` at nesting depth `depth`, its self time not yet known.
    fn row(&self, e: &Event, depth: u32) -> EventRow {
        let s = &e.stats;
        let mut ran: Vec<u32> = e.sample_iters.clone();
        ran.sort_unstable();
        ran.dedup();
        // Runs per iteration it was armed in, not per iteration it ran in: an event that runs
        // in one iteration of four (an optimizer step after 4 accumulated batches) has 0.25
        // calls, not 1 (which made its total, share and the breakdown 4 times too large).
        let armed = self.armed_iterations(&ran);
        // Runs whose device time was lost ran all the same.
        let runs = s.count + e.gpu.as_ref().map_or(0, |g| g.lost);
        let calls_per_iter = match (armed, e.merged) {
            (Some(armed), true) => runs as f64 / armed,
            (Some(armed), false) => (runs as f64 / armed).min(1.0),
            (None, true) => s.count as f64 / ran.len().max(1) as f64,
            (None, false) => 1.0,
        };
        let mean_ns = s.mean_ns as f64;
        let stddev_ns = s.stddev_ns as f64;
        let cv = ratio_or_zero(stddev_ns, mean_ns);
        let total_ns = mean_ns * calls_per_iter;
        // The iterations from its first run to its last, those it did not run in too: the
        // walls of only those it ran in would be its own slower ones.
        // (In continuous mode, those it ran in, as before: see `armed_iterations`.)
        let wall = |it: u32| {
            self.profile
                .iterations
                .wall_of(u64::from(it))
                .map(|w| w as f64)
        };
        let armed_walls: Vec<f64> = match (armed, ran.first(), ran.last()) {
            (Some(_), Some(&first), Some(&last)) => (first..=last).filter_map(wall).collect(),
            _ => ran.iter().copied().filter_map(wall).collect(),
        };
        let perturbation = match self.baseline {
            Some(base) if !armed_walls.is_empty() => Some(stats::median(&armed_walls) / base - 1.0),
            _ => None,
        };
        EventRow {
            order: e.order,
            identity: e.identity(),
            merged: e.merged,
            parent: e.parent,
            depth,
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
            share: ratio_or_zero(total_ns, self.iter_mean),
            noisy: s.count >= 2 && cv > self.cv_threshold,
            perturbation,
            memory: e
                .memory
                .as_ref()
                .filter(|m| !m.is_empty())
                .map(MemoryRow::of),
            device_memory: e
                .gpu
                .as_ref()
                .and_then(|g| g.memory.as_ref())
                .and_then(DeviceMemoryRow::of),
            work: crate::work::WorkRow::of(e, self.profile.run.peak.as_ref()),
            shapes: crate::shapes::shape_rows(e, self.profile.run.peak.as_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// The ancestors as a walk up the parents finds them, nearest first, each once.
    fn walked(i: usize, parents: &[Option<usize>]) -> Vec<usize> {
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

    /// On many random forests, chains and cycles (a merged event can close one), every event's
    /// ancestors are the walk's, in its order, and its depth their number.
    #[test]
    fn the_ancestry_is_the_walk_up_the_parents() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..500 {
            let n = 1 + next(30) as usize;
            let parents: Vec<Option<usize>> = (0..n)
                .map(|i| match next(4) {
                    0 => None,
                    _ => Some(next(n as u64) as usize).filter(|&p| p != i),
                })
                .collect();
            let ancestry = Ancestry::new(parents.clone());
            for i in 0..n {
                let want = walked(i, &parents);
                assert_eq!(
                    ancestry.of(i).collect::<Vec<_>>(),
                    want,
                    "{parents:?} at {i}"
                );
                assert_eq!(ancestry.depth(i), want.len());
            }
        }
    }

    /// A chain 20,000 deep: its depths without a list per event (which held 2 * 10^8 entries).
    #[test]
    fn a_deep_chain_is_linear() {
        let n: usize = 20_000;
        let parents: Vec<Option<usize>> = (0..n).map(|i| i.checked_sub(1)).collect();
        let ancestry = Ancestry::new(parents);
        assert_eq!(ancestry.depth(n - 1), n - 1);
        assert_eq!(ancestry.of(n - 1).next(), Some(n - 2));
        assert_eq!(ancestry.of(0).count(), 0);
    }
}
