//! The document, serialized one event at a time: each span is a small typed value borrowed from
//! the profile and the drawing, made when the serializer asks for it and gone after. The same
//! serialization makes the `serde_json::Value` of [`chrome_trace`](super::chrome_trace), whose
//! objects sort their keys: so the fields of every object here are declared in sorted order,
//! and the streamed text is the value's, byte for byte.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde::Serialize as DeriveSerialize;
use serde_json::{json, Value};

use profiler_format::{Event, Profile};

use super::layout::{lane_tids, Drawing, What};
use super::other::Gap;
use super::Counter;
use super::{
    category, cpu_pid, device_memory, duration_stats, median, memory, meta, other, ts_dur, Streams,
    Track, CPU_CATEGORY, DEFAULT_STREAM, STEP_PREFIX,
};

/// The whole document: the top-level keys Kineto writes and HTA reads (see the module
/// documentation), with the run in `otherData`.
pub(super) struct Document<'a> {
    pub(super) profile: &'a Profile,
    pub(super) drawing: &'a Drawing,
    /// The CPU process id.
    pub(super) cpu_pid: u32,
    /// The `tid` of each lane of each track (`[track][lane]`).
    pub(super) tids: Vec<Vec<u32>>,
    /// The processes and tracks, named.
    pub(super) names: meta::Names,
    /// The metadata events, first in `traceEvents`.
    meta: Vec<Value>,
    /// The devices drawn as a GPU process (they get a device memory track).
    pub(super) gpus: std::collections::BTreeSet<u32>,
    /// Per event: `file:line`, and the stream's name when it is not its number.
    sources: Vec<String>,
    stream_names: Vec<Option<&'a str>>,
    /// The CPU samples drawn (`trace` mode with `cpu_samples.timeline`): their tracks, named
    /// in `names`, and their instants.
    pub(super) samples: super::samples::Drawn,
}

impl<'a> Document<'a> {
    pub(super) fn new(profile: &'a Profile, streams: &Streams, drawing: &'a Drawing) -> Self {
        let cpu_pid = cpu_pid(profile.run.pid, streams);
        let tids = lane_tids(&drawing.tracks, streams);
        let mut names = meta::Names::of(profile, cpu_pid, streams, &drawing.tracks, &tids);
        let lane_tids: Vec<u32> = names
            .threads
            .iter()
            .filter(|t| t.pid == cpu_pid)
            .map(|t| t.tid)
            .collect();
        let samples = super::samples::Drawn::of(profile, cpu_pid, &lane_tids);
        names.threads.extend(samples.threads.iter().cloned());
        let meta = meta::metadata_events(&names);
        let sources = profile
            .events
            .iter()
            .map(|e| format!("{}:{}", e.file, e.line))
            .collect();
        let stream_names = profile
            .events
            .iter()
            .zip(&drawing.event_track)
            .map(|(e, &t)| match drawing.tracks[t as usize].0 {
                Track::Gpu { stream, .. } => {
                    let name = e.stream.as_deref().unwrap_or(DEFAULT_STREAM);
                    (name != stream.to_string()).then_some(name)
                }
                Track::Cpu => None,
            })
            .collect();
        Document {
            profile,
            drawing,
            cpu_pid,
            gpus: streams.devices(),
            tids,
            names,
            meta,
            sources,
            stream_names,
            samples,
        }
    }

    /// The `tid` of the `main` track.
    pub(super) fn main_tid(&self) -> u32 {
        self.tids[0].first().copied().unwrap_or(1)
    }

    /// The complete event (`"ph": "X"`) of the slice at `pos`.
    fn span(&self, pos: usize) -> Complete<'_, SpanArgs<'_>> {
        let s = &self.drawing.slices[pos];
        let track = self.drawing.tracks[s.track as usize].0;
        let (ts, dur) = ts_dur(s.start, s.end);
        let (name, args) = match self.drawing.what(s) {
            What::Step(step) => (
                Cow::Owned(format!("{STEP_PREFIX}{}", step.iteration)),
                SpanArgs::Step(self.step_args(step.iteration, step.wall_ns, s.end - s.start)),
            ),
            What::Sample { event, sample } => {
                let e = &self.profile.events[event];
                let values = SampleValues {
                    iteration: e.sample_iters[sample],
                    dur_ns: e.samples_ns[sample],
                    offset_ns: e.offsets_ns[sample],
                    dur,
                    tid: self.tids[s.track as usize][s.lane as usize],
                    ts,
                };
                return self.sample_span(event, values);
            }
            What::Average {
                event,
                median_offset,
            } => {
                let e = &self.profile.events[event];
                let st = duration_stats(e);
                let mut args = self.event_args(event, track);
                args.samples = Some(e.samples_ns.len());
                args.median_ns = Some(st.median_ns);
                args.p90_ns = Some(st.p90_ns);
                args.min_ns = Some(st.min_ns);
                args.max_ns = Some(st.max_ns);
                args.median_offset_ns = Some(median_offset);
                let work = e.work.as_ref();
                args.flops = work.and_then(|w| w.flops.as_deref()).and_then(median_count);
                args.bytes = work.and_then(|w| w.bytes.as_deref()).and_then(median_count);
                args.shapes = e.shapes.as_ref().map(shapes_arg);
                (e.display_name(), SpanArgs::Event(args))
            }
        };
        Complete {
            args,
            cat: category(track),
            dur,
            name,
            ph: "X",
            pid: self.pid_of(track),
            tid: self.tids[s.track as usize][s.lane as usize],
            ts,
        }
    }

