//! The rules on where the iteration's time goes: input, one layer, noise, the profiler's own
//! perturbation, and the stretches no probe covers.

use std::collections::HashMap;

use super::{figures, names, Evidence, Finding, Input, Rule, DOMINANT_SHARE, INPUT_SHARE};
use super::{MAX_USEFUL_REPEAT, UNCOVERED_SHARE};
use crate::table_text::{human_ns, percent};

pub(super) const INPUT_BOUND: Rule = Rule {
    id: "input-bound",
    title: "the iteration waits for its input",
    condition: "the `data` phase (top-level events with `phase = \"data\"`, a loader thread's \
                counted where the loop waits for it) takes at least 10% of the mean iteration",
    remedy: "prepare the next batch while the model computes (a loader thread or more workers, \
             prefetching), and make each batch cheaper to produce (cache decoded inputs, pin \
             host memory)",
};

pub(super) const DOMINANT_LAYER: Rule = Rule {
    id: "dominant-layer",
    title: "one layer takes most of the iteration",
    condition: "of two or more layers, one (an event's `layer`, or its nearest ancestor's; \
                nesting within the layer counted once) takes more than 50% of the mean iteration",
    remedy: "optimize there first: its events with the most self time are listed; a faster \
             kernel, a smaller shape or less work in that layer pays most",
};

pub(super) const TOO_NOISY: Rule = Rule {
    id: "too-noisy",
    title: "events too noisy to judge",
    condition: "an event's coefficient of variation (stddev / mean of its samples) is above \
                `--cv-threshold` (25%), with at least two samples",
    remedy: "measure more before deciding anything about these events: a larger PROF_REPEAT \
             (the repeat given), or several runs compared with `prof ab` (the runs given); \
             a quieter machine (no other jobs, pinned threads)",
};

pub(super) const PERTURBATION: Rule = Rule {
    id: "perturbation",
    title: "the profiler slows the loop down",
    condition: "the measured iterations' median is above the warmup's by more than 5%, the \
                low end of its 95% interval included (the perturbation line's FLAGGED)",
    remedy: "select fewer probes (PROF_FILTER), take probes out of the innermost loops (one per \
             call of a larger function), or use `sample` mode rather than `trace`",
};

pub(super) const UNCOVERED: Rule = Rule {
    id: "uncovered-stretch",
    title: "a large stretch of the iteration no probe covers",
    condition: "the breakdown's largest stretch no top-level event covers is reliable (longer \
                than twice its scatter) and takes at least 5% of the median iteration (the one the events are placed on)",
    remedy: "annotate there next: a `probe!` between the two events named (at their file:line) \
             says what the stretch is",
};

/// `input-bound`.
pub(super) fn input_bound(input: &Input) -> Option<Finding> {
    let b = input.breakdown?;
    let data = b.categories.iter().find(|c| c.name == "data")?;
    if data.share < INPUT_SHARE {
        return None;
    }
    let parents = crate::rows::parent_indices(&input.profile.events);
    let mut sites: Vec<(f64, usize)> = input
        .profile
        .events
        .iter()
        .enumerate()
        .filter(|(i, e)| parents[*i].is_none() && e.phase.as_deref() == Some("data"))
        .map(|(i, _)| (b.held_ns.get(i).copied().unwrap_or(0.0), i))
        .collect();
    sites.sort_by(|a, b| b.0.total_cmp(&a.0));
    let loader = sites
        .iter()
        .any(|&(_, i)| input.profile.events[i].concurrent);
    let sites: Vec<_> = sites.iter().map(|&(_, i)| input.site(i)).collect();
    let summary = format!(
        "the data phase takes {} per iteration, {} of the mean iteration ({}){}: {}",
        human_ns(data.total_ns),
        percent(data.share),
        human_ns(b.iteration_ns),
        if loader {
            ", a loader thread's time counted where the loop waits for it"
        } else {
            ""
        },
        names(&sites)
    );
    Some(Finding::new(
        &INPUT_BOUND,
        format!(
            "the data phase takes {} of the iteration",
            percent(data.share)
        ),
        data.total_ns,
        Evidence {
            summary,
            events: sites,
            figures: figures([
                ("data_ns", data.total_ns),
                ("share", data.share),
                ("iteration_ns", b.iteration_ns),
            ]),
        },
    ))
}

