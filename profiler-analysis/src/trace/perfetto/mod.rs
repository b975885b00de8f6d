//! The drawing as a Perfetto protobuf trace (`.pftrace`): the slices, tracks and counters of
//! the JSON trace ([module documentation](super)), in the format Perfetto records natively, which
//! its UI opens at sizes where the JSON trace is too large to load (ten million samples: 340 MB
//! against 4.8 GB of JSON).
//!
//! # What is written
//!
//! A `Trace` is a sequence of `TracePacket`s (`Trace.packet`, field 1), each written as soon as
//! it is made: the file is the concatenation of length-delimited packets, and no more than a
//! megabyte of output is held. A `trace`-mode profile on the CPU (without memory figures) is
//! drawn one iteration at a time (`stepwise.rs`, `write_stepwise`): then what is held is the
//! profile and a few iterations' slices; other profiles are drawn whole first (`layout.rs`, 40
//! bytes a slice, as for the JSON trace), the same slices in the same order.
//!
//! - **Tracks** (`TrackDescriptor`s, first): one process track per process of the JSON trace
//!   (the program's, `pid` as there, named `<program> rank <rank>`, labelled with the host, mode
//!   and clock; one `GPU <device>` per device); one thread track per lane the JSON trace uses
//!   (`main`, `concurrent N`; `stream S`, `stream S (concurrent N)`), with the same `pid` and
//!   `tid`; and counter tracks (unit bytes) where the JSON trace has counters: `memory
//!   alloc_bytes`, `memory net_bytes`, `memory peak_bytes` in the program's process, `device
//!   memory used_bytes` in each GPU's (the names Perfetto gives the JSON trace's counter series).
//! - **Slices**: each span of the JSON trace (steps, samples or averages, `other`) as a
//!   `TrackEvent` of `TYPE_SLICE_BEGIN` and one of `TYPE_SLICE_END` on its lane's track, at the
//!   same times in nanoseconds (the JSON trace's microseconds read back exactly), with the same
//!   name and category. Steps, averages and `other` slices carry the JSON trace's `args` as
//!   debug annotations (strings, unsigned and signed integers, floats and booleans as such). A
//!   sample's slice (`trace` mode: millions of them) carries one annotation, `event`: its
//!   event's label as `prof report` prints it (`layer/phase name#occurrence`); the rest of the
//!   JSON trace's `args` are its event's (in `prof report`, and in the JSON trace) or its own
//!   times (`iteration` is its step's, `dur_ns` its duration, `offset_ns` its start in its
//!   step). Each track's events are written in time order (an end before a begin at the same
//!   time, a parent before its child), on a packet sequence of its own, so that the trace
//!   processor never has to reorder them.
//!   The one difference: an `other` slice that a sample drawn past its own step's end (inside
//!   the next step, on `main`) would partly overlap begins after that sample (its `args` say
//!   so), or ends where it begins, since Perfetto's slices on one track must nest (the JSON
//!   trace draws both, overlapping).
//! - **Counters**: `TYPE_COUNTER` events on the counter tracks, at the JSON trace's times, on a
//!   sequence of their own, in time order (at one time, a slice's end before the next one's
//!   start).
//!
//! Names, categories, annotation names and string values are interned per sequence
//! (`InternedData`, sent in the first packet that uses them; the first packet of a sequence
//! says `SEQ_INCREMENTAL_STATE_CLEARED`, every packet that uses interned data
//! `SEQ_NEEDS_INCREMENTAL_STATE`, and each carries its `trusted_packet_sequence_id`). Steps keep
//! their names as plain strings (each is used once). Each timed sequence sets its defaults in
//! its first packet (`TracePacketDefaults`): its track (the first lane of the drawing's track,
//! `main` for the CPU), so that an event on it names none, and a clock of its own,
//! sequence-scoped and incremental, so that each `timestamp` is the time since the previous
//! packet's.
//!
//! # How a sample's slice is made
//!
//! Ten million samples are twenty million packets, so a sample's slice is a few varints (34
//! bytes, begin and end, for `bigtrace`'s ten million): its begin is the packet's own fields
//! (timestamp, sequence, flags), then a `TrackEvent` whose type and track are encoded once per
//! lane and whose name, category and `event` annotation (all interned) once per event, the two
//! pieces appended; its end is the packet's fields and a `TrackEvent` encoded once per lane.
//! Protobuf reads a message whose fields come in two runs as the one message, so each packet
//! is the one prost would have encoded with every field set. All encoding is prost's (the
//! messages generated from Perfetto's protos, `protos.rs`, and [`Head`] for the packet's own
//! fields); only the two keys of the length-delimited fields written around those pieces are
//! spelled out here.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Write};

use prost::Message;
use serde_json::Value;

