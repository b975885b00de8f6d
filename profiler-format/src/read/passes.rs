//! The passes of serde_json over a profile's text: straight into the typed [`Profile`] from a
//! buffered reader (a trace-mode profile of millions of samples is hundreds of megabytes of
//! JSON, and a `serde_json::Value` of it takes ten times that), and, only when that fails, the
//! passes that find out why: the syntax, then the schema, then where the shape is wrong.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use serde::de::{
    self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde::Deserialize;
use serde_json::Deserializer;

use crate::Profile;

/// `visit_*` of the scalars other than strings, for a visitor whose value is an `Option`: they
/// are skipped, as `None`.
macro_rules! skip_scalars {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

/// Bytes read from the file at a time.
const BUFFER: usize = 1 << 20;

/// Where a profile's JSON is read from: bytes in memory, or a regular file, read from its start
/// through a buffer on each pass (held only compacted, by the pass that reads a good profile:
/// [`Source::compact_pass`]).
pub(super) enum Source<'a> {
    /// The bytes of the text.
    Bytes(&'a [u8]),
    /// A regular file (checked when it was opened).
    File(&'a File),
}

/// One pass of serde_json over a [`Source`].
pub(super) trait Pass {
    /// What the pass finds.
    type Output;
    /// Runs the pass on a deserializer over the whole text.
    fn run<'de, R: serde_json::de::Read<'de>>(self, de: &mut Deserializer<R>) -> Self::Output;
}

impl Source<'_> {
    /// Runs `pass` over the whole text, from its start.
    pub(super) fn pass<P: Pass>(&self, pass: P) -> std::io::Result<P::Output> {
        match self {
            Source::Bytes(bytes) => Ok(pass.run(&mut Deserializer::from_slice(bytes))),
            Source::File(file) => {
                let mut file: &File = file;
                file.seek(SeekFrom::Start(0))?;
                let reader = BufReader::with_capacity(BUFFER, file);
                Ok(pass.run(&mut Deserializer::from_reader(reader)))
            }
        }
    }

    /// Runs `pass` over the whole text without the whitespace between its tokens
    /// ([`Compact`]), read into memory first: the same values, read several times faster
    /// (serde_json reads a file a byte at a time through its reader, and a slice at once; a
    /// pretty-printed profile is mostly the indentation of its numbers, one to a line, so the
    /// text held is about a third of the file), but the positions in an error are those of
    /// the compacted text. For the pass that reads a good profile; the passes that say what is
    /// wrong with a bad one read the text as it is.
    pub(super) fn compact_pass<P: Pass>(&self, pass: P) -> std::io::Result<P::Output> {
        match self {
            Source::Bytes(_) => self.pass(pass),
            Source::File(file) => {
                let mut file: &File = file;
                file.seek(SeekFrom::Start(0))?;
                let mut compact = Compact::new(BufReader::with_capacity(BUFFER, file));
                let mut text = Vec::new();
                compact.read_to_end(&mut text)?;
                Ok(pass.run(&mut Deserializer::from_slice(&text)))
            }
        }
    }

    /// Whether the text is empty or only whitespace (read up to its first other byte).
    pub(super) fn is_blank(&self) -> std::io::Result<bool> {
        let blank = |chunk: &[u8]| {
            chunk
                .iter()
                .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        };
        match self {
            Source::Bytes(bytes) => Ok(blank(bytes)),
            Source::File(file) => {
                let mut file: &File = file;
                file.seek(SeekFrom::Start(0))?;
                let mut reader = BufReader::with_capacity(BUFFER, file);
                loop {
                    let chunk = reader.fill_buf()?;
                    if chunk.is_empty() {
                        return Ok(true);
                    }
                    if !blank(chunk) {
                        return Ok(false);
                    }
                    let n = chunk.len();
                    reader.consume(n);
                }
            }
        }
    }
}

/// JSON text read without most of the whitespace between its tokens: in a run of spaces, tabs,
/// line feeds and carriage returns outside a string, only the first byte is kept, and only
/// after a byte of a number or a literal (where it may separate two tokens that would otherwise
/// run together: `[1 2]` stays invalid); the rest is dropped. Strings are passed on as they
/// are (an escaped quote does not end one). So the text reads as the same JSON, valid or not,
/// to the same values.
pub(super) struct Compact<R> {
    inner: R,
    state: State,
}

/// Where [`Compact`] is in the text.
#[derive(Default)]
struct State {
    /// Inside a string; just after its backslash.
    in_string: bool,
    escaped: bool,
    /// The last byte passed on belongs to a number or a literal.
    after_token: bool,
}

impl<R: BufRead> Compact<R> {
    pub(super) fn new(inner: R) -> Self {
        Compact {
            inner,
            state: State::default(),
        }
    }
}

/// What a byte is to [`Compact`] outside a string.
const SPACE: u8 = 0;
const DELIMITER: u8 = 1;
const TOKEN: u8 = 2;
const QUOTE: u8 = 3;

/// [`SPACE`], [`DELIMITER`], [`QUOTE`] or (any other byte) [`TOKEN`], by byte.
const CLASS: [u8; 256] = {
    let mut class = [TOKEN; 256];
    class[b' ' as usize] = SPACE;
    class[b'\n' as usize] = SPACE;
    class[b'\r' as usize] = SPACE;
    class[b'\t' as usize] = SPACE;
    class[b'{' as usize] = DELIMITER;
    class[b'}' as usize] = DELIMITER;
    class[b'[' as usize] = DELIMITER;
    class[b']' as usize] = DELIMITER;
    class[b':' as usize] = DELIMITER;
    class[b',' as usize] = DELIMITER;
    class[b'"' as usize] = QUOTE;
    class
};

impl State {
    /// Passes on what it can of `chunk` into `out` (from `n`); how much of `chunk` it used and
    /// the new `n`.
    fn compact(&mut self, chunk: &[u8], out: &mut [u8], mut n: usize) -> (usize, usize) {
        let mut i = 0;
        while i < chunk.len() && n < out.len() {
            if self.in_string {
                // Up to the next quote or backslash, at once.
                let room = (out.len() - n).min(chunk.len() - i);
                let run = match self.escaped {
                    true => 0,
                    false => (chunk[i..i + room].iter())
                        .position(|&b| b == b'"' || b == b'\\')
                        .unwrap_or(room),
                };
                out[n..n + run].copy_from_slice(&chunk[i..i + run]);
                (i, n) = (i + run, n + run);
                if run == room {
                    continue;
                }
                let b = chunk[i];
                out[n] = b;
                (i, n) = (i + 1, n + 1);
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else {
                    self.in_string = false;
                    self.after_token = false;
                }
                continue;
            }
            // Outside strings, without a branch on whitespace: each byte is written, and
            // counted only when kept.
            let end = i + (out.len() - n).min(chunk.len() - i);
            let mut after_token = self.after_token;
            while i < end {
                let b = chunk[i];
                let class = CLASS[b as usize];
                if class == QUOTE {
                    break;
                }
                out[n] = b;
                n += usize::from(class != SPACE || after_token);
                after_token = class == TOKEN;
                i += 1;
            }
            self.after_token = after_token;
            if i < end {
                // A quote: a string begins.
                out[n] = b'"';
                (i, n) = (i + 1, n + 1);
                self.in_string = true;
            }
        }
        (i, n)
    }
}

impl<R: BufRead> Read for Compact<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n == 0 && !out.is_empty() {
            let chunk = self.inner.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            let (used, written) = self.state.compact(chunk, out, n);
            self.inner.consume(used);
            n = written;
        }
        Ok(n)
    }
}

