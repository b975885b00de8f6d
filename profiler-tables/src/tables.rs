//! The tables of one profile, computed by one call ([`profile_tables`]) so that `prof report`
//! and the end-of-run summary build theirs the same way: the rows ([`crate::rows`]) and what
//! comes of them for the whole iteration, the breakdown ([`crate::breakdown`]) and the work of a
//! step, from the event rows' achieved rates ([`crate::work`]): its FLOPs and MFU, and the line
//! the reports print below their tables ([`work_line`]).

use crate::breakdown::{breakdown, Breakdown};
use crate::rows::{device_usage, profile_rows, DeviceUsageRow, EventRow, ProfileRows};
use crate::work::{human_rate, utilization};
use profiler_format::peak::Peak;
use profiler_format::Profile;

/// Everything the tables of one profile are made of, computed by one call ([`profile_tables`]),
/// so that `prof report` and the end-of-run summary build theirs the same way: the rows, where
/// the mean iteration goes, the line on the step's work and each device's memory.
#[derive(Clone, Debug)]
pub struct ProfileTables {
    /// The measures ([`profile_rows`]), the event rows in the order of `profile.events`.
    pub rows: ProfileRows,
    /// Where the mean iteration goes ([`breakdown`] of the rows); `None`
    /// without a measured iteration.
    pub breakdown: Option<Breakdown>,
    /// The line on the step's work with the peak's whole detail and the definitions (`prof
    /// report`'s, [`work_line`]); `None` when no event counts its work.
    pub work: Option<String>,
    /// The same line brief, as the end-of-run summary gives it.
    pub work_brief: Option<String>,
    /// Each device's memory in use over the steps ([`device_usage`]).
    pub device_memory: Vec<DeviceUsageRow>,
}

/// The tables of `profile`, with [`profile_rows`]'s thresholds: the rows and what is computed
/// from them, once.
pub fn profile_tables(
    profile: &Profile,
    cv_threshold: f64,
    perturbation_threshold: f64,
) -> ProfileTables {
    let rows = profile_rows(profile, cv_threshold, perturbation_threshold);
    let breakdown = breakdown(profile, &rows);
    let peak = profile.run.peak.as_ref();
    let line = |definitions| work_line(&rows.events, rows.iteration.mean_ns, peak, definitions);
    let (work, work_brief) = (line(true), line(false));
    ProfileTables {
        breakdown,
        work,
        work_brief,
        device_memory: device_usage(profile),
        rows,
    }
}

/// The step's MFU: the FLOPs of one iteration over the mean iteration time, against the peak's
/// FLOP/s. An iteration's FLOPs are, over the events with FLOPs whose ancestors (by `parent`)
/// have none, each one's mean FLOPs per run times its calls per iteration: a child's FLOPs are
/// taken to be part of its parent's when the parent counts FLOPs too, so they count once.
/// `None` without such events, a mean iteration or a peak with FLOP/s.
pub fn step_mfu(rows: &[EventRow], iter_mean_ns: f64, peak: Option<&Peak>) -> Option<f64> {
    let peak_flops = peak
        .and_then(|p| p.flops)
        .filter(|f| f.is_finite() && *f > 0.0)?;
    let flops = step_flops(rows)?;
    (iter_mean_ns > 0.0).then(|| flops * 1e9 / iter_mean_ns / peak_flops)
}

/// The FLOPs of one iteration ([`step_mfu`]'s rule), `None` without events with FLOPs.
pub fn step_flops(rows: &[EventRow]) -> Option<f64> {
    // In execution order whatever the caller's, so that the sum is the same for any order.
    let mut rows: Vec<&EventRow> = rows.iter().collect();
    rows.sort_by_key(|r| r.order);
    let has_flops = |r: &EventRow| r.work.as_ref().and_then(|w| w.flops_per_run).is_some();
    let by_order: std::collections::HashMap<u32, &EventRow> =
        rows.iter().map(|&r| (r.order, r)).collect();
    let counted_above = |r: &EventRow| {
        let mut parent = r.parent;
        let mut steps = 0;
        while let Some(p) = parent.and_then(|p| by_order.get(&p)) {
            if has_flops(p) {
                return true;
            }
            parent = p.parent;
            steps += 1;
            if steps > rows.len() {
                break;
            }
        }
        false
    };
    let outer: Vec<f64> = rows
        .iter()
        .copied()
        .filter(|r| has_flops(r) && !counted_above(r))
        .filter_map(|r| Some(r.work.as_ref()?.flops_per_run? * r.calls_per_iter))
        .collect();
    (!outer.is_empty()).then(|| outer.iter().sum())
}

/// The longest a peak's detail is in the end-of-run summary, in characters.
const BRIEF_DETAIL: usize = 80;

