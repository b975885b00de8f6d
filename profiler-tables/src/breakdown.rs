//! Where the mean iteration goes: its time split into categories (by phase: `data`, `h2d`,
//! `fwd`, `bwd`, `comm`, `update`, and any other a probe names) plus `other`, the time no
//! top-level event covers; and the largest stretches of the iteration that no probe covers,
//! with the probes on either side, so that a user knows where to put the next `probe!`.
//!
//! Built on the same [`profile_rows`](crate::rows::profile_rows) as the summary and `prof report`:
//! - a category's time is the sum of its top-level events' time per iteration (`total_ns`: mean
//!   × calls per iteration); a nested event is inside its parent's time and counts there;
//! - `other` is the mean measured iteration minus the categories (never below 0), so that the
//!   categories and `other` add up to the mean iteration;
//! - a top-level event that ran on a thread other than the stepping one (`concurrent`: a loader
//!   beside the loop) counts only where no event of the stepping thread, nor an earlier
//!   concurrent one, covers the average iteration (placed as below, at its own median offset):
//!   the wall time is counted once, and while the loop waits for it, it is in the waiting
//!   layer's time. (A concurrent event with a parent is nested: in its parent's time.)
//! - when the top-level events still add up to more than the iteration (an `async fn` that
//!   moves, or events measured in slower iterations), `other` is 0 and `overlap_ns` says by how
//!   much the categories exceed it;
//! - the uncovered stretches come from the average iteration the warmup and the samples
//!   describe (as `prof trace` draws it in `sample` mode), of the median iteration's length
//!   (which a few slow iterations cannot stretch): the top-level events in execution
//!   order, each placed at its median offset from the iteration's start (scaled down by the
//!   median iteration over the median of the iterations it was measured in, when those were
//!   slower: a busy machine delays an event without leaving a gap) or right after the previous
//!   one, if that ends later, lasting its median run × calls per iteration. The stretches before the first
//!   event, between two events and after the last (up to the end of the mean iteration) are
//!   the gaps. In `sample` mode each event is measured in iterations of its own, so on a busy
//!   machine these positions are approximate; in `trace` mode they come from the same
//!   iterations. Each gap is `reliable` only when it is longer than twice the scatter of the
//!   offsets on either side ([`Gap::noise_ns`]); the summary names the largest reliable one, or
//!   says that none stands out of the noise.
//!
//! Events timed on a device stream are left out: their time runs on the device, beside the
//! CPU's.
//!
//! Per event ([`Breakdown::held_ns`], what `prof flame` draws), the mean iteration holds: a
//! top-level event's time as its category counts it (above); a nested event's time per iteration
//! (`total_ns`) as far as its parent's holds it. A parent holds its children of its own thread
//! first (the parent's `concurrent` flag and device are theirs: they ran inside it, one after
//! the other), then, in what is left, the children that ran beside it (on another thread, or on
//! a device stream): a layer that hands work to several workers and waits for them holds their
//! runs side by side, so together they fill at most its time less its own-thread children's.
//! Children that do not fit are scaled down together, each keeping its share; an event's self
//! time (`total_ns` less its children's, [`profile_rows`](crate::rows::profile_rows)) is scaled as the event is. So the events
//! and `other` add up to the mean iteration, as the categories do.

use serde::Serialize;

use crate::descriptive_stats as stats;
use crate::rows::{EventRow, ProfileRows};
use crate::table_text::{human_ns, percent, printable};
use profiler_format::Profile;

/// The phases in the order an iteration usually runs them; others follow in execution order.
pub const PHASES: [&str; 6] = ["data", "h2d", "fwd", "bwd", "comm", "update"];

/// The category of top-level events without a `phase`.
pub const NO_PHASE: &str = "(no phase)";

/// The category of the time no top-level event covers.
pub const OTHER: &str = "other";

/// How many uncovered stretches are listed, largest first.
pub const GAPS: usize = 3;