    /// The span of one sample of `event` (`trace` mode), with `values`.
    pub(super) fn sample_span(
        &self,
        event: usize,
        values: SampleValues,
    ) -> Complete<'_, SpanArgs<'_>> {
        let e = &self.profile.events[event];
        let track = self.drawing.tracks[self.drawing.event_track[event] as usize].0;
        let mut args = self.event_args(event, track);
        args.iteration = Some(values.iteration);
        args.dur_ns = Some(values.dur_ns);
        args.offset_ns = Some(values.offset_ns);
        Complete {
            args: SpanArgs::Event(args),
            cat: category(track),
            dur: values.dur,
            name: e.display_name(),
            ph: "X",
            pid: self.pid_of(track),
            tid: values.tid,
            ts: values.ts,
        }
    }

    /// The name, category and `args` of the span of the slice at `pos`, as the JSON trace
    /// writes them (its `args` as a JSON object).
    pub(super) fn span_parts(&self, pos: usize) -> (Cow<'_, str>, &'static str, Value) {
        let span = self.span(pos);
        let args = serde_json::to_value(&span.args).unwrap_or(Value::Null);
        (span.name, span.cat, args)
    }

    /// The category of `event`'s slices.
    pub(super) fn category_of(&self, event: usize) -> &'static str {
        category(self.drawing.tracks[self.drawing.event_track[event] as usize].0)
    }

    /// The process a track is in.
    fn pid_of(&self, track: Track) -> u32 {
        match track {
            Track::Cpu => self.cpu_pid,
            Track::Gpu { device, .. } => device,
        }
    }

    /// The name and `args` of the step of `iteration` (measured `wall_ns`), drawn `drawn_ns`
    /// long, as the JSON trace writes them.
    pub(super) fn step_parts(
        &self,
        iteration: u64,
        wall_ns: Option<u64>,
        drawn_ns: u64,
    ) -> (String, Value) {
        let args = self.step_args(iteration, wall_ns, drawn_ns);
        let args = serde_json::to_value(args).unwrap_or(Value::Null);
        (format!("{STEP_PREFIX}{iteration}"), args)
    }

    /// The `args` of a step span: the iteration and its wall time (`trace` mode), or what the
    /// average iteration is made of.
    fn step_args(&self, iteration: u64, wall_ns: Option<u64>, drawn_ns: u64) -> StepArgs {
        if self.profile.run.mode == "trace" {
            return StepArgs {
                iteration: Some(iteration),
                wall_ns,
                incomplete: wall_ns.is_none().then_some(true),
                ..StepArgs::default()
            };
        }
        let measured = profiler_tables::rows::measured_walls(self.profile);
        StepArgs {
            average: Some(true),
            measured_iterations: Some(measured.len()),
            median_wall_ns: Some(median(measured)),
            drawn_ns: Some(drawn_ns),
            ..StepArgs::default()
        }
    }

    /// The `args` every event slice carries.
    fn event_args(&self, event: usize, track: Track) -> EventArgs<'_> {
        let e: &Event = &self.profile.events[event];
        let (device, stream) = match track {
            Track::Gpu { device, stream } => (Some(device), Some(stream)),
            Track::Cpu => (None, None),
        };
        EventArgs {
            device,
            id: &e.id,
            kind: &e.kind,
            layer: e.layer.as_deref(),
            merged: e.merged.then_some(true),
            occurrence: e.occurrence,
            order: e.order,
            phase: e.phase.as_deref(),
            source: &self.sources[event],
            stream,
            stream_name: self.stream_names[event],
            ..EventArgs::default()
        }
    }
}