use super::emit::{Document, OtherArgs};
use super::layout::What;
use super::other::{self, Gap};
use super::stepwise::{self, Stepwise};
use super::stream::{self, Sink};
use super::{device_memory, memory};

// Generated by prost-build (lints are for the code written here); some messages (the whole
// `Trace`) only the tests decode.
#[allow(dead_code, clippy::all)]
pub(super) mod protos;

use protos::{
    clock_snapshot, trace_packet, track_event, BuiltinClock, ClockSnapshot, CounterDescriptor,
    DebugAnnotation, DebugAnnotationName, EventCategory, EventName, InternedData, InternedString,
    ProcessDescriptor, ThreadDescriptor, TracePacket, TracePacketDefaults, TrackDescriptor,
    TrackEvent, TrackEventDefaults,
};

/// The clock of each timed sequence: sequence-scoped (ids 64 to 127 are), incremental.
const INCREMENTAL_CLOCK: u32 = 64;

/// The key of `Trace.packet` (field 1, length-delimited).
const PACKET_KEY: u8 = 1 << 3 | 2;

/// The key of `TracePacket.track_event` (field 11, length-delimited).
const TRACK_EVENT_KEY: u8 = 11 << 3 | 2;

/// The counter tracks' names: series of the JSON trace's `memory` counter, then its `device
/// memory` counter's, as Perfetto names a JSON counter's series (`<name> <series>`).
fn counter_track_name(counter: &str, series: &str) -> String {
    format!("{counter} {series}")
}

/// Writes `doc` to `out` as a Perfetto trace (see the module documentation). `out` is not
/// flushed.
pub(super) fn write(doc: &Document, out: impl Write + Send) -> io::Result<()> {
    let counters = Counters::of(doc);
    // Packets are made on this thread and written on another, a megabyte at a time.
    stream::in_chunks(out, |sink| {
        let mut w = Writer::new(sink);
        let (lanes, next_uuid, sample_tracks) = w.tracks(doc, &counters)?;
        Slices::new(doc, lanes, next_uuid).write(&mut w)?;
        counters.write(&mut w)?;
        write_samples(doc, &sample_tracks, &mut w)
    })
}

/// Writes the drawing of `drawing` (`doc`'s drawing is its skeleton: tracks, no slice), made
/// one iteration at a time, as [`write`] writes a whole one (see `stepwise.rs` for which
/// profiles). The `concurrent N` tracks are described as they are first used.
pub(super) fn write_stepwise(
    doc: &Document,
    mut drawing: Stepwise,
    out: impl Write + Send,
) -> io::Result<()> {
    stream::in_chunks(out, |sink| {
        let mut w = Writer::new(sink);
        let (lanes, next_uuid, sample_tracks) = w.tracks(doc, &Counters::of(doc))?;
        let mut slices = Slices::new(doc, lanes, next_uuid);
        slices.start_track(0, &mut w)?;
        let mut gaps = Gaps::default();
        let (mut items, mut new) = (Vec::new(), Vec::new());
        while drawing.next_window(&mut items, &mut new) {
            gaps.queue.extend(new.drain(..));
            for item in items.drain(..) {
                let shows = match item.shows {
                    stepwise::Shows::Sample { event } => Shows::Sample { event },
                    stepwise::Shows::Step { iteration, wall_ns } => {
                        let (name, args) =
                            doc.step_parts(iteration, wall_ns, item.end - item.start);
                        Shows::Step { name, args }
                    }
                };
                let begin = Begin {
                    start: item.start,
                    end: item.end,
                    lane: item.lane,
                    shows,
                };
                slices.slice(begin, &mut gaps, &mut w)?;
            }
        }
        slices.rest_of_gaps(&mut gaps, &mut w)?;
        slices.close_all(&mut w)?;
        write_samples(doc, &sample_tracks, &mut w)
    })
}

/// The packets being written: the current sequence, its interned data, the output.
struct Writer<'s> {
    out: &'s mut Sink,
    /// The current sequence's id, and whether its first packet is still to come.
    sequence: u32,
    fresh: bool,
    /// The current sequence's time (ns) on its incremental clock: a timed packet's
    /// `timestamp` is the time since this.
    clock: u64,
    /// The track an event of the current sequence is on when it names none.
    default_track: Option<u64>,
    intern: Interner,
    /// The encoded head of the packet being written, reused.
    head_bytes: Vec<u8>,
}

impl<'s> Writer<'s> {
    fn new(out: &'s mut Sink) -> Self {
        Writer {
            out,
            sequence: 0,
            fresh: false,
            clock: 0,
            default_track: None,
            intern: Interner::default(),
            head_bytes: Vec::new(),
        }
    }

