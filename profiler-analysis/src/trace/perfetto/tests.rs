//! Unit tests of the Perfetto trace: each written trace is decoded with the messages generated
//! from Perfetto's protos (`protos.rs`, the code the writer encodes with; the Python check in
//! `profiler-cli/tests/prof/trace_perfetto.rs` decodes with Perfetto's own Python package), and its
//! slices, tracks and counters are checked one by one against the JSON trace of the same
//! profile, itself checked against the profile by `trace/tests.rs`.

use std::collections::HashMap;

use prost::Message;
use serde_json::{Map, Value};

use super::protos::{self, track_event::Type, Trace};
use crate::trace::tests::{event, profile, random_profile, with_samples};
use crate::trace::{chrome_trace, write_perfetto_trace};
use profiler_format::{DeviceUsage, Profile};

/// A slice as both formats can say it: pid, tid, name, category, start and end (ns), args.
type Slice = (u32, u32, String, String, u64, u64, Value);

/// A counter reading: pid, track name, time (ns), value.
type Reading = (u32, String, u64, f64);

/// What a Perfetto trace holds, decoded and resolved.
#[derive(Debug, Default)]
struct Decoded {
    slices: Vec<Slice>,
    /// Thread tracks: (pid, tid, name).
    threads: Vec<(u32, u32, String)>,
    /// Process tracks: (pid, name, labels).
    processes: Vec<(u32, String, Vec<String>)>,
    readings: Vec<Reading>,
    /// The greatest nesting depth seen on any track.
    max_depth: usize,
}

/// A sequence's incremental state: interned strings, defaults, its clocks.
#[derive(Default)]
struct Interned {
    default_clock: Option<u32>,
    default_track: Option<u64>,
    /// Sequence-scoped incremental clocks: id to the last time read on it.
    incremental: HashMap<u32, u64>,
    names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    arg_names: HashMap<u64, String>,
    strings: HashMap<u64, String>,
}

