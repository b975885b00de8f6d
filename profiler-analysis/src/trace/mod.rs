//! `prof trace`: a profile as a Chrome Trace Event Format document that opens in
//! [Perfetto](https://ui.perfetto.dev) (or `chrome://tracing`) and that
//! [HolisticTraceAnalysis](https://github.com/facebookresearch/HolisticTraceAnalysis) (HTA) loads
//! like a PyTorch profiler (Kineto) trace.
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
//!   than the end of the previous event with the same parent, a child lies inside its parent
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

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Map, Value};

use profiler_format::{quantiles, Event, Iterations, Profile};

/// Prefix of the iteration spans, as PyTorch's profiler names them and HTA looks for them.
pub const STEP_PREFIX: &str = "ProfilerStep#";

/// `cat` of the steps and of the CPU events (Kineto's category for `record_function` ranges).
pub const CPU_CATEGORY: &str = "user_annotation";

/// `cat` of the events timed on a GPU (Kineto's category for ranges projected on a stream).
pub const GPU_CATEGORY: &str = "gpu_user_annotation";

/// The profile as a Chrome Trace Event Format document (Kineto flavoured), ready to serialize.
///
/// See the [module documentation](self) for what is drawn and where. Serialize it with
/// `serde_json::to_writer_pretty` for HTA to find the rank.
pub fn chrome_trace(profile: &Profile) -> Value {
    let streams = Streams::of(&profile.events);
    let mut slices = if profile.run.mode == "trace" {
        trace_slices(profile, &streams)
    } else {
        average_slices(profile, &streams)
    };
    // Time 0: the first step (so readers that shift times to their first event shift by 0).
    let time_zero = slices.iter().map(|s| s.start).min().unwrap_or(0);
    for s in &mut slices {
        s.start -= time_zero;
        s.end -= time_zero;
    }
    let order = assign_lanes(&mut slices);
    let cpu_pid = cpu_pid(profile.run.pid, &streams);
    let tids = lane_tids(&slices, &streams);

    let mut events = Vec::with_capacity(slices.len() + 16);
    metadata_events(profile, cpu_pid, &streams, &tids, &mut events);
    for &i in &order {
        let s = &slices[i];
        let pid = match s.track {
            Track::Cpu => cpu_pid,
            Track::Gpu { device, .. } => device,
        };
        let (name, cat, args) = slice_fields(profile, s);
        let (ts, dur) = ts_dur(s.start, s.end);
        events.push(json!({
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": pid,
            "tid": tids[&(s.track, s.lane)],
            "ts": ts,
            "dur": dur,
            "args": Value::Object(args),
        }));
    }
    let main_tid = tids.get(&(Track::Cpu, 0)).copied().unwrap_or(1);
    events.extend(other::other_slices(&slices, cpu_pid, main_tid));
    events.extend(memory::counters(&profile.events, &slices, cpu_pid));
    events.extend(device_memory::counters(
        profile,
        &slices,
        &streams.devices(),
    ));
    document(profile, time_zero, events)
}

/// Name, category and `args` of a slice: a step's, or an event's with what its mode measured
/// (one sample in `trace` mode, the statistics of all of them in `sample` mode).
fn slice_fields(profile: &Profile, s: &Slice) -> (String, &'static str, Map<String, Value>) {
    match s.what {
        What::Step { iteration, wall_ns } => {
            step_fields(profile, iteration, wall_ns, s.end - s.start)
        }
        What::Sample { event, sample } => {
            let e = &profile.events[event];
            let mut args = event_args(e, s.track);
            args.insert("iteration".into(), json!(e.sample_iters[sample]));
            args.insert("dur_ns".into(), json!(e.samples_ns[sample]));
            args.insert("offset_ns".into(), json!(e.offsets_ns[sample]));
            (e.name.clone(), category(s.track), args)
        }
        What::Average {
            event,
            median_offset,
        } => {
            let e = &profile.events[event];
            let st = duration_stats(e);
            let mut args = event_args(e, s.track);
            args.insert("samples".into(), json!(e.samples_ns.len()));
            args.insert("median_ns".into(), json!(st.median_ns));
            args.insert("p90_ns".into(), json!(st.p90_ns));
            args.insert("min_ns".into(), json!(st.min_ns));
            args.insert("max_ns".into(), json!(st.max_ns));
            args.insert("median_offset_ns".into(), json!(median_offset));
            (e.name.clone(), category(s.track), args)
        }
    }
}