    /// Starts a new packet sequence: interned data starts empty again.
    fn start_sequence(&mut self) {
        self.sequence += 1;
        self.fresh = true;
        self.intern = Interner::default();
        self.default_track = None;
    }

    /// Starts a new packet sequence for events in time order, on `default_track` when they name
    /// none: its first packet sets the defaults and a clock of its own, incremental, at 0 when
    /// the trace's clock is (so each event's `timestamp` is the time since the previous one).
    fn start_timed_sequence(&mut self, default_track: Option<u64>) -> io::Result<()> {
        self.start_sequence();
        let mut p = self.head(false, None);
        p.trace_packet_defaults = Some(TracePacketDefaults {
            timestamp_clock_id: Some(INCREMENTAL_CLOCK),
            track_event_defaults: default_track.map(|uuid| TrackEventDefaults {
                track_uuid: Some(uuid),
            }),
        });
        let clock = |id: u32, incremental: bool| clock_snapshot::Clock {
            clock_id: Some(id),
            timestamp: Some(0),
            is_incremental: incremental.then_some(true),
            unit_multiplier_ns: None,
        };
        p.clock_snapshot = Some(ClockSnapshot {
            clocks: vec![
                clock(BuiltinClock::Boottime as u32, false),
                clock(INCREMENTAL_CLOCK, true),
            ],
            primary_trace_clock: None,
        });
        self.packet(&p)?;
        self.clock = 0;
        self.default_track = default_track;
        Ok(())
    }

    /// `uuid`, unless it is the sequence's default track.
    fn track(&self, uuid: u64) -> Option<u64> {
        (self.default_track != Some(uuid)).then_some(uuid)
    }

    /// The sequence fields of a packet: its sequence, the flags, the interned data it brings,
    /// and its time (`at`, ns) as the sequence's clock says it.
    fn head(&mut self, uses_state: bool, at: Option<u64>) -> TracePacket {
        let first = self.fresh;
        let h = self.head_fields(uses_state, at);
        TracePacket {
            timestamp: h.timestamp,
            trusted_packet_sequence_id: h.trusted_packet_sequence_id,
            interned_data: h.interned_data,
            sequence_flags: h.sequence_flags,
            first_packet_on_sequence: first.then_some(true),
            ..TracePacket::default()
        }
    }

    /// [`head`](Self::head)'s fields, as a [`Head`].
    fn head_fields(&mut self, uses_state: bool, at: Option<u64>) -> Head {
        let mut h = Head {
            trusted_packet_sequence_id: Some(self.sequence),
            ..Head::default()
        };
        if let Some(at) = at {
            // Each sequence is written in time order (the tests check it).
            debug_assert!(at >= self.clock);
            h.timestamp = Some(at - self.clock);
            self.clock = at;
        }
        let mut flags = 0;
        if std::mem::take(&mut self.fresh) {
            flags |= trace_packet::SequenceFlags::SeqIncrementalStateCleared as u32;
        }
        if uses_state {
            flags |= trace_packet::SequenceFlags::SeqNeedsIncrementalState as u32;
        }
        if flags != 0 {
            h.sequence_flags = Some(flags);
        }
        h.interned_data = self.intern.take_new();
        h
    }

    /// Writes one packet.
    fn packet(&mut self, p: &TracePacket) -> io::Result<()> {
        self.out.buf.push(PACKET_KEY);
        put_length(p.encoded_len(), &mut self.out.buf);
        put(p, &mut self.out.buf);
        self.hand_over_if_full()
    }

    /// Writes the packet `head` whose `TrackEvent` is the encoded fields `own` followed by the
    /// encoded fields `shared` (see "How a sample's slice is made").
    fn packet_with_pieces(&mut self, head: &Head, own: &[u8], shared: &[u8]) -> io::Result<()> {
        // The head's fields first (a few bytes), so that the packet's length is known without
        // working out theirs apart.
        self.head_bytes.clear();
        head.encode_raw(&mut self.head_bytes);
        let event_len = own.len() + shared.len();
        let len = self.head_bytes.len() + 1 + prost::length_delimiter_len(event_len) + event_len;
        let buf = &mut self.out.buf;
        buf.push(PACKET_KEY);
        put_length(len, buf);
        buf.extend_from_slice(&self.head_bytes);
        buf.push(TRACK_EVENT_KEY);
        put_length(event_len, buf);
        buf.extend_from_slice(own);
        buf.extend_from_slice(shared);
        self.hand_over_if_full()
    }

    fn hand_over_if_full(&mut self) -> io::Result<()> {
        self.out.hand_over_if_full()
    }