/// Decodes `bytes`, checking the sequence rules on the way: every packet names its sequence,
/// the first of each says its incremental state is cleared, each that uses interned data says
/// it needs it and finds it, each track's events come in time order, and every end closes a
/// slice begun on its track.
fn decode(bytes: &[u8]) -> Decoded {
    let trace = Trace::decode(bytes).expect("a Trace");
    let mut out = Decoded::default();
    let mut sequences: HashMap<u32, Interned> = HashMap::new();
    let mut last_time: HashMap<u32, u64> = HashMap::new();
    let mut threads: HashMap<u64, (u32, u32)> = HashMap::new();
    let mut counters: HashMap<u64, (u64, String)> = HashMap::new();
    let mut process_pid: HashMap<u64, u32> = HashMap::new();
    // Per track: the slices begun and not ended (their index in `out.slices`).
    let mut open: HashMap<u64, Vec<usize>> = HashMap::new();
    for p in &trace.packet {
        let seq = p.trusted_packet_sequence_id.expect("a sequence id");
        let flags = p.sequence_flags.unwrap_or(0);
        let first = !sequences.contains_key(&seq);
        assert_eq!(
            first,
            flags & protos::trace_packet::SequenceFlags::SeqIncrementalStateCleared as u32 != 0,
            "the first packet of sequence {seq}, and only it, clears the state"
        );
        let interned = sequences.entry(seq).or_default();
        if let Some(d) = &p.interned_data {
            for n in &d.event_names {
                interned.names.insert(n.iid(), n.name().to_string());
            }
            for n in &d.event_categories {
                interned.categories.insert(n.iid(), n.name().to_string());
            }
            for n in &d.debug_annotation_names {
                interned.arg_names.insert(n.iid(), n.name().to_string());
            }
            for n in &d.debug_annotation_string_values {
                let s = String::from_utf8(n.str().to_vec()).unwrap();
                interned.strings.insert(n.iid(), s);
            }
        }
        if let Some(d) = &p.trace_packet_defaults {
            interned.default_clock = d.timestamp_clock_id;
            interned.default_track = d.track_event_defaults.as_ref().and_then(|t| t.track_uuid);
        }
        if let Some(c) = &p.clock_snapshot {
            for clock in c.clocks.iter().filter(|c| c.is_incremental()) {
                assert!(
                    (64..128).contains(&clock.clock_id()),
                    "a sequence-scoped clock"
                );
                interned
                    .incremental
                    .insert(clock.clock_id(), clock.timestamp());
            }
        }
        if let Some(t) = &p.track_descriptor {
            if let Some(pr) = &t.process {
                process_pid.insert(t.uuid(), pr.pid() as u32);
                let labels = pr.process_labels.clone();
                out.processes
                    .push((pr.pid() as u32, pr.process_name().to_string(), labels));
            }
            if let Some(th) = &t.thread {
                threads.insert(t.uuid(), (th.pid() as u32, th.tid() as u32));
                out.threads.push((
                    th.pid() as u32,
                    th.tid() as u32,
                    th.thread_name().to_string(),
                ));
            }
            if let Some(c) = &t.counter {
                assert_eq!(c.unit(), protos::counter_descriptor::Unit::SizeBytes);
                counters.insert(t.uuid(), (t.parent_uuid(), t.name().to_string()));
            }
            continue;
        }
        let Some(e) = &p.track_event else {
            continue;
        };
        let mut at = p.timestamp.expect("a timestamp");
        let clock = p.timestamp_clock_id.or(interned.default_clock);
        if let Some(last) = clock.and_then(|c| interned.incremental.get_mut(&c)) {
            at += *last;
            *last = at;
        }
        let last = last_time.entry(seq).or_insert(0);
        assert!(at >= *last, "sequence {seq} goes back in time: {p:?}");
        *last = at;
        let uses_state = e.name_iid.is_some() || !e.category_iids.is_empty();
        let needs = protos::trace_packet::SequenceFlags::SeqNeedsIncrementalState as u32;
        assert!(
            !uses_state || flags & needs != 0,
            "{p:?} does not say it needs the state"
        );
        let track = e.track_uuid.or(interned.default_track).expect("a track");
        match e.r#type() {
            Type::SliceBegin => {
                let (pid, tid) = threads[&track];
                let name = match e.name_iid {
                    Some(iid) => interned.names[&iid].clone(),
                    None => e.name().to_string(),
                };
                assert_eq!(e.category_iids.len(), 1);
                let category = interned.categories[&e.category_iids[0]].clone();
                let mut args = Map::new();
                for a in &e.debug_annotations {
                    let key = interned.arg_names[&a.name_iid()].clone();
                    let value = if let Some(v) = a.uint_value {
                        Value::from(v)
                    } else if let Some(v) = a.int_value {
                        Value::from(v)
                    } else if let Some(v) = a.double_value {
                        Value::from(v)
                    } else if let Some(v) = a.bool_value {
                        Value::from(v)
                    } else if let Some(iid) = a.string_value_iid {
                        Value::from(interned.strings[&iid].clone())
                    } else {
                        Value::from(a.string_value().to_string())
                    };
                    assert!(args.insert(key, value).is_none(), "an annotation twice");
                }
                let stack = open.entry(track).or_default();
                stack.push(out.slices.len());
                out.max_depth = out.max_depth.max(stack.len());
                out.slices
                    .push((pid, tid, name, category, at, u64::MAX, Value::Object(args)));
            }
            Type::SliceEnd => {
                let i = open
                    .get_mut(&track)
                    .and_then(|s| s.pop())
                    .expect("an end closes a slice");
                out.slices[i].5 = at;
            }
            Type::Counter => {
                let (parent, name) = counters[&track].clone();
                let value = e
                    .double_counter_value
                    .or(e.counter_value.map(|v| v as f64))
                    .expect("a value");
                out.readings.push((process_pid[&parent], name, at, value));
            }
            other => panic!("unexpected event type {other:?}"),
        }
    }
    assert!(open.values().all(|s| s.is_empty()), "slices left open");
    out
}

