//! Memory counters: for a profile whose events carry memory figures (`profiler_core::Alloc`),
//! one counter track, `memory`, in the CPU process, that Perfetto draws as a graph under the
//! events. While a top-level event's slice runs, its series hold what that run allocated:
//! `alloc_bytes` (bytes allocated), `peak_bytes` (the peak of live bytes above the start) and
//! `net_bytes` (allocated less freed); between slices they are 0. In `trace` mode each slice is
//! one real run's; in `sample` mode, the event's medians. Counter events are Chrome's `"ph":
//! "C"`, which Kineto writes for its own counters and HolisticTraceAnalysis reads as counters
//! (not as events of an iteration).

use serde_json::{json, Value};

use super::{micros, Slice, Track, What};
use profiler_format::measure::MemoryRow;
use profiler_format::Event;

/// The counter track's name.
pub const COUNTER: &str = "memory";

/// The counter events for the (time-shifted) `slices` of `events`, in process `pid`.
pub(super) fn counters(events: &[Event], slices: &[Slice], pid: u32) -> Vec<Value> {
    let mut out = Vec::new();
    for s in slices {
        if s.track != Track::Cpu || s.depth != 1 {
            continue;
        }
        let figures = match s.what {
            What::Sample { event, sample } => events[event].memory.as_ref().and_then(|m| {
                Some([
                    *m.alloc_bytes.get(sample)? as f64,
                    *m.peak_bytes.get(sample)? as f64,
                    *m.alloc_bytes.get(sample)? as f64 - *m.freed_bytes.get(sample)? as f64,
                ])
            }),
            What::Average { event, .. } => events[event]
                .memory
                .as_ref()
                .filter(|m| !m.is_empty())
                .map(|m| {
                    let r = MemoryRow::of(m);
                    [r.alloc_bytes, r.peak_bytes, r.alloc_bytes - r.freed_bytes]
                }),
            What::Step { .. } => None,
        };
        let Some([alloc, peak, net]) = figures else {
            continue;
        };
        out.push(counter(pid, s.start, alloc, peak, net));
        out.push(counter(pid, s.end, 0.0, 0.0, 0.0));
    }
    out
}

fn counter(pid: u32, at_ns: u64, alloc: f64, peak: f64, net: f64) -> Value {
    json!({
        "ph": "C",
        "name": COUNTER,
        "pid": pid,
        "tid": 0,
        "ts": micros(at_ns),
        "args": { "alloc_bytes": alloc, "peak_bytes": peak, "net_bytes": net },
    })
}
