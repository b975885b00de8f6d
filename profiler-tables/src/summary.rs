//! The end-of-run summary printed on stderr: one row per event in execution order, built from
//! the same [`profile_tables`] as `prof report`, so that the two never disagree.

use std::fmt::Write;

use crate::columns::{self, Place};
use crate::rows::{Perturbation, ProfileRows};
use crate::table_text::{
    aligned, clip, human_ns, percent, printable, printable_lines, signed_percent, MAX_CELL,
};
use crate::tables::{profile_tables, ProfileTables};
use profiler_format::Profile;

/// Events whose coefficient of variation is above this are noisy (the default of `prof report`).
pub const CV_THRESHOLD: f64 = 0.25;
/// The overall perturbation is flagged above this fraction (the default of `prof report`).
pub const PERTURBATION_THRESHOLD: f64 = 0.05;
/// How many findings of [`advice`](crate::advice) the summary names, one line each.
pub const SUMMARY_FINDINGS: usize = 3;

/// The end-of-run summary printed on stderr (one row per event in execution order; a header
/// with mode, iterations, events, median iteration, complete or INCOMPLETE; a footnote with
/// what share means, the timer floor, the perturbation, the breakdown, the first findings of
/// [`advice`](crate::advice) (noisy events among them), and `results in {path}`).
/// No trailing newline.
pub fn summary(profile: &Profile, path: &str) -> String {
    summary_with(
        profile,
        &format!("results in {path} (`prof report {path}` for self times, p90, groups)"),
    )
}

/// The end-of-run summary of results that could not be written to `path`: the same table, and
/// a last line saying that nothing was written (so that it never points at a stale file).
pub fn summary_unwritten(profile: &Profile, path: &str) -> String {
    summary_with(
        profile,
        &format!(
            "NOTHING WAS WRITTEN: {path} could not be written (the error is above); the table \
             above is all that is left of these results"
        ),
    )
}

/// `complete`, or what an incomplete run means.
pub fn status(complete: bool) -> &'static str {
    if complete {
        "complete"
    } else {
        "INCOMPLETE (the program ended before the schedule did)"
    }
}

/// `complete`, or what an incomplete run means in `mode`, whose file holds `windows` windows:
/// a `continuous`-mode schedule never ends, so its file is incomplete while the run goes on and
/// when a signal cut it short, and one written before its first window closed holds what the
/// window still open measured.
pub fn status_in(mode: &str, complete: bool, windows: usize) -> &'static str {
    match (mode, complete) {
        ("continuous", false) if windows == 0 => {
            "INCOMPLETE (written before its first window closed: what the open window measured)"
        }
        ("continuous", false) => {
            "INCOMPLETE (written while the run went on, or when a signal stopped it)"
        }
        _ => status(complete),
    }
}

/// The line on the profiler's effect on the iteration time, in `mode`.
pub fn perturbation_line(mode: &str, perturbation: Option<&Perturbation>) -> String {
    match perturbation {
        Some(p) => format!(
            "perturbation: median iteration {} while measuring vs {} in warmup ({}, 95% CI {} \
             .. {}){}",
            human_ns(p.armed_median_ns),
            human_ns(p.warmup_median_ns),
            signed_percent(p.ratio - 1.0),
            signed_percent(p.ratio_low - 1.0),
            signed_percent(p.ratio_high - 1.0),
            if p.flagged {
                ", FLAGGED: the profiler may be distorting this program's timing".to_owned()
            } else if !p.reliable {
                format!(
                    "; unreliable: with the median of {} warmup iterations this uncertain, a \
                     slowdown of {} cannot be ruled out (its interval above); a longer \
                     PROF_WARMUP gives a better baseline",
                    p.warmup_iterations,
                    percent(PERTURBATION_THRESHOLD)
                )
            } else if p.ratio < 0.95 {
                "; warmup was slower (a cold start: caches, page faults, clock ramp-up), so \
                 this says little; a longer PROF_WARMUP gives a better baseline"
                    .to_owned()
            } else {
                String::new()
            }
        ),
        None if mode == "continuous" => "perturbation: unknown (continuous mode keeps the \
            last window's iterations only; the warmup's are not in the file)"
            .to_owned(),
        None => "perturbation: unknown (needs 2 or more warmup iterations and one after them)"
            .to_owned(),
    }
}

/// How many events that ran before the loop [`before_loop_line`] names.
const BEFORE_LOOP_NAMED: usize = 8;

