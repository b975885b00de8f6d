//! Unit tests of `analysis::trace`.

use super::*;
use profiler_format::{Iterations, Run, Stats, SCHEMA};

pub(super) fn event(order: u32, name: &str, parent: Option<u32>) -> Event {
    Event {
        id: format!("t::{name}"),
        name: name.into(),
        layer: Some("l".into()),
        phase: Some("fwd".into()),
        kind: "fn".into(),
        module: "t".into(),
        file: "t.rs".into(),
        line: 1,
        occurrence: 0,
        order,
        device: None,
        stream: None,
        merged: false,
        parent,
        concurrent: false,
        samples_ns: vec![],
        offsets_ns: vec![],
        sample_iters: vec![],
        gpu: None,
        memory: None,
        stats: Stats::default(),
        work: None,
        shapes: None,
    }
}

pub(super) fn with_samples(mut e: Event, samples: &[(u32, u64, u64)]) -> Event {
    e.sample_iters = samples.iter().map(|s| s.0).collect();
    e.offsets_ns = samples.iter().map(|s| s.1).collect();
    e.samples_ns = samples.iter().map(|s| s.2).collect();
    e.stats = Stats::of(&e.samples_ns);
    e
}

pub(super) fn profile(
    mode: &str,
    warmup: u32,
    repeat: u32,
    walls: Vec<u64>,
    events: Vec<Event>,
) -> Profile {
    Profile {
        schema: SCHEMA.into(),
        complete: true,
        run: Run {
            program: "prog".into(),
            pid: 42,
            host: "h".into(),
            rank: 3,
            mode: mode.into(),
            filter: String::new(),
            warmup,
            repeat,
            clock: "fake".into(),
            max_events: 4096,
            timer_floor_ns: 0,
            profiler_version: "0".into(),
            windows: None,
            on_demand: None,
            delay: None,
            peak: None,
        },
        iterations: Iterations {
            first: 0,
            count: walls.len() as u64,
            wall_ns: walls,
            device_memory: Vec::new(),
        },
        events,
        windows: Vec::new(),
        before_loop: Vec::new(),
        cpu_samples: None,
    }
}

/// A drawn span: name, track (`pid * 1_000_000 + tid`), start and end (ns), args.
type Span = (String, u64, u64, u64, Value);

/// The X events, in the document's order.
fn spans(trace: &Value) -> Vec<Span> {
    trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let ts = (e["ts"].as_f64().unwrap() * 1000.0).round() as u64;
            let dur = (e["dur"].as_f64().unwrap() * 1000.0).round() as u64;
            let track = e["pid"].as_u64().unwrap() * 1_000_000 + e["tid"].as_u64().unwrap();
            let name = e["name"].as_str().unwrap().to_string();
            (name, track, ts, ts + dur, e["args"].clone())
        })
        .collect()
}

/// On each track, every two spans are disjoint or nested.
fn assert_nested(trace: &Value) {
    let s = spans(trace);
    for a in &s {
        for b in &s {
            if a.1 == b.1 && !std::ptr::eq(a, b) {
                let disjoint = a.3 <= b.2 || b.3 <= a.2;
                let nested = (a.2 <= b.2 && b.3 <= a.3) || (b.2 <= a.2 && a.3 <= b.3);
                assert!(disjoint || nested, "{a:?} and {b:?} overlap");
            }
        }
    }
}

#[test]
fn trace_mode_draws_each_iteration_at_its_start() {
    let a = with_samples(event(0, "a", None), &[(1, 10, 50), (2, 20, 40)]);
    let b = with_samples(event(1, "b", Some(0)), &[(1, 15, 5), (2, 25, 10)]);
    let p = profile("trace", 1, 2, vec![1000, 100, 200], vec![a, b]);
    let t = chrome_trace(&p).unwrap();
    assert_eq!(t["distributedInfo"]["rank"], 3);
    assert_eq!(t["otherData"]["time_zero_ns"], 1000);
    let s = spans(&t);
    let names: Vec<(&str, u64, u64)> = s.iter().map(|x| (x.0.as_str(), x.2, x.3)).collect();
    assert_eq!(
        names,
        vec![
            ("ProfilerStep#1", 0, 100),
            ("a", 10, 60),
            ("b", 15, 20),
            ("ProfilerStep#2", 100, 300),
            ("a", 120, 160),
            ("b", 125, 135),
        ]
    );
    // All on `main` (tid 1 of pid 42).
    assert!(s.iter().all(|x| x.1 == 42_000_001));
    assert_eq!(s[1].4["iteration"], 1);
    assert_eq!(s[1].4["layer"], "l");
    assert_nested(&t);
}

