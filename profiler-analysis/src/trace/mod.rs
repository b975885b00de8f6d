//! `prof trace`: a profile as a Chrome Trace Event Format document that opens in
//! [Perfetto](https://ui.perfetto.dev) (or `chrome://tracing`) and that
//! [HolisticTraceAnalysis](https://github.com/facebookresearch/HolisticTraceAnalysis) (HTA) loads
//! like a PyTorch profiler (Kineto) trace ([`write_chrome_trace`]); or the same drawing as a
//! Perfetto protobuf trace ([`write_perfetto_trace`]), about a fifth of the size, for profiles
//! whose JSON trace is too large for Perfetto's UI (HTA reads only the JSON). Both formats are
//! made from one layout (`layout.rs`: the slices, their times, parents and lanes) and one list
//! of processes and tracks (`meta.rs`), and carry the same names and `args` (`emit.rs`), so
//! they show the same slices; `perfetto/mod.rs` says how the protobuf is written.
//!
//! # What is drawn
//!
//! - **`trace` mode**: the real iterations. Each measured iteration `k` (the index in
//!   `iterations.wall_ns`, warmup included, so the number matches `sample_iters`) is a
//!   `ProfilerStep#k` span that starts at the sum of the wall times before it and lasts
//!   `wall_ns[k]`. Each sample is drawn at its iteration's start plus its offset, with its own
//!   duration. Time 0 is the start of the first measured iteration (`otherData.time_zero_ns`
//!   says when that was, from the program's start-up; from the start of iteration
//!   `iterations.first` when the file does not list the first iterations).
//! - **`sample` mode** (and `continuous` mode, whose events are its last window's samples): one
//!   *average iteration*, `ProfilerStep#0`, starting at time 0. Every event is drawn once, with
//!   its median duration, at its median offset; since each event was measured in different
//!   iterations, those medians need not agree with one another, so the drawing is
//!   made consistent: events are placed in execution order (`order`), an event starts no earlier
//!   than the end of the previous event with the same parent (except an event that ran on
//!   another thread, `concurrent`: it stays at its own offset and, where it overlaps the
//!   stepping thread's events, is drawn beside them on a `concurrent` track), a child lies
//!   inside its parent
//!   (moved earlier if it would end after its parent, cut short only if it is longer than its
//!   parent), and the step lasts the median measured iteration (iterations from `warmup` on;
//!   in `continuous` mode, every listed iteration),
//!   stretched if needed to hold every event. Each slice's `args` keep the measured statistics
//!   (`median_ns`, `p90_ns`, `median_offset_ns`, ...), which is what to read for numbers. One
//!   step only: HTA accepts a single iteration (with a warning that one iteration may not be
//!   representative), and repeating identical copies would add nothing.
//!
//! Events without samples are left out. Times are written in microseconds, as floats that keep
//! the nanoseconds (`ts`, `dur`), like recent Kineto traces: Perfetto reads them back to the
//! nanosecond. Each `dur` is chosen so that `ts + dur`, added in floating point as HTA does,
//! gives exactly the float of the end time (always so for a span no longer than its start time,
//! and otherwise as a rule; where no float does, the one just below): spans that touch
//! (consecutive steps, a child ending with its parent) are seen touching, not overlapping by a
//! rounding error.
//!
//! # Processes and tracks
//!
//! - CPU events and the `ProfilerStep#` spans go in one process whose `pid` is the profiled
//!   program's (`run.pid`; replaced by the next free number only if it is 0 or equal to a GPU
//!   device number), named `<program> rank <rank>` by a `process_name` metadata event, with a
//!   `process_labels` event giving the host, mode and clock.
//! - Thread ids are not recorded in `prof.json`, and Perfetto, like HTA, nests the slices of
//!   one thread by time. So the spans are laid out on tracks ("threads") by nesting: every slice
//!   goes on its parent's track (the parent being the event it ran inside, learned in warmup,
//!   else its `ProfilerStep`), where it nests under the parent, provided it does not partly
//!   overlap a slice already there; a slice that would (an event running concurrently on
//!   another thread) goes to the first track where it nests properly, adding tracks as needed.
//!   The first track, `tid` 1, is named `main` and holds the steps; the others are
//!   `concurrent 1`, `concurrent 2`, ... (`tid` 2, 3, ...), each named by a `thread_name`
//!   metadata event and ordered by `thread_sort_index`. In a profile whose events nest (a
//!   single-threaded training loop, and every `sample`-mode drawing) everything is on `main`,
//!   as in a Kineto trace, where the `ProfilerStep#` span holds the iteration's operators.
//! - Events timed on a GPU (those with a `device` or a `stream`; none on the CPU clock) go in
//!   one process per device, `pid` = device number, named `GPU <device>`, with one track per
//!   stream, `tid` = the stream's number when the stream is named by a positive integer, else a
//!   number assigned in order of appearance; the track is named `stream <stream>` (Kineto puts
//!   GPU work at pid = device, tid = stream). The same nesting rule applies, with extra tracks
//!   `stream <stream> (concurrent 1)`, ... numbered after the streams. A profile with the
//!   devices' memory at each step adds a `device memory` counter track to each GPU's process
//!   (see `device_memory.rs`).
//!
//! # Kineto conventions
//!
//! Top-level keys: `schemaVersion` (1), `deviceProperties` (empty: the profile does not describe
//! the devices), `distributedInfo` (`{"rank": <run.rank>}`; the world size is not recorded in
//! `prof.json`, so it is left out), `displayTimeUnit` (`"ms"`), `traceName`, `otherData` (the
//! run: program, host, mode, clock, filter, warmup, repeat, completeness, profiler version,
//! `time_zero_ns`) and
//! `traceEvents`. Spans are complete events (`"ph": "X"`): the steps and CPU events with
//! `"cat": "user_annotation"` (what Kineto writes for `record_function` ranges, `ProfilerStep#`
//! included), GPU events with `"cat": "gpu_user_annotation"` and `args.device` and
//! `args.stream` (a number; `args.stream_name` when the stream's name is not that number). Each
//! event's `args` hold `id`, `layer` and `phase` (when set), `kind`, `occurrence`, `order`,
//! `source` (file:line), `merged` (when true), and per mode: `iteration`, `dur_ns` and
//! `offset_ns` (`trace`), or `samples`, `median_ns`, `p90_ns`, `min_ns`, `max_ns` and
//! `median_offset_ns` (`sample`). No `correlation` or `External id` is written: there are no
//! kernel launches to link.
//!
//! # Loading it in HTA
//!
//! HTA reads every `.json` or `.json.gz` in a directory and finds each file's rank with a
//! regular expression that needs a space after the colon (`"rank": 0`): write the document with
//! `serde_json::to_writer_pretty` (compact output reads as rank 0, with a warning). Then
//! `TraceAnalysis(trace_dir=...)` finds the iterations (`t.t.get_iterations()`) from the
//! `ProfilerStep#` spans and gives the events of each. By default HTA drops the last
//! `ProfilerStep` of a trace with several (it is usually incomplete in a Kineto trace); pass
//! `include_last_profiler_step=True` to keep it. By default HTA also rounds each span inwards to
//! whole microseconds (start up, end down): spans shorter than a microsecond get a negative
//! duration, which its call-graph construction (`hta.common.trace_call_graph.CallGraph`) rejects,
//! and an event in the last microsecond of an iteration falls outside it. Set
//! `HTA_DISABLE_NS_ROUNDING=1` (an HTA option) to keep the nanoseconds: then every event is in
//! its iteration and the call graph has the steps as roots and our events nested as drawn.
//! (HTA 0.5.0's call graph also needs pandas older than 3.) Events on GPU tracks have no CPU
//! launch to correlate with, so HTA leaves them out of its iterations.
//!
//! # Large profiles
//!
//! [`write_chrome_trace`] streams the document to its writer: nothing is built per slice but
//! the 40 bytes of its place in the drawing (`layout.rs`), so a `trace`-mode profile of ten
//! million samples is drawn in about 650 MB, the profile included.
//! [`chrome_trace`] builds the same document as a `serde_json::Value`, which takes about a
//! kilobyte per slice: for tests and small profiles. [`write_perfetto_trace`] streams the same
//! drawing packet by packet: ten million samples make 0.97 GB instead of the JSON's 4.7 GB.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use profiler_format::{quantiles, Event, Profile};

use layout::Drawing;

pub use cut::{keep_iterations, CutError, Iterations};

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
/// documentation in the source, `trace/perfetto/mod.rs`). Far smaller than the JSON (ten million
/// samples: about a fifth), for profiles whose JSON trace is too large to open; HTA reads only
/// the JSON. `out` is not flushed.
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
mod stepwise;
mod stream;

#[cfg(test)]
mod tests;