/// The whole document around `events`: the top-level keys Kineto writes and HTA reads (see the
/// module documentation), with the run in `otherData`.
fn document(profile: &Profile, time_zero: u64, events: Vec<Value>) -> Value {
    let run = &profile.run;
    json!({
        "schemaVersion": 1,
        "deviceProperties": [],
        "distributedInfo": { "rank": run.rank },
        "displayTimeUnit": "ms",
        "traceName": format!("{} rank {} ({} mode)", run.program, run.rank, run.mode),
        "otherData": {
            "profiler": "profiler-core",
            "profiler_version": run.profiler_version,
            "schema": profile.schema,
            "complete": profile.complete,
            "program": run.program,
            "host": run.host,
            "pid": run.pid,
            "rank": run.rank,
            "mode": run.mode,
            "clock": run.clock,
            "filter": run.filter,
            "warmup": run.warmup,
            "repeat": run.repeat,
            "iterations": profile.iterations.count,
            "time_zero_ns": time_zero,
        },
        "traceEvents": events,
    })
}

/// Where a slice is drawn: the CPU process, or a GPU device's stream (`stream` is its `tid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Track {
    Cpu,
    Gpu { device: u32, stream: u32 },
}

/// What a slice shows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum What {
    /// A `ProfilerStep#` span; `wall_ns` is the measured wall time (`None` for an iteration
    /// that did not complete, or for the average one).
    Step {
        iteration: u64,
        wall_ns: Option<u64>,
    },
    /// One sample of an event (`trace` mode).
    Sample { event: usize, sample: usize },
    /// An event's average (`sample` mode).
    Average { event: usize, median_offset: u64 },
}

/// One span to draw, in nanoseconds from the trace's time 0.
#[derive(Clone, Debug)]
struct Slice {
    start: u64,
    end: u64,
    track: Track,
    /// The slice it ran inside (preferred track), if known.
    parent: Option<usize>,
    depth: u32,
    what: What,
    /// Track number within `track` (0: `main`, or the stream itself), set by `assign_lanes`.
    lane: usize,
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

/// The `args` every event slice carries.
fn event_args(e: &Event, track: Track) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("id".into(), json!(e.id));
    if let Some(layer) = &e.layer {
        args.insert("layer".into(), json!(layer));
    }
    if let Some(phase) = &e.phase {
        args.insert("phase".into(), json!(phase));
    }
    args.insert("kind".into(), json!(e.kind));
    args.insert("occurrence".into(), json!(e.occurrence));
    args.insert("order".into(), json!(e.order));
    args.insert("source".into(), json!(format!("{}:{}", e.file, e.line)));
    if e.merged {
        args.insert("merged".into(), json!(true));
    }
    if let Track::Gpu { device, stream } = track {
        args.insert("device".into(), json!(device));
        args.insert("stream".into(), json!(stream));
        let name = e.stream.as_deref().unwrap_or(DEFAULT_STREAM);
        if name != stream.to_string() {
            args.insert("stream_name".into(), json!(name));
        }
    }
    args
}

/// Name, category and `args` of a step span.
fn step_fields(
    profile: &Profile,
    iteration: u64,
    wall_ns: Option<u64>,
    drawn_ns: u64,
) -> (String, &'static str, Map<String, Value>) {
    let mut args = Map::new();
    if profile.run.mode == "trace" {
        args.insert("iteration".into(), json!(iteration));
        if let Some(w) = wall_ns {
            args.insert("wall_ns".into(), json!(w));
        } else {
            args.insert("incomplete".into(), json!(true));
        }
    } else {
        let measured = crate::measured_walls(profile);
        args.insert("average".into(), json!(true));
        args.insert("measured_iterations".into(), json!(measured.len()));
        args.insert("median_wall_ns".into(), json!(median(measured)));
        args.insert("drawn_ns".into(), json!(drawn_ns));
    }
    (format!("{STEP_PREFIX}{iteration}"), CPU_CATEGORY, args)
}

/// Event indices in execution order, and `order` to event index.
fn by_order(events: &[Event]) -> (Vec<usize>, HashMap<u32, usize>) {
    let mut idx: Vec<usize> = (0..events.len()).collect();
    idx.sort_by_key(|&i| (events[i].order, i));
    let mut of_order = HashMap::new();
    for &i in &idx {
        of_order.entry(events[i].order).or_insert(i);
    }
    (idx, of_order)
}

/// The event's parent event, when it comes earlier in execution order (so no cycle).
fn parent_event(events: &[Event], of_order: &HashMap<u32, usize>, i: usize) -> Option<usize> {
    let p = *of_order.get(&events[i].parent?)?;
    (events[p].order < events[i].order).then_some(p)
}