#[test]
fn concurrent_events_get_their_own_track() {
    // b starts inside a and ends after it: another thread.
    let a = with_samples(event(0, "a", None), &[(0, 10, 50)]);
    let b = with_samples(event(1, "b", None), &[(0, 30, 50)]);
    let c = with_samples(event(2, "c", Some(1)), &[(0, 35, 10)]);
    let p = profile("trace", 0, 1, vec![100], vec![a, b, c]);
    let t = chrome_trace(&p).unwrap();
    let s = spans(&t);
    let tid = |n: &str| s.iter().find(|x| x.0 == n).unwrap().1 % 1_000_000;
    assert_eq!((tid("a"), tid("b"), tid("c")), (1, 2, 2));
    let names: Vec<&str> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["main", "concurrent 1"]);
    assert_nested(&t);
}

#[test]
fn sample_mode_draws_one_consistent_average_iteration() {
    // Medians that disagree: b starts before a ends, b's child starts before b and ends
    // after it, and d is longer than its parent.
    let a = with_samples(event(0, "a", None), &[(5, 100, 300)]);
    let b = with_samples(event(1, "b", None), &[(6, 350, 200)]);
    let c = with_samples(event(2, "c", Some(1)), &[(7, 200, 150)]);
    let d = with_samples(event(3, "d", Some(1)), &[(8, 500, 500)]);
    let p = profile("sample", 2, 1, vec![9, 9, 1000, 900, 800], vec![a, b, c, d]);
    let t = chrome_trace(&p).unwrap();
    let s = spans(&t);
    let got: Vec<(&str, u64, u64)> = s.iter().map(|x| (x.0.as_str(), x.2, x.3)).collect();
    assert_eq!(
        got,
        vec![
            ("ProfilerStep#0", 0, 900),
            ("a", 100, 400),
            ("b", 400, 600),
            ("c", 400, 550),
            ("d", 550, 600),
        ]
    );
    assert_eq!(s[0].4["median_wall_ns"], 900);
    assert_eq!(s[4].4["median_ns"], 500);
    assert_nested(&t);
}

#[test]
fn sample_mode_step_stretches_to_hold_the_events() {
    let a = with_samples(event(0, "a", None), &[(1, 50, 500)]);
    let p = profile("sample", 1, 1, vec![9, 100], vec![a]);
    let s = spans(&chrome_trace(&p).unwrap());
    assert_eq!((s[0].2, s[0].3), (0, 550));
}

#[test]
fn gpu_events_go_on_stream_tracks() {
    let mut a = with_samples(event(0, "a", None), &[(0, 10, 20)]);
    a.device = Some(1);
    a.stream = Some("7".into());
    let mut b = with_samples(event(1, "b", None), &[(0, 10, 20)]);
    b.device = Some(1);
    b.stream = Some("copy".into());
    let c = with_samples(event(2, "c", None), &[(0, 0, 90)]);
    let p = profile("trace", 0, 1, vec![100], vec![a, b, c]);
    let t = chrome_trace(&p).unwrap();
    let s = spans(&t);
    let at = |n: &str| s.iter().find(|x| x.0 == n).unwrap().clone();
    assert_eq!(at("a").1, 1_000_007);
    assert_eq!(at("b").1, 1_000_008);
    assert_eq!(at("b").4["stream"], 8);
    assert_eq!(at("b").4["stream_name"], "copy");
    assert_eq!(at("c").1, 42_000_001);
    let evs = t["traceEvents"].as_array().unwrap();
    let x = evs.iter().find(|e| e["name"] == "a").unwrap();
    assert_eq!(x["cat"], GPU_CATEGORY);
    assert!(evs
        .iter()
        .any(|e| e["name"] == "process_name" && e["pid"] == 1 && e["args"]["name"] == "GPU 1"));
    assert!(evs.iter().any(|e| e["name"] == "thread_name"
        && e["tid"] == 8
        && e["args"]["name"] == "stream copy"));
}