/// The breakdown of a profile's mean iteration.
#[derive(Clone, Debug, Serialize)]
pub struct Breakdown {
    /// Mean wall time of the measured iterations.
    pub iteration_ns: f64,
    /// One row per category, `other` last (always present).
    pub categories: Vec<Category>,
    /// Time by which the categories exceed the iteration (top-level events that overlap); 0
    /// when they do not.
    pub overlap_ns: f64,
    /// The largest stretches of the average iteration that no top-level event covers, largest
    /// first (at most [`GAPS`]).
    pub gaps: Vec<Gap>,
    /// Per event of `profile.events` (same index), the time per iteration the mean iteration
    /// holds of it (see the module documentation): at most its `total_ns`; 0 for an event left
    /// out (timed on a device stream at top level, without samples, or inside one left out).
    /// Not part of the JSON.
    #[serde(skip)]
    pub held_ns: Vec<f64>,
    /// The average iteration the gaps are the stretches of: the top-level events of the
    /// stepping thread, in execution order, where the module documentation places them.
    /// `prof trace` (`sample` mode) and `prof html` draw them there, so that what they show
    /// uncovered is [`gaps`](Self::gaps). Not part of the JSON.
    #[serde(skip)]
    pub placed: Vec<Placed>,
    /// The length of that average iteration: the median measured iteration. Not part of the
    /// JSON.
    #[serde(skip)]
    pub median_iteration_ns: f64,
}

/// One category of the breakdown.
#[derive(Clone, Debug, Serialize)]
pub struct Category {
    /// The phase, [`NO_PHASE`], or [`OTHER`].
    pub name: String,
    /// Time per iteration.
    pub total_ns: f64,
    /// `total_ns` over the mean iteration.
    pub share: f64,
    /// How many top-level events it holds (0 for `other`).
    pub events: u32,
}

/// A stretch of the average iteration that no top-level event covers.
#[derive(Clone, Debug, Serialize)]
pub struct Gap {
    /// Where it starts, from the start of the iteration (the previous `step()`).
    pub start_ns: f64,
    /// How long it is.
    pub len_ns: f64,
    /// `len_ns` over the median iteration, the one the events are placed on (the
    /// categories' shares are of the mean iteration).
    pub share: f64,
    /// The event that ends where it starts; `None` at the start of the iteration.
    pub after: Option<Site>,
    /// The event that starts where it ends; `None` at the end of the iteration (`step()`).
    pub before: Option<Site>,
    /// How uncertain its ends are: the robust spread ([`stats::robust_spread`]) of the offsets
    /// of the events on either side (of the iteration's wall time, at its end), combined.
    pub noise_ns: f64,
    /// Longer than twice its noise: a stretch that the scatter of the events' offsets (a busy
    /// machine, iterations of very different lengths) cannot make up.
    pub reliable: bool,
}

/// An event beside a gap: what it is and where it is in the source.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Site {
    /// The event's label (`layer/phase name#occurrence`).
    pub label: String,
    /// Its probe's id.
    pub id: String,
    /// `file:line` of its annotation.
    pub location: String,
}

/// A top-level event placed on the average iteration (nanoseconds from its start).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placed {
    /// The event's index in `profile.events`.
    pub index: usize,
    /// Where it starts: its [`scaled_offset`], or the end of the event before it if that is
    /// later.
    pub start: f64,
    /// `start` plus its median run times its calls per iteration.
    pub end: f64,
}