/// `trace` mode: one step per measured iteration and one slice per sample.
fn trace_slices(profile: &Profile, streams: &Streams) -> Vec<Slice> {
    let timeline = Timeline::of(&profile.iterations);
    let mut slices = Vec::new();
    let mut step_of = HashMap::new();
    for k in measured_iterations(profile) {
        let start = timeline.start(k);
        let wall = profile.iterations.wall_of(k);
        step_of.insert(k, slices.len());
        slices.push(Slice {
            start,
            end: start.saturating_add(wall.unwrap_or(0)),
            track: Track::Cpu,
            parent: None,
            depth: 0,
            what: What::Step {
                iteration: k,
                wall_ns: wall,
            },
            lane: 0,
        });
    }
    push_samples(profile, streams, &timeline, &step_of, &mut slices);
    // An iteration that did not complete ends with its last sample.
    for (&k, &s) in &step_of {
        if profile.iterations.wall_of(k).is_none() {
            let last = slices
                .iter()
                .filter(|c| c.parent == Some(s))
                .map(|c| c.end)
                .max();
            if let Some(last) = last {
                slices[s].end = slices[s].end.max(last);
            }
        }
    }
    slices
}

/// Where the iterations lie on the trace's time line (`trace` mode): each listed one starts
/// where the previous ended.
struct Timeline {
    /// Start of each listed iteration, the first at 0.
    starts: Vec<u64>,
    /// The first listed iteration (`iterations.first`).
    first: u64,
    /// End of the last listed iteration.
    end: u64,
}

impl Timeline {
    fn of(iterations: &Iterations) -> Timeline {
        let mut starts = Vec::with_capacity(iterations.wall_ns.len() + 1);
        let mut t = 0u64;
        for w in &iterations.wall_ns {
            starts.push(t);
            t = t.saturating_add(*w);
        }
        Timeline {
            starts,
            first: iterations.first,
            end: t,
        }
    }

    /// Start of iteration `k`: `wall_ns[k - first]`'s for a listed one; 0 for one before them,
    /// the end of the last for one after them (the iteration still running).
    fn start(&self, k: u64) -> u64 {
        k.checked_sub(self.first)
            .and_then(|i| self.starts.get(usize::try_from(i).ok()?).copied())
            .unwrap_or(if k < self.first { 0 } else { self.end })
    }
}

/// The iterations drawn as steps: the active window (from the warmup on, `repeat` of them, as
/// far as they are listed), and any iteration holding a sample.
fn measured_iterations(profile: &Profile) -> BTreeSet<u64> {
    // `wall_ns[k]` is iteration `first + k` (`first` is 0 but for a `continuous`-mode file).
    let first = profile.iterations.first;
    let listed_end = first.saturating_add(profile.iterations.wall_ns.len() as u64);
    let warmup = (profile.run.warmup as u64).max(first);
    let window_end = warmup
        .saturating_add(profile.run.repeat as u64)
        .min(listed_end);
    let mut iterations: BTreeSet<u64> = (warmup..window_end).collect();
    for e in &profile.events {
        iterations.extend(e.sample_iters.iter().map(|&k| k as u64));
    }
    iterations
}

/// Adds one slice per sample of every event, in execution order: inside the slice of its
/// parent's sample in the same iteration that encloses it on the same track, else (on the CPU)
/// inside its iteration's step (`step_of`).
fn push_samples(
    profile: &Profile,
    streams: &Streams,
    timeline: &Timeline,
    step_of: &HashMap<u64, usize>,
    slices: &mut Vec<Slice>,
) {
    let events = &profile.events;
    let (idx, of_order) = by_order(events);
    // (event, iteration) to the slices of that event's samples in that iteration.
    let mut drawn: HashMap<(usize, u64), Vec<usize>> = HashMap::new();
    for &i in &idx {
        let e = &events[i];
        let track = streams.track(e);
        let parent = parent_event(events, &of_order, i);
        let n = e
            .samples_ns
            .len()
            .min(e.offsets_ns.len())
            .min(e.sample_iters.len());
        for j in 0..n {
            let k = e.sample_iters[j] as u64;
            let start = timeline.start(k).saturating_add(e.offsets_ns[j]);
            let end = start.saturating_add(e.samples_ns[j]);
            let enclosing = parent
                .and_then(|p| drawn.get(&(p, k)))
                .and_then(|cands| {
                    cands.iter().copied().find(|&c| {
                        let s = &slices[c];
                        s.track == track && s.start <= start && end <= s.end
                    })
                })
                .or_else(|| (track == Track::Cpu).then_some(step_of[&k]));
            let depth = enclosing.map_or(0, |p| slices[p].depth + 1);
            drawn.entry((i, k)).or_default().push(slices.len());
            slices.push(Slice {
                start,
                end,
                track,
                parent: enclosing,
                depth,
                what: What::Sample {
                    event: i,
                    sample: j,
                },
                lane: 0,
            });
        }
    }
}