#[test]
fn ts_plus_dur_is_the_end_to_the_last_bit() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut exact = 0;
    for i in 0..200_000u64 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let start = if i % 2 == 0 {
            state % 10_000_000_000
        } else {
            state % 100_000
        };
        let end = start + (state >> 40) % 5_000_000;
        let (ts, dur) = ts_dur(start, end);
        let end_f = end as f64 / 1000.0;
        assert_eq!(ts, start as f64 / 1000.0);
        assert!(ts + dur <= end_f, "{start} {end}");
        if end - start <= start {
            assert_eq!(ts + dur, end_f, "{start} {end}");
        }
        exact += usize::from(ts + dur == end_f);
        // Perfetto's reading (llround of microseconds times 1000) gives the nanoseconds back.
        assert_eq!((ts * 1000.0).round() as u64, start);
        assert_eq!((dur * 1000.0).round() as u64, end - start);
    }
    assert!(exact > 190_000, "{exact}");
    assert_eq!(ts_dur(5, 5), (0.005, 0.0));
}

#[test]
fn cpu_pid_avoids_zero_and_devices() {
    let mut a = with_samples(event(0, "a", None), &[(0, 10, 20)]);
    a.device = Some(1);
    let mut p = profile("trace", 0, 1, vec![100], vec![a]);
    p.run.pid = 0;
    let t = chrome_trace(&p).unwrap();
    let step = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "ProfilerStep#0")
        .unwrap();
    assert_eq!(step["pid"], 2);
}

#[test]
fn empty_profile_still_has_steps_and_names() {
    let p = profile("trace", 1, 2, vec![10, 20, 30], vec![]);
    let t = chrome_trace(&p).unwrap();
    let s = spans(&t);
    let names: Vec<&str> = s.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(names, vec!["ProfilerStep#1", "ProfilerStep#2"]);
    let p = profile("sample", 1, 2, vec![], vec![]);
    assert_eq!(spans(&chrome_trace(&p).unwrap()).len(), 1);
}

#[test]
fn incomplete_iteration_ends_with_its_last_sample() {
    let a = with_samples(event(0, "a", None), &[(0, 10, 20), (1, 5, 30)]);
    let p = profile("trace", 0, 5, vec![100], vec![a]);
    let s = spans(&chrome_trace(&p).unwrap());
    let step1 = s.iter().find(|x| x.0 == "ProfilerStep#1").unwrap();
    assert_eq!((step1.2, step1.3), (100, 135));
    assert_eq!(s[0].2, 0);
    assert_eq!(step1.4["incomplete"], true);
}

/// `wall_ns[k]` is iteration `first + k`: the average iteration of a `continuous`-mode file
/// lasts the median of every listed iteration (all measured), and a trace-mode drawing starts
/// each iteration where its wall times say.
#[test]
fn iterations_are_numbered_from_first() {
    let a = with_samples(event(0, "a", None), &[(41, 10, 50), (42, 20, 40)]);
    let mut p = profile("continuous", 10, 2, vec![900, 1000, 2000], vec![a]);
    p.iterations.first = 40;
    p.iterations.count = 43;
    let t = chrome_trace(&p).unwrap();
    let s = spans(&t);
    assert_eq!(s[0].0, "ProfilerStep#0");
    assert_eq!(s[0].4["median_wall_ns"], 1000);
    assert_eq!(s[0].4["measured_iterations"], 3);

    let a = with_samples(event(0, "a", None), &[(5, 10, 50), (6, 20, 40)]);
    let mut p = profile("trace", 1, 2, vec![100, 200], vec![a]);
    p.iterations.first = 5;
    p.iterations.count = 7;
    let s = spans(&chrome_trace(&p).unwrap());
    let drawn: Vec<(&str, u64, u64)> = s.iter().map(|x| (x.0.as_str(), x.2, x.3)).collect();
    assert_eq!(
        drawn,
        vec![
            ("ProfilerStep#5", 0, 100),
            ("a", 10, 60),
            ("ProfilerStep#6", 100, 300),
            ("a", 120, 160),
        ]
    );
    assert_eq!(s[2].4["wall_ns"], 200);
}

