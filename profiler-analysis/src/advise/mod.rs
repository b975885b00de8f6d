//! `prof advise`: what to do about a profile, as findings of rules, each with its evidence and
//! the time at stake per iteration, the most at stake first.
//!
//! The rules over one profile are [`profiler_tables::advice`]'s (the end-of-run summary prints
//! the same); this module adds what needs more than one profile's rows:
//! - `too-noisy`: the runs a side `prof ab` would need to resolve a change of 2% in the
//!   noisy event with the most at stake, by `prof diff`'s statistics ([`diff::runs_needed`] of the event's
//!   allowance for moving between runs, [`diff::SCATTER_FACTOR`] × its samples'
//!   [`diff::scatter`]);
//! - `straggler`: given several ranks' profiles (as `prof merge` takes them), the slowest
//!   rank's median iteration 5% or more above the median of the ranks' medians; the events
//!   `prof merge` calls `slower` on it are the evidence. With several profiles, the other
//!   rules are judged on that slowest rank's (the one the others wait for);
//! - `drift`: in `continuous` mode, the iteration or events that `prof report`'s drift calls
//!   `slower` ([`drift::windows`]).
//!
//! `docs/reference.md` ("prof advise") states every rule's condition.

use serde::Serialize;

use crate::diff::{self, DiffOptions};
use crate::drift::{self, DriftStatus, Windows};
use crate::merge;
use profiler_format::Profile;
use profiler_tables::advice::{self, site_of};
pub use profiler_tables::advice::{AdviceOptions, Evidence, Finding, RULES};
use profiler_tables::breakdown::{breakdown, Breakdown, Site};
use profiler_tables::rows::{profile_rows, ProfileRows};
use profiler_tables::table_text::{human_ns, percent, printable, printable_lines};

/// `straggler`: the slowest rank's median iteration over the median of the ranks' medians
/// must pass this.
pub const STRAGGLER_RATIO: f64 = 1.05;
/// `too-noisy`: the change `prof ab`'s runs are counted to resolve.
pub const AB_THRESHOLD: f64 = 0.02;

/// What [`advise`] found.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    /// The program (of the profile judged).
    pub program: String,
    /// Its mode.
    pub mode: String,
    /// The rank whose profile the single-profile rules judged (with several profiles: the
    /// slowest, numbered as `prof merge` numbers the ranks: by position when two inputs give
    /// the same rank).
    pub rank: u32,
    /// How many profiles were given.
    pub profiles: usize,
    /// The mean measured iteration of the profile judged.
    pub iteration_ns: f64,
    /// The findings, the most time at stake first.
    pub findings: Vec<Finding>,
    /// With several profiles, what `prof merge` warns of them (two inputs of one rank, other
    /// programs or modes, events some ranks lack); empty otherwise.
    pub warnings: Vec<String>,
}

/// The findings on `profiles` (one run's profile, or one per rank): see the module
/// documentation. Error: no profile.
pub fn advise(profiles: &[Profile], options: &AdviceOptions) -> Result<Advice, String> {
    let first = profiles
        .first()
        .ok_or_else(|| "nothing to advise on: give a prof.json".to_owned())?;
    let (judged, rank, straggler, warnings) = if profiles.len() > 1 {
        let merged = merge::merge(profiles)?;
        let slowest = of_rank(profiles, merged.straggler).unwrap_or(first);
        let straggler = straggler_finding(profiles, &merged);
        (slowest, merged.straggler, straggler, merged.warnings)
    } else {
        (first, first.run.rank, None, Vec::new())
    };
    let rows = profile_rows(judged, options.cv_threshold, 0.05);
    let windows = (!judged.windows.is_empty())
        .then(|| drift::windows(judged, &DiffOptions::default()))
        .flatten();
    let b = breakdown(judged, &rows);
    let mut findings = findings_of(judged, &rows, b.as_ref(), windows.as_ref(), options);
    findings.extend(straggler);
    at_most_the_iteration(&mut findings, rows.iteration.mean_ns);
    advice::sort(&mut findings);
    Ok(Advice {
        program: judged.run.program.clone(),
        mode: judged.run.mode.clone(),
        rank,
        profiles: profiles.len(),
        iteration_ns: rows.iteration.mean_ns,
        findings,
        warnings,
    })
}

