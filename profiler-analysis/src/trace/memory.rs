//! Memory counters: for a profile whose events carry memory figures (`profiler_core::Alloc`),
//! one counter track, `memory`, in the CPU process, that Perfetto draws as a graph under the
//! events. While a top-level event's slice runs, its series hold what that run allocated:
//! `alloc_bytes` (bytes allocated), `peak_bytes` (the peak of live bytes above the start) and
//! `net_bytes` (allocated less freed); between slices they are 0. In `trace` mode each slice is
//! one real run's; in `sample` mode, the event's medians. Counter events are Chrome's `"ph":
//! "C"`, which Kineto writes for its own counters and HolisticTraceAnalysis reads as counters
//! (not as events of an iteration).

use serde::Serialize;

use super::layout::{Drawing, What};
use super::Counter;
use profiler_format::Event;
use profiler_tables::rows::MemoryRow;

/// The counter track's name.
pub const COUNTER: &str = "memory";

/// The counter's series, in sorted order.
#[derive(Serialize)]
pub(super) struct Figures {
    alloc_bytes: f64,
    net_bytes: f64,
    peak_bytes: f64,
}

impl Figures {
    /// The series with their names, as the JSON trace's `args` sorts them.
    pub(super) fn series(&self) -> [(&'static str, f64); 3] {
        [
            ("alloc_bytes", self.alloc_bytes),
            ("net_bytes", self.net_bytes),
            ("peak_bytes", self.peak_bytes),
        ]
    }
}

/// The counter events of the top-level CPU slices of the stepping thread (`main`), in time order (at one time, a slice's end
/// before the next one's start: a slice that ends where another begins leaves the other's
/// figures), in process `pid`, each with whether it is a slice's start (else its end); none
/// when no event has memory figures.
pub(super) fn counters<'a>(
    events: &'a [Event],
    drawing: &'a Drawing,
    pid: u32,
) -> impl Iterator<Item = (bool, Counter<Figures>)> + 'a {
    let mut top: Vec<(u32, u32)> = Vec::new();
    if events.iter().any(|e| e.memory.is_some()) {
        top = (drawing.slices.iter().enumerate())
            // The stepping thread's lane only: a concurrent event's figures are another
            // thread's, and its end would zero the counter while a main-lane slice still runs.
            .filter(|(_, s)| s.track == 0 && s.lane == 0 && s.depth == 1)
            .map(|(pos, s)| (s.made, pos as u32))
            .collect();
        top.sort_unstable();
    }
    let mut readings: Vec<(bool, Counter<Figures>)> = top
        .into_iter()
        .flat_map(move |(_, pos)| {
            let s = &drawing.slices[pos as usize];
            let figures = match drawing.what(s) {
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
            figures.into_iter().flat_map(move |[alloc, peak, net]| {
                [
                    (true, counter(pid, s.start, alloc, peak, net)),
                    (false, counter(pid, s.end, 0.0, 0.0, 0.0)),
                ]
            })
        })
        .collect();
    readings.sort_by_key(|(starts, c)| (c.at_ns, *starts));
    readings.into_iter()
}

fn counter(pid: u32, at_ns: u64, alloc: f64, peak: f64, net: f64) -> Counter<Figures> {
    let figures = Figures {
        alloc_bytes: alloc,
        net_bytes: net,
        peak_bytes: peak,
    };
    Counter::new(COUNTER, pid, at_ns, figures)
}
