//! Device memory counters: for a profile with the devices' memory in use at each step
//! (`iterations.device_memory`), one counter track per device, `device memory`, in that GPU's
//! process (`pid` = device, where Kineto puts a GPU's work), with one series, `used_bytes`. In
//! `trace` mode it steps at the end of each `ProfilerStep#k` to the bytes in use at the
//! `step()` that ended iteration `k` (and starts, at the first step drawn, from the reading
//! before it); in `sample` and `continuous` mode it holds, over the average iteration, the
//! median of the measured iterations' readings.
//!
//! Counter events are Chrome's `"ph": "C"`, as for the host memory track: Perfetto draws them as
//! a graph, and HolisticTraceAnalysis, whose parser keeps complete events, loads the trace with
//! the same iterations and events. Kineto's own `[memory]` events are instant records of single
//! allocations by PyTorch's caching allocator (address, bytes, running totals); a device-wide
//! reading at each step is not one, so none is written in that form.

use std::collections::BTreeSet;

use serde::Serialize;

use super::layout::Drawing;
use super::Counter;
use profiler_format::Profile;

/// The counter track's name (in each GPU's process).
pub const COUNTER: &str = "device memory";

/// The counter's one series.
#[derive(Serialize)]
pub(super) struct Used {
    used_bytes: u64,
}

impl Used {
    /// The one series' name.
    pub(super) const SERIES: &'static str = "used_bytes";

    /// The bytes in use.
    pub(super) fn bytes(&self) -> u64 {
        self.used_bytes
    }
}

/// The counter events of the devices' memory over the `drawing`'s steps; only devices drawn as
/// a GPU process (`gpus`) get one.
pub(super) fn counters(
    profile: &Profile,
    drawing: &Drawing,
    gpus: &BTreeSet<u32>,
) -> Vec<Counter<Used>> {
    let iterations = &profile.iterations;
    let steps: Vec<(u64, u64, u64)> = drawing
        .steps
        .iter()
        .zip(&drawing.step_at)
        .map(|(step, &at)| {
            let s = &drawing.slices[at as usize];
            (step.iteration, s.start, s.end)
        })
        .collect();
    let mut out = Vec::new();
    for usage in &iterations.device_memory {
        if !gpus.contains(&usage.device) {
            continue;
        }
        let reading = |k: u64| -> Option<u64> {
            let i = usize::try_from(k.checked_sub(iterations.first)?).ok()?;
            *usage.used_bytes.get(i)?
        };
        if profile.run.mode == "trace" {
            for (n, &(k, start, end)) in steps.iter().enumerate() {
                if n == 0 {
                    if let Some(before) = k.checked_sub(1).and_then(reading) {
                        out.push(counter(usage.device, start, before));
                    }
                }
                if let Some(bytes) = reading(k) {
                    out.push(counter(usage.device, end, bytes));
                }
            }
        } else {
            let measured = profiler_tables::rows::measured_walls(profile).len();
            let listed = usage.used_bytes.len();
            let readings: Vec<f64> = usage.used_bytes[listed.saturating_sub(measured)..]
                .iter()
                .flatten()
                .map(|&b| b as f64)
                .collect();
            if readings.is_empty() {
                continue;
            }
            let median = crate::stats::median(&readings).round() as u64;
            for &(_, start, end) in &steps {
                out.push(counter(usage.device, start, median));
                out.push(counter(usage.device, end, median));
            }
        }
    }
    out
}

fn counter(device: u32, at_ns: u64, bytes: u64) -> Counter<Used> {
    Counter::new(COUNTER, device, at_ns, Used { used_bytes: bytes })
}