/// Each event's layer: its own, or its nearest ancestor's.
fn layers(input: &Input) -> Vec<Option<String>> {
    let events = &input.profile.events;
    (0..events.len())
        .map(|i| {
            std::iter::once(i)
                .chain(input.rows.ancestors.of(i))
                .find_map(|j| events[j].layer.clone())
        })
        .collect()
}

/// `dominant-layer`.
pub(super) fn dominant_layer(input: &Input) -> Option<Finding> {
    let iteration = input.iteration_ns();
    if iteration.is_nan() || iteration <= 0.0 {
        return None;
    }
    let events = &input.profile.events;
    let layer = layers(input);
    let mut totals: HashMap<&str, f64> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let Some(l) = layer[i].as_deref() else {
            continue;
        };
        // Device time runs beside the CPU's; nesting within the layer counts once.
        let nested = input
            .rows
            .ancestors
            .of(i)
            .any(|a| layer[a].as_deref() == Some(l));
        if e.stream.is_some() || nested {
            totals.entry(l).or_insert(0.0);
            continue;
        }
        *totals.entry(l).or_insert(0.0) += input.rows.events[i].total_ns;
    }
    if totals.len() < 2 {
        return None;
    }
    let (&name, &total) = totals
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))?;
    let share = total / iteration;
    if share <= DOMINANT_SHARE {
        return None;
    }
    let mut members: Vec<usize> = (0..events.len())
        .filter(|&i| layer[i].as_deref() == Some(name) && events[i].stream.is_none())
        .collect();
    members.sort_by(|&a, &b| {
        input.rows.events[b]
            .self_ns
            .total_cmp(&input.rows.events[a].self_ns)
    });
    let sites: Vec<_> = members.iter().map(|&i| input.site(i)).collect();
    let largest = members.first().map(|&i| input.rows.events[i].self_ns);
    Some(Finding::new(
        &DOMINANT_LAYER,
        if share > 1.0 {
            format!(
                "layer {name} takes longer than the mean iteration ({}: its events were \
                 measured in slower iterations, or overlap)",
                percent(share)
            )
        } else {
            format!("layer {name} takes {} of the iteration", percent(share))
        },
        total,
        Evidence {
            summary: format!(
                "layer {name} takes {} per iteration, {} of the mean iteration ({}), of {} \
                 layers; its events by self time: {}",
                human_ns(total),
                percent(share),
                human_ns(iteration),
                totals.len(),
                names(&sites)
            ),
            events: sites,
            figures: figures([
                ("layer_ns", total),
                ("share", share),
                ("iteration_ns", iteration),
                ("layers", totals.len() as f64),
                ("largest_self_ns", largest.unwrap_or(f64::NAN)),
            ]),
        },
    ))
}

/// The samples a 95% interval of the mean within ±5% needs at coefficient of variation `cv`
/// (normal approximation: `(1.96 cv / 0.05)²`), at least 2.
pub fn repeat_for(cv: f64) -> u64 {
    let n = (1.96 * cv / 0.05).powi(2).ceil();
    if n.is_finite() {
        (n as u64).max(2)
    } else {
        u64::MAX
    }
}

