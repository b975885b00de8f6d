//! Reading `prof.json` back, with a clear message for every way the input can be wrong
//! ([`load_profile`], [`parse_profile`], [`LoadError`]): the passes of serde_json over the text
//! (`passes.rs`), then the schema checks of what was read (`check.rs`).

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::error::Category;

use crate::write::shorten;
use crate::{Profile, MERGED_SCHEMA, SCHEMA, SCHEMAS};

use check::check;
pub use check::MAX_NS;
use passes::Source;

mod check;
mod passes;

/// Why a profile could not be used. Its `Display` names the file, the problem and the fix.
#[derive(Debug)]
pub enum LoadError {
    /// The file does not exist.
    Missing(PathBuf),
    /// The file could not be read.
    Io(PathBuf, std::io::Error),
    /// The file holds nothing, or only whitespace.
    Empty(PathBuf),
    /// The file ends in the middle of the JSON (an interrupted write or copy).
    Truncated(PathBuf),
    /// The file is not JSON.
    NotJson(PathBuf, serde_json::Error),
    /// The JSON is not a profiler-core profile of a schema this build reads.
    Schema(PathBuf, Option<String>),
    /// The JSON has the right schema name but not the right shape: the file, its schema (as
    /// the file names it), and what is wrong.
    Invalid(PathBuf, String, String),
    /// The profile holds no event.
    NoEvents(PathBuf),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Missing(p) => write!(
                f,
                "error: {}: no such file\n  = help: pass the prof.json a profiled run wrote \
                 (PROF_OUT sets where)",
                p.display()
            ),
            LoadError::Io(p, e) => write!(
                f,
                "error: cannot read {}: {e}\n  = help: {}",
                p.display(),
                match e.kind() {
                    std::io::ErrorKind::PermissionDenied => {
                        "read it as a user who may (its owner), or copy it where you can"
                    }
                    _ => "pass a readable prof.json (a regular file) written by profiler-core",
                }
            ),
            LoadError::Empty(p) => write!(
                f,
                "error: {}: the file is empty\n  = help: the run that should have written it \
                 may have failed or not finished; profiles are written when the schedule \
                 completes or the program exits",
                p.display()
            ),
            LoadError::Truncated(p) => write!(
                f,
                "error: {}: the JSON ends early (the file is truncated)\n  = help: the run that \
                 wrote it may have been killed; profiles are written atomically, so check that \
                 the file was copied whole",
                p.display()
            ),
            LoadError::NotJson(p, e) => write!(
                f,
                "error: {}: not JSON (line {}, column {}: {e})\n  = help: pass a prof.json \
                 written by profiler-core",
                p.display(),
                e.line(),
                e.column()
            ),
            LoadError::Schema(p, found) => match found {
                Some(found) if found == MERGED_SCHEMA => write!(
                    f,
                    "error: {}: this is the output of `prof merge` (schema `{found}`), not a \
                     run's prof.json\n  = help: give prof the runs' own files (prof merge \
                     prof-rank0.json prof-rank1.json ...)",
                    p.display()
                ),
                Some(found) => write!(
                    f,
                    "error: {}: schema `{found}` is not one this tool reads (expected \
                     `{SCHEMA}` or `{}`)\n  = help: use the prof tool of the profiler-core \
                     version that wrote the file",
                    p.display(),
                    SCHEMAS[1]
                ),
                None => write!(
                    f,
                    "error: {}: not a profiler-core profile (no \"schema\": \"{SCHEMA}\" \
                     field)\n  = help: pass the prof.json a profiled run wrote (PROF_OUT sets \
                     where)",
                    p.display()
                ),
            },
            LoadError::Invalid(p, schema, why) => write!(
                f,
                "error: {}: not a valid {schema} profile: {why}\n  = help: pass the file as the \
                 run wrote it (a file edited or made by another tool must keep every field and \
                 agree with itself: docs/reference.md, \"prof.json\")",
                p.display()
            ),
            LoadError::NoEvents(p) => write!(
                f,
                "error: {}: the profile holds no event\n  = help: the run measured nothing: \
                 check its PROF_FILTER with --list-probes, and that it called \
                 profiler_core::step() past the warmup",
                p.display()
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads and checks a profile; a profile without events is an error.
///
/// Only a regular file (or a link to one) is read: a FIFO, a device such as `/dev/zero`, a
/// socket or a directory is refused before anything is read, so that `prof` never blocks on a
/// pipe nor reads until memory runs out. The file is read through a buffer, and its text held
/// without the whitespace between its tokens (a pretty-printed profile's indentation: about a
/// third of its size is left, 6 to 16 bytes a sample), then read into the typed [`Profile`] (20
/// bytes a sample): serde_json reads text in memory several times faster than through a reader.
/// The text is dropped once read; a bad profile is read again, as it is, to say what is wrong
/// and where.
pub fn load_profile(path: impl AsRef<Path>) -> Result<Profile, LoadError> {
    let path = path.as_ref();
    let io_error = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing(path.to_path_buf()),
        _ => LoadError::Io(path.to_path_buf(), e),
    };
    let file = open_regular(path).map_err(io_error)?;
    parse_source(&Source::File(&file), path)
}

/// The regular file at `path`, open for reading. Opened without blocking (a FIFO would
/// otherwise wait for a writer), then checked on the open descriptor, so what is read is what
/// was checked.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let (file, meta) = open_unblocked(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "it is {}, not a regular file; prof reads the prof.json a run wrote (copy a \
                 stream to a file first)",
                file_kind(&meta)
            ),
        ));
    }
    Ok(file)
}