    /// Writes the track descriptors (on the first sequence); the uuid of each lane's track
    /// (`[track][lane]`), the first uuid left, and the uuid of each CPU samples' track by tid.
    fn tracks(
        &mut self,
        doc: &Document,
        counters: &Counters,
    ) -> io::Result<(Vec<Vec<u64>>, u64, SampleTracks)> {
        self.start_sequence();
        let mut next = 1u64;
        let mut uuid = || {
            next += 1;
            next - 1
        };
        let mut process_uuid = HashMap::new();
        for p in &doc.names.processes {
            let id = uuid();
            process_uuid.insert(p.pid, id);
            let descriptor = TrackDescriptor {
                uuid: Some(id),
                process: Some(ProcessDescriptor {
                    pid: Some(p.pid as i32),
                    process_name: Some(p.name.clone()),
                    process_labels: p.labels.iter().cloned().collect(),
                }),
                ..TrackDescriptor::default()
            };
            self.descriptor(descriptor)?;
        }
        let mut lanes: Vec<Vec<u64>> = doc
            .drawing
            .tracks
            .iter()
            .map(|&(_, n)| vec![0; n as usize])
            .collect();
        let mut sample_tracks = HashMap::new();
        for t in &doc.names.threads {
            let id = uuid();
            if t.track == super::samples::SAMPLES_TRACK {
                sample_tracks.insert(t.tid, id);
            }
            // Every named lane (`main` too when no slice uses it yet).
            if let Some(track) = lanes.get_mut(t.track as usize) {
                if track.len() <= t.lane as usize {
                    track.resize(t.lane as usize + 1, 0);
                }
                track[t.lane as usize] = id;
            }
            let descriptor = TrackDescriptor {
                uuid: Some(id),
                thread: Some(ThreadDescriptor {
                    pid: Some(t.pid as i32),
                    tid: Some(i64::from(t.tid)),
                    thread_name: Some(t.name.clone()),
                }),
                ..TrackDescriptor::default()
            };
            self.descriptor(descriptor)?;
        }
        for track in &counters.tracks {
            let descriptor = TrackDescriptor {
                uuid: Some(track.uuid),
                parent_uuid: process_uuid.get(&track.pid).copied(),
                name: Some(track.name.clone()),
                counter: Some(CounterDescriptor {
                    unit: Some(protos::counter_descriptor::Unit::SizeBytes as i32),
                }),
                ..TrackDescriptor::default()
            };
            self.descriptor(descriptor)?;
        }
        let next = counters.tracks.last().map_or(next, |t| t.uuid + 1);
        Ok((lanes, next, sample_tracks))
    }

    fn descriptor(&mut self, descriptor: TrackDescriptor) -> io::Result<()> {
        let mut p = self.head(false, None);
        p.track_descriptor = Some(descriptor);
        self.packet(&p)
    }
}

/// The fields of a `TracePacket` that the packets of slices set besides their `TrackEvent`,
/// with `perfetto_trace.proto`'s numbers: a message of its own, so that the twenty million
/// packets of a large trace are encoded without the whole `TracePacket`'s fields (the tests
/// decode them as `TracePacket`s).
#[derive(Clone, PartialEq, Message)]
struct Head {
    #[prost(uint64, optional, tag = "8")]
    timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "12")]
    interned_data: Option<InternedData>,
    #[prost(uint32, optional, tag = "13")]
    sequence_flags: Option<u32>,
}

/// Appends `len` as a varint.
fn put_length(len: usize, buf: &mut Vec<u8>) {
    // Encoding into a Vec cannot run out of room.
    let _ = prost::encode_length_delimiter(len, buf);
}

/// Appends `m`'s encoding.
fn put(m: &impl Message, buf: &mut Vec<u8>) {
    // Encoding into a Vec cannot run out of room.
    let _ = m.encode(buf);
}

/// A sequence's interned strings, and those not yet sent.
#[derive(Default)]
struct Interner {
    names: HashMap<String, u64>,
    categories: HashMap<&'static str, u64>,
    arg_names: HashMap<String, u64>,
    strings: HashMap<String, u64>,
    new: InternedData,
}

impl Interner {
    /// The interned data made since the last call, if any.
    fn take_new(&mut self) -> Option<InternedData> {
        let d = &self.new;
        let empty = d.event_names.is_empty()
            && d.event_categories.is_empty()
            && d.debug_annotation_names.is_empty()
            && d.debug_annotation_string_values.is_empty();
        (!empty).then(|| std::mem::take(&mut self.new))
    }

    fn name(&mut self, name: &str) -> u64 {
        if let Some(&iid) = self.names.get(name) {
            return iid;
        }
        let iid = self.names.len() as u64 + 1;
        self.names.insert(name.to_string(), iid);
        self.new.event_names.push(EventName {
            iid: Some(iid),
            name: Some(name.to_string()),
        });
        iid
    }

