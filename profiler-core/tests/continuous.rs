//! `continuous` mode: windows close one after the other, the output keeps the first
//! `PROF_BASELINE_WINDOWS` and the last `PROF_WINDOWS`, the writer thread rewrites the file with
//! the latest windows, and memory stays bounded however long the run.
#![cfg(feature = "enable")]

use profiler_core::testing::FakeClock;
use profiler_core::{profiled, Config, Filter, Mode};

#[profiled(layer = "c1")]
fn first(clock: &FakeClock, ns: u64) {
    clock.advance(ns);
}

#[profiled(layer = "c1")]
fn second(clock: &FakeClock) {
    clock.advance(10);
}

#[profiled(layer = "c2")]
fn tiny() {
    std::hint::black_box(3u64);
}

#[profiled(layer = "c3")]
fn late() {}

fn out_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "prof-continuous-{}-{name}.json",
        std::process::id()
    ))
}

fn read(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn windows_cycle_the_schedule_and_the_output_keeps_the_last_ones() {
    let _s = serial();
    let clock = FakeClock::new();
    let out = out_path("cycle");
    let config = Config {
        filter: Filter::parse("layer=c1|layer=c3").unwrap(),
        mode: Mode::Continuous,
        warmup: 2,
        repeat: 3,
        windows: 4,
        baseline_windows: 2,
        out: out.display().to_string(),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    // 2 warmup iterations, then windows of 2 events x 3 iterations = 6 iterations; from
    // iteration 20 on a third probe appears and is learned: windows of 9 iterations.
    for i in 0..62u64 {
        first(&clock, 100 + i); // its durations grow by 1 ns per iteration
        second(&clock);
        if i >= 20 {
            late();
        }
        profiler_core::step();
        assert!(!profiler_core::finished(), "continuous mode never finishes");
    }
    let p = profiler_core::snapshot().unwrap();
    drop(guard);
    let file = read(&out);
    let _ = std::fs::remove_file(&out);
    assert_eq!(p.run.mode, "continuous");
    assert_eq!(p.run.windows, Some(4));
    // The run is still going: not complete. The file written when it ended is.
    assert!(!p.complete);
    assert_eq!(file["complete"], true);
    // Windows: [2,8) [8,14) [14,20); `late` first runs in iteration 20 and is scheduled after
    // the others at the step that ends it, so the window that began at 20 grows to 9
    // iterations: [20,29) [29,38) [38,47) [47,56), and [56,62) is still open. 7 closed: the
    // first 2 kept as the baseline, and the last 4 (window 2 was dropped).
    let index: Vec<u64> = p.windows.iter().map(|w| w.index).collect();
    assert_eq!(index, [0, 1, 3, 4, 5, 6]);
    let baseline: Vec<bool> = p.windows.iter().map(|w| w.baseline).collect();
    assert_eq!(baseline, [true, true, false, false, false, false]);
    let firsts: Vec<u64> = p.windows.iter().map(|w| w.first_iteration).collect();
    assert_eq!(firsts, [2, 8, 20, 29, 38, 47]);
    for w in &p.windows[..2] {
        assert_eq!(w.iterations(), 6);
        assert_eq!(w.events.len(), 2, "late() was not seen yet");
    }
    // `first` in the baseline windows: durations 100 + i, iterations 2-4 and 8-10.
    let order = |name: &str| p.events.iter().find(|e| e.name == name).unwrap().order;
    let in_first = p.windows[0]
        .events
        .iter()
        .find(|e| e.order == order("first"));
    assert_eq!(in_first.unwrap().samples_ns, [102, 103, 104]);
    let in_second = p.windows[1]
        .events
        .iter()
        .find(|e| e.order == order("first"));
    assert_eq!(in_second.unwrap().samples_ns, [108, 109, 110]);
    for w in &p.windows[2..] {
        assert_eq!(w.iterations(), 9);
        assert_eq!(w.events.len(), 3, "late() is in every window once learned");
        for e in &w.events {
            assert_eq!(e.samples_ns.len(), 3);
            assert_eq!(e.stats.count, 3);
        }
    }
    // `first` is measured in a window's first 3 iterations: durations 100 + i.
    let w = &p.windows[5];
    let first_event = p.events.iter().find(|e| e.name == "first").unwrap();
    let in_window = w
        .events
        .iter()
        .find(|e| e.order == first_event.order)
        .unwrap();
    assert_eq!(in_window.samples_ns, [147, 148, 149]);
    // `events` shows the last window: its samples, iterations and offsets.
    assert_eq!(first_event.samples_ns, [147, 148, 149]);
    assert_eq!(first_event.sample_iters, [47, 48, 49]);
    assert_eq!(p.iterations.count, 62);
    assert_eq!(p.iterations.first, 47);
    assert_eq!(p.iterations.wall_ns.len(), 9);
    assert_eq!(p.iterations.wall_of(47), Some(110 + 47));
    assert_eq!(p.iterations.wall_of(46), None);
    // The file written at the end says the same.
    assert_eq!(file["windows"].as_array().unwrap().len(), 6);
    assert_eq!(file["windows"][1]["baseline"], true);
    assert!(file["windows"][2].get("baseline").is_none());
    assert_eq!(file["iterations"]["first"], 47);
    assert_eq!(file["run"]["mode"], "continuous");
}

/// Resident memory of this process, in bytes (Linux).
#[cfg(target_os = "linux")]
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[cfg(target_os = "linux")]
#[test]
fn memory_stays_bounded_over_a_million_iterations() {
    let _s = serial();
    let out = out_path("million");
    let config = Config {
        filter: Filter::parse("layer=c2").unwrap(),
        mode: Mode::Continuous,
        warmup: 2,
        repeat: 4,
        windows: 8,
        out: out.display().to_string(),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, None).unwrap();
    let mut rss = Vec::new();
    for i in 0..1_000_000u32 {
        tiny();
        tiny();
        profiler_core::step();
        if i % 100_000 == 99_999 {
            rss.push(rss_bytes());
        }
    }
    let p = profiler_core::snapshot().unwrap();
    drop(guard);
    let _ = std::fs::remove_file(&out);
    assert_eq!(p.iterations.count, 1_000_000);
    // The first 3 (the default PROF_BASELINE_WINDOWS), and the last 8.
    assert_eq!(p.windows.len(), 3 + 8);
    let index: Vec<u64> = p.windows.iter().take(4).map(|w| w.index).collect();
    assert_eq!(index[..3], [0, 1, 2]);
    assert!(p.windows[..3].iter().all(|w| w.baseline));
    assert!(p.windows[3..].iter().all(|w| !w.baseline));
    // Two events x 4 iterations: a window every 8 iterations.
    assert_eq!(p.windows.last().unwrap().index, (1_000_000 - 2) / 8 - 1);
    assert_eq!(index[3], (1_000_000 - 2) / 8 - 8);
    assert!(p.iterations.wall_ns.len() <= 8);
    // Growth from 100k to 1M iterations: a few pages of allocator noise at most, where the
    // iteration marks alone would have added 7 MB.
    let growth = rss.last().unwrap().saturating_sub(rss[0]);
    assert!(
        growth < 1 << 20,
        "resident memory grew by {growth} bytes between 100k and 1M iterations: {rss:?}"
    );
}

/// Reads `path` until `ready` accepts it (the writer thread writes on its own time, once a
/// second): bounded at 300 s only so that a writer that never writes fails the test rather than
/// hanging the suite, never by what a busy machine could make slow.
fn wait_for(
    path: &std::path::Path,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let start = std::time::Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            if ready(&v) {
                return v;
            }
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(300),
            "{} never got there",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn last_index(v: &serde_json::Value) -> Option<u64> {
    v["windows"].as_array()?.last()?["index"].as_u64()
}

/// The writer thread writes the first window at once, and windows that close less than a
/// second after a write once the second is up, with no further `step()` (the training thread
/// only hands them over). Those files say `complete: false` (the run goes on); the one written
/// when the program ends says `true`, and no rewrite comes after it.
#[test]
fn the_writer_thread_writes_the_latest_windows_and_the_end_writes_last() {
    let _s = serial();
    let clock = FakeClock::new();
    let out = out_path("writer");
    let _ = std::fs::remove_file(&out);
    let config = Config {
        filter: Filter::parse("layer=c1").unwrap(),
        mode: Mode::Continuous,
        warmup: 2,
        repeat: 1,
        windows: 2,
        baseline_windows: 1,
        out: out.display().to_string(),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    let iteration = |i: u64| {
        first(&clock, 100 + i);
        second(&clock);
        profiler_core::step();
    };
    // Warmup, then windows of 2 events x 1 iteration: window 0 is iterations 2-3.
    for i in 0..4 {
        iteration(i);
    }
    let v = wait_for(&out, |v| last_index(v) == Some(0));
    assert_eq!(v["complete"], false);
    assert_eq!(v["windows"][0]["baseline"], true);
    // Windows 1 to 4 close at once, well within the second after that write.
    for i in 4..12 {
        iteration(i);
    }
    let v = wait_for(&out, |v| last_index(v) == Some(4));
    let index: Vec<u64> = v["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["index"].as_u64().unwrap())
        .collect();
    assert_eq!(index, [0, 3, 4]);
    assert_eq!(v["complete"], false);
    assert_eq!(v["iterations"]["first"], 10);
    drop(guard);
    let end = std::fs::read_to_string(&out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&end).unwrap();
    assert_eq!(v["complete"], true);
    assert_eq!(last_index(&v), Some(4));
    // Nothing replaces the last write.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), end);
    let _ = std::fs::remove_file(&out);
}

/// Windows that close faster than the writer looks at its queue (it looks every 100 ms): the
/// queue drops the ones that newer windows make stale, and their buffers go back to the pool;
/// every window kept, and `events`, still hold exactly their own samples.
#[test]
fn windows_closing_faster_than_the_writer_keep_their_own_samples() {
    let _s = serial();
    let clock = FakeClock::new();
    let out = out_path("fast");
    let config = Config {
        filter: Filter::parse("layer=c1").unwrap(),
        mode: Mode::Continuous,
        warmup: 2,
        repeat: 2,
        windows: 3,
        baseline_windows: 1,
        out: out.display().to_string(),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    // Windows of 2 events x 2 iterations: 200 windows in 802 iterations, in well under 100 ms.
    for i in 0..802u64 {
        first(&clock, 1000 + i);
        second(&clock);
        profiler_core::step();
    }
    let p = profiler_core::snapshot().unwrap();
    drop(guard);
    let _ = std::fs::remove_file(&out);
    let index: Vec<u64> = p.windows.iter().map(|w| w.index).collect();
    assert_eq!(index, [0, 197, 198, 199]);
    let order = p.events.iter().find(|e| e.name == "first").unwrap().order;
    for w in &p.windows {
        let e = w.events.iter().find(|e| e.order == order).unwrap();
        // `first` is armed in the window's first 2 iterations.
        let i = w.first_iteration;
        assert_eq!(e.samples_ns, [1000 + i, 1001 + i], "window {}", w.index);
        assert_eq!(w.iterations(), 4);
    }
    let shown = p.events.iter().find(|e| e.name == "first").unwrap();
    assert_eq!(shown.samples_ns, [1000 + 798, 1000 + 799]);
    assert_eq!(shown.sample_iters, [798, 799]);
}

/// A trace asked through the control file, on the fake clock: every event in each traced
/// iteration with its exact duration, the sampling schedule paused for exactly the traced
/// iterations (the window it fell in is that much longer, and the samples around it are the
/// sampling schedule's), the trace written by the writer thread while the loop goes on, and a
/// probe first seen after the trace still learned and sampled.
#[test]
fn a_trace_on_demand_takes_every_event_then_sampling_goes_on() {
    let _s = serial();
    let clock = FakeClock::new();
    let out = out_path("on-demand");
    let dir = std::env::temp_dir().join(format!("prof-on-demand-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let control = dir.join("ctl");
    let config = Config {
        filter: Filter::parse("layer=c1|layer=c3").unwrap(),
        mode: Mode::Continuous,
        warmup: 2,
        repeat: 4,
        out: out.display().to_string(),
        control: Some(control.display().to_string()),
        trace_out: Some(dir.join("t-%i.json").display().to_string()),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    let traces = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("t-"))
            .map(|e| e.path())
            .collect::<Vec<_>>()
    };
    // Windows of 2 events x 4 iterations after 2 of warmup. The request names iteration 20;
    // the loop slows down until the trace is written (the writer looks every 100 ms).
    let mut asked = false;
    let mut i = 0u64;
    let mut late_from = None;
    let started = std::time::Instant::now();
    while late_from.is_none_or(|from| i < from + 40) {
        assert!(started.elapsed().as_secs() < 60, "no trace was written");
        first(&clock, 100 + i);
        second(&clock);
        if late_from.is_some() {
            late(); // first seen after the trace
        }
        profiler_core::step();
        if i >= 60 && late_from.is_none() && !traces().is_empty() {
            late_from = Some(i + 1);
        }
        i += 1;
        if i == 5 && !asked {
            // Asked once warmup is over, when the writer watches the file.
            std::fs::write(&control, "trace iterations=3 at=20 id=t\n").unwrap();
            asked = true;
        }
        if i >= 15 && traces().is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    let p = profiler_core::snapshot().unwrap();
    drop(guard);
    let _ = std::fs::remove_file(&out);
    let found = traces();
    assert_eq!(found.len(), 1, "{found:?}");
    let t = read(&found[0]);
    let t0 = t["iterations"]["first"].as_u64().unwrap();
    assert!(
        t0 >= 20,
        "the trace began at {t0}, before the iteration asked"
    );
    assert_eq!(found[0], dir.join(format!("t-{t0}.json")));
    assert_eq!(t["run"]["mode"], "trace");
    assert_eq!(t["run"]["repeat"], 3);
    assert_eq!(t["run"]["on_demand"]["source"], "control file");
    assert_eq!(t["run"]["on_demand"]["asked_at"], 20);
    assert_eq!(t["run"]["on_demand"]["id"], "t");
    assert_eq!(t["complete"], true);
    // Iteration i: first() takes 100 + i ns, second() 10 ns.
    let iters: Vec<u64> = (t0..t0 + 3).collect();
    let events = t["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    for e in events {
        let got: Vec<u64> = e["sample_iters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(got, iters, "{}", e["name"]);
        let samples: Vec<u64> = e["samples_ns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let want: Vec<u64> = match e["name"].as_str().unwrap() {
            "first" => iters.iter().map(|i| 100 + i).collect(),
            _ => vec![10; 3],
        };
        assert_eq!(samples, want, "{}", e["name"]);
    }
    let wall: Vec<u64> = t["iterations"]["wall_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(wall, iters.iter().map(|i| 110 + i).collect::<Vec<_>>());
    // The sampling schedule: windows of 4 iterations per event (8, then 12 once `late` is
    // learned), and the one the trace fell in 3 more.
    let lens: Vec<(u64, usize, usize)> = p
        .windows
        .iter()
        .map(|w| (w.first_iteration, w.wall_ns.len(), w.events.len()))
        .collect();
    for &(start, len, events) in &lens {
        let holds_trace = (start..start + len as u64).contains(&t0);
        let want = 4 * events + if holds_trace { 3 } else { 0 };
        assert_eq!(len, want, "{lens:?}");
    }
    assert_eq!(
        lens.last().unwrap().2,
        3,
        "late() was learned after the trace: {lens:?}"
    );
    assert!(lens
        .iter()
        .any(|&(s, l, _)| (s..s + l as u64).contains(&t0)));
    // Every sample the sampling schedule kept in those windows is its own: none in the
    // trace's iterations (the window shown is the last one closed).
    for e in &p.events {
        assert!(e
            .sample_iters
            .iter()
            .all(|i| !iters.contains(&u64::from(*i))));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A continuous-mode configuration over layer `c1`: 2 iterations of warmup, then windows of
/// `repeat` iterations per event, written to `out`.
fn c1(out: &std::path::Path, repeat: u32) -> Config {
    Config {
        filter: Filter::parse("layer=c1").unwrap(),
        mode: Mode::Continuous,
        warmup: 2,
        repeat,
        out: out.display().to_string(),
        summary: false,
        ..Config::default()
    }
}

/// A folder of its own for a test's files (the results, the control file, the traces).
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prof-continuous-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names of the files in `dir`.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Asks this process for a trace on demand, as `prof trigger PID` does: SIGUSR2, delivered to
/// this thread before `raise` returns, taken by the next `step()`.
fn trigger() {
    // SAFETY: raise(3) with a signal whose handler the session installed (or, before one is,
    // whose default this test never reaches: it is called only in continuous mode).
    assert_eq!(unsafe { libc::raise(libc::SIGUSR2) }, 0);
}

/// A trace that begins at the `step()` where a sampling window is complete (so the window's
/// close waits), and whose last iteration leaves a sample pending (`second()` does not run in
/// it): the trace waits for it a few steps, and the window closes in one of them. That close
/// kept only the recent iteration marks, so the trace, taken next, got later iterations' wall
/// times in place of its own (issue found in review: 9 wall times of iterations 30 to 38
/// instead of 12 of 26 to 37).
#[test]
fn a_window_closing_while_a_trace_waits_for_its_last_samples_keeps_the_traces_marks() {
    let _s = serial();
    let clock = FakeClock::new();
    let dir = scratch("trace-drain");
    let config = Config {
        trace_out: Some(dir.join("t-%i.json").display().to_string()),
        ..c1(&dir.join("prof.json"), 12)
    };
    let guard = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    // Windows of 2 events x 12 iterations after 2 of warmup: the first is [2, 26), complete at
    // the step that ends iteration 25, where the trace (PROF_REPEAT = 12 iterations) is asked:
    // it takes iterations 26 to 37, and second() skips 37.
    for i in 0..50u64 {
        first(&clock, 100 + i);
        if i != 37 {
            second(&clock);
        }
        if i == 25 {
            trigger();
        }
        profiler_core::step();
    }
    drop(guard);
    let t = read(&dir.join("t-26.json"));
    let wall: Vec<u64> = t["iterations"]["wall_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(t["iterations"]["first"], 26);
    // Iteration i: first() takes 100 + i ns, second() 10 ns.
    let want: Vec<u64> = (26..38u64)
        .map(|i| 100 + i + if i == 37 { 0 } else { 10 })
        .collect();
    assert_eq!(wall, want, "the trace's wall times are its own iterations'");
}

/// A program that calls `snapshot()` after each step absorbs the closed windows before the
/// writer thread looks; the writer still rewrites the file (it counts the windows handed over,
/// not those it absorbed itself). Before, such a program's `prof.json` was written only at the
/// end, and the metrics endpoint never moved.
#[test]
fn snapshots_do_not_keep_the_writer_from_rewriting_the_file() {
    let _s = serial();
    let clock = FakeClock::new();
    let out = out_path("snapshots");
    let _ = std::fs::remove_file(&out);
    let guard = profiler_core::init_with(c1(&out, 3), Some(Box::new(clock.clone()))).unwrap();
    let started = std::time::Instant::now();
    let mut i = 0u64;
    // Windows close every 6 iterations; the writer writes the first at once.
    while !out.exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the file was not written while the program ran ({i} iterations)"
        );
        first(&clock, 100 + i % 7);
        second(&clock);
        profiler_core::step();
        assert!(profiler_core::snapshot().is_some());
        std::thread::sleep(std::time::Duration::from_millis(2));
        i += 1;
    }
    let v = read(&out);
    drop(guard);
    let _ = std::fs::remove_file(&out);
    assert_eq!(v["complete"], false, "a rewrite while the run goes on");
    assert!(last_index(&v).is_some());
}

/// The end of the run writes the traces on demand still queued and waits for the one the
/// writer thread is writing: once the guard is dropped (a program's `main` returns next), the
/// trace is on disk and no temporary file is left. Before, the end did not wait: the program
/// exited with `.t-10.json.XXXX.tmp` beside its results and no trace.
#[test]
fn the_end_waits_for_a_trace_the_writer_is_writing() {
    let _s = serial();
    let clock = FakeClock::new();
    let dir = scratch("trace-in-flight");
    // A long trace, so that its write lasts long enough to be seen under way.
    let n = 50_000u32;
    let config = Config {
        trace_out: Some(dir.join("t-%i.json").display().to_string()),
        ..c1(&dir.join("prof.json"), n)
    };
    let guard = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    let in_flight = |names: &[String]| names.iter().any(|n| n.starts_with(".t-10.json"));
    let started = std::time::Instant::now();
    let mut caught = false;
    for i in 0.. {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "no trace was written"
        );
        first(&clock, 100);
        second(&clock);
        if i == 9 {
            trigger();
        }
        profiler_core::step();
        if i > u64::from(n) + 10 {
            let now = names(&dir);
            caught = in_flight(&now);
            if caught || now.iter().any(|n| n == "t-10.json") {
                break; // being written (the case this test is for), or written already
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    drop(guard);
    let after = names(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    println!("the trace's write seen under way at the end: {caught}");
    assert!(
        after.iter().any(|n| n == "t-10.json"),
        "the trace is not on disk once the end returned: {after:?}"
    );
    assert!(
        !after.iter().any(|n| n.ends_with(".tmp")),
        "a temporary file was left: {after:?}"
    );
}

/// Iteration numbers are 32-bit: a `continuous` run that reaches the last one it counts to
/// (2^32 steps: 12 hours at 10 µs a step) stops measuring there, says so, and writes its
/// results at the end; the program goes on. Before, the count overflowed: `step()` panicked
/// in a debug build, and in a release build iteration 0 came again (marks were never dropped
/// again, and every sample after it was lost).
#[test]
fn a_run_stops_measuring_at_the_last_iteration_number_it_counts() {
    let _s = serial();
    let clock = FakeClock::new();
    let out = out_path("last-iteration");
    let guard = profiler_core::init_with(c1(&out, 3), Some(Box::new(clock.clone()))).unwrap();
    let run = |n: u64| {
        for i in 0..n {
            first(&clock, 100 + i % 5);
            second(&clock);
            profiler_core::step();
        }
    };
    run(20); // two windows of 2 events x 3 iterations closed
    profiler_core::__private::renumber_iterations(u32::MAX - 6);
    run(20); // past the last iteration number
    assert!(
        !profiler_core::finished(),
        "the program is not told to stop"
    );
    let p = profiler_core::snapshot().unwrap();
    assert!(
        p.iterations.count <= u64::from(u32::MAX - 1),
        "{}",
        p.iterations.count
    );
    drop(guard);
    let v = read(&out);
    let _ = std::fs::remove_file(&out);
    assert!(last_index(&v).is_some(), "the windows so far are written");
}
