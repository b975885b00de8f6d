//! The passes of serde_json over a profile's text: straight into the typed [`Profile`] from a
//! buffered reader (a trace-mode profile of millions of samples is hundreds of megabytes of
//! JSON, and a `serde_json::Value` of it takes ten times that), and, only when that fails, the
//! passes that find out why: the syntax, then the schema, then where the shape is wrong.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};

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
/// through a buffer on each pass (never whole).
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