    fn category(&mut self, category: &'static str) -> u64 {
        if let Some(&iid) = self.categories.get(category) {
            return iid;
        }
        let iid = self.categories.len() as u64 + 1;
        self.categories.insert(category, iid);
        self.new.event_categories.push(EventCategory {
            iid: Some(iid),
            name: Some(category.to_string()),
        });
        iid
    }

    fn arg_name(&mut self, name: &str) -> u64 {
        if let Some(&iid) = self.arg_names.get(name) {
            return iid;
        }
        let iid = self.arg_names.len() as u64 + 1;
        self.arg_names.insert(name.to_string(), iid);
        self.new.debug_annotation_names.push(DebugAnnotationName {
            iid: Some(iid),
            name: Some(name.to_string()),
        });
        iid
    }

    fn string(&mut self, s: &str) -> u64 {
        if let Some(&iid) = self.strings.get(s) {
            return iid;
        }
        let iid = self.strings.len() as u64 + 1;
        self.strings.insert(s.to_string(), iid);
        self.new
            .debug_annotation_string_values
            .push(InternedString {
                iid: Some(iid),
                str: Some(s.as_bytes().to_vec()),
            });
        iid
    }

    /// The debug annotations of a JSON trace's `args` object, in its (sorted) order.
    fn annotations(&mut self, args: &Value) -> Vec<DebugAnnotation> {
        let Value::Object(map) = args else {
            return Vec::new();
        };
        map.iter()
            .map(|(key, value)| {
                let mut a = DebugAnnotation {
                    name_iid: Some(self.arg_name(key)),
                    ..DebugAnnotation::default()
                };
                match value {
                    Value::Bool(b) => a.bool_value = Some(*b),
                    Value::Number(n) => {
                        if let Some(u) = n.as_u64() {
                            a.uint_value = Some(u);
                        } else if let Some(i) = n.as_i64() {
                            a.int_value = Some(i);
                        } else {
                            a.double_value = n.as_f64();
                        }
                    }
                    Value::String(s) => a.string_value_iid = Some(self.string(s)),
                    other => a.string_value = Some(other.to_string()),
                }
                a
            })
            .collect()
    }
}

/// The one annotation of a sample's slice: its event's label (`layer/phase name#occurrence`,
/// as `prof report` names it).
pub(super) const EVENT_ARG: &str = "event";

/// The slices, track by track, each track's in time order with the `other` slices among the
/// `main` track's.
struct Slices<'a, 'd> {
    doc: &'a Document<'d>,
    /// `[track][lane]`: the uuid of each lane's track.
    lanes: Vec<Vec<u64>>,
    /// The uuid a track described now would take.
    next_uuid: u64,
    /// The drawing's track being written.
    current_track: u32,
    /// Per lane of the current track: the ends of the slices open on it, innermost last, and
    /// whether each is an `other` slice.
    open: Vec<Vec<(u64, bool)>>,
    /// Per lane of the current track: the encoded `TrackEvent` of a slice's end, and the
    /// encoded type and track of a slice's begin.
    ends: Vec<Vec<u8>>,
    begins: Vec<Vec<u8>>,
    /// Per event: the encoded fields of its samples' begins but the type and track (name,
    /// category, label), made on the sequence's first use.
    shared: Vec<Option<Vec<u8>>>,
}

/// A slice to begin: its span (ns from time 0), its lane on the current track, what it shows.
struct Begin<'x> {
    start: u64,
    end: u64,
    lane: u32,
    shows: Shows<'x>,
}

/// What a slice shows, with what its packet needs.
enum Shows<'x> {
    /// A sample of `event` (`trace` mode).
    Sample { event: usize },
    /// A step, with its name (written as is, not interned) and `args`.
    Step { name: String, args: Value },
    /// Another slice (an average, `sample` mode): its name, category and `args`.
    Span {
        name: std::borrow::Cow<'x, str>,
        category: &'static str,
        args: Value,
    },
}

impl<'a, 'd> Slices<'a, 'd> {
    fn new(doc: &'a Document<'d>, lanes: Vec<Vec<u64>>, next_uuid: u64) -> Self {
        Slices {
            doc,
            lanes,
            next_uuid,
            current_track: 0,
            open: Vec::new(),
            ends: Vec::new(),
            begins: Vec::new(),
            shared: vec![None; doc.profile.events.len()],
        }
    }