/// The stretches of each step no top-level event covers are drawn as `other` on `main`; nested events do not count as covering (their parent does), and a stretch
/// shorter than a microsecond is left out.
#[test]
fn uncovered_stretches_are_drawn_on_the_other_track() {
    let a = with_samples(event(0, "a", None), &[(1, 0, 4_000), (2, 0, 4_000)]);
    let inner = with_samples(event(1, "inner", Some(0)), &[(1, 100, 500), (2, 100, 500)]);
    let b = with_samples(event(2, "b", None), &[(1, 7_000, 2_000), (2, 7_000, 2_500)]);
    let p = profile(
        "trace",
        1,
        2,
        vec![5_000, 10_000, 10_000],
        vec![a, inner, b],
    );
    let t = chrome_trace(&p).unwrap();
    let other: Vec<(u64, u64, u64)> = spans(&t)
        .into_iter()
        .filter(|s| s.0 == "other")
        .map(|s| (s.1, s.2, s.3))
        .collect();
    // Iteration 1: 4000..7000 and 9000..10000; iteration 2: 14000..17000 (9500..10000, 500 ns,
    // is left out).
    assert_eq!(
        other,
        vec![
            (42_000_001, 4_000, 7_000),
            (42_000_001, 9_000, 10_000),
            (42_000_001, 14_000, 17_000),
        ]
    );
    let args = spans(&t).into_iter().find(|s| s.0 == "other").unwrap().4;
    assert_eq!(args["what"], other::WHAT);
    assert_eq!(args["dur_ns"], 3_000);
    // On `main`, inside the steps, between the events: everything still nests.
    assert_nested(&t);
}