/// The breakdown of `profile`'s mean iteration from its rows (`measures`: what
/// [`profile_rows`](crate::rows::profile_rows) computed for `profile`, with any thresholds, which
/// the breakdown does not read), so that the caller computes them once; `None` without a measured
/// iteration.
pub fn breakdown(profile: &Profile, measures: &ProfileRows) -> Option<Breakdown> {
    let iteration_ns = measures.iteration.mean_ns;
    if iteration_ns.is_nan() || iteration_ns <= 0.0 {
        return None;
    }
    let top: Vec<usize> = (0..profile.events.len())
        .filter(|&i| is_top_level(profile, &measures.events, i))
        .collect();
    let (stepping, beside): (Vec<usize>, Vec<usize>) =
        top.iter().partition(|&&i| !profile.events[i].concurrent);
    let median_iteration = measures.iteration.median_ns;
    let placed = place(profile, &measures.events, &stepping, median_iteration);
    // Each event's time in the categories: its whole time on the stepping thread; beside it,
    // only what nothing already counted covers.
    let mut time: Vec<f64> = measures.events.iter().map(|r| r.total_ns).collect();
    let mut covered_spans: Vec<(f64, f64)> = placed.iter().map(|p| (p.start, p.end)).collect();
    let mean_iteration = stats::mean(&stats::as_f64(crate::rows::measured_walls(profile)));
    for &i in &beside {
        let start = scaled_offset(profile, i, mean_iteration);
        let row = &measures.events[i];
        let end = start + row.median_ns * row.calls_per_iter;
        time[i] = uncovered(start, end, &covered_spans) / (end - start).max(f64::MIN_POSITIVE)
            * row.total_ns;
        covered_spans.push((start, end));
    }
    let held_ns = held(profile, &measures.events, &top, &time);
    let mut categories = categories(profile, &time, &top, iteration_ns);
    let covered: f64 = categories.iter().map(|c| c.total_ns).sum();
    let other_ns = (iteration_ns - covered).max(0.0);
    categories.push(Category {
        name: OTHER.to_owned(),
        total_ns: other_ns,
        share: other_ns / iteration_ns,
        events: 0,
    });
    Some(Breakdown {
        iteration_ns,
        categories,
        overlap_ns: (covered - iteration_ns).max(0.0),
        gaps: gaps(profile, &placed, median_iteration),
        held_ns,
        placed,
        median_iteration_ns: median_iteration,
    })
}

/// What the mean iteration holds of each event: `counted[i]` for the top-level events `top`, and
/// down the nesting, each parent's held time shared among its children (module documentation).
fn held(profile: &Profile, rows: &[EventRow], top: &[usize], counted: &[f64]) -> Vec<f64> {
    let events = &profile.events;
    let parents = crate::rows::parent_indices(events);
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); events.len()];
    for (i, p) in parents.iter().enumerate() {
        if let Some(j) = *p {
            children[j].push(i);
        }
    }
    let mut held = vec![0.0; events.len()];
    let mut seen = vec![false; events.len()];
    let mut queue: std::collections::VecDeque<usize> = top.iter().copied().collect();
    for &i in top {
        held[i] = counted[i].min(rows[i].total_ns).max(0.0);
        seen[i] = true;
    }
    while let Some(i) = queue.pop_front() {
        let total = rows[i].total_ns;
        // The share of its own time the mean iteration holds: the children get the same.
        let scale = if total > 0.0 { held[i] / total } else { 0.0 };
        let own_thread = |c: usize| {
            events[c].concurrent == events[i].concurrent && events[c].device == events[i].device
        };
        let sum = |own: bool| -> f64 {
            children[i]
                .iter()
                .filter(|&&c| own_thread(c) == own)
                .map(|&c| rows[c].total_ns)
                .sum()
        };
        let (inside, beside) = (sum(true), sum(false));
        let fit = |need: f64, room: f64| if need > room { room / need } else { 1.0 };
        let inside_fit = fit(inside, total);
        let beside_fit = fit(beside, (total - inside * inside_fit).max(0.0));
        for &c in &children[i] {
            if std::mem::replace(&mut seen[c], true) {
                continue;
            }
            let f = if own_thread(c) {
                inside_fit
            } else {
                beside_fit
            };
            held[c] = rows[c].total_ns * f * scale;
            queue.push_back(c);
        }
    }
    held
}