/// The file at `path`, open for reading without blocking (a FIFO would otherwise wait for a
/// writer), and what it is, from the open descriptor (`fstat`): the caller checks that it is
/// what it reads, with no race between the check and the read.
pub(crate) fn open_unblocked(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        const O_NONBLOCK: i32 = if cfg!(target_os = "linux") {
            0o4000
        } else {
            0x0004
        };
        options.custom_flags(O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    Ok((file, meta))
}

/// What a file that is not a regular file is, for messages: `a named pipe (FIFO)`, `a
/// character device`, `a block device`, `a socket`, `a directory`.
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Parses and checks the bytes of a profile; `path` is used in messages.
pub fn parse_profile(bytes: &[u8], path: &Path) -> Result<Profile, LoadError> {
    parse_source(&Source::Bytes(bytes), path)
}

/// Parses and checks a profile. Problems are reported in this order, whatever the order of the
/// keys in the file: an empty text, then the syntax, then the schema, then the shape (a field
/// of the wrong type, missing or out of range), then what does not add up ([`check`]). One
/// pass reads a good profile; the passes that tell a bad one's problem run only after it failed.
fn parse_source(source: &Source, path: &Path) -> Result<Profile, LoadError> {
    let owned = || path.to_path_buf();
    let io = |e: std::io::Error| LoadError::Io(owned(), e);
    if source.is_blank().map_err(io)? {
        return Err(LoadError::Empty(owned()));
    }
    let typed = match source.compact_pass(passes::Typed).map_err(io)? {
        Ok(profile) if SCHEMAS.contains(&profile.schema.as_str()) => return checked(profile, path),
        other => other,
    };
    // Something is wrong: the syntax first (no typed value is built for it).
    let schema = source
        .pass(passes::Schema)
        .map_err(io)?
        .map_err(|e| match e.classify() {
            Category::Eof => LoadError::Truncated(owned()),
            Category::Io => LoadError::Io(owned(), std::io::Error::other(e.to_string())),
            _ => LoadError::NotJson(owned(), e),
        })?;
    let schema = match schema {
        Some(schema) if SCHEMAS.contains(&schema.as_str()) => schema,
        Some(other) => return Err(LoadError::Schema(owned(), Some(other))),
        None => return Err(LoadError::Schema(owned(), None)),
    };
    // JSON of the right schema whose typed reading failed: say where.
    let why = match source.pass(passes::Located).map_err(io)? {
        Err(e) => shape_error(&e, |index| {
            source.pass(passes::EventId(index)).ok().flatten()
        }),
        // The fast pass failed where the tracking one did not: cannot happen, as both read the
        // same text the same way; report the first failure rather than nothing.
        Ok(_) => typed.err().map_or_else(String::new, |e| e.to_string()),
    };
    Err(LoadError::Invalid(owned(), schema, why))
}

/// A profile read whole, checked: it adds up ([`check`]) and holds events.
fn checked(mut profile: Profile, path: &Path) -> Result<Profile, LoadError> {
    check(&profile)
        .map_err(|why| LoadError::Invalid(path.to_path_buf(), profile.schema.clone(), why))?;
    if profile.events.is_empty() {
        return Err(LoadError::NoEvents(path.to_path_buf()));
    }
    drop_trace_work(&mut profile);
    Ok(profile)
}

/// `trace` mode keeps no work: its runs are recorded without their `flops`, `bytes` and `shape`
/// keys. Files written by `trace` mode before it said so carry zeros for them (every count 0,
/// every shape `()`), which would read as a rate of 0 FLOP/s; those are read as what they are,
/// no work. Counts that are not all 0 (a file made otherwise) are kept, and so is a trace taken
/// on demand (`run.on_demand`), which is measured as `sample` mode measures and keeps its work.
fn drop_trace_work(profile: &mut Profile) {
    if profile.run.mode != "trace" || profile.run.on_demand.is_some() {
        return;
    }
    for e in &mut profile.events {
        let zeros = |list: &Option<Vec<u64>>| list.iter().flatten().all(|&n| n == 0);
        if e.work
            .as_ref()
            .is_some_and(|w| zeros(&w.flops) && zeros(&w.bytes))
        {
            e.work = None;
        }
        if e.shapes
            .as_ref()
            .is_some_and(|s| s.values.iter().all(|v| v == "()"))
        {
            e.shapes = None;
        }
    }
}

/// A value of the wrong type or range, named by where it is (`events[3].samples_ns[2]`) and,
/// inside an event, by the event's id (`event_id` reads it).
fn shape_error(
    e: &serde_path_to_error::Error<serde_json::Error>,
    event_id: impl FnOnce(usize) -> Option<String>,
) -> String {
    let at = e.path().to_string();
    let event = e.path().iter().take(2).collect::<Vec<_>>();
    let id = match event.as_slice() {
        [serde_path_to_error::Segment::Map { key }, serde_path_to_error::Segment::Seq { index }]
            if key == "events" =>
        {
            event_id(*index).map(|id| shorten(&id, 120))
        }
        _ => None,
    };
    let inner = e.inner().to_string();
    // serde_json appends its own position in the document; the path says more.
    let inner = inner.split(" at line ").next().unwrap_or(&inner);
    match (at.as_str(), id) {
        (".", _) => inner.to_owned(),
        (_, Some(id)) => format!("{at} (event `{id}`): {inner}"),
        (_, None) => format!("{at}: {inner}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Profile, LoadError> {
        parse_profile(text.as_bytes(), Path::new("p.json"))
    }

    const GOOD: &str = r#"{"schema":"profiler-core/prof/v1","complete":true,
      "run":{"program":"t","pid":1,"host":"h","rank":0,"mode":"sample","filter":"",
             "warmup":1,"repeat":2,"clock":"cpu"},
      "iterations":{"count":3,"wall_ns":[5,6,7]},
      "events":[{"id":"a::f","name":"f","layer":null,"phase":"fwd","kind":"fn","module":"a",
        "file":"a.rs","line":1,"occurrence":0,"order":0,"device":null,"stream":null,
        "samples_ns":[1,2],"offsets_ns":[0,0],"sample_iters":[1,2],
        "stats":{"count":2,"mean_ns":2,"median_ns":2,"min_ns":1,"max_ns":2,"stddev_ns":1,"p90_ns":2}}]}"#;

    #[test]
    fn each_kind_of_bad_input_has_its_message() {
        assert!(parse(GOOD).is_ok());
        let cut = &GOOD[..GOOD.len() / 2];
        assert!(matches!(parse(cut), Err(LoadError::Truncated(_))));
        assert!(matches!(parse("hello"), Err(LoadError::NotJson(..))));
        let other = GOOD.replace("prof/v1", "prof/v9");
        let e = parse(&other).unwrap_err();
        assert!(e.to_string().contains("profiler-core/prof/v9"), "{e}");
        assert!(matches!(parse("{}"), Err(LoadError::Schema(_, None))));
        let broken = GOOD.replace("\"offsets_ns\":[0,0]", "\"offsets_ns\":[0]");
        assert!(parse(&broken)
            .unwrap_err()
            .to_string()
            .contains("offsets_ns"));
        let missing = GOOD.replace("\"complete\":true,", "");
        assert!(parse(&missing)
            .unwrap_err()
            .to_string()
            .contains("complete"));
        let empty = GOOD[..GOOD.find("\"events\"").unwrap()].to_owned() + "\"events\":[]}";
        assert!(matches!(parse(&empty), Err(LoadError::NoEvents(_))));
        let e = load_profile("/nonexistent/prof.json").unwrap_err();
        assert!(matches!(e, LoadError::Missing(_)), "{e}");
        // Each says how to go on: a help line, whatever the problem.
        let every = [
            parse(cut).unwrap_err(),
            parse("hello").unwrap_err(),
            parse(&other).unwrap_err(),
            parse("{}").unwrap_err(),
            parse(&broken).unwrap_err(),
            parse(&missing).unwrap_err(),
            parse(&empty).unwrap_err(),
            parse("").unwrap_err(),
            e,
            LoadError::Io(
                "secret.json".into(),
                std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            ),
        ];
        for e in every {
            assert!(e.to_string().contains("\n  = help: "), "{e}");
        }
    }

    /// `cpu_samples.timeline` is read when its lists agree, and refused with a message naming
    /// the list when they do not.
    #[test]
    fn a_cpu_sample_timeline_must_agree_with_its_samples() {
        let with = |timeline: &str| {
            let samples = format!(
                r#","cpu_samples":{{"hz":1000,"taken":2,"threads":[{{"tid":7}},{{"tid":8}}],
                  "functions":[{{"name":"f","addr":"0x1"}}],
                  "stacks":[{{"thread":0,"event":null,"frames":[0],"count":1}},
                            {{"thread":1,"event":null,"frames":[0],"count":1}}],
                  "timeline":{timeline}}}}}"#
            );
            GOOD[..GOOD.len() - 1].to_owned() + &samples
        };
        let good = r#"{"threads":[0,1],"iters":[1,2],"offsets_ns":[3,4],"stacks":[0,1]}"#;
        let timeline = parse(&with(good)).unwrap().cpu_samples.unwrap().timeline;
        assert_eq!(timeline.unwrap().len(), 2);
        for (bad, says) in [
            (
                r#"{"threads":[0],"iters":[1,2],"offsets_ns":[3,4],"stacks":[0,1]}"#,
                "cpu_samples.timeline has 1 threads but 2 iters",
            ),
            (
                r#"{"threads":[0,2],"iters":[1,2],"offsets_ns":[3,4],"stacks":[0,1]}"#,
                "cpu_samples.timeline: sample 1's thread 2 is not one of the 2 threads",
            ),
            (
                r#"{"threads":[0,1],"iters":[1,2],"offsets_ns":[3,4],"stacks":[0,5]}"#,
                "cpu_samples.timeline: sample 1's stack 5 is not one of the 2 stacks",
            ),
            (
                r#"{"threads":[0,0],"iters":[1,2],"offsets_ns":[3,4],"stacks":[0,1]}"#,
                "cpu_samples.timeline: sample 1 is of thread 0 but its stack 1 of thread 1",
            ),
        ] {
            let e = parse(&with(bad)).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// Counts no run makes (CPU samples adding up past 2^53, 2^64 - 1 other shapes) are
    /// refused when read: before, `prof report`, `advise`, `pprof` and `flame --cpu` panicked
    /// adding them up ("attempt to add with overflow").
    #[test]
    fn counts_no_run_makes_are_refused() {
        let stacks = |a: u64, b: u64| {
            GOOD[..GOOD.len() - 1].to_owned()
                + &format!(
                    r#","cpu_samples":{{"hz":1000,"taken":2,"threads":[{{"tid":7}}],
                  "functions":[{{"name":"f","addr":"0x1"}}],
                  "stacks":[{{"thread":0,"event":null,"frames":[0],"count":{a}}},
                            {{"thread":0,"event":null,"frames":[0],"count":{b}}}]}}}}"#
                )
        };
        assert!(parse(&stacks(1 << 52, 1 << 52)).is_ok());
        let e = parse(&stacks(1 << 63, 1 << 63)).unwrap_err().to_string();
        assert!(
            e.contains("cpu_samples.stacks: their counts add up to more than 2^53"),
            "{e}"
        );
        assert!(parse(&stacks(1 << 53, 1)).is_err());
        let shapes = |others: u64| {
            GOOD.replace(
                "\"samples_ns\"",
                &format!(
                    r#""shapes":{{"values":["4x4"],"sample_shapes":[0,0],"others":{others}}},"samples_ns""#
                ),
            )
        };
        assert!(parse(&shapes(3)).is_ok());
        let e = parse(&shapes(u64::MAX)).unwrap_err().to_string();
        assert!(
            e.contains("shapes.others is 18446744073709551615, above 2^53"),
            "{e}"
        );
    }

    /// `run.peak`'s figures are checked as a `peak.json`'s are: before, a negative peak in a
    /// profile was read, and reported as "peak -1.00e308FLOP/s".
    #[test]
    fn the_runs_peak_must_be_a_peak() {
        let with = |flops: &str| {
            GOOD.replace(
                "\"clock\":\"cpu\"",
                &format!(
                    r#""clock":"cpu","peak":{{"schema":"profiler-core/peak/v1","flops":{flops},"source":"given"}}"#
                ),
            )
        };
        assert!(parse(&with("1e12")).is_ok());
        let e = parse(&with("-1e308")).unwrap_err().to_string();
        assert!(
            e.contains("run.peak: `flops` is -1e308: a peak is a positive number"),
            "{e}"
        );
    }

    /// `run.peak` is read as `prof peak` wrote it, to the last bit (serde_json's exact float
    /// parsing, `float_roundtrip`, in every pass of the reader).
    #[test]
    fn the_runs_peak_is_read_exactly() {
        let text = GOOD.replace(
            "\"clock\":\"cpu\"",
            r#""clock":"cpu","peak":{"schema":"profiler-core/peak/v1","flops":23677369823.420494,"bytes":1.0000000000000002,"source":"measured"}"#,
        );
        let peak = parse(&text).unwrap().run.peak.unwrap();
        assert_eq!(peak.flops, Some(23677369823.420494));
        assert_eq!(peak.bytes, Some(1.0000000000000002));
    }

    #[test]
    fn work_lists_are_accepted_and_must_match_the_samples() {
        let with =
            |work: &str| GOOD.replace("\"samples_ns\"", &format!("\"work\":{work},\"samples_ns\""));
        let p = parse(&with(r#"{"flops":[10,20],"bytes":[1,2]}"#)).unwrap();
        let w = p.events[0].work.as_ref().unwrap();
        assert_eq!(
            (w.flops.as_deref(), w.bytes.as_deref()),
            (Some(&[10, 20][..]), Some(&[1, 2][..]))
        );
        let p = parse(&with(r#"{"bytes":[1,2]}"#)).unwrap();
        assert_eq!(p.events[0].work.as_ref().unwrap().flops, None);
        assert_eq!(parse(GOOD).unwrap().events[0].work, None);
        let e = parse(&with(r#"{"flops":[10,20],"bytes":[1]}"#))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("has 2 samples_ns but 1 values in work.bytes"),
            "{e}"
        );
        let e = parse(&with(r#"{"flops":[1,2,3]}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 values in work.flops"), "{e}");
    }

    /// A `trace`-mode file of an older version, with the zeros it wrote for work it never
    /// counted, reads as having no work; a trace on demand keeps its own.
    #[test]
    fn the_zeros_of_old_trace_mode_files_are_no_work() {
        let old = GOOD
            .replace("\"mode\":\"sample\"", "\"mode\":\"trace\"")
            .replace(
                "\"samples_ns\"",
                r#""work":{"flops":[0,0],"bytes":[0,0]},
               "shapes":{"values":["()"],"sample_shapes":[0,0]},"samples_ns""#,
            );
        let p = parse(&old).unwrap();
        assert_eq!((&p.events[0].work, &p.events[0].shapes), (&None, &None));
        // Counts and shapes that were counted (a file made otherwise) are kept.
        let counted = old
            .replace(r#""bytes":[0,0]"#, r#""bytes":[0,8]"#)
            .replace(r#"["()"]"#, r#"["4x4"]"#);
        let p = parse(&counted).unwrap();
        assert!(p.events[0].work.is_some() && p.events[0].shapes.is_some());
        let on_demand = old.replace(
            "\"clock\":\"cpu\"",
            r#""clock":"cpu","on_demand":{"source":"signal","asked_iterations":2}"#,
        );
        let p = parse(&on_demand).unwrap();
        assert!(p.run.on_demand.is_some());
        assert!(p.events[0].work.is_some() && p.events[0].shapes.is_some());
    }

    #[test]
    fn shape_lists_are_accepted_and_must_match_the_samples() {
        let with = |shapes: &str| {
            GOOD.replace(
                "\"samples_ns\"",
                &format!("\"shapes\":{shapes},\"samples_ns\""),
            )
        };
        let p = parse(&with(
            r#"{"values":["32x512"],"sample_shapes":[0,null],"others":1}"#,
        ))
        .unwrap();
        let s = p.events[0].shapes.as_ref().unwrap();
        assert_eq!(s.values, ["32x512"]);
        assert_eq!(s.sample_shapes, [Some(0), None]);
        assert_eq!(s.others, 1);
        let e = parse(&with(r#"{"values":["4"],"sample_shapes":[0]}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 entries in shapes.sample_shapes"), "{e}");
        let e = parse(&with(r#"{"values":["4"],"sample_shapes":[0,1]}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("shapes.sample_shapes[1] is 1"), "{e}");
    }

    /// GOOD with two more events, changed by `edit`, as text.
    fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let mut v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
        let first = v["events"][0].clone();
        for order in [1, 2] {
            let mut e = first.clone();
            e["id"] = format!("a::f{order}").into();
            e["order"] = order.into();
            e["parent"] = (order - 1).into();
            v["events"].as_array_mut().unwrap().push(e);
        }
        edit(&mut v);
        v.to_string()
    }

    fn invalid(text: &str) -> String {
        match parse(text) {
            Err(e @ LoadError::Invalid(..)) => e.to_string(),
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    /// `prof merge`'s own output given back to prof is named for what it is, not taken for a
    /// profile of another profiler-core version.
    #[test]
    fn a_merged_file_is_named_as_such() {
        let text = format!(r#"{{"schema": "{}", "ranks": []}}"#, MERGED_SCHEMA);
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("this is the output of `prof merge`"), "{e}");
        assert!(!e.contains("version that wrote the file"), "{e}");
    }

    #[test]
    fn profiles_that_do_not_add_up_are_invalid() {
        assert!(parse(&edited(|_| {})).is_ok());
        let e = invalid(&edited(|v| v["events"][0]["parent"] = 2.into()));
        assert!(
            e.starts_with("error: p.json: not a valid profiler-core/prof/v1 profile"),
            "{e}"
        );
        assert!(e.contains("parent cycle") && e.contains("`a::f`"), "{e}");
        assert!(e.contains("`a::f2` (occurrence 0, order 2)"), "{e}");
        // A file of schema v2 is named as such, checked whole or failing to read.
        let e = invalid(&edited(|v| {
            v["schema"] = crate::SCHEMA_V2.into();
            v["events"][0]["parent"] = 2.into();
        }));
        assert!(
            e.contains("not a valid profiler-core/prof/v2 profile"),
            "{e}"
        );
        let e = invalid(&edited(|v| {
            v["schema"] = crate::SCHEMA_V2.into();
            v["events"][0]["samples_ns"] = "x".into();
        }));
        assert!(
            e.contains("not a valid profiler-core/prof/v2 profile"),
            "{e}"
        );
        let e = invalid(&edited(|v| v["events"][1]["parent"] = 1.into()));
        assert!(e.contains("parent cycle") && e.contains("`a::f1`"), "{e}");
        let e = invalid(&edited(|v| v["events"][2]["parent"] = 9.into()));
        assert!(
            e.contains("`a::f2`") && e.contains("no event has order 9"),
            "{e}"
        );
        let e = invalid(&edited(|v| v["events"][1]["sample_iters"][1] = 4.into()));
        assert!(
            e.contains("`a::f1`") && e.contains("sample_iters[1] is 4"),
            "{e}"
        );
        let e = invalid(&edited(|v| v["events"][2]["stats"]["count"] = 3.into()));
        assert!(
            e.contains("`a::f2`") && e.contains("stats.count is 3"),
            "{e}"
        );
        let e = invalid(&edited(|v| {
            v["events"][2]["merged"] = true.into();
            v["events"][2]["stats"]["count"] = 1.into();
        }));
        assert!(e.contains("`a::f2`") && e.contains("merged"), "{e}");
        let e = invalid(&edited(|v| v["run"]["mode"] = "fast".into()));
        assert!(e.contains("run.mode `fast`"), "{e}");
        let e = invalid(&edited(|v| v["run"]["repeat"] = 0.into()));
        assert!(e.contains("run.repeat is 0"), "{e}");
        let e = invalid(&edited(|v| v["iterations"]["count"] = 4.into()));
        assert!(
            e.contains("iterations.count is 4") && e.contains("3 wall_ns"),
            "{e}"
        );
    }

    #[test]
    fn absurd_values_are_refused_naming_the_field_and_the_event() {
        type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;
        let cases: Vec<(Edit, &[&str])> = vec![
            (
                Box::new(|v| v["events"][1]["samples_ns"][0] = u64::MAX.into()),
                &["`a::f1`", "samples_ns[0] is 18446744073709551615 ns"],
            ),
            (
                Box::new(|v| v["events"][2]["offsets_ns"][1] = (1u64 << 60).into()),
                &["`a::f2`", "offsets_ns[1]"],
            ),
            (
                Box::new(|v| {
                    v["events"][0]["stats"]["min_ns"] = 1_000_000_000u64.into();
                    v["events"][0]["stats"]["max_ns"] = 1.into();
                }),
                &["`a::f`", "stats do not add up", "min_ns 1000000000"],
            ),
            (
                Box::new(|v| v["events"][0]["stats"]["max_ns"] = 9.into()),
                &["`a::f`", "disagree with samples_ns", "from 1 to 2"],
            ),
            (
                Box::new(|v| v["iterations"]["wall_ns"][1] = u64::MAX.into()),
                &["iterations.wall_ns[1] is 18446744073709551615 ns"],
            ),
            (
                Box::new(|v| {
                    let big = serde_json::Value::from(1u64 << 52);
                    v["iterations"]["wall_ns"] = serde_json::json!([big, big, big]);
                }),
                &["iterations.wall_ns adds up to", "by wall_ns[2]"],
            ),
            (
                Box::new(|v| v["run"]["warmup"] = 1_000_000_000u64.into()),
                &["run.warmup is 1000000000", "only 3 iterations"],
            ),
            (
                Box::new(|v| v["events"][2]["order"] = 1.into()),
                &["events[1] and events[2] both have order 1"],
            ),
            (
                Box::new(|v| v["events"][2]["id"] = "a::f1".into()),
                &["events[1] and events[2] are the same event", "`a::f1`"],
            ),
            (
                Box::new(|v| v["run"]["repeat"] = 1.into()),
                &[
                    "`a::f` (occurrence 0, order 0) has 2 samples",
                    "run.repeat is 1",
                ],
            ),
            (
                Box::new(|v| v["events"][2]["samples_ns"][1] = (-5).into()),
                &[
                    "events[2].samples_ns[1] (event `a::f2`)",
                    "integer `-5`",
                    "u64",
                ],
            ),
            (
                Box::new(|v| v["iterations"]["count"] = "many".into()),
                &["iterations.count: invalid type"],
            ),
        ];
        for (edit, expected) in cases {
            let e = invalid(&edited(edit));
            for part in expected {
                assert!(e.contains(part), "`{part}` not in: {e}");
            }
            assert!(!e.contains("at line"), "{e}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn inputs_that_are_not_regular_files_are_refused_without_reading() {
        let e = load_profile("/dev/zero").unwrap_err().to_string();
        assert!(
            e.contains("/dev/zero") && e.contains("character device"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("prof-load-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("p.json");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        // Would block forever if the FIFO were opened for a plain read.
        let e = load_profile(&fifo).unwrap_err().to_string();
        assert!(e.contains("named pipe (FIFO)"), "{e}");
        let e = load_profile(&dir).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What the core really writes stays valid: a recursion past `PROF_MAX_EVENTS` makes merged
    /// events each other's parents (or their own), a merged event counts every run but keeps a
    /// bounded sample, and a run that started after the last `step()` (the program stopped
    /// mid-iteration, or another thread's run began as the schedule completed) is in the
    /// iteration that never completed.
    #[test]
    fn what_the_core_writes_stays_valid() {
        for mode in ["sample", "trace", "continuous", "off"] {
            assert!(parse(&edited(|v| v["run"]["mode"] = mode.into())).is_ok());
        }
        let merged = |v: &mut serde_json::Value, i: usize| {
            v["events"][i]["merged"] = true.into();
            v["events"][i]["stats"]["count"] = 1000.into();
        };
        // f1 and f2 merged, each the other's parent; f2 its own parent.
        let cycle = edited(|v| {
            merged(v, 1);
            merged(v, 2);
            v["events"][1]["parent"] = 2.into();
        });
        assert!(parse(&cycle).is_ok(), "{:?}", parse(&cycle).err());
        let own = edited(|v| {
            merged(v, 2);
            v["events"][2]["parent"] = 2.into();
        });
        assert!(parse(&own).is_ok());
        // One merged event in a cycle is enough: f1 (merged) inside f2 inside f1.
        let mixed = edited(|v| {
            merged(v, 1);
            v["events"][1]["parent"] = 2.into();
        });
        assert!(parse(&mixed).is_ok());
        for complete in [false, true] {
            let after_last_step = edited(|v| {
                v["complete"] = complete.into();
                v["events"][0]["sample_iters"][1] = 3.into();
            });
            assert!(parse(&after_last_step).is_ok());
            let e = invalid(&edited(|v| {
                v["complete"] = complete.into();
                v["events"][0]["sample_iters"][1] = 4.into();
            }));
            assert!(e.contains("sample_iters[1] is 4"), "{e}");
        }
    }

    /// GOOD (three events) as a `continuous`-mode profile: 20 iterations completed, the last
    /// window's 3 listed (from iteration 17), two windows kept (indices 4 and 6), changed by
    /// `edit`.
    fn continuous(edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let text = edited(|v| {
            v["run"]["mode"] = "continuous".into();
            v["run"]["windows"] = 2.into();
            v["iterations"] = serde_json::json!({"count": 20, "first": 17, "wall_ns": [5, 6, 7]});
            for e in v["events"].as_array_mut().unwrap() {
                e["sample_iters"] = serde_json::json!([17, 19]);
            }
            let window = |index: u64, first: u64| {
                let event = |order: u32| {
                    serde_json::json!({"order": order, "samples_ns": [1, 2],
                        "stats": {"count": 2, "mean_ns": 2, "median_ns": 2, "min_ns": 1,
                                  "max_ns": 2, "stddev_ns": 1, "p90_ns": 2}})
                };
                serde_json::json!({"index": index, "first_iteration": first,
                    "wall_ns": [5, 6, 7], "events": [event(0), event(1), event(2)]})
            };
            v["windows"] = serde_json::json!([window(4, 11), window(6, 17)]);
        });
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        edit(&mut v);
        v.to_string()
    }

    #[test]
    fn a_continuous_profile_loads() {
        let p = parse(&continuous(|_| {})).unwrap();
        assert_eq!(p.run.mode, "continuous");
        assert_eq!(p.iterations.first, 17);
        assert_eq!(p.iterations.wall_of(19), Some(7));
        assert_eq!(p.windows.len(), 2);
        assert_eq!(p.windows[1].events[2].order, 2);
        // The run went on past the last window it completed (the next was under way).
        let p = parse(&continuous(|v| v["iterations"]["count"] = 25.into())).unwrap();
        assert_eq!(p.iterations.count, 25);
        // A sample in the iteration that never completed (20) is fine; past it is not.
        assert!(parse(&continuous(
            |v| v["events"][0]["sample_iters"][1] = 20.into()
        ))
        .is_ok());
        let e = invalid(&continuous(|v| {
            v["events"][0]["sample_iters"][1] = 21.into()
        }));
        assert!(e.contains("sample_iters[1] is 21"), "{e}");
        // An event missing from a window (it did not run, or is merged) is fine.
        assert!(parse(&continuous(|v| {
            v["windows"][0]["events"].as_array_mut().unwrap().remove(1);
        }))
        .is_ok());
        // The run's baseline windows come first; files without them (older) load too.
        let p = parse(&continuous(|v| v["windows"][0]["baseline"] = true.into())).unwrap();
        assert_eq!(
            (p.windows[0].baseline, p.windows[1].baseline),
            (true, false)
        );
        assert!(!parse(&continuous(|_| {})).unwrap().windows[0].baseline);
    }

    #[test]
    fn continuous_profiles_that_do_not_add_up_are_invalid() {
        let e = invalid(&continuous(|v| v["iterations"]["count"] = 19.into()));
        assert!(
            e.contains("iterations.count is 19") && e.contains("17 + 3"),
            "{e}"
        );
        let e = invalid(&continuous(|v| v["iterations"]["first"] = 18.into()));
        assert!(
            e.contains("iterations.count is 20") && e.contains("18 + 3"),
            "{e}"
        );
        // Outside continuous mode, the listed iterations end with the last completed one.
        let e = invalid(&continuous(|v| {
            v["run"]["mode"] = "sample".into();
            v["iterations"]["count"] = 25.into();
        }));
        assert!(
            e.contains("iterations.count is 25") && e.contains("17 + 3"),
            "{e}"
        );
        let e = invalid(&continuous(|v| v["windows"][1]["index"] = 4.into()));
        assert!(
            e.contains("windows[1] has index 4") && e.contains("previous window's 4"),
            "{e}"
        );
        let e = invalid(&continuous(|v| v["windows"][0]["index"] = 9.into()));
        assert!(e.contains("windows[1] has index 6"), "{e}");
        let e = invalid(&continuous(|v| v["windows"][1]["baseline"] = true.into()));
        assert!(
            e.contains("windows[1] (index 6) is a baseline window after one that is not"),
            "{e}"
        );
        let e = invalid(&continuous(|v| {
            v["windows"][1]["events"][2]["order"] = 7.into()
        }));
        assert!(
            e.contains("windows[1] (index 6): events[2] has order 7"),
            "{e}"
        );
        let e = invalid(&continuous(|v| {
            v["windows"][0]["events"][2]["order"] = 0.into()
        }));
        assert!(
            e.contains("windows[0] (index 4): order 0 is listed twice"),
            "{e}"
        );
        let e = invalid(&continuous(|v| {
            v["windows"][1]["events"][1]["stats"]["count"] = 3.into()
        }));
        assert!(
            e.contains("the event of order 1 has stats.count 3 but 2 samples_ns"),
            "{e}"
        );
        let e = invalid(&continuous(|v| {
            v["windows"][1]["events"][1]["samples_ns"] = serde_json::json!([1]);
        }));
        assert!(e.contains("stats.count 2 but 1 samples_ns"), "{e}");
    }

    /// Windows' times and stats are checked as the top-level events' are: none past 2^53 ns,
    /// min <= max, and stats that agree with the samples.
    #[test]
    fn window_values_are_checked_as_events_are() {
        let big = serde_json::json!(MAX_NS + 1);
        let e = invalid(&continuous(|v| v["windows"][1]["wall_ns"][2] = big.clone()));
        assert!(
            e.contains("windows[1] (index 6): wall_ns[2] is 9007199254740993 ns"),
            "{e}"
        );
        let e = invalid(&continuous(|v| {
            v["windows"][0]["wall_ns"] = serde_json::json!([MAX_NS / 2, MAX_NS / 2, 2]);
        }));
        assert!(e.contains("wall_ns adds up to"), "{e}");
        let e = invalid(&continuous(|v| {
            v["windows"][0]["wall_ns"][0] = serde_json::json!(u64::MAX);
        }));
        assert!(e.contains("wall_ns[0] is 18446744073709551615 ns"), "{e}");
        let e = invalid(&continuous(|v| {
            v["windows"][1]["events"][0]["stats"]["max_ns"] = big.clone();
        }));
        assert!(
            e.contains("the event of order 0: stats.max_ns is 9007199254740993 ns"),
            "{e}"
        );
        let e = invalid(&continuous(|v| {
            v["windows"][1]["events"][0]["samples_ns"][1] = big.clone();
        }));
        assert!(e.contains("samples_ns[1] is 9007199254740993 ns"), "{e}");
        let e = invalid(&continuous(|v| {
            v["windows"][0]["events"][1]["stats"]["min_ns"] = 3.into();
        }));
        assert!(
            e.contains("windows[0] (index 4): the event of order 1: its stats do not add up"),
            "{e}"
        );
        let e = invalid(&continuous(|v| {
            v["windows"][0]["events"][1]["stats"]["max_ns"] = 5.into();
            v["windows"][0]["events"][1]["stats"]["p90_ns"] = 5.into();
        }));
        assert!(
            e.contains("disagree with samples_ns, which run from 1 to 2"),
            "{e}"
        );
    }

    #[test]
    fn an_empty_file_is_empty_not_truncated() {
        for text in ["", "  \n\t\r\n"] {
            let e = parse(text).unwrap_err();
            assert!(matches!(e, LoadError::Empty(_)), "{e}");
            let e = e.to_string();
            assert!(e.starts_with("error: p.json: the file is empty"), "{e}");
            assert!(e.contains("help:"), "{e}");
        }
    }

    /// Problems are told in one order (syntax, schema, shape) wherever they are in the text:
    /// the typed reading stops at the first problem it meets, so the passes after it must look
    /// further.
    #[test]
    fn problems_are_told_in_order_wherever_they_are() {
        // A shape error (complete is a string) before a foreign schema: the schema is told.
        let foreign_last = GOOD
            .replace("\"complete\":true", "\"complete\":\"yes\"")
            .replace("\"schema\":\"profiler-core/prof/v1\",", "")
            .replacen('}', "},\"schema\":\"profiler-core/prof/v9\"", 1);
        let e = parse(&foreign_last).unwrap_err();
        assert!(
            matches!(&e, LoadError::Schema(_, Some(s)) if s == "profiler-core/prof/v9"),
            "{e}"
        );
        // A shape error before a syntax error: the syntax is told.
        let broken_end = GOOD.replace("\"complete\":true", "\"complete\":1") + "]";
        let e = parse(&broken_end).unwrap_err();
        assert!(matches!(e, LoadError::NotJson(..)), "{e}");
        // No schema at all, and the rest not a profile either: the schema is told.
        let e = parse("[1, 2, {\"schema\": 3}]").unwrap_err();
        assert!(matches!(e, LoadError::Schema(_, None)), "{e}");
        let e = parse("{\"schema\": 3, \"events\": []}").unwrap_err();
        assert!(matches!(e, LoadError::Schema(_, None)), "{e}");
        // A key given twice (the core never writes one) is refused, naming it.
        let twice = GOOD.replace(
            "\"complete\":true,",
            "\"complete\":true,\"complete\":false,",
        );
        let e = invalid(&twice);
        assert!(e.contains("duplicate field `complete`"), "{e}");
        // A good profile with garbage after it is not JSON.
        let e = parse(&format!("{GOOD} x")).unwrap_err();
        assert!(matches!(e, LoadError::NotJson(..)), "{e}");
        // A shape error names the event by its id, even when the id comes after the error.
        let late_id = GOOD
            .replace("\"id\":\"a::f\",", "")
            .replace("\"line\":1,", "\"line\":-1,")
            .replace("\"stats\":{", "\"id\":\"a::late\",\"stats\":{");
        let e = invalid(&late_id);
        assert!(e.contains("events[0].line (event `a::late`)"), "{e}");
    }

    /// A file is read through a buffer, its text held only without the whitespace between its
    /// tokens: every kind of text reads the same from a file as from memory, to the message (a
    /// file bigger than the buffer included; a syntax error deep in a pretty-printed file is
    /// told at its line in the file).
    #[test]
    fn a_file_reads_as_its_bytes() {
        let dir = std::env::temp_dir().join(format!("prof-load-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let padded = format!("{}{GOOD}", " \n".repeat(1 << 20));
        let value: serde_json::Value = serde_json::from_str(GOOD).unwrap();
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let texts = [
            GOOD.to_owned(),
            edited(|_| {}),
            padded.clone(),
            padded.replace("\"prof/v1\"", "\"prof/v7\""),
            padded.replace("\"order\":0", "\"order\":-3"),
            GOOD[..GOOD.len() / 2].to_owned(),
            "hello".to_owned(),
            "{}".to_owned(),
            "  \n ".to_owned(),
            String::new(),
            format!("{GOOD} x"),
            edited(|v| v["events"][1]["sample_iters"][1] = 4.into()),
            pretty.clone(),
            pretty.replacen("\"wall_ns\": [", "\"wall_ns\": [0 ", 1),
            pretty.replacen("\"fwd\"", "\"f w\\\" d\"", 1),
        ];
        for (i, text) in texts.iter().enumerate() {
            let path = dir.join(format!("{i}.json"));
            std::fs::write(&path, text).unwrap();
            let from_file = load_profile(&path).map_err(|e| e.to_string());
            let from_bytes = parse_profile(text.as_bytes(), &path).map_err(|e| e.to_string());
            assert_eq!(from_file, from_bytes, "text {i}");
        }
        assert!(load_profile(dir.join("2.json")).is_ok());
        let e = load_profile(dir.join("13.json")).unwrap_err().to_string();
        assert!(e.contains("line 43, column 7"), "{e}");
        let p = load_profile(dir.join("14.json")).unwrap();
        assert_eq!(p.events[0].phase.as_deref(), Some("f w\" d"));
        let e = load_profile(dir.join("4.json")).unwrap_err().to_string();
        assert!(e.contains("events[0].order (event `a::f`)"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
