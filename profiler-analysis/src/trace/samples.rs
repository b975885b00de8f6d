//! The CPU samples of a `trace`-mode profile (`cpu_samples.timeline`) on the trace: one track
//! per sampled thread in the program's process, named `CPU samples: NAME (tid N)`, holding one
//! instant event per sample at the time it was taken. Perfetto's JSON importer reads neither
//! Chrome's `samples` nor `stackFrames`, so both formats draw instants: the JSON trace as
//! `"ph": "i"` events with thread scope, the Perfetto trace as `TYPE_INSTANT` track events on
//! the thread's track. An instant is named after the sampled function and carries `event` (the
//! label of the innermost annotated event open on the thread, `(no event)` for none),
//! `event_id` (that event's probe id, when there is one), `stack` (the sampled function first,
//! then its callers, ` <- ` between), `thread` (the operating system's thread id) and
//! `thread_name`. A sample lies inside a slice of its event when that event was drawn in the
//! sample's iteration: the sample was placed on the events' time line when it was taken.
//!
//! Only samples of the iterations drawn as steps are drawn (so a cut trace keeps those of its
//! iterations), at the times `layout.rs` (and `stepwise.rs`) give the events' slices: time 0
//! is the first drawn step's start. The instants come after every slice in both formats (the
//! Perfetto trace: on a packet sequence of their own), so drawing them holds them all: at most
//! `SampleTimeline::BOUND`, 40 bytes each.

use serde::Serialize;
use serde_json::{json, Value};

use profiler_format::{CpuSamples, Profile};

use super::layout::{measured_iterations, Timeline};
use super::meta::Thread;

/// `cat` of the samples' instant events.
pub const SAMPLE_CATEGORY: &str = "cpu_sample";

/// [`Thread::track`] of a samples' track: not a track of the drawing.
pub(super) const SAMPLES_TRACK: u32 = u32::MAX;

/// The samples drawn: their tracks and instants.
#[derive(Default)]
pub(super) struct Drawn {
    /// The tracks, one per sampled thread with a sample drawn.
    pub(super) threads: Vec<Thread>,
    /// The instants, in time order.
    pub(super) points: Vec<Point>,
}

/// One sample drawn.
pub(super) struct Point {
    /// Its time on the trace (ns).
    pub(super) at: u64,
    /// The `tid` of its track.
    pub(super) tid: u32,
    /// Index into `cpu_samples.stacks`.
    pub(super) stack: u32,
}

impl Drawn {
    /// The samples of `profile` (a `trace`-mode profile) on tracks of the process `pid` whose
    /// `tid`s differ from `taken` (those of the lanes).
    pub(super) fn of(profile: &Profile, pid: u32, taken: &[u32]) -> Drawn {
        let Some(samples) = &profile.cpu_samples else {
            return Drawn::default();
        };
        let Some(timeline) = &samples.timeline else {
            return Drawn::default();
        };
        if profile.run.mode != "trace" {
            return Drawn::default();
        }
        let times = Timeline::of(&profile.iterations);
        let steps = measured_iterations(profile);
        // As `layout.rs` places time 0: the first step's start.
        let Some(time_zero) = steps.first().map(|&k| times.start(k)) else {
            return Drawn::default();
        };
        let drawn_iteration = |k: u64| steps.binary_search(&k).is_ok();
        // The trace's tid of each sampled thread: its own, unless a lane has it.
        let tids: Vec<u32> = samples
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if taken.contains(&t.tid) {
                    u32::MAX - i as u32
                } else {
                    t.tid
                }
            })
            .collect();
        let mut used = vec![false; tids.len()];
        let mut points = Vec::new();
        for i in 0..timeline.len() {
            let (thread, k) = (timeline.threads[i] as usize, u64::from(timeline.iters[i]));
            let stack = timeline.stacks[i];
            if thread >= tids.len() || stack as usize >= samples.stacks.len() || !drawn_iteration(k)
            {
                continue;
            }
            let at = times.start(k).saturating_add(timeline.offsets_ns[i]);
            let Some(at) = at.checked_sub(time_zero) else {
                continue;
            };
            used[thread] = true;
            points.push(Point {
                at,
                tid: tids[thread],
                stack,
            });
        }
        points.sort_by_key(|p| p.at);
        let threads = samples
            .threads
            .iter()
            .enumerate()
            .filter(|&(i, _)| used[i])
            .map(|(i, t)| Thread {
                pid,
                tid: tids[i],
                name: match &t.name {
                    Some(name) => format!("CPU samples: {name} (tid {})", t.tid),
                    None => format!("CPU samples: tid {}", t.tid),
                },
                sort_index: 1_000_000 + i as u64,
                track: SAMPLES_TRACK,
                lane: i as u32,
            })
            .collect();
        Drawn { threads, points }
    }
}

/// The name and args of the instant of a sample of `stack` (see the module documentation).
pub(super) fn parts(samples: &CpuSamples, stack: u32) -> (String, Value) {
    let s = &samples.stacks[stack as usize];
    let names: Vec<String> = s
        .frames
        .iter()
        .map(|&f| crate::cpu::function_name(samples, f))
        .collect();
    let name = names
        .first()
        .cloned()
        .unwrap_or_else(|| "(no frame)".to_owned());
    let thread = samples.threads.get(s.thread as usize);
    let mut args = json!({
        "event": event_label(s),
        "stack": names.join(" <- "),
        "thread": thread.map_or(0, |t| t.tid),
    });
    if let Some(id) = &s.event {
        args["event_id"] = json!(id);
    }
    if let Some(name) = thread.and_then(|t| t.name.as_deref()) {
        args["thread_name"] = json!(name);
    }
    (name, args)
}

/// The label of the event a stack was taken in, as `prof report` names events
/// (`layer/phase name`), or `(no event)`.
fn event_label(s: &profiler_format::SampledStack) -> String {
    let Some(name) = &s.name else {
        return if s.event.is_some() {
            "?".to_owned()
        } else {
            "(no event)".to_owned()
        };
    };
    let group: Vec<&str> = [s.layer.as_deref(), s.phase.as_deref()]
        .into_iter()
        .flatten()
        .filter(|g| !g.is_empty())
        .collect();
    if group.is_empty() {
        name.clone()
    } else {
        format!("{} {name}", group.join("/"))
    }
}

/// A sample's instant event in the JSON trace (`"ph": "i"`, thread scope); fields in sorted
/// order (see `emit.rs`).
#[derive(Serialize)]
pub(super) struct Instant {
    pub(super) args: Value,
    pub(super) cat: &'static str,
    pub(super) name: String,
    pub(super) ph: &'static str,
    pub(super) pid: u32,
    pub(super) s: &'static str,
    pub(super) tid: u32,
    #[serde(serialize_with = "super::micros_of")]
    pub(super) ts: u64,
}
