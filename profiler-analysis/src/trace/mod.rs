//! `prof trace`: a profile as a Chrome Trace Event Format document that opens in
//! [Perfetto](https://ui.perfetto.dev) (or `chrome://tracing`) and that
//! [HolisticTraceAnalysis](https://github.com/facebookresearch/HolisticTraceAnalysis) (HTA) loads
//! like a PyTorch profiler (Kineto) trace ([`write_chrome_trace`]); or the same drawing as a
//! Perfetto protobuf trace ([`write_perfetto_trace`]), about a fourteenth of the size, for
//! profiles whose JSON trace is too large for Perfetto's UI (HTA reads only the JSON). Both formats are
//! made from one layout (`layout.rs`: the slices, their times, parents and lanes) and one list
//! of processes and tracks (`meta.rs`), and carry the same names and `args` (`emit.rs`), so
//! they show the same slices; `perfetto/mod.rs` says how the protobuf is written.
//!
//! The drawing (what is drawn, the processes and tracks, Kineto's conventions, loading it in
//! HTA) is defined in the repository's `docs/reference.md` ("Definitions of `prof trace`").
//!
//! # Large profiles
//!
//! [`write_chrome_trace`] streams the document to its writer: nothing is built per slice but
//! the 40 bytes of its place in the drawing (`layout.rs`), so a `trace`-mode profile of ten
//! million samples is drawn in about 650 MB, the profile included.
//! [`chrome_trace`] builds the same document as a `serde_json::Value`, which takes about a
//! kilobyte per slice: for tests and small profiles. [`write_perfetto_trace`] streams the same
//! drawing packet by packet: ten million samples make 340 MB (34 bytes a sample) instead of the
//! JSON's 4.8 GB.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use profiler_format::{quantiles, Event, Profile};
use profiler_tables::breakdown::Breakdown;

use layout::Drawing;

pub use cut::{keep_iterations, CutError, IterationRange};
pub use samples::SAMPLE_CATEGORY;

/// Prefix of the iteration spans, as PyTorch's profiler names them and HTA looks for them.
pub const STEP_PREFIX: &str = "ProfilerStep#";

/// `cat` of the steps and of the CPU events (Kineto's category for `record_function` ranges).
pub const CPU_CATEGORY: &str = "user_annotation";

/// `cat` of the events timed on a GPU (Kineto's category for ranges projected on a stream).
pub const GPU_CATEGORY: &str = "gpu_user_annotation";

