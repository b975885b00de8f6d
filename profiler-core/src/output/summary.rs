//! The end-of-run table on stderr: one row per event in execution order.

use std::fmt::Write;

use super::json::{quantiles, Profile};

/// A duration for people: `850ns`, `12.3µs`, `4.56ms`, `1.20s`.
pub fn human_ns(ns: u64) -> String {
    let v = ns as f64;
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 1_000_000 {
        format!("{:.1}µs", v / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2}ms", v / 1e6)
    } else {
        format!("{:.2}s", v / 1e9)
    }
}

/// The median wall time of the iterations after warmup (all of them if none are).
pub fn median_iteration_ns(profile: &Profile) -> u64 {
    let walls = &profile.iterations.wall_ns;
    let skip = (profile.run.warmup as usize).min(walls.len());
    let measured = if walls.len() > skip {
        &walls[skip..]
    } else {
        &walls[..]
    };
    let mut sorted = measured.to_vec();
    sorted.sort_unstable();
    quantiles(&sorted).0
}

/// Renders the summary table.
pub fn render(profile: &Profile, path: &str) -> String {
    let iter_ns = median_iteration_ns(profile);
    let mut out = String::new();
    let status = if profile.complete {
        "complete"
    } else {
        "INCOMPLETE (the program ended before the schedule did)"
    };
    let _ = writeln!(
        out,
        "profiler-core: {} mode, {} iterations ({} warmup), {} events, median iteration {}, {status}",
        profile.run.mode,
        profile.iterations.count,
        profile.run.warmup,
        profile.events.len(),
        human_ns(iter_ns),
    );
    let headers = [
        "layer", "phase", "name", "occ", "samples", "median", "mean", "min", "max", "share",
    ];
    let mut rows: Vec<[String; 10]> = Vec::new();
    for e in &profile.events {
        let s = &e.stats;
        let share = if iter_ns > 0 && s.count > 0 {
            format!("{:.1}%", 100.0 * s.median_ns as f64 / iter_ns as f64)
        } else {
            "-".to_owned()
        };
        let occ = if e.merged {
            format!("{}+", e.occurrence)
        } else {
            e.occurrence.to_string()
        };
        let (median, mean, min, max) = if s.count == 0 {
            ("-".into(), "-".into(), "-".into(), "-".into())
        } else {
            (
                human_ns(s.median_ns),
                human_ns(s.mean_ns),
                human_ns(s.min_ns),
                human_ns(s.max_ns),
            )
        };
        rows.push([
            e.layer.clone().unwrap_or_else(|| "-".into()),
            e.phase.clone().unwrap_or_else(|| "-".into()),
            e.name.clone(),
            occ,
            s.count.to_string(),
            median,
            mean,
            min,
            max,
            share,
        ]);
    }
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut l = String::from(" ");
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - cell.chars().count();
            // Text columns left-aligned, numbers right-aligned.
            if i < 3 {
                l.push_str(&format!(" {cell}{}", " ".repeat(pad)));
            } else {
                l.push_str(&format!(" {}{cell}", " ".repeat(pad)));
            }
        }
        l.trim_end().to_owned()
    };
    let _ = writeln!(out, "{}", line(&headers));
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&cells));
    }
    if profile.iterations.count == 0 {
        let _ = writeln!(
            out,
            "  (no iteration completed: call profiler_core::step() at the end of each iteration)"
        );
    } else if profile.events.is_empty() {
        let _ = writeln!(out, "  (no event was measured)");
    }
    let _ = write!(
        out,
        "  share = median / median iteration; every sample includes the timer's own {} (an \
         empty measurement); results in {path}",
        human_ns(profile.run.timer_floor_ns)
    );
    out
}