/// The `memory` counter follows the stepping thread's top-level runs only: a concurrent
/// event (another thread's) with figures of its own inside `a`'s run neither replaces `a`'s
/// figures nor zeroes the counter at its end while `a` still runs (as it did).
#[test]
fn the_memory_counter_leaves_other_threads_out() {
    let memory = |bytes: u64| profiler_format::Memory {
        alloc_bytes: vec![bytes],
        freed_bytes: vec![0],
        allocs: vec![1],
        peak_bytes: vec![bytes],
    };
    let mut a = with_samples(event(0, "a", None), &[(1, 100, 400)]);
    a.memory = Some(memory(2_000));
    let mut c = with_samples(event(1, "c", None), &[(1, 150, 200)]);
    c.concurrent = true;
    c.memory = Some(memory(4_000));
    let p = profile("trace", 1, 1, vec![5_000, 1_000], vec![a, c]);
    let t = chrome_trace(&p).unwrap();
    let counters: Vec<(u64, f64)> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            (
                (e["ts"].as_f64().unwrap() * 1000.0).round() as u64,
                e["args"]["alloc_bytes"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counters, vec![(100, 2_000.0), (500, 0.0)]);
}

/// Memory figures become a `memory` counter track: a top-level run's figures while it runs,
/// 0 between runs; nothing without figures.
#[test]
fn memory_figures_become_a_counter_track() {
    let mut a = with_samples(event(0, "a", None), &[(1, 100, 400), (2, 100, 500)]);
    a.memory = Some(profiler_format::Memory {
        alloc_bytes: vec![4096, 8192],
        freed_bytes: vec![4096, 0],
        allocs: vec![1, 2],
        peak_bytes: vec![4096, 8192],
    });
    let p = profile("trace", 1, 2, vec![5_000, 1_000, 1_000], vec![a]);
    let t = chrome_trace(&p).unwrap();
    let counters: Vec<(u64, f64, f64, f64)> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            assert_eq!(e["name"], memory::COUNTER);
            assert_eq!(e["pid"], 42);
            let a = &e["args"];
            (
                (e["ts"].as_f64().unwrap() * 1000.0).round() as u64,
                a["alloc_bytes"].as_f64().unwrap(),
                a["peak_bytes"].as_f64().unwrap(),
                a["net_bytes"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        counters,
        vec![
            (100, 4096.0, 4096.0, 0.0),
            (500, 0.0, 0.0, 0.0),
            (1_100, 8192.0, 8192.0, 8192.0),
            (1_600, 0.0, 0.0, 0.0),
        ]
    );
    let plain = profile(
        "trace",
        1,
        2,
        vec![5_000, 1_000, 1_000],
        vec![with_samples(event(0, "a", None), &[(1, 100, 400)])],
    );
    let t = chrome_trace(&plain).unwrap();
    assert!(!t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["ph"] == "C"));
}

/// A random profile of `mode` from `seed`: nested events (a parent earlier in the order), GPU
/// events on named and numbered streams, memory figures, merged events, samples in the
/// iteration still running and past their step's end, ids that look like numbers.
pub(super) fn random_profile(seed: u64, mode: &str) -> Profile {
    use crate::stats::SplitMix64;
    let mut rng = SplitMix64::new(seed);
    let iterations = 1 + rng.below(6);
    let walls: Vec<u64> = (0..iterations)
        .map(|_| 1_000 + rng.below(20_000) as u64)
        .collect();
    let events = 1 + rng.below(9);
    let mut list = Vec::new();
    for order in 0..events as u32 {
        let parent = (order > 0 && rng.below(2) == 0).then(|| rng.below(order as usize) as u32);
        let mut e = event(order, &format!("e{order}"), parent);
        // An id holding a sentinel of the fast writer now and then (written through serde).
        if rng.below(4) == 0 {
            e.id = format!("18446744073709551614::{}", rng.below(3));
        }
        e.occurrence = order;
        e.merged = rng.below(5) == 0;
        match rng.below(6) {
            0 => e.device = Some(rng.below(2) as u32),
            1 => e.stream = Some("7".into()),
            2 => {
                e.device = Some(1);
                e.stream = Some(["copy", "3", "0"][rng.below(3)].into());
            }
            _ => {}
        }
        if rng.below(3) == 0 {
            e.layer = None;
        }
        let n = rng.below(5);
        let samples: Vec<(u32, u64, u64)> = (0..n)
            .map(|_| {
                let k = rng.below(iterations + 1) as u32;
                let offset = rng.below(25_000) as u64;
                (k, offset, rng.below(8_000) as u64)
            })
            .collect();
        e = with_samples(e, &samples);
        if rng.below(3) == 0 {
            e.memory = Some(profiler_format::Memory {
                alloc_bytes: (0..n).map(|_| rng.below(1 << 20) as u64).collect(),
                freed_bytes: (0..n).map(|_| rng.below(1 << 20) as u64).collect(),
                allocs: (0..n).map(|_| rng.below(9) as u64).collect(),
                peak_bytes: (0..n).map(|_| rng.below(1 << 20) as u64).collect(),
            });
        }
        list.push(e);
    }
    let warmup = rng.below(iterations) as u32;
    let repeat = 1 + rng.below(4) as u32;
    let mut p = profile(mode, warmup, repeat, walls, list);
    p.run.pid = rng.below(3) as u32;
    p
}

/// The streamed text is the value's, byte for byte: for the profiles of these tests and for
/// random ones of every shape (the fast writer cuts spans from templates, so this is where a
/// difference in layout would show).
#[test]
fn the_streamed_trace_is_the_value_pretty_printed() {
    let mut profiles = Vec::new();
    for seed in 0..400 {
        profiles.push(random_profile(
            seed,
            if seed % 3 == 0 { "sample" } else { "trace" },
        ));
    }
    let a = with_samples(event(0, "a", None), &[(1, 10, 50), (2, 20, 40)]);
    profiles.push(profile("trace", 1, 2, vec![1000, 100, 200], vec![a]));
    profiles.push(profile("trace", 1, 2, vec![10, 20, 30], vec![]));
    profiles.push(profile("sample", 1, 2, vec![], vec![]));
    let mut sample_spans = 0;
    for (i, p) in profiles.iter().enumerate() {
        let value = chrome_trace(p).unwrap();
        let expected = serde_json::to_vec_pretty(&value).unwrap();
        let mut streamed = Vec::new();
        write_chrome_trace(p, &mut streamed).unwrap();
        if streamed != expected {
            let at = streamed
                .iter()
                .zip(&expected)
                .position(|(a, b)| a != b)
                .unwrap_or(streamed.len().min(expected.len()));
            let show = |t: &[u8]| {
                String::from_utf8_lossy(&t[at.saturating_sub(200)..(at + 100).min(t.len())])
                    .into_owned()
            };
            panic!(
                "profile {i}: differs at byte {at}:\n{}\n---- expected ----\n{}",
                show(&streamed),
                show(&expected)
            );
        }
        sample_spans += spans(&value)
            .iter()
            .filter(|s| s.4.get("dur_ns").is_some() && s.0 != "other")
            .count();
    }
    assert!(sample_spans > 1000, "{sample_spans}");
}

/// A slice is 40 bytes (the module documentation and docs/overhead.md's memory figures say so).
#[test]
fn a_slice_is_small() {
    assert_eq!(std::mem::size_of::<layout::Slice>(), 40);
}

/// A writer that fails after `left` bytes.
struct FailsAfter {
    left: usize,
}

impl std::io::Write for FailsAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.left {
            return Err(std::io::Error::other("disk full"));
        }
        self.left -= buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The text is written on a thread of its own: when the writer fails, the making stops and the
/// writer's error is the one reported (not that the writer went away).
#[test]
fn a_failing_writer_stops_the_trace_with_its_error() {
    let samples: Vec<(u32, u64, u64)> = (0..4000).map(|k| (1 + k % 2, 10, 50)).collect();
    let mut events: Vec<Event> = Vec::new();
    for order in 0..20 {
        let mut e = with_samples(event(order, &format!("e{order}"), None), &samples);
        e.merged = true;
        events.push(e);
    }
    let p = profile("trace", 1, 2, vec![1000, 100, 200], events);
    let mut whole = Vec::new();
    write_chrome_trace(&p, &mut whole).unwrap();
    assert!(whole.len() > 20 << 20, "{}", whole.len());
    for left in [0, 1 << 20, 5 << 20] {
        let e = write_chrome_trace(&p, FailsAfter { left }).unwrap_err();
        assert_eq!(e.to_string(), "disk full");
    }
}

/// `sample` mode: an event that ran on another thread (`concurrent`) is drawn at its own median
/// offset, not after the events before it, and beside the stepping thread's events where it
/// overlaps them: a worker inside its parent's span, a loader anywhere in the step.
#[test]
fn sample_mode_draws_concurrent_events_at_their_offsets_beside_the_loop() {
    let a = with_samples(event(0, "a", None), &[(5, 100, 300)]);
    let s = with_samples(event(1, "s", Some(0)), &[(6, 120, 200)]);
    let mut w = with_samples(event(2, "w", Some(0)), &[(7, 150, 100)]);
    w.concurrent = true;
    let mut l = with_samples(event(3, "l", None), &[(8, 50, 100)]);
    l.concurrent = true;
    let p = profile("sample", 2, 1, vec![9, 9, 1000, 900, 800], vec![a, s, w, l]);
    let t = chrome_trace(&p).unwrap();
    let got = spans(&t);
    let at = |n: &str| {
        let x = got.iter().find(|x| x.0 == n).unwrap();
        (x.1 % 1_000_000, x.2, x.3)
    };
    assert_eq!(at("a"), (1, 100, 400));
    assert_eq!(at("s"), (1, 120, 320));
    // At its offset (150), not after s (320), and not on `main`, where it would overlap s.
    let (w_tid, w_start, w_end) = at("w");
    assert_eq!((w_start, w_end), (150, 250));
    assert_ne!(w_tid, 1);
    let (l_tid, l_start, l_end) = at("l");
    assert_eq!((l_start, l_end), (50, 150));
    assert_ne!(l_tid, 1);
    assert_nested(&t);
}

/// `sample` mode: an event of another thread that ends past the median iteration does not
/// make the step longer: the step is the median iteration, and the last `other` stretch ends
/// with it, as the breakdown's last gap does (before, both ran on to the other thread's end).
#[test]
fn a_concurrent_event_past_the_iteration_does_not_stretch_the_step() {
    let a = with_samples(event(0, "a", None), &[(3, 0, 400_000)]);
    let mut c = with_samples(event(1, "c", None), &[(4, 950_000, 200_000)]);
    c.concurrent = true;
    let walls = vec![9, 9, 1_000_000, 1_000_000, 1_000_000];
    let p = profile("sample", 2, 2, walls, vec![a, c]);
    let t = chrome_trace(&p).unwrap();
    let got = spans(&t);
    let step = got
        .iter()
        .find(|x| x.0.starts_with("ProfilerStep"))
        .unwrap();
    assert_eq!((step.2, step.3), (0, 1_000_000), "{got:?}");
    let last_other = got
        .iter()
        .filter(|x| x.0 == "other")
        .map(|x| x.3)
        .max()
        .unwrap();
    assert_eq!(last_other, 1_000_000, "{got:?}");
}

/// `sample` mode: the `other` slices are the stretches the stepping thread's top-level events
/// leave uncovered, as the breakdown's gaps are; an event of another thread (a loader) beside
/// them covers none. And `average_iteration` is the trace's drawing.
#[test]
fn sample_mode_other_slices_are_the_stepping_threads_gaps() {
    let a = with_samples(
        event(0, "a", None),
        &[(2, 10_000, 30_000), (3, 10_000, 30_000)],
    );
    let mut l = with_samples(event(1, "l", None), &[(4, 0, 8_000), (5, 0, 8_000)]);
    l.concurrent = true;
    let walls = vec![9, 9, 100_000, 100_000, 100_000, 100_000];
    let p = profile("sample", 2, 2, walls, vec![a, l]);
    let t = chrome_trace(&p).unwrap();
    let other: Vec<(u64, u64)> = spans(&t)
        .into_iter()
        .filter(|s| s.0 == "other")
        .map(|s| (s.2, s.3))
        .collect();
    assert_eq!(other, vec![(0, 10_000), (40_000, 100_000)]);
    let breakdown = profiler_tables::breakdown::breakdown(
        &p,
        &profiler_tables::rows::profile_rows(&p, 0.25, 0.05),
    )
    .unwrap();
    let gaps = &breakdown.gaps;
    let mut gaps: Vec<(u64, u64)> = (gaps.iter())
        .map(|g| (g.start_ns as u64, (g.start_ns + g.len_ns) as u64))
        .collect();
    gaps.sort_unstable();
    assert_eq!(other, gaps);
    let average = average_iteration(&p, Some(&breakdown)).unwrap();
    assert_eq!(average.step_ns, 100_000);
    assert_eq!(average.other, vec![[0, 10_000], [40_000, 100_000]]);
    assert_eq!(
        average.spans,
        vec![Some([10_000, 40_000]), Some([0, 8_000])]
    );
}

/// A run longer than its iteration (a worker thread's may be) is drawn before the step that
/// holds it: its parent has no lane yet when it is placed. Before, `prof trace` panicked (an
/// index out of bounds in the lanes) on such a file, from the fuzzer.
#[test]
fn a_run_longer_than_its_iteration_is_drawn() {
    let a = with_samples(event(0, "a", None), &[(0, 0, 2)]);
    let p = profile("trace", 0, 1, vec![1], vec![a]);
    let s = spans(&chrome_trace(&p).unwrap());
    assert!(s.iter().any(|x| x.0.contains('a')), "{s:?}");
    assert!(s.iter().any(|x| x.0 == "ProfilerStep#0"), "{s:?}");
}