/// Why a trace could not be made.
#[derive(Debug)]
pub enum TraceError {
    /// The drawing would have more spans than it can number (4,294,967,294): the count.
    TooLarge(usize),
    /// The writer failed.
    Io(std::io::Error),
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::TooLarge(n) => write!(
                f,
                "the trace would have {n} spans, more than the {} it can hold; trace a profile \
                 with fewer samples (a lower PROF_REPEAT or a narrower PROF_FILTER)",
                layout::NONE - 1
            ),
            TraceError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TraceError {}

impl From<std::io::Error> for TraceError {
    fn from(e: std::io::Error) -> Self {
        TraceError::Io(e)
    }
}

/// The profile as a Chrome Trace Event Format document (Kineto flavoured), as a
/// `serde_json::Value`: what [`write_chrome_trace`] writes. A value takes about a kilobyte per
/// span; write a large profile's trace with [`write_chrome_trace`], which holds none.
///
/// See the [module documentation](self) for what is drawn and where. Serialize it with
/// `serde_json::to_writer_pretty` for HTA to find the rank.
pub fn chrome_trace(profile: &Profile) -> Result<Value, TraceError> {
    let streams = Streams::of(&profile.events);
    let drawing = Drawing::of(profile, &streams)?;
    let doc = emit::Document::new(profile, &streams, &drawing);
    serde_json::to_value(&doc).map_err(|e| TraceError::Io(e.into()))
}

/// Writes the profile as a Chrome Trace Event Format document (Kineto flavoured) to `out`,
/// pretty-printed (HTA finds the rank with `"rank": N`, space included), one span at a time:
/// the bytes of `serde_json::to_writer_pretty(out, &chrome_trace(profile)?)`, without the
/// value. The text is handed to `out` in chunks of about a megabyte, on a thread of its own
/// (so that writing, or compressing, overlaps making the text); `out` is not flushed.
///
/// See the [module documentation](self) for what is drawn and where.
pub fn write_chrome_trace(
    profile: &Profile,
    out: impl std::io::Write + Send,
) -> Result<(), TraceError> {
    let streams = Streams::of(&profile.events);
    let drawing = Drawing::of(profile, &streams)?;
    let doc = emit::Document::new(profile, &streams, &drawing);
    stream::write(&doc, out).map_err(TraceError::Io)
}

/// Writes the profile as a Perfetto protobuf trace (what Perfetto records natively, a
/// `.pftrace`) to `out`: the slices, tracks and counters of [`write_chrome_trace`]'s document,
/// with the same names, times and `args`, packet by packet (see the `perfetto` module's
/// documentation in the source, `trace/perfetto/mod.rs`; a sample's slice carries its event's
/// label, not the JSON trace's `args`). Far smaller than the JSON (ten million samples: 340 MB,
/// about a fourteenth), for profiles whose JSON trace is too large to open; HTA reads only the
/// JSON. `out` is not flushed.
pub fn write_perfetto_trace(
    profile: &Profile,
    out: impl std::io::Write + Send,
) -> Result<(), TraceError> {
    let streams = Streams::of(&profile.events);
    if stepwise::applies(profile) {
        // Drawn one iteration at a time: only the tracks are laid out first.
        let skeleton = Drawing::skeleton(profile, &streams);
        let drawing = stepwise::Stepwise::new(profile)?;
        let doc = emit::Document::new(profile, &streams, &skeleton);
        return perfetto::write_stepwise(&doc, drawing, out).map_err(TraceError::Io);
    }
    let drawing = Drawing::of(profile, &streams)?;
    let doc = emit::Document::new(profile, &streams, &drawing);
    perfetto::write(&doc, out).map_err(TraceError::Io)
}

/// The average iteration as `prof trace` draws it for a `sample`-mode profile (see
/// `docs/reference.md`, "Definitions of `prof trace`"), for a profile of any mode: what `prof
/// html`'s "Average iteration" draws. The stepping thread's top-level events are where the
/// step-time breakdown places them, so that the [`other`](AverageIteration::other) stretches
/// are the breakdown's gaps ([`profiler_tables::breakdown::Breakdown::gaps`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AverageIteration {
    /// How long the step lasts (ns): the median measured iteration, stretched if the events
    /// drawn need more.
    pub step_ns: u64,
    /// Per event of `profile.events` (same index): `[start, end]` of its slice, in nanoseconds
    /// from the step's start; `None` for an event not drawn (without samples).
    pub spans: Vec<Option<[u64; 2]>>,
    /// The stretches of the step that no top-level event of the stepping thread covers (the
    /// trace's `other` slices), `[start, end]` in time order.
    pub other: Vec<[u64; 2]>,
}

/// The average iteration of `profile` (see [`AverageIteration`]), its stepping thread's
/// top-level events where `breakdown` places them: the profile's
/// ([`Report::breakdown`](crate::report::Report::breakdown), computed once for the report and
/// the drawing).
pub fn average_iteration(
    profile: &Profile,
    breakdown: Option<&Breakdown>,
) -> Result<AverageIteration, TraceError> {
    let streams = Streams::of(&profile.events);
    let drawing = Drawing::average(profile, &streams, breakdown)?;
    let step = drawing
        .step_at
        .first()
        .map(|&at| drawing.slices[at as usize]);
    let zero = step.map_or(0, |s| s.start);
    let mut spans = vec![None; profile.events.len()];
    for s in &drawing.slices {
        if let Some(slot) = spans.get_mut(s.event as usize) {
            *slot = Some([s.start - zero, s.end - zero]);
        }
    }
    Ok(AverageIteration {
        step_ns: step.map_or(0, |s| s.end - s.start),
        spans,
        other: other::gaps(&drawing)
            .map(|g| [g.from - zero, g.to - zero])
            .collect(),
    })
}

/// Where a slice is drawn: the CPU process, or a GPU device's stream (`stream` is its `tid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Track {
    Cpu,
    Gpu { device: u32, stream: u32 },
}

/// The GPU streams named by the events: `(device, stream name)` to the stream's `tid`.
struct Streams {
    tids: BTreeMap<(u32, String), u32>,
}

/// The name given to a GPU event's stream when it has a device but no stream.
const DEFAULT_STREAM: &str = "default";

impl Streams {
    fn of(events: &[Event]) -> Streams {
        let mut names: Vec<(u32, String)> = Vec::new();
        for e in events {
            if let Some(key) = gpu_key(e) {
                if !names.contains(&key) {
                    names.push(key);
                }
            }
        }
        let mut used: BTreeSet<(u32, u32)> = BTreeSet::new();
        let mut tids = BTreeMap::new();
        // Streams named by a positive number keep it; the others get the next free numbers.
        for (device, name) in &names {
            if let Some(n) = stream_number(name) {
                if used.insert((*device, n)) {
                    tids.insert((*device, name.clone()), n);
                }
            }
        }
        for key in names {
            let device = key.0;
            if let std::collections::btree_map::Entry::Vacant(slot) = tids.entry(key) {
                let next = used
                    .range((device, 0)..=(device, u32::MAX))
                    .next_back()
                    .map_or(1, |&(_, n)| n + 1);
                used.insert((device, next));
                slot.insert(next);
            }
        }
        Streams { tids }
    }