impl Document<'_> {
    /// `otherData`: the run.
    pub(super) fn other_data(&self) -> Value {
        let run = &self.profile.run;
        json!({
            "profiler": "profiler-core",
            "profiler_version": run.profiler_version,
            "schema": self.profile.schema,
            "complete": self.profile.complete,
            "program": run.program,
            "host": run.host,
            "pid": run.pid,
            "rank": run.rank,
            "mode": run.mode,
            "clock": run.clock,
            "filter": run.filter,
            "warmup": run.warmup,
            "repeat": run.repeat,
            "iterations": self.profile.iterations.count,
            "time_zero_ns": self.drawing.time_zero,
        })
    }

    /// `distributedInfo`: the rank.
    pub(super) fn distributed_info(&self) -> Value {
        json!({ "rank": self.profile.run.rank })
    }

    /// `traceName`.
    pub(super) fn trace_name(&self) -> String {
        let run = &self.profile.run;
        format!("{} rank {} ({} mode)", run.program, run.rank, run.mode)
    }
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(7))?;
        map.serialize_entry("deviceProperties", &[] as &[Value])?;
        map.serialize_entry("displayTimeUnit", "ms")?;
        map.serialize_entry("distributedInfo", &self.distributed_info())?;
        map.serialize_entry("otherData", &self.other_data())?;
        map.serialize_entry("schemaVersion", &1)?;
        map.serialize_entry("traceEvents", &Events(self))?;
        map.serialize_entry("traceName", &self.trace_name())?;
        map.end()
    }
}

/// One element of `traceEvents`.
pub(super) enum Element<'a> {
    /// A metadata event.
    Meta(&'a Value),
    /// The span of the slice at this position of the drawing.
    Span(usize),
    /// A stretch of a step no top-level event covers.
    Other(Gap),
    /// A memory counter event.
    Counter(Counter<memory::Figures>),
    /// A device memory counter event.
    DeviceCounter(Counter<device_memory::Used>),
    /// The instant of the CPU sample at this position of [`super::samples::Drawn::points`].
    CpuSample(usize),
}

impl<'a> Document<'a> {
    /// `traceEvents`, in order: the metadata, the spans in drawing order, the `other` spans,
    /// the counters, the CPU samples.
    pub(super) fn elements(&'a self) -> impl Iterator<Item = Element<'a>> + 'a {
        let pid = self.cpu_pid;
        self.meta
            .iter()
            .map(Element::Meta)
            .chain((0..self.drawing.slices.len()).map(Element::Span))
            .chain(other::gaps(self.drawing).map(Element::Other))
            .chain(
                memory::counters(&self.profile.events, self.drawing, pid)
                    .map(|(_, c)| Element::Counter(c)),
            )
            .chain(self.device_counters())
            .chain((0..self.samples.points.len()).map(Element::CpuSample))
    }

    /// The name and args of the instant of the CPU sample at `pos`.
    pub(super) fn sample_parts(&self, pos: usize) -> (String, Value) {
        let stack = self.samples.points[pos].stack;
        match &self.profile.cpu_samples {
            Some(samples) => super::samples::parts(samples, stack),
            None => (String::new(), Value::Null),
        }
    }

    /// The device memory counters, after the host memory ones.
    fn device_counters(&'a self) -> impl Iterator<Item = Element<'a>> + 'a {
        device_memory::counters(self.profile, self.drawing, &self.gpus)
            .into_iter()
            .map(Element::DeviceCounter)
    }

    /// Serializes one element.
    pub(super) fn serialize_element<S: Serializer>(
        &self,
        element: &Element,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match element {
            Element::Meta(m) => m.serialize(serializer),
            Element::Span(pos) => self.span(*pos).serialize(serializer),
            Element::Other(gap) => {
                let (ts, dur) = ts_dur(gap.from, gap.to);
                Complete {
                    args: OtherArgs::of(gap),
                    cat: CPU_CATEGORY,
                    dur,
                    name: Cow::Borrowed(other::NAME),
                    ph: "X",
                    pid: self.cpu_pid,
                    tid: self.main_tid(),
                    ts,
                }
                .serialize(serializer)
            }
            Element::Counter(c) => c.serialize(serializer),
            Element::DeviceCounter(c) => c.serialize(serializer),
            Element::CpuSample(pos) => {
                let point = &self.samples.points[*pos];
                let (name, args) = self.sample_parts(*pos);
                super::samples::Instant {
                    args,
                    cat: super::samples::SAMPLE_CATEGORY,
                    name,
                    ph: "i",
                    pid: self.cpu_pid,
                    s: "t",
                    tid: point.tid,
                    ts: point.at,
                }
                .serialize(serializer)
            }
        }
    }
}

