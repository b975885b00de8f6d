//! The document written as text, fast: the bytes `serde_json::to_writer_pretty` makes of
//! [`Document`], produced without going through serde for the spans of samples, which are
//! nearly all of a large trace (ten million of them make 4.7 GB of JSON).
//!
//! The spans of one event's samples differ only in six numbers (`dur_ns`, `iteration`,
//! `offset_ns`, `dur`, `tid`, `ts`). So each event's span is serialized once, through serde,
//! with a sentinel in place of each of them, and cut at the sentinels into seven pieces of
//! text; a sample's span is then the pieces with its numbers between them, formatted as
//! serde_json formats them. An event whose text holds a sentinel elsewhere (in its id, say)
//! is written through serde. Everything else (metadata, steps, `other` spans, counters) is
//! written through serde with a formatter that indents as the pretty one would at that depth.
//! The unit tests check that the bytes are those of the value, for every shape of drawing.

use std::io::{self, Write};
use std::sync::mpsc;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

use super::emit::{Document, Element, SampleValues};
use super::layout::What;
use super::ts_dur;

/// Bytes gathered before they are handed to the writer's thread.
const CHUNK: usize = 1 << 20;

/// Writes `doc` to `out` as `serde_json::to_writer_pretty` would. The text is made on this
/// thread and written on another, in chunks: writing gigabytes costs the kernel (or a gzip
/// encoder in `out`) about as much time as making them, and the two overlap.
pub(super) fn write(doc: &Document, out: impl Write + Send) -> io::Result<()> {
    in_chunks(out, |sink| make(doc, sink))
}

/// Runs `make`, which fills the [`Sink`] it is given, on this thread, while another writes the
/// chunks it hands over to `out` (the Perfetto trace is written so too).
pub(super) fn in_chunks(
    out: impl Write + Send,
    make: impl FnOnce(&mut Sink) -> io::Result<()>,
) -> io::Result<()> {
    // Chunks made and not yet written: a few megabytes at most.
    let (full, to_write) = mpsc::sync_channel::<Vec<u8>>(2);
    let (written, to_reuse) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || drain(out, to_write, written));
        let mut sink = Sink {
            buf: Vec::with_capacity(CHUNK + 4096),
            full,
            reuse: to_reuse,
        };
        let made = make(&mut sink).and_then(|()| sink.hand_over());
        // Closes the channel, so that the writer stops.
        drop(sink);
        let wrote = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the trace's writer thread panicked")));
        // A failed write stops the making too; the writer's error says why.
        wrote.and(made)
    })
}

/// Writes the chunks that come to `out`, handing each back empty. `out` is not flushed (as
/// `serde_json::to_writer` does not): flushing a gzip encoder would add a sync point to its
/// stream, and its bytes would no longer be those of one compression of the whole.
fn drain(
    mut out: impl Write,
    chunks: mpsc::Receiver<Vec<u8>>,
    reuse: mpsc::Sender<Vec<u8>>,
) -> io::Result<()> {
    for mut chunk in chunks {
        out.write_all(&chunk)?;
        chunk.clear();
        // The maker may be done already.
        let _ = reuse.send(chunk);
    }
    Ok(())
}

/// Makes the text of `doc`, chunk by chunk, into `sink`.
fn make(doc: &Document, sink: &mut Sink) -> io::Result<()> {
    let buf = &mut sink.buf;
    buf.extend_from_slice(b"{\n  \"deviceProperties\": [],\n  \"displayTimeUnit\": \"ms\",\n");
    buf.extend_from_slice(b"  \"distributedInfo\": ");
    at_depth(buf, 1, &doc.distributed_info())?;
    buf.extend_from_slice(b",\n  \"otherData\": ");
    at_depth(buf, 1, &doc.other_data())?;
    buf.extend_from_slice(b",\n  \"schemaVersion\": 1,\n  \"traceEvents\": [");
    let mut templates: Vec<Option<Option<Template>>> = vec![None; doc.profile.events.len()];
    let mut first = true;
    for element in doc.elements() {
        sink.buf
            .extend_from_slice(if first { b"\n    " } else { b",\n    " });
        first = false;
        let written = match element {
            Element::Span(pos) => span(doc, pos, &mut templates, &mut sink.buf),
            _ => false,
        };
        if !written {
            let mut ser = serde_json::Serializer::with_formatter(&mut sink.buf, Indented::at(2));
            doc.serialize_element(&element, &mut ser)
                .map_err(io::Error::from)?;
        }
        sink.hand_over_if_full()?;
    }
    let buf = &mut sink.buf;
    buf.extend_from_slice(if first { b"]" } else { b"\n  ]" });
    buf.extend_from_slice(b",\n  \"traceName\": ");
    at_depth(buf, 1, &doc.trace_name())?;
    buf.extend_from_slice(b"\n}");
    Ok(())
}

