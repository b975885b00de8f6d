//! The rules on the work each event does: rates far below the machine's peak, allocation
//! churn, many input shapes. One finding per event.

use super::{figures, Evidence, Finding, Input, Rule};
use super::{CHURN_ALLOCS, CHURN_NS_PER_ALLOC, CHURN_NS_PER_PAGE, CHURN_SHARE};
use super::{FAR_BELOW_PEAK, MANY_SHAPES};
use crate::table_text::{human_bytes, human_ns, percent};
use crate::work::{human_rate, Bound};

/// A bandwidth in SI units (`3.63GB/s`), as `prof peak` and the report's `B/s` column give it.
fn bytes_per_s(rate: f64) -> String {
    format!("{}B/s", human_rate(rate))
}

pub(super) const MEMORY_BOUND: Rule = Rule {
    id: "memory-bound-below-bandwidth",
    title: "a memory-bound event far below the measured bandwidth",
    condition: "an event whose annotation counts its `bytes`, memory-bound on the roofline (or \
                counting no FLOPs), with a peak bandwidth known (`run.peak`, `prof report \
                --peak`): its median bytes/s under 50% of the peak's",
    remedy: "move fewer bytes or move them better: fuse it with its neighbours, keep data in \
             cache (smaller tiles), contiguous and aligned access, a lower precision",
};

pub(super) const COMPUTE_BOUND: Rule = Rule {
    id: "compute-below-peak",
    title: "a compute-bound event far below the measured FLOP/s",
    condition: "an event whose annotation counts its `flops`, compute-bound on the roofline (or \
                counting no bytes), with a peak FLOP/s known (`run.peak`): its MFU (median \
                FLOP/s over the peak's) under 50%",
    remedy: "use a tuned kernel (BLAS, cuBLAS, a fused attention), larger or better-shaped \
             matrices (multiples of the tile), all the cores (threads) or tensor cores (a \
             lower precision)",
};

pub(super) const ALLOC_CHURN: Rule = Rule {
    id: "alloc-churn",
    title: "an event allocates and frees on every call",
    condition: "with `profiler_core::Alloc` installed: a run makes at least 8 allocations \
                (median) and frees at least half of the bytes it allocates, and the allocator's \
                estimated cost (5µs an allocation, 0.5µs a 4KiB page allocated, at most the \
                event's self time) is at least 2% of the mean iteration",
    remedy: "reuse buffers across calls (allocate once, outside the loop; `Vec::clear` rather \
             than a new `Vec`), preallocate with `with_capacity`, or use an arena",
};

pub(super) const MANY_SHAPES_RULE: Rule = Rule {
    id: "many-shapes",
    title: "one event sees many input shapes",
    condition: "an event whose annotation has a `shape` key ran with at least 4 distinct input \
                shapes",
    remedy: "pad or bucket the inputs to a few shapes (kernels, autotuning and caches keyed by \
             shape are then reused), or sort the batches by length",
};

/// The peak's figure, when positive.
fn positive(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite() && *v > 0.0)
}

/// `memory-bound-below-bandwidth`.
pub(super) fn memory_bound(input: &Input) -> Vec<Finding> {
    let Some(peak) = positive(input.profile.run.peak.as_ref().and_then(|p| p.bytes)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, r) in input.rows.events.iter().enumerate() {
        let Some(w) = &r.work else { continue };
        let Some(rate) = w.bytes_per_s else { continue };
        let memory = match w.bound {
            Some(b) => b == Bound::Memory,
            None => w.flops_per_s.is_none(),
        };
        let fraction = rate.median / peak;
        if !memory || fraction >= FAR_BELOW_PEAK {
            continue;
        }
        let site = input.site(i);
        out.push(Finding::new(
            &MEMORY_BOUND,
            format!(
                "{} moves {}, {} of the peak bandwidth",
                site.label,
                bytes_per_s(rate.median),
                percent(fraction)
            ),
            r.total_ns * (1.0 - fraction),
            Evidence {
                summary: format!(
                    "{} ({}): median {} (95% interval {} .. {}) against a peak of {}; at the \
                     peak its {} per iteration would take {}",
                    site.label,
                    site.location,
                    bytes_per_s(rate.median),
                    bytes_per_s(rate.low),
                    bytes_per_s(rate.high),
                    bytes_per_s(peak),
                    human_ns(r.total_ns),
                    human_ns(r.total_ns * fraction)
                ),
                events: vec![site],
                figures: figures([
                    ("bytes_per_s", rate.median),
                    ("peak_bytes_per_s", peak),
                    ("fraction_of_peak", fraction),
                    ("total_ns", r.total_ns),
                    ("intensity", w.intensity.unwrap_or(f64::NAN)),
                ]),
            },
        ));
    }
    out
}