/// `too-noisy`: one finding naming every noisy event.
pub(super) fn too_noisy(input: &Input) -> Option<Finding> {
    let threshold = input.options.cv_threshold;
    let mut noisy: Vec<usize> = input
        .rows
        .events
        .iter()
        .enumerate()
        .filter(|(_, r)| r.samples >= 2 && r.cv > threshold)
        .map(|(i, _)| i)
        .collect();
    if noisy.is_empty() {
        return None;
    }
    // What the variation can cost: a run's mean above its fastest, per iteration.
    let stake = |i: usize| {
        let r = &input.rows.events[i];
        ((r.mean_ns - r.min_ns) * r.calls_per_iter).max(0.0)
    };
    noisy.sort_by(|&a, &b| stake(b).total_cmp(&stake(a)));
    // A noisy event inside another is in its parent's time already: counted once.
    let is_noisy: std::collections::HashSet<usize> = noisy.iter().copied().collect();
    let at_stake: f64 = noisy
        .iter()
        .filter(|&&i| !input.rows.ancestors.of(i).any(|a| is_noisy.contains(&a)))
        .map(|&i| stake(i))
        .sum();
    let worst_cv = noisy
        .iter()
        .map(|&i| input.rows.events[i].cv)
        .fold(0.0, f64::max);
    let repeat = repeat_for(worst_cv);
    let sites: Vec<_> = noisy.iter().map(|&i| input.site(i)).collect();
    let samples = noisy
        .iter()
        .map(|&i| input.rows.events[i].samples)
        .min()
        .unwrap_or(0);
    let mut short: Vec<String> = noisy
        .iter()
        .take(3)
        .map(|&i| {
            let id = &input.rows.events[i].identity;
            match id.occurrence {
                0 => id.display_name().into_owned(),
                k => format!("{}#{k}", id.display_name()),
            }
        })
        .collect();
    if noisy.len() > 3 {
        short.push(format!("+{} more", noisy.len() - 3));
    }
    Some(Finding::new(
        &TOO_NOISY,
        format!(
            "{} event{} too noisy to judge (cv up to {}): {}",
            noisy.len(),
            if noisy.len() == 1 { "" } else { "s" },
            percent(worst_cv),
            short.join(", ")
        ),
        at_stake,
        Evidence {
            summary: format!(
                "cv above {} with {} samples or more: {}; their mean runs above their fastest \
                 by {} per iteration (nested ones counted once); {}",
                percent(threshold),
                samples,
                names(&sites),
                human_ns(at_stake),
                if repeat > MAX_USEFUL_REPEAT {
                    format!(
                        "the worst one's mean would need PROF_REPEAT={repeat} to be within ±5% \
                         (95%): quieten the machine (its load scatters the runs) rather than \
                         repeat more"
                    )
                } else {
                    format!("PROF_REPEAT={repeat} would put the worst one's mean within ±5% (95%)")
                }
            ),
            events: sites,
            figures: figures([
                ("events", noisy.len() as f64),
                ("max_cv", worst_cv),
                ("cv_threshold", threshold),
                ("repeat", repeat as f64),
            ]),
        },
    ))
}

/// `perturbation`.
pub(super) fn perturbation(input: &Input) -> Option<Finding> {
    let p = input.rows.perturbation.as_ref().filter(|p| p.flagged)?;
    let cost = p.armed_median_ns - p.warmup_median_ns;
    Some(Finding::new(
        &PERTURBATION,
        format!(
            "the profiler slows the median iteration by {}",
            percent(p.ratio - 1.0)
        ),
        cost,
        Evidence {
            summary: format!(
                "median iteration {} while measuring against {} in warmup ({}, 95% interval \
                 {} .. {})",
                human_ns(p.armed_median_ns),
                human_ns(p.warmup_median_ns),
                percent(p.ratio - 1.0),
                percent(p.ratio_low - 1.0),
                percent(p.ratio_high - 1.0)
            ),
            events: Vec::new(),
            figures: figures([
                ("armed_median_ns", p.armed_median_ns),
                ("warmup_median_ns", p.warmup_median_ns),
                ("ratio", p.ratio),
                ("ratio_low", p.ratio_low),
                ("ratio_high", p.ratio_high),
            ]),
        },
    ))
}

/// `uncovered-stretch`.
pub(super) fn uncovered(input: &Input) -> Option<Finding> {
    let b = input.breakdown?;
    let gap = b.gaps.iter().find(|g| g.reliable)?;
    if gap.share < UNCOVERED_SHARE {
        return None;
    }
    let sites: Vec<_> = [gap.after.clone(), gap.before.clone()]
        .into_iter()
        .flatten()
        .collect();
    Some(Finding::new(
        &UNCOVERED,
        format!(
            "{} of the median iteration is covered by no probe",
            percent(gap.share)
        ),
        gap.len_ns,
        Evidence {
            summary: format!(
                "a stretch of {} ({} of the median iteration, scatter ±{}) {}",
                human_ns(gap.len_ns),
                percent(gap.share),
                human_ns(gap.noise_ns),
                gap.describe()
            ),
            events: sites,
            figures: figures([
                ("start_ns", gap.start_ns),
                ("len_ns", gap.len_ns),
                ("share", gap.share),
                ("noise_ns", gap.noise_ns),
            ]),
        },
    ))
}