/// The slices, tracks and counters of the JSON trace of `p`, as [`Decoded`] holds them.
fn expected(p: &Profile) -> Decoded {
    let doc = chrome_trace(p).unwrap();
    let mut out = Decoded::default();
    let mut labels: HashMap<u64, Vec<String>> = HashMap::new();
    for e in doc["traceEvents"].as_array().unwrap() {
        let pid = e["pid"].as_u64().unwrap() as u32;
        let tid = e["tid"].as_u64().unwrap() as u32;
        match (e["ph"].as_str().unwrap(), e["name"].as_str().unwrap()) {
            ("M", "process_name") => {
                let name = e["args"]["name"].as_str().unwrap().to_string();
                out.processes.push((pid, name, Vec::new()));
            }
            ("M", "process_labels") => {
                let l = e["args"]["labels"].as_str().unwrap().to_string();
                labels.entry(u64::from(pid)).or_default().push(l);
            }
            ("M", "thread_name") => {
                let name = e["args"]["name"].as_str().unwrap().to_string();
                out.threads.push((pid, tid, name));
            }
            ("X", name) => {
                let ts = e["ts"].as_f64().unwrap();
                let end = ts + e["dur"].as_f64().unwrap();
                out.slices.push((
                    pid,
                    tid,
                    name.to_string(),
                    e["cat"].as_str().unwrap().to_string(),
                    (ts * 1000.0).round() as u64,
                    (end * 1000.0).round() as u64,
                    e["args"].clone(),
                ));
            }
            ("C", name) => {
                let at = (e["ts"].as_f64().unwrap() * 1000.0).round() as u64;
                for (series, v) in e["args"].as_object().unwrap() {
                    let track = format!("{name} {series}");
                    out.readings.push((pid, track, at, v.as_f64().unwrap()));
                }
            }
            _ => {}
        }
    }
    for p in &mut out.processes {
        p.2 = labels.remove(&u64::from(p.0)).unwrap_or_default();
    }
    out
}

/// The Perfetto trace of `p`, decoded.
fn perfetto(p: &Profile) -> Decoded {
    let mut bytes = Vec::new();
    write_perfetto_trace(p, &mut bytes).unwrap();
    decode(&bytes)
}

/// Both formats hold the same slices (times to the nanosecond, but an end the JSON's float can
/// say only to within one), tracks and counters.
fn assert_same(p: &Profile, context: &str) {
    let mut got = perfetto(p);
    let mut want = expected(p);
    assert_eq!(got.processes, want.processes, "{context}: processes");
    got.threads.sort();
    want.threads.sort();
    assert_eq!(got.threads, want.threads, "{context}: threads");
    // `other` slices apart: one may be cut short where a sample drawn past its own step
    // overlaps it (see the module documentation); each lies within the JSON trace's.
    let (got_other, got_slices): (Vec<Slice>, Vec<Slice>) =
        got.slices.drain(..).partition(|s| s.2 == "other");
    let (want_other, want_slices): (Vec<Slice>, Vec<Slice>) =
        want.slices.drain(..).partition(|s| s.2 == "other");
    for g in &got_other {
        assert!(
            want_other.iter().any(|w| (w.0, w.1, &w.6["iteration"])
                == (g.0, g.1, &g.6["iteration"])
                && w.4 <= g.4
                && g.4 < g.5
                && g.5 <= w.5 + 1),
            "{context}: {g:?} is no JSON `other` slice"
        );
    }
    // Cutting never splits one.
    assert!(
        got_other.len() <= want_other.len(),
        "{context}: `other` slices"
    );
    let key = |s: &Slice| (s.0, s.1, s.4, s.2.clone(), s.5);
    let (mut got_slices, mut want_slices) = (got_slices, want_slices);
    got_slices.sort_by_key(key);
    want_slices.sort_by_key(key);
    assert_eq!(
        got_slices.len(),
        want_slices.len(),
        "{context}: slice count"
    );
    for (g, w) in got_slices.iter().zip(&want_slices) {
        let (mut g, mut w) = (g.clone(), w.clone());
        // The JSON's float end may be a nanosecond off; the Perfetto trace's is exact: a
        // sample lasts its `dur_ns`, a measured step at least its `wall_ns` (an incomplete one
        // ends with its last sample).
        if let Some(d) = w.6.get("dur_ns").and_then(Value::as_u64) {
            assert_eq!(g.5 - g.4, d, "{context}: {g:?}");
        } else if let Some(d) = w.6.get("wall_ns").and_then(Value::as_u64) {
            assert!(g.5 - g.4 >= d, "{context}: {g:?}");
        }
        assert!(
            g.5.abs_diff(w.5) <= 1,
            "{context}: end of {g:?} against {w:?}"
        );
        g.5 = w.5;
        // A sample's slice carries its event's label only (its iteration is its step's, its
        // duration and offset its times).
        if is_sample(&w.6) {
            w.6 = serde_json::json!({ (super::EVENT_ARG): label(&w.2, &w.6) });
        }
        assert_eq!(g, w, "{context}");
    }
    let order = |a: &Reading, b: &Reading| (a.0, &a.1, a.2).cmp(&(b.0, &b.1, b.2));
    got.readings.sort_by(order);
    want.readings.sort_by(order);
    // At one time a track may read twice (an end and the next start): the last one counts.
    let last = |r: &[Reading]| -> Vec<Reading> {
        let mut out: Vec<Reading> = Vec::new();
        for x in r {
            match out.last_mut() {
                Some(l) if (l.0, &l.1, l.2) == (x.0, &x.1, x.2) => *l = x.clone(),
                _ => out.push(x.clone()),
            }
        }
        out
    };
    assert_eq!(
        got.readings.len(),
        want.readings.len(),
        "{context}: readings"
    );
    assert_eq!(last(&got.readings), last(&want.readings), "{context}");
}