/// The profile, typed, and nothing after it but whitespace. The fast pass: no path is tracked,
/// so a failure says little; [`Located`] says where.
pub(super) struct Typed;

impl Pass for Typed {
    type Output = Result<Profile, serde_json::Error>;
    fn run<'de, R: serde_json::de::Read<'de>>(self, de: &mut Deserializer<R>) -> Self::Output {
        let profile = Profile::deserialize(&mut *de)?;
        de.end()?;
        Ok(profile)
    }
}

/// The profile, typed, tracking where in the document each value is, for the message of a
/// text that is JSON with the right schema but the wrong shape.
pub(super) struct Located;

impl Pass for Located {
    type Output = Result<Profile, serde_path_to_error::Error<serde_json::Error>>;
    fn run<'de, R: serde_json::de::Read<'de>>(self, de: &mut Deserializer<R>) -> Self::Output {
        serde_path_to_error::deserialize(&mut *de)
    }
}

/// The syntax of the whole text, and the top-level `"schema"` when it is a string (the last one,
/// if the key is repeated): what is read before the shape is looked at, skipping every other
/// value without building it.
pub(super) struct Schema;

impl Pass for Schema {
    type Output = Result<Option<String>, serde_json::Error>;
    fn run<'de, R: serde_json::de::Read<'de>>(self, de: &mut Deserializer<R>) -> Self::Output {
        let schema = de.deserialize_any(FieldOf {
            key: "schema",
            seed: MaybeString,
        })?;
        de.end()?;
        Ok(schema.flatten())
    }
}