/// `compute-below-peak`.
pub(super) fn compute_bound(input: &Input) -> Vec<Finding> {
    let Some(peak) = positive(input.profile.run.peak.as_ref().and_then(|p| p.flops)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, r) in input.rows.events.iter().enumerate() {
        let Some(w) = &r.work else { continue };
        let (Some(rate), Some(mfu)) = (w.flops_per_s, w.mfu) else {
            continue;
        };
        let compute = match w.bound {
            Some(b) => b == Bound::Compute,
            None => w.bytes_per_s.is_none(),
        };
        if !compute || mfu >= FAR_BELOW_PEAK {
            continue;
        }
        let site = input.site(i);
        out.push(Finding::new(
            &COMPUTE_BOUND,
            format!("{} runs at {} MFU", site.label, percent(mfu)),
            r.total_ns * (1.0 - mfu),
            Evidence {
                summary: format!(
                    "{} ({}): median {:.3e} FLOP/s (95% interval {:.3e} .. {:.3e}) against a \
                     peak of {:.3e}{}; at the peak its {} per iteration would take {}",
                    site.label,
                    site.location,
                    rate.median,
                    rate.low,
                    rate.high,
                    peak,
                    match (w.bound, w.intensity) {
                        (Some(_), Some(i)) => format!(", compute-bound ({i:.1} FLOP/byte)"),
                        _ => String::new(),
                    },
                    human_ns(r.total_ns),
                    human_ns(r.total_ns * mfu)
                ),
                events: vec![site],
                figures: figures([
                    ("flops_per_s", rate.median),
                    ("peak_flops_per_s", peak),
                    ("mfu", mfu),
                    ("total_ns", r.total_ns),
                    ("intensity", w.intensity.unwrap_or(f64::NAN)),
                ]),
            },
        ));
    }
    out
}

/// `alloc-churn`.
pub(super) fn alloc_churn(input: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, r) in input.rows.events.iter().enumerate() {
        let Some(m) = &r.memory else { continue };
        if m.allocs < CHURN_ALLOCS || m.freed_bytes * 2.0 < m.alloc_bytes {
            continue;
        }
        // Not measured: a generous cost per allocation and per page it brings in, per
        // iteration, and never more than the event's own time.
        let pages = (m.alloc_bytes / 4096.0).ceil();
        let estimate = ((m.allocs * CHURN_NS_PER_ALLOC + pages * CHURN_NS_PER_PAGE)
            * r.calls_per_iter)
            .min(r.self_ns);
        if estimate < CHURN_SHARE * input.iteration_ns() {
            continue;
        }
        let site = input.site(i);
        out.push(Finding::new(
            &ALLOC_CHURN,
            format!("{} makes {:.0} allocations a call", site.label, m.allocs),
            estimate,
            Evidence {
                summary: format!(
                    "{} ({}): a run (median) makes {:.0} allocations of {} in all and frees {}, \
                     {:.1} calls per iteration; the allocator's cost, not measured, estimated \
                     generously (5µs an allocation, 0.5µs a 4KiB page): {} per iteration, of \
                     the event's self time of {}",
                    site.label,
                    site.location,
                    m.allocs,
                    human_bytes(m.alloc_bytes),
                    human_bytes(m.freed_bytes),
                    r.calls_per_iter,
                    human_ns(estimate),
                    human_ns(r.self_ns)
                ),
                events: vec![site],
                figures: figures([
                    ("allocs", m.allocs),
                    ("alloc_bytes", m.alloc_bytes),
                    ("freed_bytes", m.freed_bytes),
                    ("calls_per_iter", r.calls_per_iter),
                    ("self_ns", r.self_ns),
                    ("estimated_ns", estimate),
                ]),
            },
        ));
    }
    out
}

/// `many-shapes`.
pub(super) fn many_shapes(input: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, e) in input.profile.events.iter().enumerate() {
        let Some(shapes) = &e.shapes else { continue };
        let distinct = shapes.values.len() as u64 + shapes.others;
        if distinct < MANY_SHAPES {
            continue;
        }
        let r = &input.rows.events[i];
        let fastest = r
            .shapes
            .iter()
            .map(|s| s.median_ns)
            .fold(f64::INFINITY, f64::min);
        // Every run as fast as the fastest shape's median: the most one shape could save.
        let at_stake = if fastest.is_finite() {
            (r.total_ns - fastest * r.calls_per_iter).max(0.0)
        } else {
            0.0
        };
        let site = input.site(i);
        let listed: Vec<String> = r
            .shapes
            .iter()
            .take(4)
            .map(|s| {
                format!(
                    "{} ({} runs, median {})",
                    s.shape,
                    s.samples,
                    human_ns(s.median_ns)
                )
            })
            .collect();
        out.push(Finding::new(
            &MANY_SHAPES_RULE,
            format!("{} ran with {distinct} input shapes", site.label),
            at_stake,
            Evidence {
                summary: format!(
                    "{} ({}): {distinct} distinct shapes: {}; the fastest shape's median is {}, \
                     the event's mean {}",
                    site.label,
                    site.location,
                    listed.join(", "),
                    human_ns(fastest),
                    human_ns(r.mean_ns)
                ),
                events: vec![site],
                figures: figures([
                    ("shapes", distinct as f64),
                    ("fastest_shape_median_ns", fastest),
                    ("mean_ns", r.mean_ns),
                    ("total_ns", r.total_ns),
                ]),
            },
        ));
    }
    out
}