    fn write(mut self, w: &mut Writer) -> io::Result<()> {
        let drawing = self.doc.drawing;
        let mut gaps = Gaps {
            rest: Some(Box::new(other::gaps(drawing))),
            ..Gaps::default()
        };
        let mut current: Option<u32> = None;
        for pos in 0..drawing.slices.len() {
            let s = drawing.slices[pos];
            if current != Some(s.track) {
                if current == Some(0) {
                    self.rest_of_gaps(&mut gaps, w)?;
                }
                self.close_all(w)?;
                self.start_track(s.track, w)?;
                current = Some(s.track);
            }
            let doc = self.doc;
            let shows = match drawing.what(&s) {
                What::Sample { event, .. } => Shows::Sample { event },
                what => {
                    let (name, category, args) = doc.span_parts(pos);
                    match what {
                        What::Step(_) => Shows::Step {
                            name: name.into_owned(),
                            args,
                        },
                        _ => Shows::Span {
                            name,
                            category,
                            args,
                        },
                    }
                }
            };
            let begin = Begin {
                start: s.start,
                end: s.end,
                lane: s.lane,
                shows,
            };
            self.slice(begin, &mut gaps, w)?;
        }
        if current.is_none() {
            self.start_track(0, w)?;
        }
        if current.is_none_or(|t| t == 0) {
            self.rest_of_gaps(&mut gaps, w)?;
        }
        self.close_all(w)
    }

    /// Begins `b` on the current track, after the `other` stretches (on the `main` track) and
    /// the ends that come before it.
    fn slice(&mut self, b: Begin, gaps: &mut Gaps, w: &mut Writer) -> io::Result<()> {
        if self.current_track == 0 {
            while let Some(gap) = gaps.next_if(|g| (g.from, !g.to) < (b.start, !b.end)) {
                if let Some(later) = self.gap(gap, w)? {
                    gaps.next = Some(later);
                }
            }
        }
        self.close_until(b.start, w)?;
        self.begin(b, w)
    }

    /// A new sequence for `track`'s slices.
    fn start_track(&mut self, track: u32, w: &mut Writer) -> io::Result<()> {
        self.shared.iter_mut().for_each(|s| *s = None);
        let lanes = self.lanes.get(track as usize).map_or(1, |l| l.len().max(1));
        self.open = vec![Vec::new(); lanes];
        self.current_track = track;
        w.start_timed_sequence(Some(self.lane_uuid(0)))?;
        self.ends = (0..lanes).map(|lane| self.end_event(lane, w)).collect();
        self.begins = (0..lanes).map(|lane| self.begin_event(lane, w)).collect();
        Ok(())
    }

    fn rest_of_gaps(&mut self, gaps: &mut Gaps, w: &mut Writer) -> io::Result<()> {
        while let Some(gap) = gaps.next_if(|_| true) {
            if let Some(later) = self.gap(gap, w)? {
                gaps.next = Some(later);
            }
        }
        Ok(())
    }

    /// Ends every open slice that ends by `t`, earliest first (innermost first at a tie).
    fn close_until(&mut self, t: u64, w: &mut Writer) -> io::Result<()> {
        loop {
            let next = (self.open.iter().enumerate())
                .filter_map(|(lane, stack)| stack.last().map(|&(end, _)| (end, lane)))
                .filter(|&(end, _)| end <= t)
                .min();
            let Some((end, lane)) = next else {
                return Ok(());
            };
            self.open[lane].pop();
            self.end(end, lane, w)?;
        }
    }

    fn close_all(&mut self, w: &mut Writer) -> io::Result<()> {
        self.close_until(u64::MAX, w)
    }

    fn end(&mut self, at: u64, lane: usize, w: &mut Writer) -> io::Result<()> {
        let head = w.head_fields(false, Some(at));
        w.packet_with_pieces(&head, &self.ends[lane], &[])
    }

    fn lane_uuid(&self, lane: usize) -> u64 {
        self.lanes
            .get(self.current_track as usize)
            .and_then(|l| l.get(lane))
            .copied()
            .unwrap_or(0)
    }

    /// Describes the CPU track's lanes up to `lane` that are not yet (a drawing made one
    /// iteration at a time finds its `concurrent N` lanes as it goes): `concurrent N`, `tid`
    /// N + 1, as `meta.rs` names them.
    fn describe_lanes(&mut self, lane: usize, w: &mut Writer) -> io::Result<()> {
        let track = self.current_track as usize;
        while self.lanes[track].len() <= lane {
            let n = self.lanes[track].len() as u32;
            let uuid = self.next_uuid;
            self.next_uuid += 1;
            self.lanes[track].push(uuid);
            w.descriptor(TrackDescriptor {
                uuid: Some(uuid),
                thread: Some(ThreadDescriptor {
                    pid: Some(self.doc.cpu_pid as i32),
                    tid: Some(i64::from(n + 1)),
                    thread_name: Some(format!("concurrent {n}")),
                }),
                ..TrackDescriptor::default()
            })?;
            self.open.push(Vec::new());
            let lane = self.lanes[track].len() - 1;
            self.ends.push(self.end_event(lane, w));
            self.begins.push(self.begin_event(lane, w));
        }
        Ok(())
    }