/// `traceEvents`.
struct Events<'a>(&'a Document<'a>);

impl Serialize for Events<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for element in self.0.elements() {
            seq.serialize_element(&ElementOf(self.0, element))?;
        }
        seq.end()
    }
}

/// An element with its document, to serialize.
struct ElementOf<'a>(&'a Document<'a>, Element<'a>);

impl Serialize for ElementOf<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_element(&self.1, serializer)
    }
}

/// What changes from one sample's span to the next of the same event.
#[derive(Clone, Copy)]
pub(super) struct SampleValues {
    pub(super) iteration: u32,
    pub(super) dur_ns: u64,
    pub(super) offset_ns: u64,
    pub(super) dur: f64,
    pub(super) tid: u32,
    pub(super) ts: f64,
}

/// A complete event (`"ph": "X"`), fields in sorted order.
#[derive(DeriveSerialize)]
pub(super) struct Complete<'a, A> {
    args: A,
    cat: &'static str,
    dur: f64,
    name: Cow<'a, str>,
    ph: &'static str,
    pid: u32,
    tid: u32,
    ts: f64,
}

/// The `args` of a span: a step's or an event's.
// Each span's args are made, serialized and dropped one at a time: the size of the larger
// variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(DeriveSerialize)]
#[serde(untagged)]
pub(super) enum SpanArgs<'a> {
    Step(StepArgs),
    Event(EventArgs<'a>),
}

/// The `args` of a step span (see [`Document::step_args`]), fields in sorted order.
#[derive(Default, DeriveSerialize)]
pub(super) struct StepArgs {
    #[serde(skip_serializing_if = "Option::is_none")]
    average: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    drawn_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    incomplete: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iteration: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    measured_iterations: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    median_wall_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wall_ns: Option<u64>,
}

/// The `args` of an event span: what every one carries, then one sample (`trace` mode:
/// `iteration`, `dur_ns`, `offset_ns`) or the statistics of all (`sample` mode). Fields in
/// sorted order.
#[derive(Default, DeriveSerialize)]
pub(super) struct EventArgs<'a> {
    /// The median bytes a run moved (its annotation's `bytes` key; average spans only).
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur_ns: Option<u64>,
    /// The median FLOPs of a run (its annotation's `flops` key; average spans only).
    #[serde(skip_serializing_if = "Option::is_none")]
    flops: Option<u64>,
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    iteration: Option<u32>,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    layer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    median_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    median_offset_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    merged: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_ns: Option<u64>,
    occurrence: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset_ns: Option<u64>,
    order: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    p90_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phase: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    samples: Option<usize>,
    /// The input shapes of the runs (its annotation's `shape` key; average spans only): the
    /// one shape, or each with its samples (`8x4 (3); 16x4 (2); 1 other shapes (1)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    shapes: Option<String>,
    source: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_name: Option<&'a str>,
}

/// The `shapes` argument of an average span: the one shape its samples have, or each shape with
/// its count of samples, most first, then the shapes past the bound.
fn shapes_arg(shapes: &profiler_format::Shapes) -> String {
    let count = |k: Option<u32>| shapes.sample_shapes.iter().filter(|&&s| s == k).count();
    if shapes.values.len() == 1 && shapes.others == 0 {
        return shapes.values[0].clone();
    }
    let mut parts: Vec<String> = shapes
        .values
        .iter()
        .enumerate()
        .map(|(k, v)| format!("{v} ({})", count(Some(k as u32))))
        .collect();
    if shapes.others > 0 {
        parts.push(format!("{} other shapes ({})", shapes.others, count(None)));
    }
    parts.join("; ")
}

/// The median of a work list (the upper middle value), `None` when empty.
fn median_count(values: &[u64]) -> Option<u64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

/// The `args` of an `other` span, fields in sorted order.
#[derive(DeriveSerialize)]
pub(super) struct OtherArgs {
    dur_ns: u64,
    iteration: u64,
    offset_ns: u64,
    what: &'static str,
}

impl OtherArgs {
    /// The `args` of the span of `gap`.
    pub(super) fn of(gap: &Gap) -> Self {
        OtherArgs {
            dur_ns: gap.to - gap.from,
            iteration: gap.iteration,
            offset_ns: gap.from - gap.step_start,
            what: other::WHAT,
        }
    }
}