/// Whether a JSON trace's slice with these `args` is a sample's (`trace` mode).
fn is_sample(args: &Value) -> bool {
    args.get("id").is_some() && args.get("iteration").is_some()
}

/// The label `prof report` gives the event of a JSON slice named `name` with these `args`:
/// `layer/phase name#occurrence`, written here from its parts.
fn label(name: &str, args: &Value) -> String {
    let group: Vec<&str> = ["layer", "phase"]
        .iter()
        .filter_map(|k| args.get(*k).and_then(Value::as_str))
        .collect();
    let occurrence = args["occurrence"].as_u64().unwrap();
    let name = match occurrence {
        0 => name.to_string(),
        n => format!("{name}#{n}"),
    };
    match group.is_empty() {
        true => name,
        false => format!("{} {name}", group.join("/")),
    }
}

/// A trace-mode profile: every step, sample and `other` slice, with its track, times and args,
/// on the tracks the JSON trace uses, nested as drawn.
#[test]
fn a_trace_mode_profile_has_the_json_traces_slices() {
    let a = with_samples(
        event(0, "a", None),
        &[(1, 100, 4_000), (2, 0, 500), (2, 600, 300)],
    );
    let b = with_samples(event(1, "b", Some(0)), &[(1, 200, 1_000), (2, 650, 100)]);
    let p = profile("trace", 1, 2, vec![9_000, 9_000, 5_000], vec![a, b]);
    assert_same(&p, "fixed");
    let d = perfetto(&p);
    // Nothing is drawn past its step here: the `other` slices are the JSON trace's exactly.
    let other =
        |d: Decoded| -> Vec<Slice> { d.slices.into_iter().filter(|s| s.2 == "other").collect() };
    assert_eq!(other(perfetto(&p)), other(expected(&p)));
    // Two steps, five samples, the `other` stretches of both steps.
    let names: Vec<&str> = d.slices.iter().map(|s| s.2.as_str()).collect();
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with("ProfilerStep#"))
            .count(),
        2
    );
    assert_eq!(names.iter().filter(|&&n| n == "a").count(), 3);
    assert_eq!(names.iter().filter(|&&n| n == "b").count(), 2);
    assert!(names.contains(&"other"));
    // Step, a, b.
    assert_eq!(d.max_depth, 3);
    let b0 = d.slices.iter().find(|s| s.2 == "b").unwrap();
    assert_eq!(b0.6, serde_json::json!({ "event": "l/fwd b" }));
}

