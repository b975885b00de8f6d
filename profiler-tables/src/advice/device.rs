//! The rules on GPU events (timed on a device stream, or with their kernels attributed):
//! synchronisation stalls, idle devices, launch-bound stretches, host-device copies each
//! iteration.

use std::collections::BTreeMap;

use super::{figures, names, Evidence, Finding, Input, Rule};
use super::{DEVICE_BUSY_SHARE, H2D_SHARE, LAUNCH_BUSY_FRACTION};
use super::{SYNC_CPU_FRACTION, SYNC_MIN_DEVICE_NS};
use crate::table_text::{human_ns, percent};

pub(super) const SYNC_STALL: Rule = Rule {
    id: "sync-stall",
    title: "the CPU waits for the device inside a call",
    condition: "an event timed on a stream whose CPU time (entry to return, median) is at least \
                90% of its device time, the device time being 50µs or more: the call returns \
                only when the device is done (a synchronisation, a copy to the host, `.item()`)",
    remedy: "take the synchronisation out of the loop (read results a step later, record an \
             event and wait only where the value is needed), use asynchronous copies, so that \
             the CPU queues the next work while the device runs",
};

pub(super) const DEVICE_IDLE: Rule = Rule {
    id: "device-idle",
    title: "the device is idle for much of the iteration",
    condition: "a device's top-level events timed on its streams add up to less than 50% of \
                the mean iteration",
    remedy: "give the device more to do at once (larger batches, several streams), overlap the \
             host's work (input, launches) with the device's, and move host work to the device",
};

pub(super) const LAUNCH_BOUND: Rule = Rule {
    id: "launch-bound",
    title: "the device idles between kernel launches",
    condition: "with the kernels attributed (`PROF_KERNELS=1`): an event's kernels add up \
                (median) to less than 50% of the stretch from its first kernel's start to its \
                last one's end",
    remedy: "launch fewer, larger kernels: fuse them (a compiler, a fused op), capture the \
             sequence in a CUDA graph, or batch more work per launch",
};

pub(super) const H2D: Rule = Rule {
    id: "h2d-every-iteration",
    title: "host-device copies every iteration",
    condition: "events with `phase = \"h2d\"` (nesting counted once) take at least 2% of the \
                mean iteration",
    remedy: "keep what does not change on the device (weights, tables, constants), copy from \
             pinned memory asynchronously on a stream of its own, overlapped with compute, or \
             prefetch the next batch",
};

/// `sync-stall`: one finding per event.
pub(super) fn sync_stall(input: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, e) in input.profile.events.iter().enumerate() {
        if e.stream.is_none() {
            continue;
        }
        let Some(cpu) = e.gpu.as_ref().and_then(|g| g.cpu_stats) else {
            continue;
        };
        let (device, host) = (e.stats.median_ns as f64, cpu.median_ns as f64);
        if device < SYNC_MIN_DEVICE_NS || host < SYNC_CPU_FRACTION * device {
            continue;
        }
        let r = &input.rows.events[i];
        let site = input.site(i);
        let at_stake = host * r.calls_per_iter;
        out.push(Finding::new(
            &SYNC_STALL,
            format!(
                "{} blocks the CPU for {} of its {} on the device",
                site.label,
                human_ns(host),
                human_ns(device)
            ),
            at_stake,
            Evidence {
                summary: format!(
                    "{} ({}) on stream {}: median {} on the CPU (entry to return) against {} \
                     on the device ({}), {:.1} calls per iteration",
                    site.label,
                    site.location,
                    e.stream.as_deref().unwrap_or("-"),
                    human_ns(host),
                    human_ns(device),
                    percent(host / device),
                    r.calls_per_iter
                ),
                events: vec![site],
                figures: figures([
                    ("cpu_median_ns", host),
                    ("device_median_ns", device),
                    ("calls_per_iter", r.calls_per_iter),
                ]),
            },
        ));
    }
    out
}