/// Whether event `i` (row `rows[i]`) is a top-level event with samples, timed on the CPU.
fn is_top_level(profile: &Profile, rows: &[EventRow], i: usize) -> bool {
    rows[i].depth == 0 && rows[i].samples > 0 && profile.events[i].device.is_none()
}

/// The categories of the top-level events `top`, in [`PHASES`] order, then the others in
/// execution order, then [`NO_PHASE`].
fn categories(profile: &Profile, time: &[f64], top: &[usize], iteration_ns: f64) -> Vec<Category> {
    let mut by_order: Vec<usize> = top.to_vec();
    by_order.sort_by_key(|&i| profile.events[i].order);
    let mut names: Vec<String> = PHASES.iter().map(|p| (*p).to_owned()).collect();
    for &i in &by_order {
        let name = category_of(profile, i);
        if !names.contains(&name) && name != NO_PHASE {
            names.push(name);
        }
    }
    names.push(NO_PHASE.to_owned());
    names
        .into_iter()
        .filter_map(|name| {
            let members: Vec<usize> = top
                .iter()
                .copied()
                .filter(|&i| category_of(profile, i) == name)
                .collect();
            if members.is_empty() {
                return None;
            }
            let total_ns: f64 = members.iter().map(|&i| time[i]).sum();
            Some(Category {
                name,
                total_ns,
                share: total_ns / iteration_ns,
                events: members.len() as u32,
            })
        })
        .collect()
}

/// The category of event `i`: its phase, or [`NO_PHASE`].
fn category_of(profile: &Profile, i: usize) -> String {
    profile.events[i]
        .phase
        .clone()
        .unwrap_or_else(|| NO_PHASE.to_owned())
}

/// The top-level events on the average iteration of length `iteration`, in execution order,
/// each at its median offset unless the previous one ends later.
fn place(profile: &Profile, rows: &[EventRow], top: &[usize], iteration: f64) -> Vec<Placed> {
    let mut at: Vec<(f64, usize)> = top
        .iter()
        .map(|&i| (scaled_offset(profile, i, iteration), i))
        .collect();
    // In execution order (learned at warmup), not by offset: in `sample` mode the offsets of
    // two events come from different iterations and may disagree on which starts first.
    at.sort_by_key(|&(_, i)| profile.events[i].order);
    let mut placed: Vec<Placed> = Vec::with_capacity(at.len());
    let mut end = 0.0f64;
    for (offset, i) in at {
        let start = offset.max(end);
        // The median run, not the mean: in `sample` mode each event is measured in
        // iterations of its own, and one slow iteration must not shift every later event.
        end = start + rows[i].median_ns * rows[i].calls_per_iter;
        placed.push(Placed {
            index: i,
            start,
            end,
        });
    }
    placed
}

/// How much of `[start, end]` none of `spans` covers.
fn uncovered(start: f64, end: f64, spans: &[(f64, f64)]) -> f64 {
    let mut inside: Vec<(f64, f64)> = spans
        .iter()
        .map(|&(a, b)| (a.max(start), b.min(end)))
        .filter(|(a, b)| a < b)
        .collect();
    inside.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut free, mut cursor) = (0.0, start);
    for (a, b) in inside {
        if a > cursor {
            free += a - cursor;
        }
        cursor = cursor.max(b);
    }
    free + (end - cursor).max(0.0)
}

/// Event `i`'s median offset, scaled from the iterations it was measured in to an iteration of
/// `mean_iteration` (never up): an event measured while the machine was busy starts late in its
/// (slower) iterations, and unscaled, that delay would show as a stretch no probe covers.
pub fn scaled_offset(profile: &Profile, i: usize, mean_iteration: f64) -> f64 {
    let e = &profile.events[i];
    let offset = stats::median(&stats::as_f64(&e.offsets_ns));
    let walls: Vec<f64> = e
        .sample_iters
        .iter()
        .filter_map(|&it| profile.iterations.wall_of(u64::from(it)))
        .map(|w| w as f64)
        .collect();
    let armed = stats::median(&walls);
    let positive = |v: f64| v > 0.0;
    if walls.is_empty() || !positive(armed) || !positive(mean_iteration) {
        return offset;
    }
    offset * (mean_iteration / armed).min(1.0)
}