/// The `id` of `events[index]`, when it is a string: names the event in a message about it.
pub(super) struct EventId(pub(super) usize);

impl Pass for EventId {
    type Output = Option<String>;
    fn run<'de, R: serde_json::de::Read<'de>>(self, de: &mut Deserializer<R>) -> Self::Output {
        let events = de
            .deserialize_any(FieldOf {
                key: "events",
                seed: Element {
                    index: self.0,
                    seed: FieldOf {
                        key: "id",
                        seed: MaybeString,
                    },
                },
            })
            .ok()?;
        events.flatten().flatten().flatten()
    }
}

/// In an object, the value of `key` read by `seed` (`None` when the key is absent, or when the
/// value is not an object); every other value is skipped.
#[derive(Clone, Copy)]
struct FieldOf<S> {
    key: &'static str,
    seed: S,
}

impl<'de, S> Visitor<'de> for FieldOf<S>
where
    S: DeserializeSeed<'de> + Copy,
{
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<KeyIs>()? {
            if key.0 == self.key {
                found = Some(map.next_value_seed(self.seed)?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    skip_scalars!();
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
}

impl<'de, S> DeserializeSeed<'de> for FieldOf<S>
where
    S: DeserializeSeed<'de> + Copy,
{
    type Value = Option<S::Value>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// An object key, kept only as far as comparing it needs (keys are short).
struct KeyIs(String);

impl<'de> Deserialize<'de> for KeyIs {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(KeyIs)
    }
}

/// In an array, element `index` read by `seed` (`None` when the array is shorter, or the value
/// is not an array); every other element is skipped.
#[derive(Clone, Copy)]
struct Element<S> {
    index: usize,
    seed: S,
}

impl<'de, S> Visitor<'de> for Element<S>
where
    S: DeserializeSeed<'de> + Copy,
{
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        let mut i = 0;
        loop {
            if i == self.index {
                match seq.next_element_seed(self.seed)? {
                    Some(v) => found = Some(v),
                    None => break,
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            i += 1;
        }
        Ok(found)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    skip_scalars!();
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
}

impl<'de, S> DeserializeSeed<'de> for Element<S>
where
    S: DeserializeSeed<'de> + Copy,
{
    type Value = Option<S::Value>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// A value kept when it is a string, skipped (as `None`) otherwise.
#[derive(Clone, Copy)]
struct MaybeString;

impl<'de> Visitor<'de> for MaybeString {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    skip_scalars!();
}

impl<'de> DeserializeSeed<'de> for MaybeString {
    type Value = Option<String>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` through [`Compact`], its input read `inner` bytes at a time and its output asked
    /// for `ask` bytes at a time.
    fn compacted(text: &[u8], inner: usize, ask: usize) -> Vec<u8> {
        let mut c = Compact::new(BufReader::with_capacity(inner, text));
        let mut out = Vec::new();
        let mut buf = vec![0u8; ask];
        loop {
            let n = c.read(&mut buf).unwrap();
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// Texts valid and not, with whitespace everywhere JSON allows it and in strings.
    const TEXTS: [&str; 16] = [
        "{\n  \"a\" : [ 1 ,\n\t2 , -3.5e2 ] ,\r\n \"b\":{ } }",
        "  \"  spaced \\\"quoted\\\" \\\\\"  ",
        "[\"a\\\\\", \"b\\\\\\\"c\", \"\\u0022 \"]",
        "[ true , false , null ]",
        "[1 2]",
        "1 2",
        "tr ue",
        "[\"x\" \"y\"]",
        "{\"a\" 1}",
        "[1 , ]",
        "- 1",
        "[ ]  x",
        "",
        "   ",
        "{\"schema\": \"profiler-core/prof/v1\",\n    \"n\": [\n      12,\n      345\n    ]\n}",
        "\"unterminated  ",
    ];

    /// The compacted text reads as the same JSON: the same value when valid, an error when not.
    #[test]
    fn compacted_text_reads_the_same() {
        for text in TEXTS {
            let want: Result<serde_json::Value, _> = serde_json::from_str(text);
            for (inner, ask) in [(1, 1), (1, 2), (3, 1), (2, 5), (7, 3), (4096, 4096)] {
                let got = compacted(text.as_bytes(), inner, ask);
                let read: Result<serde_json::Value, _> = serde_json::from_slice(&got);
                match (&want, &read) {
                    (Ok(w), Ok(r)) => assert_eq!(w, r, "{text:?}"),
                    (Err(_), Err(_)) => {}
                    _ => panic!("{text:?} -> {:?}: {want:?} against {read:?}", got),
                }
                // Never longer, and the same whatever the buffers.
                assert!(got.len() <= text.len(), "{text:?}");
                assert_eq!(got, compacted(text.as_bytes(), 4096, 4096), "{text:?}");
            }
        }
        // One byte of a run kept after a number, none after anything else.
        let want = "{\"a\":[1 ,2 ,-3.5e2 ],\"b\":{}}";
        assert_eq!(
            String::from_utf8(compacted(TEXTS[0].as_bytes(), 2, 3)).unwrap(),
            want
        );
        assert_eq!(compacted(b"[1 2]", 1, 1), b"[1 2]");
    }

    /// Random JSON values, pretty-printed and with more whitespace, read back the same.
    #[test]
    fn random_values_read_back() {
        let mut seed = 7u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        fn value(depth: u32, next: &mut dyn FnMut() -> u64) -> serde_json::Value {
            match next() % if depth > 3 { 4 } else { 6 } {
                0 => serde_json::json!(next() % 1_000_000),
                1 => serde_json::json!(-((next() % 1000) as i64)),
                2 => {
                    let chars = [" ", "\"", "\\", "a", "\n", "\t", "é", "}", ","];
                    let n = next() % 6;
                    let s: String = (0..n).map(|_| chars[(next() % 9) as usize]).collect();
                    serde_json::Value::String(s)
                }
                3 => [
                    serde_json::json!(true),
                    serde_json::json!(false),
                    serde_json::Value::Null,
                ][(next() % 3) as usize]
                    .clone(),
                4 => (0..next() % 4).map(|_| value(depth + 1, next)).collect(),
                _ => {
                    let mut m = serde_json::Map::new();
                    for k in 0..next() % 4 {
                        m.insert(format!("k {k}\""), value(depth + 1, next));
                    }
                    serde_json::Value::Object(m)
                }
            }
        }
        for _ in 0..500 {
            let v = value(0, &mut next);
            let text = serde_json::to_string_pretty(&v)
                .unwrap()
                .replace(",\n", " ,\r\n\t");
            let ask = (next() % 9 + 1) as usize;
            let inner = (next() % 9 + 1) as usize;
            let got = compacted(text.as_bytes(), inner, ask);
            let back: serde_json::Value = serde_json::from_slice(&got).unwrap();
            assert_eq!(back, v, "{text}");
        }
    }
}
