//! What to do about it: rules over one profile's measures, each with its evidence and the time
//! at stake per iteration. `prof advise`, `prof report`, `prof html` and the end-of-run summary
//! print the same findings (the rules that need several profiles or the windows' statistics,
//! `straggler` and `drift`, and the runs a noisy event would take, are added by
//! `profiler-analysis`'s `advise`).
//!
//! Each rule ([`RULES`]) has an id (kebab-case), a title, a condition (stated in
//! `docs/reference.md`, "prof advise", with the thresholds below) and what to try. A
//! [`Finding`] is one rule true of this profile: its evidence (the numbers, the events and
//! their `file:line`), and the time at stake per iteration, an upper bound (the most that doing
//! what it says could save, said as "up to"). Findings are ordered by time at stake, largest
//! first.
//!
//! The rules read what [`profile_rows`](crate::rows::profile_rows) and
//! [`breakdown`](crate::breakdown::breakdown) computed: the same numbers as the tables.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::breakdown::{Breakdown, Site};
use crate::rows::ProfileRows;
use crate::table_text::{human_ns, percent, printable};
use profiler_format::{Event, Profile};

mod device;
mod time;
mod work;

/// `input-bound`: the `data` phase's least share of the mean iteration.
pub const INPUT_SHARE: f64 = 0.10;
/// `dominant-layer`: one layer takes more than this share of the mean iteration.
pub const DOMINANT_SHARE: f64 = 0.50;
/// `memory-bound-below-bandwidth`, `compute-below-peak`: an event runs "far below" the peak
/// under this fraction of it.
pub const FAR_BELOW_PEAK: f64 = 0.5;
/// `alloc-churn`: the least median allocations of one run.
pub const CHURN_ALLOCS: f64 = 8.0;
/// `alloc-churn`: the allocator's estimated cost of one allocation (and its free), generous:
/// not measured (glibc's small allocations take tens of nanoseconds, an `mmap`ed one a few
/// microseconds).
pub const CHURN_NS_PER_ALLOC: f64 = 5_000.0;
/// `alloc-churn`: the estimated cost of each 4KiB page allocated (a page fault and its
/// zeroing), generous.
pub const CHURN_NS_PER_PAGE: f64 = 500.0;
/// `alloc-churn`: the least share of the mean iteration the estimated cost must reach.
pub const CHURN_SHARE: f64 = 0.02;
/// `many-shapes`: the least distinct input shapes of one event.
pub const MANY_SHAPES: u64 = 4;
/// `uncovered-stretch`: the least share of the median iteration (the one the events are placed
/// on) a stretch no probe covers takes.
pub const UNCOVERED_SHARE: f64 = 0.05;
/// `sync-stall`: the call's CPU time is at least this fraction of its device time.
pub const SYNC_CPU_FRACTION: f64 = 0.9;
/// `sync-stall`: the least device time of one call (a launch takes microseconds; a call the
/// CPU waits this long in waited for the device).
pub const SYNC_MIN_DEVICE_NS: f64 = 50_000.0;
/// `launch-bound`: the kernels' summed time under this fraction of the stretch from the first
/// kernel's start to the last one's end (the device idles between launches).
pub const LAUNCH_BUSY_FRACTION: f64 = 0.5;
/// `device-idle`: the device's streams busy under this fraction of the mean iteration.
pub const DEVICE_BUSY_SHARE: f64 = 0.5;
/// `h2d-every-iteration`: the least share of the mean iteration the copies take.
pub const H2D_SHARE: f64 = 0.02;
/// `too-noisy` (with `prof report`'s default `--cv-threshold`): an event is noisy above this
/// coefficient of variation.
pub const CV_THRESHOLD: f64 = 0.25;
/// `too-noisy`: past this many samples, the finding says to quieten the machine rather than
/// repeat more.
pub const MAX_USEFUL_REPEAT: u64 = 10_000;
/// Events named in a finding's evidence, at most.
pub const EVENTS_NAMED: usize = 5;

/// One rule: what it is called, when it fires and what to try.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Rule {
    /// Kebab-case id, stable: what `--json` and the reference name it by.
    pub id: &'static str,
    /// What it finds, in a few words.
    pub title: &'static str,
    /// Its condition, as the reference states it.
    pub condition: &'static str,
    /// What to try when it fires.
    pub remedy: &'static str,
}