/// The findings on one profile from its `rows`, its `breakdown` and, in `continuous` mode, its
/// `windows` (as `prof report` computed them): [`profiler_tables::advice::advise`]'s, the runs
/// `prof ab` would need added to `too-noisy`, and `drift`; the most at stake first.
pub fn findings_of(
    profile: &Profile,
    rows: &ProfileRows,
    breakdown: Option<&Breakdown>,
    windows: Option<&Windows>,
    options: &AdviceOptions,
) -> Vec<Finding> {
    let mut findings = advice::advise(profile, rows, breakdown, options);
    for f in findings.iter_mut().filter(|f| f.id == "too-noisy") {
        add_ab_runs(profile, f);
    }
    findings.extend(windows.and_then(|w| drift_finding(profile, rows, w)));
    at_most_the_iteration(&mut findings, rows.iteration.mean_ns);
    advice::sort(&mut findings);
    findings
}

/// Nothing can save more than the mean measured iteration `iteration_ns` (as
/// [`advice::advise`] caps its own findings): the rules added here (`drift`, whose slower
/// events may nest, and `straggler`, a median against the judged rank's mean) are capped too.
fn at_most_the_iteration(findings: &mut [Finding], iteration_ns: f64) {
    if iteration_ns > 0.0 {
        for f in findings {
            f.at_stake_ns = f.at_stake_ns.min(iteration_ns);
        }
    }
}

/// `too-noisy`: the runs a side `prof ab` would need for the noisy event with the most at
/// stake (the first it names).
fn add_ab_runs(profile: &Profile, f: &mut Finding) {
    let Some(first) = f.evidence.events.first() else {
        return;
    };
    // The id and the label: a probe's occurrences share its id (`f#0`, `f#1`).
    let Some(e) = profile
        .events
        .iter()
        .find(|e| e.id == first.id && e.identity().label() == first.label)
    else {
        return;
    };
    let samples: Vec<f64> = e.samples_ns.iter().map(|&v| v as f64).collect();
    let spread = diff::SCATTER_FACTOR * diff::scatter(&samples);
    let runs = diff::runs_needed(spread, AB_THRESHOLD, diff::LOAD_ALPHA);
    let text = match runs {
        Some(n) => {
            f.evidence.figures.insert("ab_runs".to_owned(), n as f64);
            format!(
                "; `prof ab` would need {n} runs a side to resolve a {} change in {}",
                percent(AB_THRESHOLD),
                first.label
            )
        }
        None => format!(
            "; `prof ab` could not resolve a {} change in {} within 1,000 runs a side",
            percent(AB_THRESHOLD),
            first.label
        ),
    };
    f.evidence.summary.push_str(&text);
}

