//! `other`: in each drawn step, the stretches no top-level CPU event covers (the step-time
//! breakdown's `other`), as slices named `other` on the `main` track, inside the step between
//! the events (where nothing else is drawn), with `args.what` saying what they are. Perfetto
//! draws them under the step beside the events, and HolisticTraceAnalysis counts them among the
//! step's CPU events; a reader sees at a glance where the iteration's time goes unmeasured, and
//! where to put the next probe. In `trace` mode they are each real iteration's; in `sample`
//! mode, the average iteration's as drawn. Stretches shorter than a microsecond, or than 0.5%
//! of their step, are left out (the clock's jitter, not work).

use serde_json::{json, Value};

use super::{ts_dur, Slice, Track, What, CPU_CATEGORY};

/// What `args.what` says of an `other` slice.
pub const WHAT: &str = "time of the step no top-level event covers";

/// The `other` slices, on thread `tid` (the main track) of process `pid`, for the
/// (time-shifted) `slices` of the drawing.
pub(super) fn other_slices(slices: &[Slice], pid: u32, tid: u32) -> Vec<Value> {
    let mut out = Vec::new();
    for (s, step) in slices.iter().enumerate() {
        let What::Step { iteration, .. } = step.what else {
            continue;
        };
        let mut covered: Vec<(u64, u64)> = slices
            .iter()
            .filter(|c| c.track == Track::Cpu && c.parent == Some(s))
            .map(|c| (c.start.max(step.start), c.end.min(step.end)))
            .filter(|(a, b)| a < b)
            .collect();
        covered.sort_unstable();
        let len = step.end.saturating_sub(step.start);
        let floor = (len / 200).max(1_000);
        let mut cursor = step.start;
        for (a, b) in covered
            .into_iter()
            .chain(std::iter::once((step.end, step.end)))
        {
            if a > cursor && a - cursor >= floor {
                let (ts, dur) = ts_dur(cursor, a);
                out.push(json!({
                    "ph": "X",
                    "cat": CPU_CATEGORY,
                    "name": "other",
                    "pid": pid,
                    "tid": tid,
                    "ts": ts,
                    "dur": dur,
                    "args": {
                        "iteration": iteration,
                        "dur_ns": a - cursor,
                        "offset_ns": cursor - step.start,
                        "what": WHAT
                    },
                }));
            }
            cursor = cursor.max(b);
        }
    }
    out
}
