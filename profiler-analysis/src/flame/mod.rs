//! `prof flame`: the mean iteration of a profile as folded stacks and as an interactive SVG flame
//! graph (or icicle graph) drawn by `inferno`, in nanoseconds per iteration.
//!
//! **Frames.** One frame per event, named `layer/phase/name` (`-` for a missing layer or phase),
//! with `#k` after the name when the probe has several events in an iteration (occurrence `k`),
//! so that the frames of different events stay distinct; when two probes would still get the
//! same name, the later one in execution order gets ` (id)` after it. A `;` or a control
//! character in a name, which the folded format cannot hold, becomes `_`. A frame sits on its
//! parent's frame (`parent` in `prof.json`, learned at warmup in `sample` mode and recorded in
//! `trace` mode). The time no top-level event covers is one more root frame, `other`, as in the
//! step breakdown. `--group layer` (or `phase`) puts one root frame `layer=NAME` (`phase=NAME`;
//! `(no layer)`, `(no phase)`) under every top-level event of that layer (phase).
//!
//! **Widths.** A stack's weight is its last frame's self time per mean measured iteration, in
//! nanoseconds, so a frame is as wide as its event's total time per iteration (`mean × calls per
//! iteration`; calls per iteration from `count` for a merged event) and the whole graph as wide
//! as the mean iteration: the numbers are those of `prof report` (`profiler_tables::rows`)
//! and of its step breakdown (`profiler_tables::breakdown`), which says how the mean iteration
//! holds each event ([`Breakdown::held_ns`](profiler_tables::breakdown::Breakdown::held_ns)): a
//! top-level event on another thread (`concurrent`: a data loader beside the loop) only for the
//! part of its run that no event of the stepping thread covers, since the wall time is counted
//! once; children of another thread than their parent's (workers a layer waits for) side by side
//! within what the parent's own-thread children leave, scaled down together when they ran in
//! parallel and need more. A frame whose width is less than its event's total says so in its
//! title. Events timed on a device stream are left out at top level (their time runs on the
//! device, as in the breakdown). Weights are rounded to whole nanoseconds so that every prefix of
//! the stacks sums to its exact total rounded (each stack within 1 ns).
//!
//! **Filter.** `--filter EXPR` (the `PROF_FILTER` language, [`profiler_format::filter`]) keeps
//! the events that match, each as wide as its total: what ran inside it and does not match is
//! not drawn, its time counts as the matching event's self time. The events they ran inside are
//! drawn as context, only as wide as the matching events they hold (their self time and other
//! children are left out), and `other` is left out: the graph is as wide as the matching events'
//! time, which its title gives against the mean iteration.
//!
//! **Several runs and comparisons.** Given several profiles, the widths are the mean over them
//! of each stack's weight. With a baseline ([`FlameOptions::baseline`]), each event's frame is
//! coloured by `prof diff`'s verdict on it ([`diff::diff_runs`], with the
//! profiles drawn as the `after` side): red regressed, blue improved, grey no change or within
//! noise, pale inconclusive, lilac for an event the baseline does not have; the widths stay
//! those of the profiles drawn. Titles give the verdict, the change of the median and its
//! interval.

pub(crate) mod stacks;
pub(crate) mod svg;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use crate::diff::{self, DiffOptions, EventDiff, Verdict};
use profiler_format::filter::Filter;
use profiler_format::Profile;

pub use svg::{verdict_color, Rgb};

/// How frames are grouped under the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// A root frame per layer of the top-level events.
    Layer,
    /// A root frame per phase of the top-level events.
    Phase,
}

/// What to draw.
#[derive(Clone, Debug, Default)]
pub struct FlameOptions<'a> {
    /// Root frames by layer or phase; `None`: the events' nesting only.
    pub group: Option<Grouping>,
    /// Only the matching events (with the events they ran inside as context).
    pub filter: Option<Filter>,
    /// Stacks grow downwards (an icicle graph) rather than upwards.
    pub icicle: bool,
    /// The baseline runs whose comparison colours the frames (a differential graph).
    pub baseline: Option<&'a [Profile]>,
    /// The settings of the comparison (those of `prof diff` by default).
    pub diff: DiffOptions,
}