/// `sample` mode: one average iteration (see the module documentation).
fn average_slices(profile: &Profile, streams: &Streams) -> Vec<Slice> {
    let events = &profile.events;
    let step_len = median(crate::measured_walls(profile));
    let mut slices = vec![Slice {
        start: 0,
        end: step_len,
        track: Track::Cpu,
        parent: None,
        depth: 0,
        what: What::Step {
            iteration: 0,
            wall_ns: None,
        },
        lane: 0,
    }];
    let (idx, of_order) = by_order(events);
    let mut slice_of: HashMap<usize, usize> = HashMap::new();
    // (track, parent slice) to the end of the last child placed there.
    let mut last_end: HashMap<(Track, Option<usize>), u64> = HashMap::new();
    for &i in &idx {
        let e = &events[i];
        if e.samples_ns.is_empty() {
            continue;
        }
        let track = streams.track(e);
        let dur = duration_stats(e).median_ns;
        let offset = median(&e.offsets_ns);
        let parent = parent_event(events, &of_order, i)
            .and_then(|p| slice_of.get(&p).copied())
            .filter(|&p| slices[p].track == track);
        let (lo, hi) = match parent {
            Some(p) => (slices[p].start, slices[p].end),
            None => (0, u64::MAX),
        };
        let lo = lo.max(last_end.get(&(track, parent)).copied().unwrap_or(0));
        let start = offset.min(hi.saturating_sub(dur)).max(lo).min(hi);
        let end = start.saturating_add(dur).min(hi);
        last_end.insert((track, parent), end);
        let (parent, depth) = match parent {
            Some(p) => (Some(p), slices[p].depth + 1),
            None if track == Track::Cpu => (Some(0), 1),
            None => (None, 0),
        };
        slice_of.insert(i, slices.len());
        slices.push(Slice {
            start,
            end,
            track,
            parent,
            depth,
            what: What::Average {
                event: i,
                median_offset: offset,
            },
            lane: 0,
        });
    }
    let last = slices
        .iter()
        .filter(|s| s.track == Track::Cpu)
        .map(|s| s.end)
        .max()
        .unwrap_or(0);
    slices[0].end = slices[0].end.max(last);
    slices
}

/// Puts every slice on a lane of its track where it nests properly, preferring its parent's
/// lane. Returns the slice indices in drawing order (by track, start, longest first, depth).
fn assign_lanes(slices: &mut [Slice]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..slices.len()).collect();
    order.sort_by_key(|&i| {
        let s = &slices[i];
        (s.track, s.start, Reverse(s.end), s.depth, i)
    });
    // Per lane of the current track: the stack of open slices.
    let mut lanes: Vec<Vec<usize>> = Vec::new();
    let mut current: Option<Track> = None;
    for &i in &order {
        let (start, end, track) = (slices[i].start, slices[i].end, slices[i].track);
        if current != Some(track) {
            current = Some(track);
            lanes.clear();
        }
        let preferred = slices[i]
            .parent
            .filter(|&p| slices[p].track == track)
            .map(|p| slices[p].lane);
        let mut chosen = None;
        for lane in preferred.into_iter().chain(0..lanes.len()) {
            let stack = &mut lanes[lane];
            while let Some(&top) = stack.last() {
                if slices[top].end <= start && top != i {
                    stack.pop();
                } else {
                    break;
                }
            }
            if stack.last().is_none_or(|&top| slices[top].end >= end) {
                chosen = Some(lane);
                break;
            }
        }
        let lane = chosen.unwrap_or_else(|| {
            lanes.push(Vec::new());
            lanes.len() - 1
        });
        lanes[lane].push(i);
        slices[i].lane = lane;
    }
    order
}