/// The largest stretches of `[0, iteration_ns]` that `placed` leaves uncovered.
/// Why not `prof trace`'s (`trace/other.rs`): these name the few largest of the average iteration
/// with their neighbours and noise; those draw every one above a floor in each drawn step.
fn gaps(profile: &Profile, placed: &[Placed], iteration_ns: f64) -> Vec<Gap> {
    // Every stretch first, with the events on either side (`None`: the iteration's start or
    // end); the noise only of those kept (each is a spread of an event's offsets).
    let mut stretches: Vec<(f64, f64, Option<&Placed>, Option<&Placed>)> = Vec::new();
    let mut cursor = 0.0f64;
    let mut previous: Option<&Placed> = None;
    for p in placed.iter().map(Some).chain(std::iter::once(None)) {
        let start = p.map_or(iteration_ns, |p| p.start);
        let len = start.min(iteration_ns) - cursor;
        if len > 0.0 {
            stretches.push((cursor, len, previous, p));
        }
        if let Some(p) = p {
            cursor = cursor.max(p.end);
            previous = Some(p);
        }
    }
    // Largest first (a stable sort: ties in time order).
    stretches.sort_by(|a, b| b.1.total_cmp(&a.1));
    stretches.truncate(GAPS);
    // How far an event's start scatters from one iteration to the next.
    let scatter =
        |p: &Placed| stats::robust_spread(&stats::as_f64(&profile.events[p.index].offsets_ns));
    let site = |p: &Placed| {
        let e = &profile.events[p.index];
        Site {
            label: e.identity().label(),
            id: e.id.clone(),
            location: format!("{}:{}", e.file, e.line),
        }
    };
    stretches
        .into_iter()
        .map(|(start_ns, len, after, before)| {
            let end = match before {
                Some(p) => scatter(p),
                None => stats::robust_spread(&stats::as_f64(crate::rows::measured_walls(profile))),
            };
            let noise_ns = after.map_or(0.0, scatter).hypot(end);
            Gap {
                start_ns,
                len_ns: len,
                share: len / iteration_ns,
                after: after.map(site),
                before: before.map(site),
                noise_ns,
                reliable: len > 2.0 * noise_ns,
            }
        })
        .collect()
}

impl Breakdown {
    /// One line for the end-of-run summary: each category's share, `other`, and the largest
    /// stretch no probe covers.
    pub fn line(&self) -> String {
        let shares: Vec<String> = self
            .categories
            .iter()
            .map(|c| format!("{} {}", c.name, percent(c.share)))
            .collect();
        let mut line = format!(
            "breakdown of the mean iteration ({}): {}",
            human_ns(self.iteration_ns),
            shares.join(", ")
        );
        if self.overlap_ns > 0.0 {
            line.push_str(&format!(
                " (the categories exceed the mean iteration by {}: top-level events overlap, \
                 on several threads, or were measured in slower iterations)",
                human_ns(self.overlap_ns)
            ));
        }
        match (self.gaps.iter().find(|g| g.reliable), self.gaps.first()) {
            (Some(gap), _) => line.push_str(&format!(
                "; largest stretch no probe covers: {} {}",
                human_ns(gap.len_ns),
                gap.describe()
            )),
            (None, Some(gap)) => line.push_str(&format!(
                "; no stretch that no probe covers stands out of the noise (the largest, {} {}, \
                 is within the scatter of the events' offsets, \u{b1}{})",
                human_ns(gap.len_ns),
                gap.describe(),
                human_ns(gap.noise_ns)
            )),
            (None, None) => {}
        }
        // The categories are phases, the gaps' sides events: names from the profile.
        printable(&line).into_owned()
    }
}