/// Why no graph can be drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlameError {
    /// No profile was given.
    NoProfile,
    /// A profile has no measured iteration: there is no mean iteration.
    NoIteration {
        /// The position of the profile among those given (0 first).
        index: usize,
    },
    /// The filter matches no event of any profile.
    NothingMatches {
        /// The filter as given.
        filter: String,
    },
}

impl std::fmt::Display for FlameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlameError::NoProfile => f.write_str("no profile to draw"),
            FlameError::NoIteration { .. } => f.write_str(
                "the profile has no measured iteration: there is no mean iteration to draw",
            ),
            FlameError::NothingMatches { filter } => write!(
                f,
                "--filter `{filter}` matches no event that takes time in the profile (`prof \
                 report` lists the events)"
            ),
        }
    }
}

impl std::error::Error for FlameError {}

/// What a frame stands for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FrameKey {
    /// An event: its probe's id and occurrence.
    Event(String, u32),
    /// A group root frame (`--group`): its name.
    Group(String),
    /// The time no top-level event covers.
    Other,
}

/// One frame of the graph, with what its title says.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Its name in the folded stacks and on the graph (unique in the graph).
    pub name: String,
    /// What it stands for.
    pub key: FrameKey,
    /// The event's total time per iteration (`mean × calls per iteration`), mean over the
    /// profiles that have it; for a group or `other`, its width.
    pub total_ns: f64,
    /// The event's self time per iteration (`prof report`'s `self`), mean likewise.
    pub self_ns: f64,
    /// How wide the frame is drawn: its time per iteration as the graph holds it (see the module
    /// documentation), mean over the profiles.
    pub width_ns: f64,
    /// Calls per iteration, mean likewise.
    pub calls_per_iter: f64,
    /// True for an event that holds every later run of its probe (`merged`).
    pub merged: bool,
    /// True for an event that ran on another thread than the stepping one.
    pub concurrent: bool,
    /// False for an event drawn only as context of the events a filter matches.
    pub matched: bool,
    /// In a differential graph: `prof diff`'s comparison of the event, `None` when the baseline
    /// does not have it (and for groups and `other`).
    pub diff: Option<EventDiff>,
    /// Of several profiles drawn as one, how many lack the frame (0 for one profile): its
    /// width is the mean over all of them, its title figures the mean over those that have it.
    pub missing_from: usize,
}

/// One folded stack: frames from the root, and the last frame's self time.
#[derive(Clone, Debug, PartialEq)]
pub struct Stack {
    /// Indices into [`Flame::frames`], root first.
    pub frames: Vec<usize>,
    /// Nanoseconds per iteration, rounded so that the stacks' running sum is exact.
    pub weight_ns: u64,
}

/// A flame graph: its frames and stacks, ready to fold or draw.
#[derive(Clone, Debug)]
pub struct Flame {
    /// Every frame, in the order of the stacks.
    pub frames: Vec<Frame>,
    /// The stacks, depth first in execution order, `other` last; stacks of weight 0 left out.
    pub stacks: Vec<Stack>,
    /// The mean measured iteration, mean over the profiles.
    pub iteration_ns: f64,
    /// What the graph is of (program, mode, runs, filter), for its title.
    pub title: String,
    /// In a differential graph: what the colours say.
    pub subtitle: Option<String>,
    /// Stacks grow downwards.
    pub icicle: bool,
}

impl Flame {
    /// The sum of the stacks' weights: the graph's width in nanoseconds.
    pub fn width_ns(&self) -> u64 {
        self.stacks.iter().map(|s| s.weight_ns).sum()
    }