/// The profile `prof merge` calls `rank`: the one whose `run.rank` it is, or, when two inputs
/// give the same rank (`prof merge` then numbers the inputs by their position), the input at
/// that position.
fn of_rank(profiles: &[Profile], rank: u32) -> Option<&Profile> {
    let mut ranks: Vec<u32> = profiles.iter().map(|p| p.run.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if ranks.len() == profiles.len() {
        profiles.iter().find(|p| p.run.rank == rank)
    } else {
        profiles.get(usize::try_from(rank).ok()?)
    }
}

/// `straggler`, over the ranks' profiles as `prof merge` merged them.
fn straggler_finding(profiles: &[Profile], merged: &merge::Merged) -> Option<Finding> {
    let medians: Vec<f64> = merged
        .iteration_median_ns
        .iter()
        .copied()
        .filter(|m| m.is_finite() && *m > 0.0)
        .collect();
    if medians.len() < 2 {
        return None;
    }
    let mut sorted = medians.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let middle = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    let k = merged.ranks.iter().position(|&r| r == merged.straggler)?;
    let slowest = merged.iteration_median_ns[k];
    let ratio = slowest / middle;
    if ratio.is_nan() || ratio < STRAGGLER_RATIO {
        return None;
    }
    let profile = of_rank(profiles, merged.straggler);
    let sites: Vec<Site> = merged
        .events
        .iter()
        .filter(|e| {
            e.straggler == merged.straggler && e.straggler_verdict.as_deref() == Some("slower")
        })
        .filter_map(|e| {
            profile?
                .events
                .iter()
                .find(|p| p.id == e.identity.id && p.occurrence == e.identity.occurrence)
                .map(site_of)
        })
        .collect();
    let rule = advice::rule("straggler")?;
    Some(Finding::new(
        rule,
        format!(
            "rank {} is {} slower than the median rank",
            merged.straggler,
            percent(ratio - 1.0)
        ),
        slowest - middle,
        Evidence {
            summary: format!(
                "rank {}'s median iteration is {} against a median of {} over {} ranks; \
                 events `prof merge` calls slower on it: {}",
                merged.straggler,
                human_ns(slowest),
                human_ns(middle),
                n,
                if sites.is_empty() {
                    "none (its time is outside the probes, or within the ranks' noise)".to_owned()
                } else {
                    advice_names(&sites)
                }
            ),
            events: sites,
            figures: [
                ("rank", f64::from(merged.straggler)),
                ("iteration_ns", slowest),
                ("median_rank_iteration_ns", middle),
                ("ratio", ratio),
                ("ranks", n as f64),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        },
    ))
}

/// `a (file:line), b (file:line)`, at most five.
fn advice_names(sites: &[Site]) -> String {
    let mut named: Vec<String> = sites
        .iter()
        .take(advice::EVENTS_NAMED)
        .map(|s| format!("{} ({})", s.label, s.location))
        .collect();
    if sites.len() > advice::EVENTS_NAMED {
        named.push(format!("+{} more", sites.len() - advice::EVENTS_NAMED));
    }
    named.join(", ")
}

/// `drift`: the iteration or events drifting slower.
fn drift_finding(profile: &Profile, rows: &ProfileRows, w: &Windows) -> Option<Finding> {
    let growth = |s: &drift::Series| match (s.first_median_ns, s.last_median_ns) {
        (Some(a), Some(b)) => (b as f64 - a as f64).max(0.0),
        _ => 0.0,
    };
    let slower: Vec<&drift::Series> = w
        .events
        .iter()
        .filter(|s| s.drift == DriftStatus::Slower)
        .collect();
    let iteration = (w.iteration.drift == DriftStatus::Slower).then(|| growth(&w.iteration));
    if slower.is_empty() && iteration.is_none() {
        return None;
    }
    let calls = |order: Option<u32>| {
        order
            .and_then(|o| rows.events.iter().find(|r| r.order == o))
            .map_or(1.0, |r| r.calls_per_iter)
    };
    let events_growth: f64 = slower.iter().map(|s| growth(s) * calls(s.order)).sum();
    let at_stake = iteration.unwrap_or(0.0).max(events_growth);
    let sites: Vec<Site> = slower
        .iter()
        .filter_map(|s| {
            profile
                .events
                .iter()
                .find(|e| Some(e.order) == s.order)
                .map(site_of)
        })
        .collect();
    let changes: Vec<String> = slower
        .iter()
        .take(advice::EVENTS_NAMED)
        .map(|s| {
            format!(
                "{} {} ({})",
                s.identity.label(),
                s.change
                    .map_or("-".to_owned(), |c| format!("{:+.1}%", 100.0 * c)),
                s.drift_against.map_or("", |a| a.phrase())
            )
        })
        .collect();
    let rule = advice::rule("drift")?;
    Some(Finding::new(
        rule,
        match iteration {
            Some(_) => format!(
                "the iteration got slower during the run ({})",
                w.iteration
                    .change
                    .map_or("-".to_owned(), |c| format!("{:+.1}%", 100.0 * c))
            ),
            None => format!(
                "{} event{} got slower during the run",
                slower.len(),
                if slower.len() == 1 { "" } else { "s" }
            ),
        },
        at_stake,
        Evidence {
            summary: format!(
                "over {} windows of {} iterations: iteration median {} then {}; events slower: \
                 {}",
                w.kept,
                w.iterations_per_window,
                w.iteration
                    .first_median_ns
                    .map_or("-".to_owned(), |v| human_ns(v as f64)),
                w.iteration
                    .last_median_ns
                    .map_or("-".to_owned(), |v| human_ns(v as f64)),
                if changes.is_empty() {
                    "none".to_owned()
                } else {
                    changes.join(", ")
                }
            ),
            events: sites,
            figures: [
                ("windows", w.kept as f64),
                ("iteration_growth_ns", iteration.unwrap_or(0.0)),
                ("events_growth_ns", events_growth),
                ("events", slower.len() as f64),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        },
    ))
}

/// `prof advise`'s text: one line per finding (the time at stake first), then each finding's
/// evidence and what to try. The first `top` findings (all with `None`).
pub fn render_text(advice: &Advice, top: Option<usize>) -> String {
    let shown = top
        .unwrap_or(advice.findings.len())
        .min(advice.findings.len());
    let mut out = format!(
        "prof advise: {}, {} mode{}, mean iteration {}; {} finding{}, the most time at stake \
         first (each an upper bound per iteration)\n",
        printable(&advice.program),
        printable(&advice.mode),
        if advice.profiles > 1 {
            format!(
                ", {} ranks (the rules on one profile judged on rank {}, the slowest)",
                advice.profiles, advice.rank
            )
        } else {
            String::new()
        },
        human_ns(advice.iteration_ns),
        advice.findings.len(),
        if advice.findings.len() == 1 { "" } else { "s" },
    );
    // Names inside a finding's sentences may hold any character, a newline too: each sentence
    // is escaped as one line (the text as a whole keeps its own newlines).
    for w in &advice.warnings {
        out.push_str(&format!("  warning: {}\n", printable(w)));
    }
    if advice.findings.is_empty() {
        out.push_str("  no rule fired (docs/reference.md, \"prof advise\", lists them)\n");
        return printable_lines(&out).into_owned();
    }
    for (k, f) in advice.findings.iter().take(shown).enumerate() {
        out.push_str(&format!("  {}. {}\n", k + 1, f.line(advice.iteration_ns)));
    }
    if shown < advice.findings.len() {
        out.push_str(&format!(
            "  (+{} more: --top {})\n",
            advice.findings.len() - shown,
            advice.findings.len()
        ));
    }
    for (k, f) in advice.findings.iter().take(shown).enumerate() {
        out.push_str(&format!("\n{}. {}: {}\n", k + 1, f.id, printable(&f.title)));
        out.push_str(&format!(
            "   at stake: up to {} per iteration\n",
            human_ns(f.at_stake_ns)
        ));
        out.push_str(&format!(
            "   evidence: {}\n",
            printable(&f.evidence.summary)
        ));
        out.push_str(&format!("   try: {}\n", f.try_));
    }
    printable_lines(&out).into_owned()
}

/// `prof advise --json`: the [`Advice`], its first `top` findings, pretty-printed.
pub fn render_json(advice: &Advice, top: Option<usize>) -> String {
    let mut shown = advice.clone();
    if let Some(n) = top {
        shown.findings.truncate(n);
    }
    match serde_json::to_string_pretty(&shown) {
        Ok(s) => s + "\n",
        Err(e) => format!("{{\"error\": \"cannot encode the advice: {e}\"}}\n"),
    }
}

#[cfg(test)]
mod tests;