/// `device-idle`: one finding per device.
pub(super) fn device_idle(input: &Input) -> Vec<Finding> {
    let iteration = input.iteration_ns();
    if iteration.is_nan() || iteration <= 0.0 {
        return Vec::new();
    }
    let events = &input.profile.events;
    // Top-level on its stream: no ancestor timed on the same stream.
    let mut busy: BTreeMap<u32, (f64, Vec<usize>)> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        let Some(stream) = &e.stream else { continue };
        let nested = input
            .rows
            .ancestors
            .of(i)
            .any(|a| events[a].stream.as_ref() == Some(stream));
        if nested {
            continue;
        }
        let entry = busy.entry(e.device.unwrap_or(0)).or_default();
        entry.0 += input.rows.events[i].total_ns;
        entry.1.push(i);
    }
    let mut out = Vec::new();
    for (device, (total, members)) in busy {
        let share = total / iteration;
        if share >= DEVICE_BUSY_SHARE {
            continue;
        }
        let mut streams: Vec<&str> = members
            .iter()
            .filter_map(|&i| events[i].stream.as_deref())
            .collect();
        streams.sort_unstable();
        streams.dedup();
        let sites: Vec<_> = members.iter().map(|&i| input.site(i)).collect();
        out.push(Finding::new(
            &DEVICE_IDLE,
            format!(
                "device {device} is busy {} of the iteration",
                percent(share)
            ),
            iteration - total,
            Evidence {
                summary: format!(
                    "device {device}'s events on {} stream{} ({}) take {} per iteration, {} of \
                     the mean iteration ({}): {}",
                    streams.len(),
                    if streams.len() == 1 { "" } else { "s" },
                    streams.join(", "),
                    human_ns(total),
                    percent(share),
                    human_ns(iteration),
                    names(&sites)
                ),
                events: sites,
                figures: figures([
                    ("device", f64::from(device)),
                    ("busy_ns", total),
                    ("share", share),
                    ("iteration_ns", iteration),
                    ("streams", streams.len() as f64),
                ]),
            },
        ));
    }
    out
}

/// `launch-bound`: one finding per event.
pub(super) fn launch_bound(input: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, e) in input.profile.events.iter().enumerate() {
        let Some(k) = e.gpu.as_ref().and_then(|g| g.kernels.as_ref()) else {
            continue;
        };
        let (sum, span) = (
            k.sum_stats.median_ns as f64,
            k.projection_stats.median_ns as f64,
        );
        if span.is_nan() || span <= 0.0 || sum >= LAUNCH_BUSY_FRACTION * span {
            continue;
        }
        let r = &input.rows.events[i];
        let launches: u64 = k.list.iter().map(|k| k.count).sum();
        let per_run = launches as f64 / k.sum_ns.len().max(1) as f64;
        let mean_kernel = if launches > 0 {
            k.list.iter().map(|k| k.total_ns as f64).sum::<f64>() / launches as f64
        } else {
            f64::NAN
        };
        let site = input.site(i);
        out.push(Finding::new(
            &LAUNCH_BOUND,
            format!(
                "{}'s kernels keep the device busy {} of their span",
                site.label,
                percent(sum / span)
            ),
            (span - sum) * r.calls_per_iter,
            Evidence {
                summary: format!(
                    "{} ({}): {:.1} kernel launches a run, {} each on average; they add up to \
                     {} (median) within a span of {} from the first kernel's start to the last \
                     one's end",
                    site.label,
                    site.location,
                    per_run,
                    human_ns(mean_kernel),
                    human_ns(sum),
                    human_ns(span)
                ),
                events: vec![site],
                figures: figures([
                    ("kernel_sum_ns", sum),
                    ("kernel_span_ns", span),
                    ("launches_per_run", per_run),
                    ("mean_kernel_ns", mean_kernel),
                    ("calls_per_iter", r.calls_per_iter),
                ]),
            },
        ));
    }
    out
}

/// `h2d-every-iteration`.
pub(super) fn h2d(input: &Input) -> Option<Finding> {
    let iteration = input.iteration_ns();
    if iteration.is_nan() || iteration <= 0.0 {
        return None;
    }
    let events = &input.profile.events;
    let is_h2d = |i: usize| events[i].phase.as_deref() == Some("h2d");
    let mut members: Vec<usize> = (0..events.len())
        .filter(|&i| is_h2d(i) && !input.rows.ancestors.of(i).any(is_h2d))
        .collect();
    let total: f64 = members.iter().map(|&i| input.rows.events[i].total_ns).sum();
    let share = total / iteration;
    if members.is_empty() || share < H2D_SHARE {
        return None;
    }
    members.sort_by(|&a, &b| {
        input.rows.events[b]
            .total_ns
            .total_cmp(&input.rows.events[a].total_ns)
    });
    let sites: Vec<_> = members.iter().map(|&i| input.site(i)).collect();
    Some(Finding::new(
        &H2D,
        format!(
            "host-device copies take {} of every iteration",
            percent(share)
        ),
        total,
        Evidence {
            summary: format!(
                "{} h2d event{} take {} per iteration, {} of the mean iteration ({}): {}",
                members.len(),
                if members.len() == 1 { "" } else { "s" },
                human_ns(total),
                percent(share),
                human_ns(iteration),
                names(&sites)
            ),
            events: sites,
            figures: figures([
                ("h2d_ns", total),
                ("share", share),
                ("iteration_ns", iteration),
            ]),
        },
    ))
}