    /// The folded stacks, one line each: `frame;frame;frame weight`, `\n`-terminated.
    pub fn folded(&self) -> String {
        let mut out = String::new();
        for stack in &self.stacks {
            for (k, &f) in stack.frames.iter().enumerate() {
                if k > 0 {
                    out.push(';');
                }
                out.push_str(&self.frames[f].name);
            }
            out.push(' ');
            out.push_str(&stack.weight_ns.to_string());
            out.push('\n');
        }
        out
    }

    /// The interactive SVG (inferno's flame graph, with its own script), frames coloured by
    /// verdict in a differential graph. Fails only if inferno does.
    pub fn svg(&self) -> std::io::Result<String> {
        svg::render(self)
    }
}

/// The flame graph of `profiles` (the mean of their stacks; usually one profile).
pub fn flame(profiles: &[Profile], options: &FlameOptions) -> Result<Flame, FlameError> {
    if profiles.is_empty() {
        return Err(FlameError::NoProfile);
    }
    let mut runs = Vec::with_capacity(profiles.len());
    for (index, profile) in profiles.iter().enumerate() {
        let run = stacks::of_profile(profile, options.filter.as_ref(), options.group)
            .ok_or(FlameError::NoIteration { index })?;
        runs.push(run);
    }
    let mut flame = stacks::mean(runs);
    if flame.stacks.is_empty() {
        // Only a filter can leave nothing: without one, `other` holds the mean iteration.
        return Err(FlameError::NothingMatches {
            filter: options
                .filter
                .as_ref()
                .map_or_else(String::new, |f| f.source().to_owned()),
        });
    }
    flame.icicle = options.icicle;
    flame.title = title(profiles, options, flame.iteration_ns, flame.width_ns());
    if let Some(baseline) = options.baseline {
        let compared = diff::diff_runs(baseline, profiles, &options.diff);
        let by_key: HashMap<(String, u32), &EventDiff> = compared
            .events
            .iter()
            .map(|d| ((d.identity.id.clone(), d.identity.occurrence), d))
            .collect();
        for frame in &mut flame.frames {
            if let FrameKey::Event(id, occurrence) = &frame.key {
                frame.diff = by_key.get(&(id.clone(), *occurrence)).map(|d| (*d).clone());
            }
        }
        let count = |v: Verdict| compared.events.iter().filter(|d| d.verdict == v).count();
        flame.subtitle = Some(format!(
            "prof diff vs {}: red regressed {}, blue improved {}, pale inconclusive {}, grey \
             no change; iteration {} {}",
            describe_runs(baseline),
            count(Verdict::Regressed),
            count(Verdict::Improved),
            count(Verdict::Inconclusive),
            compared.iteration.verdict.as_str(),
            svg::times(compared.iteration.ratio),
        ));
    }
    Ok(flame)
}

/// `program (mode)` of the first profile, and how many runs when several.
fn describe_runs(profiles: &[Profile]) -> String {
    let first = &profiles[0];
    let mut text = format!("{} ({})", first.run.program, first.run.mode);
    if profiles.len() > 1 {
        text.push_str(&format!(", {} runs", profiles.len()));
    }
    text
}

/// The graph's title: what it is of, the mean iteration, and with a filter how much it covers.
fn title(profiles: &[Profile], options: &FlameOptions, iteration_ns: f64, width: u64) -> String {
    let what = if options.baseline.is_some() {
        "Differential flame graph"
    } else if options.icicle {
        "Icicle graph"
    } else {
        "Flame graph"
    };
    let mut text = format!(
        "{what}: {}, mean iteration {}",
        describe_runs(profiles),
        crate::text::human_ns(iteration_ns)
    );
    if let Some(filter) = &options.filter {
        text.push_str(&format!(
            "; --filter {}: {} ({:.1}%)",
            filter.source(),
            crate::text::human_ns(width as f64),
            100.0 * width as f64 / iteration_ns.max(f64::MIN_POSITIVE)
        ));
    }
    text
}