    fn track(&self, e: &Event) -> Track {
        match gpu_key(e) {
            None => Track::Cpu,
            Some(key) => Track::Gpu {
                device: key.0,
                stream: self.tids[&key],
            },
        }
    }

    fn devices(&self) -> BTreeSet<u32> {
        self.tids.keys().map(|(d, _)| *d).collect()
    }
}

/// `(device, stream)` of an event timed on a GPU, `None` for a CPU event.
fn gpu_key(e: &Event) -> Option<(u32, String)> {
    if e.device.is_none() && e.stream.is_none() {
        return None;
    }
    Some((
        e.device.unwrap_or(0),
        e.stream
            .clone()
            .unwrap_or_else(|| DEFAULT_STREAM.to_string()),
    ))
}

/// The number a stream name stands for, when it is a positive decimal integer.
fn stream_number(name: &str) -> Option<u32> {
    name.trim()
        .parse::<u32>()
        .ok()
        .filter(|&n| n > 0 && n < i32::MAX as u32)
}

/// The CPU process id: the program's, unless HTA would take it for a GPU (0) or it is a device's.
fn cpu_pid(pid: u32, streams: &Streams) -> u32 {
    let devices = streams.devices();
    let mut pid = pid;
    while pid == 0 || devices.contains(&pid) {
        pid = pid.wrapping_add(1);
    }
    pid
}

fn category(track: Track) -> &'static str {
    match track {
        Track::Cpu => CPU_CATEGORY,
        Track::Gpu { .. } => GPU_CATEGORY,
    }
}

/// Nanoseconds as (fractional) microseconds.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// A counter event, Chrome's `"ph": "C"` (which Perfetto draws as a graph), of the track `name`
/// in process `pid`, its series in `args`; fields in sorted order.
#[derive(serde::Serialize)]
struct Counter<A> {
    args: A,
    name: &'static str,
    ph: &'static str,
    pid: u32,
    tid: u32,
    /// When, in nanoseconds from time 0 (written as `ts`, in microseconds).
    #[serde(rename = "ts", serialize_with = "micros_of")]
    at_ns: u64,
}

impl<A> Counter<A> {
    /// The reading `args` of track `name` in process `pid` at `at_ns`.
    fn new(name: &'static str, pid: u32, at_ns: u64, args: A) -> Self {
        Counter {
            args,
            name,
            ph: "C",
            pid,
            tid: 0,
            at_ns,
        }
    }
}

/// Serializes nanoseconds as `micros` makes them.
fn micros_of<S: serde::Serializer>(ns: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(micros(*ns))
}

/// `ts` and `dur` in microseconds of the span `[start, end]` (ns). `ts` is the float nearest
/// `start / 1000`; `dur` is the float for which `ts + dur`, computed in floating point, is the
/// float nearest `end / 1000` (always so when the span is no longer than `start`), else the
/// largest float below it: never past the end. Both read back to the nanosecond when multiplied
/// by 1000 and rounded, as Perfetto does.
fn ts_dur(start: u64, end: u64) -> (f64, f64) {
    let ts = micros(start);
    let end = micros(end);
    let mut dur = end - ts;
    // `dur` is positive and finite here: its neighbours are one step of its bit pattern away.
    let up = |d: f64| f64::from_bits(d.to_bits() + 1);
    let down = |d: f64| f64::from_bits(d.to_bits() - 1);
    for _ in 0..4 {
        if dur <= 0.0 {
            break;
        }
        let sum = ts + dur;
        if sum > end {
            dur = down(dur);
        } else if sum < end && ts + up(dur) <= end {
            dur = up(dur);
        } else {
            break;
        }
    }
    (ts, dur.max(0.0))
}

/// Median of unsorted values (0 for none).
fn median(values: &[u64]) -> u64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    quantiles(&sorted).0
}

/// The event's duration statistics: `stats`, or computed from the samples when `stats` is empty.
fn duration_stats(e: &Event) -> profiler_format::Stats {
    if e.stats.count > 0 || e.samples_ns.is_empty() {
        e.stats
    } else {
        profiler_format::Stats::of(&e.samples_ns)
    }
}

mod cut;
mod device_memory;
mod emit;
mod layout;
mod memory;
mod meta;
mod other;
mod perfetto;
mod samples;
mod stepwise;
mod stream;

#[cfg(test)]
mod tests;