impl Gap {
    /// How uncertain the stretch is, as `prof report` writes it in its `scatter` column and
    /// `prof html` beside the stretch: `±` its noise, then ` ?` when the stretch is within it
    /// (not [`reliable`](Gap::reliable): it may not be there), as in `±29.70ms ?`.
    pub fn scatter(&self) -> String {
        format!(
            "\u{b1}{}{}",
            human_ns(self.noise_ns),
            if self.reliable { "" } else { " ?" }
        )
    }

    /// `after X (file:line)` / `before Y (file:line)`, for people (control characters in the
    /// names as visible escapes, [`printable`]).
    pub fn describe(&self) -> String {
        let after = match &self.after {
            Some(s) => format!("after {} ({})", s.label, s.location),
            None => "from the start of the iteration".to_owned(),
        };
        let before = match &self.before {
            Some(s) => format!("before {} ({})", s.label, s.location),
            None => "until step()".to_owned(),
        };
        printable(&format!("{after}, {before}")).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profiler_format::{Event, Iterations, Run, Stats, SCHEMA};

    fn event(order: u32, name: &str, phase: Option<&str>, offset: u64, dur: u64) -> Event {
        Event {
            id: format!("t::{name}"),
            name: name.to_owned(),
            phase: phase.map(str::to_owned),
            kind: "fn".to_owned(),
            module: "t".to_owned(),
            file: "t.rs".to_owned(),
            line: 10 + order,
            order,
            samples_ns: vec![dur; 4],
            offsets_ns: vec![offset; 4],
            sample_iters: vec![2, 3, 4, 5],
            stats: Stats::of(&[dur; 4]),
            ..Default::default()
        }
    }

    /// The rows the breakdown is computed from, as the summary computes them.
    fn rows_of(p: &Profile) -> ProfileRows {
        crate::rows::profile_rows(p, 0.25, 0.05)
    }

    fn profile(events: Vec<Event>, wall: u64) -> Profile {
        Profile {
            schema: SCHEMA.to_owned(),
            complete: true,
            run: Run {
                program: "t".into(),
                pid: 1,
                host: "h".into(),
                rank: 0,
                mode: "sample".into(),
                filter: String::new(),
                warmup: 2,
                repeat: 4,
                clock: "fake".into(),
                max_events: 4096,
                timer_floor_ns: 0,
                profiler_version: String::new(),
                windows: None,
                on_demand: None,
                delay: None,
                peak: None,
            },
            iterations: Iterations {
                count: 6,
                first: 0,
                wall_ns: vec![wall; 6],
                device_memory: Vec::new(),
            },
            events,
            windows: Vec::new(),
            before_loop: Vec::new(),
            cpu_samples: None,
        }
    }

    #[test]
    fn categories_and_other_add_up_to_the_mean_iteration() {
        let mut child = event(2, "inner", Some("fwd"), 150, 50);
        child.parent = Some(1);
        let p = profile(
            vec![
                event(0, "load", Some("data"), 0, 100),
                event(1, "forward", Some("fwd"), 100, 300),
                child,
                event(3, "backward", Some("bwd"), 700, 250),
                event(4, "misc", None, 950, 10),
            ],
            1000,
        );
        let b = breakdown(&p, &rows_of(&p)).unwrap();
        let names: Vec<&str> = b.categories.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["data", "fwd", "bwd", NO_PHASE, OTHER]);
        let total: f64 = b.categories.iter().map(|c| c.total_ns).sum();
        assert_eq!(total, 1000.0);
        // The nested event counts inside its parent, not again.
        assert_eq!(b.categories[1].total_ns, 300.0);
        assert_eq!(b.categories[4].total_ns, 1000.0 - 660.0);
        assert_eq!(b.overlap_ns, 0.0);
        // The largest uncovered stretch: 300 ns between forward and backward.
        let g = &b.gaps[0];
        assert_eq!((g.start_ns, g.len_ns), (400.0, 300.0));
        assert_eq!(g.after.as_ref().unwrap().label, "fwd forward");
        assert_eq!(g.before.as_ref().unwrap().location, "t.rs:13");
        // Then the 40 ns after the last event, until step().
        assert_eq!((b.gaps[1].start_ns, b.gaps[1].len_ns), (960.0, 40.0));
        assert!(b.gaps[1].before.is_none());
        assert!(b.gaps[1].describe().ends_with("until step()"));
    }