/// Every rule, in the reference's order: this crate's and `profiler-analysis`'s.
pub const RULES: &[Rule] = &[
    time::INPUT_BOUND,
    time::DOMINANT_LAYER,
    work::MEMORY_BOUND,
    work::COMPUTE_BOUND,
    work::ALLOC_CHURN,
    work::MANY_SHAPES_RULE,
    time::TOO_NOISY,
    time::PERTURBATION,
    time::UNCOVERED,
    STRAGGLER,
    DRIFT,
    device::SYNC_STALL,
    device::DEVICE_IDLE,
    device::LAUNCH_BOUND,
    device::H2D,
];

/// `straggler` (judged by `profiler-analysis`, over several ranks' profiles).
pub const STRAGGLER: Rule = Rule {
    id: "straggler",
    title: "one rank is slower than the others",
    condition: "given several ranks' prof.json (as `prof merge` takes them): the slowest rank's \
                median iteration is at least 5% above the median of the ranks' medians",
    remedy: "every rank waits for the slowest at each collective: look at the events `prof \
             merge` calls slower on that rank (its data shard, its host's load, its device)",
};

/// `drift` (judged by `profiler-analysis`, over a continuous-mode profile's windows).
pub const DRIFT: Rule = Rule {
    id: "drift",
    title: "the iteration or an event got slower during the run",
    condition: "continuous mode: `prof report`'s drift verdict is `slower` for the iteration or \
                an event (since the start or in the recent past, by prof diff's statistics)",
    remedy: "look for state that grows with the run (caches, lists, fragmentation, a leak), \
             throttling, or a change in the data; `prof report` shows the window it began in",
};

/// The rule with this id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// What a finding rests on.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Evidence {
    /// The evidence in one sentence, with its numbers.
    pub summary: String,
    /// The events it names, each with its `file:line`, the most at stake first.
    pub events: Vec<Site>,
    /// Its numbers by name (`share`, `cv`, `mfu`, ..., times in nanoseconds).
    pub figures: BTreeMap<String, f64>,
}

/// One rule true of a profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The rule's id ([`Rule::id`]).
    pub id: String,
    /// What was found, for this profile (`layer top_mlp takes 62% of the iteration`).
    pub title: String,
    /// The time at stake per iteration, an upper bound: the most that doing what
    /// [`try_`](Self::try_) says could save.
    pub at_stake_ns: f64,
    /// The evidence.
    pub evidence: Evidence,
    /// What to try.
    #[serde(rename = "try")]
    pub try_: String,
}

impl Finding {
    /// A finding of `rule`, its remedy as what to try.
    pub fn new(rule: &Rule, title: String, at_stake_ns: f64, evidence: Evidence) -> Finding {
        Finding {
            id: rule.id.to_owned(),
            title,
            at_stake_ns: if at_stake_ns.is_finite() {
                at_stake_ns.max(0.0)
            } else {
                0.0
            },
            evidence,
            try_: rule.remedy.to_owned(),
        }
    }

    /// One line: `up to 12.3µs/iter (4.5%)  id: title`, the share of `iteration_ns` when it is
    /// known.
    pub fn line(&self, iteration_ns: f64) -> String {
        let share = if iteration_ns > 0.0 && iteration_ns.is_finite() {
            format!(" ({})", percent(self.at_stake_ns / iteration_ns))
        } else {
            String::new()
        };
        printable(&format!(
            "up to {}/iter{share}  {}: {}",
            human_ns(self.at_stake_ns),
            self.id,
            self.title
        ))
        .into_owned()
    }
}

/// What the rules are judged against.
#[derive(Clone, Debug)]
pub struct AdviceOptions {
    /// `too-noisy`: the coefficient of variation above which an event is noisy.
    pub cv_threshold: f64,
}

impl Default for AdviceOptions {
    fn default() -> Self {
        AdviceOptions {
            cv_threshold: CV_THRESHOLD,
        }
    }
}

/// What a rule reads: the profile, its rows and its breakdown.
pub(crate) struct Input<'a> {
    pub profile: &'a Profile,
    pub rows: &'a ProfileRows,
    pub breakdown: Option<&'a Breakdown>,
    pub options: &'a AdviceOptions,
}