/// Random profiles of every shape, in both modes: nested and concurrent events, GPU streams,
/// memory counters, merged events, samples past their step.
#[test]
fn random_profiles_have_the_json_traces_slices_tracks_and_counters() {
    for seed in 0..300 {
        for mode in ["trace", "sample"] {
            let mut p = random_profile(seed, mode);
            if seed % 3 == 0 {
                p.events
                    .iter_mut()
                    .for_each(|e| e.concurrent = e.order % 2 == 1);
            }
            if seed % 4 == 0 {
                let n = p.iterations.wall_ns.len();
                p.iterations.device_memory = vec![DeviceUsage {
                    device: 1,
                    used_bytes: (0..n).map(|k| Some(1000 * k as u64)).collect(),
                }];
            }
            assert_same(&p, &format!("seed {seed}, {mode} mode"));
        }
    }
}

/// Memory figures become three byte counters in the program's process, read at each top-level
/// run's start and back to 0 at its end.
#[test]
fn memory_figures_become_counter_tracks() {
    let mut a = with_samples(event(0, "a", None), &[(1, 100, 400), (2, 100, 500)]);
    a.memory = Some(profiler_format::Memory {
        alloc_bytes: vec![4096, 8192],
        freed_bytes: vec![4096, 0],
        allocs: vec![1, 2],
        peak_bytes: vec![4096, 8192],
    });
    let p = profile("trace", 1, 2, vec![5_000, 1_000, 1_000], vec![a]);
    assert_same(&p, "memory");
    let d = perfetto(&p);
    let alloc: Vec<(u64, f64)> = (d.readings.iter())
        .filter(|r| r.1 == "memory alloc_bytes")
        .map(|r| (r.2, r.3))
        .collect();
    assert_eq!(
        alloc,
        vec![(100, 4096.0), (500, 0.0), (1_100, 8192.0), (1_600, 0.0)]
    );
    assert!(d.readings.iter().all(|r| r.0 == 42));
}

/// A profile without samples still has its process, `main` track and steps.
#[test]
fn an_empty_profile_still_has_its_tracks() {
    let p = profile("trace", 0, 2, vec![1_000, 1_000], vec![]);
    assert_same(&p, "empty");
    let d = perfetto(&p);
    assert_eq!(
        d.processes,
        vec![(
            42,
            "prog rank 3".into(),
            vec!["host h, trace mode, fake clock".into()]
        )]
    );
    assert_eq!(d.threads, vec![(42, 1, "main".into())]);
}

/// `--iterations`: a cut profile draws, in both formats, the steps of the kept iterations and
/// the samples that ran in them, as the whole profile draws them (shifted to the first kept
/// step's start; a track may take another lane number where a sample cut away made one).
#[test]
fn a_cut_profile_draws_the_whole_ones_slices_of_its_iterations() {
    use crate::trace::{keep_iterations, IterationRange};
    let mut checked = 0;
    for seed in 0..300 {
        let whole = random_profile(seed, "trace");
        let (start, end) = (seed % 3, seed % 3 + 1 + seed % 4);
        let mut cut = whole.clone();
        if keep_iterations(&mut cut, IterationRange { start, end }).is_err() {
            continue;
        }
        checked += 1;
        assert_same(&cut, &format!("seed {seed}, cut {start}..{end}"));
        let iteration = |s: &Slice| -> u64 {
            match s.2.strip_prefix("ProfilerStep#") {
                Some(k) => k.parse().unwrap(),
                None => s.6["iteration"].as_u64().unwrap(),
            }
        };
        // Slices but `other` (the stretches depend on the steps' neighbours only through
        // samples drawn past their step), without their lane.
        let kept = |d: Decoded, range: bool| -> Vec<(String, u32, u64, u64, String)> {
            let mut v: Vec<_> = (d.slices.into_iter())
                .filter(|s| s.2 != "other" && (!range || (start..end).contains(&iteration(s))))
                .map(|s| (s.2.clone(), s.0, s.4, s.5, s.6.to_string()))
                .collect();
            v.sort();
            v
        };
        // (The JSON traces, which say each sample's iteration: the Perfetto traces are
        // theirs, `assert_same`.)
        let got = kept(expected(&cut), false);
        let want = kept(expected(&whole), true);
        assert_eq!(got.len(), want.len(), "seed {seed}");
        let shift = want.iter().map(|w| w.2).min().unwrap_or(0)
            - got.iter().map(|g| g.2).min().unwrap_or(0);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(
                (&g.0, g.1, g.2 + shift, g.3 + shift, &g.4),
                (&w.0, w.1, w.2, w.3, &w.4),
                "seed {seed}"
            );
        }
    }
    assert!(checked > 100, "{checked}");
}

