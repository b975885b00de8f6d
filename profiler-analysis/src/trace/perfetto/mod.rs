//! The drawing as a Perfetto protobuf trace (`.pftrace`): the slices, tracks and counters of
//! the JSON trace ([module documentation](super)), in the format Perfetto records natively, which
//! its UI opens at sizes where the JSON trace is too large to load (ten million samples: under
//! a gigabyte against 4.7 GB of JSON).
//!
//! # What is written
//!
//! A `Trace` is a sequence of `TracePacket`s (`Trace.packet`, field 1), each written as soon as
//! it is made: the file is the concatenation of length-delimited packets, so nothing but the
//! drawing (40 bytes a slice, shared with the JSON trace) and one chunk of output is held.
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
//!   name, category and `args` as debug annotations (strings, unsigned and signed integers,
//!   floats and booleans as such). Each track's events are written in time order (an end
//!   before a begin at the same time, a parent before its child), on a packet sequence of its
//!   own, so that the trace processor never has to reorder them.
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
//! their names as plain strings (each is used once).
//!
//! # How a sample's begin is made
//!
//! Ten million samples are twenty million packets, so a sample's begin is made from pieces: the
//! fields every sample of its event shares (name, category and the `args` but `iteration`,
//! `dur_ns` and `offset_ns`) are encoded once per event; each sample encodes only its own
//! fields (type, track, those three `args`) and its packet's, and the event's bytes are appended
//! to its `TrackEvent`. Protobuf reads a message whose fields come in two runs as the one
//! message (repeated fields are appended, in order), so the packet is the one prost would have
//! encoded with every field set, but for the order of the annotations. All encoding is prost's
//! (the messages generated from Perfetto's protos, `protos.rs`); only the two keys of the
//! length-delimited fields written around those pieces are spelled out here.

use std::collections::HashMap;
use std::io::{self, Write};

use prost::Message;
use serde_json::Value;

use super::emit::{Document, OtherArgs};
use super::layout::{Slice, What};
use super::other::{self, Gap};
use super::stream::{self, Sink};
use super::{device_memory, memory};