impl Input<'_> {
    /// The mean measured iteration.
    pub fn iteration_ns(&self) -> f64 {
        self.rows.iteration.mean_ns
    }

    /// The site of event `i` (its label, id and `file:line`).
    pub fn site(&self, i: usize) -> Site {
        site_of(&self.profile.events[i])
    }
}

/// An event's site: its label, id and `file:line`.
pub fn site_of(e: &Event) -> Site {
    Site {
        label: e.identity().label(),
        id: e.id.clone(),
        location: format!("{}:{}", e.file, e.line),
    }
}

/// The findings of this crate's rules on `profile`, from its `rows` (as
/// [`profile_rows`](crate::rows::profile_rows) computed them, with `options.cv_threshold`) and
/// its breakdown: largest time at stake first (ties: in the order of [`RULES`]).
pub fn advise(
    profile: &Profile,
    rows: &ProfileRows,
    breakdown: Option<&Breakdown>,
    options: &AdviceOptions,
) -> Vec<Finding> {
    let input = Input {
        profile,
        rows,
        breakdown,
        options,
    };
    let mut findings = Vec::new();
    findings.extend(time::input_bound(&input));
    findings.extend(time::dominant_layer(&input));
    findings.extend(work::memory_bound(&input));
    findings.extend(work::compute_bound(&input));
    findings.extend(work::alloc_churn(&input));
    findings.extend(work::many_shapes(&input));
    findings.extend(time::too_noisy(&input));
    findings.extend(time::perturbation(&input));
    findings.extend(time::uncovered(&input));
    findings.extend(device::sync_stall(&input));
    findings.extend(device::device_idle(&input));
    findings.extend(device::launch_bound(&input));
    findings.extend(device::h2d(&input));
    // Nothing can save more than the whole iteration (shares above 1 come from events
    // measured in slower iterations, or running beside each other).
    let iteration = input.iteration_ns();
    if iteration > 0.0 {
        for f in &mut findings {
            f.at_stake_ns = f.at_stake_ns.min(iteration);
        }
    }
    sort(&mut findings);
    findings
}

/// Findings by time at stake, largest first; ties in the order of [`RULES`] (a stable sort).
pub fn sort(findings: &mut [Finding]) {
    let rank = |f: &Finding| {
        RULES
            .iter()
            .position(|r| r.id == f.id)
            .unwrap_or(usize::MAX)
    };
    findings.sort_by(|a, b| {
        b.at_stake_ns
            .total_cmp(&a.at_stake_ns)
            .then(rank(a).cmp(&rank(b)))
    });
}

/// The end-of-run summary's lines: the first `top` findings, one line each, or one line
/// saying that no rule fired.
pub fn summary_lines(findings: &[Finding], iteration_ns: f64, top: usize) -> Vec<String> {
    if findings.is_empty() {
        return vec!["advice: no rule fired (`prof advise` lists the rules)".to_owned()];
    }
    let mut lines = vec![format!(
        "advice ({} finding{}, the most time at stake first; `prof advise` for the evidence):",
        findings.len(),
        if findings.len() == 1 { "" } else { "s" }
    )];
    lines.extend(
        findings
            .iter()
            .take(top)
            .map(|f| format!("! {}", f.line(iteration_ns))),
    );
    if findings.len() > top {
        lines.push(format!("  +{} more", findings.len() - top));
    }
    lines
}

/// `a, b, c` of the first [`EVENTS_NAMED`] sites, `+N more` after them.
pub(crate) fn names(sites: &[Site]) -> String {
    let mut named: Vec<String> = sites
        .iter()
        .take(EVENTS_NAMED)
        .map(|s| format!("{} ({})", s.label, s.location))
        .collect();
    if sites.len() > EVENTS_NAMED {
        named.push(format!("+{} more", sites.len() - EVENTS_NAMED));
    }
    named.join(", ")
}

/// Figures from `(name, value)` pairs.
pub(crate) fn figures<const N: usize>(pairs: [(&str, f64); N]) -> BTreeMap<String, f64> {
    pairs
        .into_iter()
        .filter(|(_, v)| v.is_finite())
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

#[cfg(test)]
mod tests;