/// Writes the span of the slice at `pos` from its event's template, when it shows a sample and
/// its event has one; false otherwise (nothing written).
fn span(
    doc: &Document,
    pos: usize,
    templates: &mut [Option<Option<Template>>],
    buf: &mut Vec<u8>,
) -> bool {
    let s = &doc.drawing.slices[pos];
    let What::Sample { event, sample } = doc.drawing.what(s) else {
        return false;
    };
    let template = templates[event].get_or_insert_with(|| Template::of(doc, event));
    let Some(template) = template.as_ref() else {
        return false;
    };
    let e = &doc.profile.events[event];
    let (ts, dur) = ts_dur(s.start, s.end);
    let p = &template.pieces;
    let mut f = CompactFormatter;
    // Writing to a Vec cannot fail.
    buf.extend_from_slice(&p[0]);
    let _ = f.write_u64(buf, e.samples_ns[sample]);
    buf.extend_from_slice(&p[1]);
    let _ = f.write_u32(buf, e.sample_iters[sample]);
    buf.extend_from_slice(&p[2]);
    let _ = f.write_u64(buf, e.offsets_ns[sample]);
    buf.extend_from_slice(&p[3]);
    float(buf, dur);
    buf.extend_from_slice(&p[4]);
    let _ = f.write_u32(buf, doc.tids[s.track as usize][s.lane as usize]);
    buf.extend_from_slice(&p[5]);
    float(buf, ts);
    buf.extend_from_slice(&p[6]);
    true
}

/// A float as serde_json writes it (`null` when it is not finite).
fn float(buf: &mut Vec<u8>, v: f64) {
    let mut f = CompactFormatter;
    let _ = if v.is_finite() {
        f.write_f64(buf, v)
    } else {
        f.write_null(buf)
    };
}

/// The seven pieces of text around the six numbers of an event's sample spans.
#[derive(Clone)]
struct Template {
    pieces: [Vec<u8>; 7],
}

/// Stand-ins for the numbers of a sample's span, in the order they appear in its text (keys
/// sorted: `args.dur_ns`, `args.iteration`, `args.offset_ns`, `dur`, `tid`, `ts`).
const SENTINELS: SampleValues = SampleValues {
    dur_ns: u64::MAX - 1,
    iteration: u32::MAX - 1,
    offset_ns: u64::MAX - 2,
    dur: 1.234_567_890_123_456_7e300,
    tid: u32::MAX - 2,
    ts: 7.654_321_098_765_432e299,
};

impl Template {
    /// The template of `event`'s sample spans: its span with the [`SENTINELS`], serialized as
    /// an element of `traceEvents` and cut at them; `None` when a sentinel's text is not found
    /// exactly once, in its place.
    fn of(doc: &Document, event: usize) -> Option<Template> {
        let mut text = Vec::new();
        let span = doc.sample_span(event, SENTINELS);
        span.serialize(&mut serde_json::Serializer::with_formatter(
            &mut text,
            Indented::at(2),
        ))
        .ok()?;
        let s = SENTINELS;
        let mut f = CompactFormatter;
        let marks: [Vec<u8>; 6] = [
            number(|b| f.write_u64(b, s.dur_ns)),
            number(|b| f.write_u32(b, s.iteration)),
            number(|b| f.write_u64(b, s.offset_ns)),
            number(|b| f.write_f64(b, s.dur)),
            number(|b| f.write_u32(b, s.tid)),
            number(|b| f.write_f64(b, s.ts)),
        ];
        let mut pieces: [Vec<u8>; 7] = Default::default();
        let mut rest = text.as_slice();
        for (i, mark) in marks.iter().enumerate() {
            let at = find(rest, mark)?;
            pieces[i] = rest[..at].to_vec();
            rest = &rest[at + mark.len()..];
        }
        pieces[6] = rest.to_vec();
        // Each sentinel exactly once: found in order above, and nowhere else.
        let once = marks.iter().all(|m| count(&text, m) == 1);
        once.then_some(Template { pieces })
    }
}

/// The text `write` makes.
fn number(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> Vec<u8> {
    let mut b = Vec::new();
    let _ = write(&mut b);
    b
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// How many times `needle` occurs in `hay` (overlaps counted).
fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// Serializes `value` into `buf` as the pretty formatter would at `depth`.
fn at_depth(buf: &mut Vec<u8>, depth: usize, value: &impl Serialize) -> io::Result<()> {
    value
        .serialize(&mut serde_json::Serializer::with_formatter(
            buf,
            Indented::at(depth),
        ))
        .map_err(io::Error::from)
}

/// The chunk being made, and the way to the writer's thread: full chunks go there, written
/// ones come back to be filled again.
pub(super) struct Sink {
    /// The chunk being made.
    pub(super) buf: Vec<u8>,
    full: mpsc::SyncSender<Vec<u8>>,
    reuse: mpsc::Receiver<Vec<u8>>,
}

impl Sink {
    /// Hands the chunk over once it holds [`CHUNK`] bytes.
    pub(super) fn hand_over_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() < CHUNK {
            return Ok(());
        }
        let next = self
            .reuse
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK + 4096));
        let chunk = std::mem::replace(&mut self.buf, next);
        self.full.send(chunk).map_err(|_| stopped())
    }

    /// Hands the last chunk over.
    fn hand_over(&mut self) -> io::Result<()> {
        let last = std::mem::take(&mut self.buf);
        self.full.send(last).map_err(|_| stopped())
    }
}

/// The error of a maker whose writer has stopped (the writer's own error is the one reported).
fn stopped() -> io::Error {
    io::Error::other("the trace's writer stopped")
}

/// serde_json's `PrettyFormatter` (two spaces a level), started at a depth: a value written
/// with it at depth `d` is the text the pretty formatter makes of it at that depth of a larger
/// document.
struct Indented {
    depth: usize,
    has_value: bool,
}

impl Indented {
    fn at(depth: usize) -> Self {
        Indented {
            depth,
            has_value: false,
        }
    }

    fn indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(bracket)
    }

    fn item<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(w)
    }
}

impl Formatter for Indented {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}