/// A peak's detail as the end-of-run summary gives it: its first sentence (`prof peak` writes a
/// paragraph: the threads, then the kernels, sizes and spreads), at most [`BRIEF_DETAIL`]
/// characters (the middle of a longer one left out), with a pointer to `prof report` when
/// something was left out; `None` when there is none.
fn brief_detail(detail: &str) -> Option<String> {
    let detail = detail.trim();
    if detail.is_empty() {
        return None;
    }
    let first = detail.split_once(". ").map_or(detail, |(first, _)| first);
    let first = first.strip_suffix('.').unwrap_or(first);
    let brief = crate::table_text::clip(first, BRIEF_DETAIL);
    Some(if brief.len() < detail.trim_end_matches('.').len() {
        format!("{brief}; `prof report` gives the rest")
    } else {
        brief
    })
}

/// What the reports say of the work below their tables: the step's FLOPs and MFU, and the peak
/// (its figures and source) the MFU and `bound` columns are judged against, then, with
/// `definitions`, the peak's whole detail and how each column is computed (`prof report`; the
/// end-of-run summary gives the detail's first sentence and leaves the rest to it, to stay
/// short). `None` when no event counts its work.
pub fn work_line(
    rows: &[EventRow],
    iter_mean_ns: f64,
    peak: Option<&Peak>,
    definitions: bool,
) -> Option<String> {
    if rows.iter().all(|r| r.work.is_none()) {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(flops) = step_flops(rows) {
        let mut step = format!("{}FLOP per iteration", human_rate(flops));
        if let Some(mfu) = step_mfu(rows, iter_mean_ns, peak) {
            step.push_str(&format!(
                ", step MFU {} ({})",
                utilization(mfu),
                peak.map_or("", |p| p.source.as_str())
            ));
        }
        parts.push(step);
    }
    parts.push(match peak {
        Some(p) => {
            let figure = |v: Option<f64>, unit: &str| {
                v.map_or_else(
                    || format!("no {unit}"),
                    |v| format!("{}{unit}", human_rate(v)),
                )
            };
            let mut text = format!(
                "peak {}, {} ({}",
                figure(p.flops, "FLOP/s"),
                figure(p.bytes, "B/s"),
                p.source
            );
            if definitions {
                if !p.detail.is_empty() {
                    text.push_str(&format!(": {}", p.detail));
                }
            } else if let Some(brief) = brief_detail(&p.detail) {
                text.push_str(&format!(": {brief}"));
            }
            text.push(')');
            text
        }
        None => "no peak known (PROF_PEAK_FLOPS, PROF_PEAK_BYTES, PROF_PEAK or \
                 prof report --peak): no MFU, no bound"
            .to_owned(),
    });
    if !definitions {
        parts.push("the columns are defined by `prof report`".to_owned());
        return Some(format!("work: {}", parts.join("; ")));
    }
    parts.push(
        "FLOP/s and B/s = median over the samples of each run's count / its duration (95% \
         interval); FLOP/B = FLOPs / bytes; MFU = median FLOP/s / peak FLOP/s; bound = FLOP/B \
         against peak FLOP/s / peak B/s; the step counts each event's FLOPs unless an \
         enclosing event counts FLOPs too"
            .to_owned(),
    );
    Some(format!("work: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::WorkRow;

    /// Top-level event rows, in execution order, each run once per iteration doing `flops`.
    fn rows(flops: &[f64]) -> Vec<EventRow> {
        let profile: profiler_format::Profile =
            serde_json::from_str(include_str!("../tests/data/summary/memory.json")).unwrap();
        let first = crate::rows::profile_rows(&profile, 0.25, 0.05).events[0].clone();
        flops
            .iter()
            .enumerate()
            .map(|(i, &f)| EventRow {
                order: i as u32,
                parent: None,
                calls_per_iter: 1.0,
                work: Some(WorkRow {
                    flops_per_s: None,
                    bytes_per_s: None,
                    flops_per_run: Some(f),
                    intensity: None,
                    bound: None,
                    mfu: None,
                }),
                ..first.clone()
            })
            .collect()
    }

    /// The step's FLOPs are summed in execution order whatever the order of the rows given (the
    /// report's sorted by median, the tables' in the file's order), so that a sum of very
    /// different sizes comes out the same, to the last digit, for the summary and the report.
    #[test]
    fn the_step_flops_are_the_same_for_the_rows_in_any_order() {
        let in_order = rows(&[1.0, 1.0, 1e16]);
        let mut reversed = in_order.clone();
        reversed.reverse();
        let want = step_flops(&in_order).unwrap();
        assert_eq!(want, 1e16 + 2.0);
        assert_eq!(step_flops(&reversed), Some(want));
        let line = |rows: &[EventRow]| work_line(rows, 1e6, None, true);
        assert_eq!(line(&reversed), line(&in_order));
    }
}
