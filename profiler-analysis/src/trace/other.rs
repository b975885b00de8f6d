//! `other`: in each drawn step, the stretches no top-level CPU event covers (the step-time
//! breakdown's `other`), as slices named `other` on the `main` track, inside the step between
//! the events (where nothing else is drawn), with `args.what` saying what they are. Perfetto
//! draws them under the step beside the events, and HolisticTraceAnalysis counts them among the
//! step's CPU events; a reader sees at a glance where the iteration's time goes unmeasured, and
//! where to put the next probe. In `trace` mode they are each real iteration's; in `sample`
//! mode, the average iteration's as drawn, which places the stepping thread's top-level events
//! where the step-time breakdown does: its `other` slices are the breakdown's gaps (`prof
//! report`'s "not covered by any probe"), which only the stepping thread's events cover (an
//! event of another thread, `concurrent`, is drawn beside them and leaves its stretch
//! uncovered). Stretches shorter than a microsecond, or than 0.5% of their step, are left out
//! (the clock's jitter, not work).

use super::layout::{Drawing, Slice, NONE};

/// The name of an `other` slice.
pub(super) const NAME: &str = "other";

/// What `args.what` says of an `other` slice.
pub const WHAT: &str = "time of the step no top-level event covers";

/// One stretch of a step that no top-level event covers, in nanoseconds from time 0.
pub(super) struct Gap {
    /// The step's iteration.
    pub(super) iteration: u64,
    /// Where the step starts.
    pub(super) step_start: u64,
    pub(super) from: u64,
    pub(super) to: u64,
}

/// The gaps of every step, step by step in the order the steps were made (by iteration), each
/// step's in time order.
pub(super) fn gaps(drawing: &Drawing) -> impl Iterator<Item = Gap> + '_ {
    let children = children_of_steps(drawing);
    (0..drawing.steps.len()).flat_map(move |t| {
        let kids = &children.1[children.0[t] as usize..children.0[t + 1] as usize];
        step_gaps(
            drawing,
            t,
            kids.iter().map(|&c| &drawing.slices[c as usize]),
        )
    })
}

/// The top-level CPU slices of each step (those whose parent is the step), grouped by step:
/// `(starts, positions)`, step `t`'s being `positions[starts[t]..starts[t + 1]]`.
fn children_of_steps(drawing: &Drawing) -> (Vec<u32>, Vec<u32>) {
    let slices = &drawing.slices;
    let steps = drawing.steps.len();
    // The average iteration's: the stepping thread's events only, as the breakdown's gaps.
    let beside = |s: &Slice| {
        drawing.is_average() && (drawing.event_concurrent.get(s.event as usize)).is_some_and(|&c| c)
    };
    let step_of = |s: &Slice| {
        (s.track == 0 && s.parent != NONE && !beside(s))
            .then(|| slices[s.parent as usize].made as usize)
            .filter(|&t| t < steps)
    };
    let mut starts = vec![0u32; steps + 1];
    for s in slices {
        if let Some(t) = step_of(s) {
            starts[t + 1] += 1;
        }
    }
    for t in 0..steps {
        starts[t + 1] += starts[t];
    }
    let mut next = starts.clone();
    let mut positions = vec![0u32; starts[steps] as usize];
    for (pos, s) in slices.iter().enumerate() {
        if let Some(t) = step_of(s) {
            positions[next[t] as usize] = pos as u32;
            next[t] += 1;
        }
    }
    (starts, positions)
}

/// The gaps of step `t` between its top-level `children`.
fn step_gaps<'a>(
    drawing: &Drawing,
    t: usize,
    children: impl Iterator<Item = &'a Slice>,
) -> Vec<Gap> {
    let step = &drawing.slices[drawing.step_at[t] as usize];
    let iteration = drawing.steps[t].iteration;
    let spans = children.map(|c| (c.start, c.end));
    gaps_between(iteration, (step.start, step.end), spans)
}

/// The gaps of the step of `iteration` spanning `step` between its top-level `children`'s
/// spans.
/// Why not the breakdown's (`profiler_tables::breakdown`): these draw every one above a floor in each
/// drawn step; those name the few largest of the average iteration with their neighbours and noise.
pub(super) fn gaps_between(
    iteration: u64,
    step: (u64, u64),
    children: impl Iterator<Item = (u64, u64)>,
) -> Vec<Gap> {
    let (start, end) = step;
    let mut covered: Vec<(u64, u64)> = children
        .map(|(a, b)| (a.max(start), b.min(end)))
        .filter(|(a, b)| a < b)
        .collect();
    covered.sort_unstable();
    let len = end.saturating_sub(start);
    let floor = (len / 200).max(1_000);
    let mut cursor = start;
    let mut out = Vec::new();
    for (a, b) in covered.into_iter().chain(std::iter::once((end, end))) {
        if a > cursor && a - cursor >= floor {
            out.push(Gap {
                iteration,
                step_start: start,
                from: cursor,
                to: a,
            });
        }
        cursor = cursor.max(b);
    }
    out
}