    /// The encoded `TrackEvent` of a slice's end on `lane` of the current track.
    fn end_event(&self, lane: usize, w: &Writer) -> Vec<u8> {
        self.typed_event(track_event::Type::SliceEnd, lane, w)
    }

    /// The encoded type and track of a slice's begin on `lane` of the current track.
    fn begin_event(&self, lane: usize, w: &Writer) -> Vec<u8> {
        self.typed_event(track_event::Type::SliceBegin, lane, w)
    }

    /// A `TrackEvent` of type `kind` on `lane` of the current track (none when it is the
    /// sequence's default), encoded.
    fn typed_event(&self, kind: track_event::Type, lane: usize, w: &Writer) -> Vec<u8> {
        let event = TrackEvent {
            r#type: Some(kind as i32),
            track_uuid: w.track(self.lane_uuid(lane)),
            ..TrackEvent::default()
        };
        event.encode_to_vec()
    }

    /// Begins `s`.
    fn begin(&mut self, s: Begin, w: &mut Writer) -> io::Result<()> {
        let lane = s.lane as usize;
        if lane >= self.open.len() {
            self.describe_lanes(lane, w)?;
        }
        let uuid = self.lane_uuid(lane);
        // The layout nests every slice on its lane, but `other` slices were not part of it: one
        // that this slice would partly overlap (a sample drawn past its own step's end, in the
        // next step) ends here.
        while let Some(&(end, true)) = self.open[lane].last() {
            if end >= s.end {
                break;
            }
            self.open[lane].pop();
            self.end(s.start, lane, w)?;
        }
        self.open[lane].push((s.end, false));
        let mut event = TrackEvent {
            r#type: Some(track_event::Type::SliceBegin as i32),
            track_uuid: w.track(uuid),
            ..TrackEvent::default()
        };
        match s.shows {
            Shows::Sample { event } => {
                return self.sample(event, s.start, lane, w);
            }
            Shows::Step { name, args } => {
                event.category_iids = vec![w.intern.category(super::CPU_CATEGORY)];
                event.name = Some(name);
                event.debug_annotations = w.intern.annotations(&args);
            }
            Shows::Span {
                name,
                category,
                args,
            } => {
                event.category_iids = vec![w.intern.category(category)];
                event.name_iid = Some(w.intern.name(&name));
                event.debug_annotations = w.intern.annotations(&args);
            }
        }
        let mut p = w.head(true, Some(s.start));
        p.track_event = Some(event);
        w.packet(&p)
    }

    /// Begins a sample's slice on `lane`: its type and track, then its event's fields.
    fn sample(&mut self, event: usize, at: u64, lane: usize, w: &mut Writer) -> io::Result<()> {
        if self.shared[event].is_none() {
            let doc = self.doc;
            let e = &doc.profile.events[event];
            let label = DebugAnnotation {
                name_iid: Some(w.intern.arg_name(EVENT_ARG)),
                string_value_iid: Some(w.intern.string(&e.identity().label())),
                ..DebugAnnotation::default()
            };
            let shared = TrackEvent {
                category_iids: vec![w.intern.category(doc.category_of(event))],
                name_iid: Some(w.intern.name(&e.display_name())),
                debug_annotations: vec![label],
                ..TrackEvent::default()
            };
            self.shared[event] = Some(shared.encode_to_vec());
        }
        let head = w.head_fields(true, Some(at));
        let shared = self.shared[event].as_deref().unwrap_or_default();
        w.packet_with_pieces(&head, &self.begins[lane], shared)
    }

    /// Begins the `other` slice of `gap`, on the `main` track; or, when a slice open there
    /// ends inside it (a sample drawn past its own step's end), returns what is left of it
    /// after that slice, to begin in its turn (nothing when nothing is left).
    fn gap(&mut self, gap: Gap, w: &mut Writer) -> io::Result<Option<Gap>> {
        self.close_until(gap.from, w)?;
        if let Some(&(end, false)) = self.open[0].last() {
            if end < gap.to {
                let later = Gap { from: end, ..gap };
                return Ok((later.from < later.to).then_some(later));
            }
        }
        self.open[0].push((gap.to, true));
        let args = serde_json::to_value(OtherArgs::of(&gap)).unwrap_or(Value::Null);
        let event = TrackEvent {
            r#type: Some(track_event::Type::SliceBegin as i32),
            track_uuid: w.track(self.lane_uuid(0)),
            category_iids: vec![w.intern.category(super::CPU_CATEGORY)],
            name_iid: Some(w.intern.name(other::NAME)),
            debug_annotations: w.intern.annotations(&args),
            ..TrackEvent::default()
        };
        let mut p = w.head(true, Some(gap.from));
        p.track_event = Some(event);
        w.packet(&p)?;
        Ok(None)
    }
}