    /// The breakdown reads the rows its caller computed (the summary's and `prof report`'s,
    /// computed once for both) and computes none of its own: a row changed before the call
    /// is the one it counts.
    #[test]
    fn the_breakdown_is_built_from_the_rows_it_is_given() {
        let p = profile(
            vec![
                event(0, "forward", Some("fwd"), 0, 300),
                event(1, "backward", Some("bwd"), 400, 250),
            ],
            1000,
        );
        let mut rows = rows_of(&p);
        rows.events[1].total_ns = 100.0;
        rows.iteration.mean_ns = 2000.0;
        let b = breakdown(&p, &rows).unwrap();
        assert_eq!(b.iteration_ns, 2000.0);
        let bwd = b.categories.iter().find(|c| c.name == "bwd").unwrap();
        assert_eq!((bwd.total_ns, bwd.share), (100.0, 0.05));
        assert_eq!(b.categories.last().unwrap().total_ns, 2000.0 - 400.0);
    }

    /// What the mean iteration holds of each event: a nested event of its parent's thread in
    /// full; workers that ran side by side on other threads (children marked `concurrent`) share
    /// what the parent's own-thread children leave, scaled down together when they need more.
    #[test]
    fn held_time_fits_children_run_side_by_side_into_their_parent() {
        let mut inner = event(1, "inner", Some("fwd"), 10, 200);
        inner.parent = Some(0);
        let workers: Vec<Event> = (2..5)
            .map(|k| {
                let mut w = event(k, &format!("worker{k}"), Some("fwd"), 220, 600);
                w.parent = Some(0);
                w.concurrent = true;
                w
            })
            .collect();
        let mut events = vec![event(0, "forward", Some("fwd"), 0, 1000), inner];
        events.extend(workers);
        let p = profile(events, 1500);
        let b = breakdown(&p, &rows_of(&p)).unwrap();
        // forward: 1000 ns, inner (own thread) 200 ns in full, three workers of 600 ns share
        // the 800 ns left: 800/1800 of each.
        assert_eq!(b.held_ns[0], 1000.0);
        assert_eq!(b.held_ns[1], 200.0);
        for w in &b.held_ns[2..] {
            assert!((w - 600.0 * 800.0 / 1800.0).abs() < 1e-9, "{w}");
        }
        let children: f64 = b.held_ns[1..].iter().sum();
        assert!((children - 1000.0).abs() < 1e-9);
        // One worker fits beside inner: held in full.
        let mut one = p.clone();
        one.events.truncate(3);
        let b = breakdown(&one, &rows_of(&one)).unwrap();
        assert_eq!(b.held_ns, vec![1000.0, 200.0, 600.0]);
        // A loader beside the loop at top level: held as its category counts it (the part of
        // its run that no event of the stepping thread covers), its child scaled alike.
        let mut loader = event(5, "loader", Some("data"), 900, 400);
        loader.concurrent = true;
        let mut batch = event(6, "batch", Some("data"), 950, 100);
        batch.parent = Some(5);
        batch.concurrent = true;
        let mut two = one.clone();
        two.events.extend([loader, batch]);
        let b = breakdown(&two, &rows_of(&two)).unwrap();
        assert_eq!(b.held_ns[3], 300.0);
        assert_eq!(b.held_ns[4], 75.0);
        let data = b.categories.iter().find(|c| c.name == "data").unwrap();
        assert_eq!(data.total_ns, 300.0);
    }