// Generated: some messages (the whole `Trace`) only the tests decode.
#[allow(dead_code)]
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
        let lanes = w.tracks(doc, &counters)?;
        Slices::new(doc, &lanes).write(&mut w)?;
        counters.write(&mut w)
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

    /// Writes the packet `head` whose `TrackEvent` is `own` (if any) followed by the encoded
    /// fields `shared` (see "How a sample's begin is made").
    fn packet_with_shared(
        &mut self,
        head: &Head,
        own: Option<&TrackEvent>,
        shared: &[u8],
    ) -> io::Result<()> {
        let own_len = own.map_or(0, Message::encoded_len);
        let event_len = own_len + shared.len();
        let len = head.encoded_len() + 1 + prost::length_delimiter_len(event_len) + event_len;
        let buf = &mut self.out.buf;
        buf.push(PACKET_KEY);
        put_length(len, buf);
        put(head, buf);
        buf.push(TRACK_EVENT_KEY);
        put_length(event_len, buf);
        if let Some(own) = own {
            put(own, buf);
        }
        buf.extend_from_slice(shared);
        self.hand_over_if_full()
    }

    fn hand_over_if_full(&mut self) -> io::Result<()> {
        self.out.hand_over_if_full()
    }

    /// Writes the track descriptors (on the first sequence); the uuid of each lane's track
    /// (`[track][lane]`).
    fn tracks(&mut self, doc: &Document, counters: &Counters) -> io::Result<Vec<Vec<u64>>> {
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
        for t in &doc.names.threads {
            let id = uuid();
            if let Some(slot) = lanes
                .get_mut(t.track as usize)
                .and_then(|l| l.get_mut(t.lane as usize))
            {
                *slot = id;
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
        Ok(lanes)
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

/// The `args` each sample's begin carries itself (`trace` mode), in this order.
const SAMPLE_ARGS: [&str; 3] = ["iteration", "dur_ns", "offset_ns"];

/// The slices, track by track, each track's in time order with the `other` slices among the
/// `main` track's.
struct Slices<'a, 'd> {
    doc: &'a Document<'d>,
    /// `[track][lane]`: the uuid of each lane's track.
    lanes: &'a [Vec<u64>],
    /// The drawing's track being written.
    current_track: u32,
    /// Per lane of the current track: the ends of the slices open on it, innermost last, and
    /// whether each is an `other` slice.
    open: Vec<Vec<(u64, bool)>>,
    /// Per lane of the current track: the encoded `TrackEvent` of a slice's end.
    ends: Vec<Vec<u8>>,
    /// Per event: the encoded fields its samples share, made on the sequence's first use.
    shared: Vec<Option<Vec<u8>>>,
    /// A sample's own fields, reused.
    own: TrackEvent,
    /// The values of [`SAMPLE_ARGS`] of the slices from the last multiple of [`AHEAD`] on.
    ahead: [[u64; 3]; AHEAD],
}

/// How many slices' sample values are read at a time. In time order, consecutive slices are
/// mostly different events' samples, each in arrays of its own, so each value read is a cache
/// miss: read in a loop of their own, independent of one another, the processor overlaps them.
const AHEAD: usize = 64;

impl<'a, 'd> Slices<'a, 'd> {
    fn new(doc: &'a Document<'d>, lanes: &'a [Vec<u64>]) -> Self {
        let annotation = DebugAnnotation::default();
        Slices {
            doc,
            lanes,
            current_track: 0,
            open: Vec::new(),
            ends: Vec::new(),
            shared: vec![None; doc.profile.events.len()],
            ahead: [[0; 3]; AHEAD],
            own: TrackEvent {
                r#type: Some(track_event::Type::SliceBegin as i32),
                debug_annotations: vec![annotation; SAMPLE_ARGS.len()],
                ..TrackEvent::default()
            },
        }
    }

    fn write(mut self, w: &mut Writer) -> io::Result<()> {
        let drawing = self.doc.drawing;
        let mut gaps = Gaps {
            rest: Box::new(other::gaps(drawing)),
            next: None,
        };
        let mut current: Option<u32> = None;
        for pos in 0..drawing.slices.len() {
            if pos % AHEAD == 0 {
                self.gather(pos);
            }
            let s = drawing.slices[pos];
            if current != Some(s.track) {
                if current == Some(0) {
                    self.rest_of_gaps(&mut gaps, w)?;
                }
                self.close_all(w)?;
                self.start_track(s.track, w)?;
                current = Some(s.track);
            }
            if s.track == 0 {
                while let Some(gap) = gaps.next_if(|g| (g.from, !g.to) < (s.start, !s.end)) {
                    if let Some(later) = self.gap(gap, w)? {
                        gaps.next = Some(later);
                    }
                }
            }
            self.close_until(s.start, w)?;
            self.begin(pos, &s, w)?;
        }
        if current.is_none() {
            self.start_track(0, w)?;
        }
        if current.is_none_or(|t| t == 0) {
            self.rest_of_gaps(&mut gaps, w)?;
        }
        self.close_all(w)
    }

    /// Reads the sample values of the slices from `from` on (see [`AHEAD`]).
    fn gather(&mut self, from: usize) {
        let drawing = self.doc.drawing;
        let events = &self.doc.profile.events;
        let to = drawing.slices.len().min(from + AHEAD);
        for (slot, s) in self.ahead.iter_mut().zip(&drawing.slices[from..to]) {
            if let What::Sample { event, sample } = drawing.what(s) {
                let e = &events[event];
                *slot = [
                    u64::from(e.sample_iters[sample]),
                    e.samples_ns[sample],
                    e.offsets_ns[sample],
                ];
            }
        }
    }

    /// A new sequence for `track`'s slices.
    fn start_track(&mut self, track: u32, w: &mut Writer) -> io::Result<()> {
        self.shared.iter_mut().for_each(|s| *s = None);
        let lanes = self.lanes.get(track as usize).map_or(1, |l| l.len().max(1));
        self.open = vec![Vec::new(); lanes];
        self.current_track = track;
        w.start_timed_sequence(Some(self.lane_uuid(0)))?;
        self.ends = (0..lanes)
            .map(|lane| {
                let end = TrackEvent {
                    r#type: Some(track_event::Type::SliceEnd as i32),
                    track_uuid: w.track(self.lane_uuid(lane)),
                    ..TrackEvent::default()
                };
                end.encode_to_vec()
            })
            .collect();
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
        w.packet_with_shared(&head, None, &self.ends[lane])
    }

    fn lane_uuid(&self, lane: usize) -> u64 {
        self.lanes
            .get(self.current_track as usize)
            .and_then(|l| l.get(lane))
            .copied()
            .unwrap_or(0)
    }

    /// Begins the slice at `pos` (`s`).
    fn begin(&mut self, pos: usize, s: &Slice, w: &mut Writer) -> io::Result<()> {
        let lane = s.lane as usize;
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
        if let What::Sample { event, .. } = self.doc.drawing.what(s) {
            return self.sample(pos, event, s.start, uuid, w);
        }
        let (name, category, args) = self.doc.span_parts(pos);
        let is_step = matches!(self.doc.drawing.what(s), What::Step(_));
        let event = TrackEvent {
            r#type: Some(track_event::Type::SliceBegin as i32),
            track_uuid: w.track(uuid),
            category_iids: vec![w.intern.category(category)],
            name_iid: (!is_step).then(|| w.intern.name(&name)),
            name: is_step.then(|| name.into_owned()),
            debug_annotations: w.intern.annotations(&args),
            ..TrackEvent::default()
        };
        let mut p = w.head(true, Some(s.start));
        p.track_event = Some(event);
        w.packet(&p)
    }

    /// Begins a sample's slice, from its event's shared fields.
    fn sample(
        &mut self,
        pos: usize,
        event: usize,
        at: u64,
        uuid: u64,
        w: &mut Writer,
    ) -> io::Result<()> {
        if self.shared[event].is_none() {
            let doc = self.doc;
            let e = &doc.profile.events[event];
            let shared = TrackEvent {
                category_iids: vec![w.intern.category(doc.category_of(event))],
                name_iid: Some(w.intern.name(&e.name)),
                debug_annotations: w.intern.annotations(&doc.shared_sample_args(event)),
                ..TrackEvent::default()
            };
            self.shared[event] = Some(shared.encode_to_vec());
            for (a, name) in self.own.debug_annotations.iter_mut().zip(SAMPLE_ARGS) {
                a.name_iid = Some(w.intern.arg_name(name));
            }
        }
        let values = self.ahead[pos % AHEAD];
        for (a, v) in self.own.debug_annotations.iter_mut().zip(values) {
            a.uint_value = Some(v);
        }
        self.own.track_uuid = w.track(uuid);
        let head = w.head_fields(true, Some(at));
        let shared = self.shared[event].as_deref().unwrap_or_default();
        w.packet_with_shared(&head, Some(&self.own), shared)
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

/// The `other` stretches, in time order, and one put back to begin later.
struct Gaps<'a> {
    rest: Box<dyn Iterator<Item = Gap> + 'a>,
    next: Option<Gap>,
}

impl Gaps<'_> {
    /// The next stretch, if `due`.
    fn next_if(&mut self, due: impl Fn(&Gap) -> bool) -> Option<Gap> {
        if self.next.is_none() {
            self.next = self.rest.next();
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
        for (i, c) in memory.enumerate() {
            for (series, value) in c.args.series() {
                readings.push(Reading {
                    at: c.at_ns,
                    starts: i % 2 == 0,
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