/// The `other` stretches, in time order: one put back to begin later, then those queued, then
/// the rest.
#[derive(Default)]
struct Gaps<'a> {
    next: Option<Gap>,
    queue: VecDeque<Gap>,
    rest: Option<Box<dyn Iterator<Item = Gap> + 'a>>,
}

impl Gaps<'_> {
    /// The next stretch, if `due`.
    fn next_if(&mut self, due: impl Fn(&Gap) -> bool) -> Option<Gap> {
        if self.next.is_none() {
            self.next = self
                .queue
                .pop_front()
                .or_else(|| self.rest.as_mut().and_then(|r| r.next()));
        }
        self.next.take_if(|g| due(g))
    }
}

/// A counter track.
struct CounterTrack {
    uuid: u64,
    pid: u32,
    name: String,
}

/// A reading of a counter track.
struct Reading {
    at: u64,
    /// At one time, the end of a slice's reading (0) comes before the next one's start.
    starts: bool,
    /// Index in [`Counters::tracks`].
    track: usize,
    value: CounterValue,
}

#[derive(Clone, Copy)]
enum CounterValue {
    Bytes(u64),
    Float(f64),
}

/// The counter tracks and their readings, in time order.
struct Counters {
    tracks: Vec<CounterTrack>,
    readings: Vec<Reading>,
}

impl Counters {
    fn of(doc: &Document) -> Counters {
        let mut tracks: Vec<CounterTrack> = Vec::new();
        let mut readings = Vec::new();
        // Counter track uuids come after every process and thread track's.
        let base = (doc.names.processes.len() + doc.names.threads.len()) as u64 + 1;
        let mut track_of = |pid: u32, counter: &str, series: &str| -> usize {
            let name = counter_track_name(counter, series);
            if let Some(i) = tracks.iter().position(|t| t.pid == pid && t.name == name) {
                return i;
            }
            tracks.push(CounterTrack {
                uuid: base + tracks.len() as u64,
                pid,
                name,
            });
            tracks.len() - 1
        };
        let memory = memory::counters(&doc.profile.events, doc.drawing, doc.cpu_pid);
        for (starts, c) in memory {
            for (series, value) in c.args.series() {
                readings.push(Reading {
                    at: c.at_ns,
                    starts,
                    track: track_of(c.pid, memory::COUNTER, series),
                    value: CounterValue::Float(value),
                });
            }
        }
        for c in device_memory::counters(doc.profile, doc.drawing, &doc.gpus) {
            readings.push(Reading {
                at: c.at_ns,
                starts: true,
                track: track_of(c.pid, device_memory::COUNTER, device_memory::Used::SERIES),
                value: CounterValue::Bytes(c.args.bytes()),
            });
        }
        readings.sort_by_key(|r| (r.at, r.starts));
        Counters { tracks, readings }
    }

    fn write(&self, w: &mut Writer) -> io::Result<()> {
        if self.readings.is_empty() {
            return Ok(());
        }
        w.start_timed_sequence(None)?;
        for r in &self.readings {
            let mut event = TrackEvent {
                r#type: Some(track_event::Type::Counter as i32),
                track_uuid: Some(self.tracks[r.track].uuid),
                ..TrackEvent::default()
            };
            match r.value {
                CounterValue::Bytes(b) => event.counter_value = Some(b as i64),
                CounterValue::Float(f) => event.double_counter_value = Some(f),
            }
            let mut p = w.head(false, Some(r.at));
            p.track_event = Some(event);
            w.packet(&p)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

/// The uuid of each CPU samples' track, by its tid.
type SampleTracks = HashMap<u32, u64>;

/// Writes the CPU samples' instants (`samples.rs`), in time order, on a sequence of their own:
/// each a `TYPE_INSTANT` track event on its thread's track (`tracks`, by tid), with the JSON
/// instant's name, category and args.
fn write_samples(doc: &Document, tracks: &SampleTracks, w: &mut Writer) -> io::Result<()> {
    if doc.samples.points.is_empty() {
        return Ok(());
    }
    w.start_timed_sequence(None)?;
    for (pos, point) in doc.samples.points.iter().enumerate() {
        let Some(&uuid) = tracks.get(&point.tid) else {
            continue;
        };
        let (name, args) = doc.sample_parts(pos);
        let event = TrackEvent {
            r#type: Some(track_event::Type::Instant as i32),
            track_uuid: Some(uuid),
            category_iids: vec![w.intern.category(super::samples::SAMPLE_CATEGORY)],
            name_iid: Some(w.intern.name(&name)),
            debug_annotations: w.intern.annotations(&args),
            ..TrackEvent::default()
        };
        let mut p = w.head(true, Some(point.at));
        p.track_event = Some(event);
        w.packet(&p)?;
    }
    Ok(())
}