    /// On a noisy machine the offsets of back-to-back events scatter (each measured in
    /// iterations of its own, after preceding work of varying length): a stretch between them
    /// shorter than that scatter is not named as where to annotate next.
    #[test]
    fn a_gap_within_the_scatter_of_the_offsets_is_not_named() {
        let mut a = event(0, "a", Some("fwd"), 0, 300);
        let mut b = event(1, "b", Some("fwd"), 340, 300);
        // b's start scatters by about 60 ns from one iteration to the next: 40 ns is noise.
        b.offsets_ns = vec![280, 340, 400, 330, 350, 420, 260, 345];
        b.samples_ns = vec![300; 8];
        b.sample_iters = vec![2, 3, 4, 5, 2, 3, 4, 5];
        b.stats = Stats::of(&b.samples_ns);
        a.offsets_ns = vec![0; 4];
        let p = profile(vec![a, b], 640);
        let bd = breakdown(&p, &rows_of(&p)).unwrap();
        let g = &bd.gaps[0];
        assert!((g.len_ns - 42.5).abs() < 1e-9, "{g:?}");
        assert!(!g.reliable && 2.0 * g.noise_ns > g.len_ns, "{g:?}");
        let line = bd.line();
        assert!(
            line.contains("no stretch that no probe covers stands out of the noise"),
            "{line}"
        );
        // The same stretch with steady offsets is named.
        let mut steady = p.clone();
        steady.events[1].offsets_ns = vec![338; 8];
        let bd = breakdown(&steady, &rows_of(&steady)).unwrap();
        assert!(bd.gaps[0].reliable, "{:?}", bd.gaps[0]);
        assert!(
            bd.line()
                .contains("largest stretch no probe covers: 38ns after fwd a"),
            "{}",
            bd.line()
        );
    }

    /// The perturbation check is flagged only when the interval of the ratio is above the
    /// threshold, and said to be unreliable when a short or scattered warmup makes it wide.
    #[test]
    fn perturbation_is_flagged_beyond_its_noise_only() {
        let mut p = profile(vec![event(0, "a", Some("fwd"), 0, 100)], 1000);
        p.run.warmup = 10;
        // Iteration 0, 9 scattered warmup iterations around 1000, then 40 steady ones at 1300.
        let mut walls = vec![5000, 600, 1400, 800, 1900, 1000, 700, 1600, 1000, 1200];
        walls.extend(std::iter::repeat_n(1300, 40));
        p.iterations.wall_ns = walls;
        p.iterations.count = 50;
        p.events[0].sample_iters = vec![10, 11, 12, 13];
        let m = crate::rows::profile_rows(&p, 0.25, 0.05);
        let pert = m.perturbation.unwrap();
        assert!(!pert.flagged && !pert.reliable, "{pert:?}");
        assert_eq!(pert.warmup_iterations, 9);
        let line = crate::summary::perturbation_line("sample", Some(&pert));
        assert!(
            line.contains("unreliable: with the median of 9 warmup iterations"),
            "{line}"
        );
        // A steady warmup at 1000: +30%, flagged.
        p.iterations.wall_ns[1..10].copy_from_slice(&[1000; 9]);
        let pert = crate::rows::profile_rows(&p, 0.25, 0.05)
            .perturbation
            .unwrap();
        assert!(pert.flagged && pert.reliable, "{pert:?}");
        assert!((pert.ratio - 1.3).abs() < 1e-9);
    }

    #[test]
    fn overlapping_top_level_events_leave_no_other_and_say_so() {
        let p = profile(
            vec![
                event(0, "a", Some("fwd"), 0, 800),
                event(1, "loader", Some("data"), 0, 600),
            ],
            1000,
        );
        let b = breakdown(&p, &rows_of(&p)).unwrap();
        assert_eq!(b.categories.last().unwrap().total_ns, 0.0);
        assert_eq!(b.overlap_ns, 400.0);
    }
}