/// The line on the events that ran only before the loop (`ran before the loop (not scheduled;
/// each one's first run): init/fwd build 1.20ms, ...`), at most eight of them named, or `None`
/// when there is none.
pub fn before_loop_line(profile: &Profile) -> Option<String> {
    if profile.before_loop.is_empty() {
        return None;
    }
    let named: Vec<String> = profile
        .before_loop
        .iter()
        .take(BEFORE_LOOP_NAMED)
        .map(|b| {
            let time = match b.duration_ns {
                Some(ns) => human_ns(ns as f64),
                None => "(not timed)".to_owned(),
            };
            format!("{} {time}", printable(&clip(&b.label(), MAX_CELL)))
        })
        .collect();
    let more = match profile.before_loop.len().saturating_sub(BEFORE_LOOP_NAMED) {
        0 => String::new(),
        n => format!(", +{n} more"),
    };
    Some(format!(
        "ran before the loop (not scheduled; each one's first run): {}{more}",
        named.join(", ")
    ))
}

fn summary_with(profile: &Profile, last_line: &str) -> String {
    let tables = profile_tables(profile, CV_THRESHOLD, PERTURBATION_THRESHOLD);
    let findings = crate::advice::advise(
        profile,
        &tables.rows,
        tables.breakdown.as_ref(),
        &crate::advice::AdviceOptions::default(),
    );
    let ProfileTables {
        rows:
            ProfileRows {
                iteration,
                perturbation,
                mut events,
                ..
            },
        breakdown,
        work_brief,
        ..
    } = tables;
    events.sort_by_key(|e| e.order);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "profiler-core: {} mode, {} iterations ({} warmup), {} events, median iteration {}, {}",
        profile.run.mode,
        iteration.count,
        iteration.warmup,
        events.len(),
        human_ns(iteration.median_ns),
        status_in(&profile.run.mode, profile.complete, profile.windows.len())
    );
    // With `Alloc` installed, what each run allocated and its peak of live bytes (medians).
    let families = columns::Families {
        memory: events.iter().any(|e| e.memory.is_some()),
        device: false,
        work: events.iter().any(|e| e.work.is_some()),
    };
    let headers = columns::headers(Place::Summary, families);
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|e| columns::cells(e, Place::Summary, families))
        .collect();
    out.push_str(&aligned(&headers, &rows, 3));
    if iteration.count == 0 {
        let _ = writeln!(
            out,
            "  (no iteration completed: call profiler_core::step() at the end of each iteration)"
        );
    } else if events.is_empty() {
        let _ = writeln!(out, "  (no event was measured)");
    }
    let _ = writeln!(
        out,
        "  share = mean x calls per iteration / mean iteration; every sample includes the \
         timer's own {} (an empty measurement)",
        human_ns(profile.run.timer_floor_ns as f64)
    );
    if families.memory {
        let _ = writeln!(
            out,
            "  alloc, peak = median bytes a run allocated, and its peak of live bytes \
             (profiler_core::Alloc)"
        );
    }
    if let Some(work) = work_brief {
        let _ = writeln!(out, "  {work}");
    }
    let _ = writeln!(
        out,
        "  {}",
        perturbation_line(&profile.run.mode, perturbation.as_ref())
    );
    if let Some(breakdown) = breakdown.filter(|_| !events.is_empty()) {
        let _ = writeln!(out, "  {}", breakdown.line());
    }
    if let Some(line) = before_loop_line(profile) {
        let _ = writeln!(out, "  {line}");
    }
    for line in crate::advice::summary_lines(&findings, iteration.mean_ns, SUMMARY_FINDINGS) {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(last) = profile.windows.last() {
        // Continuous mode: drift takes a bootstrap per event, left to `prof report`.
        let baseline = profile.windows.iter().filter(|w| w.baseline).count();
        let kept = if baseline > 0 {
            format!(
                "{} windows kept (the first {baseline}, and {} recent)",
                profile.windows.len(),
                profile.windows.len() - baseline
            )
        } else {
            format!("{} windows kept", profile.windows.len())
        };
        let _ = writeln!(
            out,
            "  continuous: {kept} of {} closed, {} iterations each; the table is the last; \
             `prof report` shows each event's median per window and flags drift since the \
             start and in the recent past",
            last.index + 1,
            last.iterations()
        );
    }
    let _ = write!(out, "  {last_line}");
    // What a name left in a sentence (the path, a peak's detail) as visible escapes too.
    printable_lines(&out).into_owned()
}