/// The `tid` of every (track, lane) in use. CPU lanes are 1, 2, ...; a stream's first lane is
/// the stream's number, its extra lanes take numbers after every stream of the device.
fn lane_tids(slices: &[Slice], streams: &Streams) -> BTreeMap<(Track, usize), u32> {
    let used: BTreeSet<(Track, usize)> = slices.iter().map(|s| (s.track, s.lane)).collect();
    let mut next_free: BTreeMap<u32, u32> = BTreeMap::new();
    for (&(device, _), &tid) in &streams.tids {
        let n = next_free.entry(device).or_insert(1);
        *n = (*n).max(tid + 1);
    }
    let mut tids = BTreeMap::new();
    for (track, lane) in used {
        let tid = match track {
            Track::Cpu => lane as u32 + 1,
            Track::Gpu { stream, .. } if lane == 0 => stream,
            Track::Gpu { device, .. } => {
                let n = next_free.entry(device).or_insert(1);
                *n += 1;
                *n - 1
            }
        };
        tids.insert((track, lane), tid);
    }
    tids
}

/// Process and thread names and sort indices.
fn metadata_events(
    profile: &Profile,
    cpu_pid: u32,
    streams: &Streams,
    tids: &BTreeMap<(Track, usize), u32>,
    out: &mut Vec<Value>,
) {
    process_metadata(profile, cpu_pid, streams, out);
    cpu_thread_metadata(cpu_pid, tids, out);
    gpu_thread_metadata(streams, tids, out);
}

/// A metadata event (`"ph": "M"`).
fn meta(name: &str, pid: u32, tid: u32, args: Value) -> Value {
    json!({ "name": name, "ph": "M", "pid": pid, "tid": tid, "args": args })
}

/// The CPU process (named after the program and rank, labelled with the host, mode and clock,
/// first) and one process per GPU device, after it.
fn process_metadata(profile: &Profile, cpu_pid: u32, streams: &Streams, out: &mut Vec<Value>) {
    let run = &profile.run;
    out.push(meta(
        "process_name",
        cpu_pid,
        0,
        json!({ "name": format!("{} rank {}", run.program, run.rank) }),
    ));
    out.push(meta(
        "process_labels",
        cpu_pid,
        0,
        json!({ "labels": format!("host {}, {} mode, {} clock", run.host, run.mode, run.clock) }),
    ));
    out.push(meta(
        "process_sort_index",
        cpu_pid,
        0,
        json!({ "sort_index": 0 }),
    ));
    for device in streams.devices() {
        out.push(meta(
            "process_name",
            device,
            0,
            json!({ "name": format!("GPU {device}") }),
        ));
        out.push(meta(
            "process_sort_index",
            device,
            0,
            json!({ "sort_index": device as u64 + 1 }),
        ));
    }
}

/// The CPU tracks: `main`, then `concurrent 1`, `concurrent 2`, ...
fn cpu_thread_metadata(cpu_pid: u32, tids: &BTreeMap<(Track, usize), u32>, out: &mut Vec<Value>) {
    // Every CPU lane up to the last used, so that `main` is named even with no event.
    let cpu_lanes = tids
        .keys()
        .filter(|(t, _)| *t == Track::Cpu)
        .map(|&(_, l)| l + 1)
        .max()
        .unwrap_or(1);
    for lane in 0..cpu_lanes {
        let name = if lane == 0 {
            "main".to_string()
        } else {
            format!("concurrent {lane}")
        };
        let tid = lane as u32 + 1;
        out.push(meta("thread_name", cpu_pid, tid, json!({ "name": name })));
        out.push(meta(
            "thread_sort_index",
            cpu_pid,
            tid,
            json!({ "sort_index": lane }),
        ));
    }
}

/// The GPU tracks in use: `stream <stream>`, and `stream <stream> (concurrent 1)`, ... sorted
/// after their stream.
fn gpu_thread_metadata(
    streams: &Streams,
    tids: &BTreeMap<(Track, usize), u32>,
    out: &mut Vec<Value>,
) {
    let stream_names: HashMap<(u32, u32), &str> = streams
        .tids
        .iter()
        .map(|((d, name), &tid)| ((*d, tid), name.as_str()))
        .collect();
    for (&(track, lane), &tid) in tids {
        if let Track::Gpu { device, stream } = track {
            let base = format!("stream {}", stream_names[&(device, stream)]);
            let name = if lane == 0 {
                base
            } else {
                format!("{base} (concurrent {lane})")
            };
            out.push(meta("thread_name", device, tid, json!({ "name": name })));
            out.push(meta(
                "thread_sort_index",
                device,
                tid,
                json!({ "sort_index": (stream as u64) * 1000 + lane as u64 }),
            ));
        }
    }
}

mod device_memory;
mod memory;
mod other;

#[cfg(test)]
mod tests;