/// What cannot be cut is said: a sample-mode profile, a range outside the drawn iterations.
#[test]
fn what_cannot_be_cut_is_said() {
    use crate::trace::{keep_iterations, CutError, IterationRange};
    let mut p = random_profile(1, "sample");
    let r: IterationRange = "2..".parse().unwrap();
    assert_eq!(
        keep_iterations(&mut p, r),
        Err(CutError::NotTraceMode("sample".into()))
    );
    let mut p = profile("trace", 1, 2, vec![1_000, 1_000, 1_000], vec![]);
    let r: IterationRange = "5..=6".parse().unwrap();
    assert_eq!(r, IterationRange { start: 5, end: 7 });
    let e = keep_iterations(&mut p, r).unwrap_err();
    assert_eq!(e, CutError::Empty(r, Some((1, 2))));
    assert!(e.to_string().contains("draws iterations 1 to 2"), "{e}");
    for bad in ["", "3", "a..b", "4..2", "2..2", "..3", "-1..2"] {
        assert!(bad.parse::<IterationRange>().is_err(), "{bad}");
    }
}

/// Trace-mode profiles on the CPU without memory figures are drawn one iteration at a time
/// (`stepwise.rs`): the same slices, lanes and tracks as the JSON trace's whole drawing, on
/// random profiles (nested, concurrent, samples past their step, in the iteration still running,
/// out of order in their event).
#[test]
fn profiles_drawn_one_iteration_at_a_time_have_the_json_traces_slices() {
    for seed in 0..400 {
        let mut p = random_profile(seed, "trace");
        for e in &mut p.events {
            e.device = None;
            e.stream = None;
            e.memory = None;
            e.concurrent = seed % 3 == 0 && e.order % 2 == 1;
        }
        assert!(crate::trace::stepwise::applies(&p));
        assert_same(&p, &format!("seed {seed}, one iteration at a time"));
    }
}

/// A sample's slice is a few varints: ten thousand samples of a `bigtrace`-like run (one
/// function called 200 times an iteration, each call its own event, 50 iterations) take at
/// most 40 bytes each, begin and end (issue 43: ten million samples within 400 MB). What a
/// slice costs beyond its two timestamps: its type, name, category and the interned label of
/// its event; the track is the sequence's default.
#[test]
fn a_sample_slice_is_a_few_varints() {
    let (calls, iterations) = (200u32, 50u32);
    let events: Vec<_> = (0..calls)
        .map(|k| {
            let mut e = event(k, "work", None);
            e.occurrence = k;
            e.id = "bigtrace::work".into();
            let samples: Vec<(u32, u64, u64)> = (0..iterations)
                .map(|it| {
                    (
                        it + 2,
                        u64::from(k) * 90 + u64::from(it % 7),
                        40 + u64::from(it % 5),
                    )
                })
                .collect();
            with_samples(e, &samples)
        })
        .collect();
    let walls: Vec<u64> = (0..iterations + 2)
        .map(|_| u64::from(calls) * 90 + 500)
        .collect();
    let p = profile("trace", 2, iterations, walls, events);
    assert!(crate::trace::stepwise::applies(&p));
    let mut bytes = Vec::new();
    write_perfetto_trace(&p, &mut bytes).unwrap();
    let samples = (calls * iterations) as usize;
    let per_slice = bytes.len() as f64 / samples as f64;
    eprintln!("{per_slice:.1} bytes a slice");
    assert!(per_slice <= 40.0, "{per_slice:.1} bytes a slice");
    // Still every slice, its event told apart by its label.
    let d = decode(&bytes);
    let works: Vec<&Slice> = d.slices.iter().filter(|s| s.2 == "work").collect();
    assert_eq!(works.len(), samples);
    assert!(works.iter().any(|s| s.6["event"] == "l/fwd work#199"));
}
