//! Schedule semantics, driven by a fake clock so that every duration is exact.
#![cfg(feature = "enable")]

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Wake, Waker};

use profiler_core::testing::FakeClock;
use profiler_core::{probe, profiled, Config, Filter, InitGuard, Mode, Profile};

/// One time line for the whole binary; tests run one at a time.
fn clock() -> &'static FakeClock {
    static CLOCK: OnceLock<FakeClock> = OnceLock::new();
    CLOCK.get_or_init(FakeClock::new)
}

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn out_path(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("prof-schedule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{name}.json")).display().to_string()
}

fn start(name: &str, filter: &str, mode: Mode, warmup: u32, repeat: u32) -> InitGuard {
    start_with(
        name,
        filter,
        mode,
        warmup,
        repeat,
        4096,
        Box::new(clock().clone()),
    )
}

fn start_with(
    name: &str,
    filter: &str,
    mode: Mode,
    warmup: u32,
    repeat: u32,
    max_events: u32,
    clock: Box<dyn profiler_core::Clock>,
) -> InitGuard {
    let config = Config {
        filter: Filter::parse(filter).unwrap(),
        mode,
        warmup,
        repeat,
        max_events,
        out: out_path(name),
        summary: false,
        ..Config::default()
    };
    profiler_core::init_with(config, Some(clock)).unwrap()
}

fn snapshot() -> Profile {
    profiler_core::snapshot().expect("a session runs")
}

fn event<'a>(p: &'a Profile, name: &str, occurrence: u32) -> &'a profiler_core::format::Event {
    p.events
        .iter()
        .find(|e| e.name == name && e.occurrence == occurrence)
        .unwrap_or_else(|| panic!("no event {name}#{occurrence} in {:?}", names(p)))
}

fn names(p: &Profile) -> Vec<String> {
    p.events
        .iter()
        .map(|e| format!("{}#{}", e.name, e.occurrence))
        .collect()
}

// ---- the code under measurement ----

#[profiled(layer = "s1", phase = "fwd")]
fn embed() {
    clock().advance(100);
}

#[profiled(layer = "s1", phase = "fwd")]
fn matmul(ns: u64) {
    clock().advance(ns);
}

fn mlp() {
    let _p = probe!("relu", layer = "s1", phase = "fwd");
    clock().advance(40);
}

fn iteration_s1() {
    embed();
    matmul(300);
    mlp();
    matmul(500);
}

#[test]
fn sample_mode_measures_one_event_per_iteration_in_execution_order() {
    let _s = serial();
    let _g = start("s1", "layer=s1", Mode::Sample, 3, 4);
    let mut steps = 0;
    while !profiler_core::finished() {
        let marks = clock().marks_taken();
        iteration_s1();
        profiler_core::step();
        if steps >= 3 {
            // One armed event: two clock reads, plus one for step(). Nothing else is measured.
            assert_eq!(clock().marks_taken() - marks, 3, "iteration {steps}");
        }
        steps += 1;
        assert!(steps <= 100, "never finished");
    }
    // warmup + events x repeat
    assert_eq!(steps, 3 + 4 * 4);
    let p = snapshot();
    assert!(p.complete);
    assert_eq!(names(&p), ["embed#0", "matmul#0", "relu#0", "matmul#1"]);
    let orders: Vec<u32> = p.events.iter().map(|e| e.order).collect();
    assert_eq!(orders, [0, 1, 2, 3]);
    for (name, occ, dur, offset) in [
        ("embed", 0, 100, 0),
        ("matmul", 0, 300, 100),
        ("relu", 0, 40, 400),
        ("matmul", 1, 500, 440),
    ] {
        let e = event(&p, name, occ);
        assert_eq!(e.samples_ns, [dur; 4], "{name}#{occ}");
        assert_eq!(e.offsets_ns, [offset; 4], "{name}#{occ}");
        assert_eq!(e.stats.count, 4);
        assert_eq!(
            (e.stats.median_ns, e.stats.min_ns, e.stats.max_ns),
            (dur, dur, dur)
        );
        assert_eq!(e.layer.as_deref(), Some("s1"));
    }
    // Each measured iteration armed exactly one event, in schedule order.
    let mut iters: Vec<u32> = p
        .events
        .iter()
        .flat_map(|e| e.sample_iters.clone())
        .collect();
    assert_eq!(event(&p, "embed", 0).sample_iters, [3, 4, 5, 6]);
    assert_eq!(event(&p, "matmul", 1).sample_iters, [15, 16, 17, 18]);
    iters.sort();
    assert_eq!(iters, (3..19).collect::<Vec<_>>());
    assert_eq!(p.iterations.count, 19);
    assert_eq!(p.iterations.wall_ns, vec![940; 19]);
    assert_eq!(event(&p, "relu", 0).kind, "probe");
    assert_eq!(event(&p, "embed", 0).kind, "fn");
    // After completion nothing is armed and step() changes nothing.
    iteration_s1();
    profiler_core::step();
    assert_eq!(snapshot().iterations.count, 19);
}

#[profiled(layer = "s17", phase = "init")]
fn build_model() {
    clock().advance(1000);
    for _ in 0..3 {
        init_layer();
    }
}

#[profiled(layer = "s17", phase = "init")]
fn init_layer() {
    clock().advance(200);
}

#[profiled(layer = "s17", phase = "fwd")]
fn forward_17() {
    clock().advance(100);
}

#[profiled(layer = "s17", phase = "bwd")]
fn backward_17() {
    clock().advance(300);
}

/// A program that builds its model (`with_init`: an annotated `build_model`, 1,000 ns, with
/// three `init_layer` of 200 ns inside it, 50 ns after start-up) before a loop of
/// `forward_17` and `backward_17`, run in `mode` until the schedule completes (in
/// `continuous` mode: `iterations`). Returns the iterations run and the profile.
fn run_with_init(mode: Mode, with_init: bool, iterations: u32) -> (u32, Profile) {
    let name = format!("s17-{}-{with_init}", mode.as_str());
    let _g = start(&name, "layer=s17", mode, 3, 4);
    if with_init {
        clock().advance(50);
        build_model();
    }
    let mut steps = 0;
    while !profiler_core::finished() && steps < iterations {
        forward_17();
        backward_17();
        profiler_core::step();
        steps += 1;
    }
    (steps, snapshot())
}

/// Issue 43, item 17: events seen only before the first `step()` (a model's construction) get
/// no window of their own: the schedule completes in as many iterations as without them, in
/// `sample` mode (3 warmup + 2 events x 4) as in `trace` mode (3 + 4), and `continuous` mode's
/// windows are those of the loop's events. They are reported apart, in the order they first
/// ran, each with its first run's exact duration and start (timed on the learning path in
/// `sample` and `continuous` mode, from the records in `trace` mode).
#[test]
fn events_that_ran_only_before_the_loop_get_no_window() {
    let _s = serial();
    let expected = [
        ("build_model", 0, 1600, 50),
        ("init_layer", 0, 200, 1050),
        ("init_layer", 1, 200, 1250),
        ("init_layer", 2, 200, 1450),
    ];
    let before_loop = |p: &Profile| -> Vec<(String, u32, u64, u64)> {
        p.before_loop
            .iter()
            .map(|b| {
                assert_eq!(
                    (b.layer.as_deref(), b.phase.as_deref()),
                    (Some("s17"), Some("init"))
                );
                let timed = (b.duration_ns.unwrap(), b.offset_ns.unwrap());
                (b.name.clone(), b.occurrence, timed.0, timed.1)
            })
            .collect()
    };
    let expected: Vec<(String, u32, u64, u64)> = expected
        .iter()
        .map(|&(n, o, d, at)| (n.to_owned(), o, d, at))
        .collect();
    for mode in [Mode::Sample, Mode::Trace] {
        let (without, p) = run_with_init(mode, false, 100);
        assert!(p.before_loop.is_empty());
        let (with, p) = run_with_init(mode, true, 100);
        assert_eq!(with, without, "{mode:?}");
        assert!(p.complete);
        assert_eq!(names(&p), ["forward_17#0", "backward_17#0"], "{mode:?}");
        assert_eq!(before_loop(&p), expected, "{mode:?}");
        // The summary says what they are and how long they took.
        let summary = profiler_core::summary(&p);
        assert!(
            summary.contains(
                "ran before the loop (not scheduled; each one's first run): s17/init \
                 build_model 1.6µs, s17/init init_layer 200ns, s17/init init_layer#1 200ns, \
                 s17/init init_layer#2 200ns"
            ),
            "{summary}"
        );
        // prof.json keeps them, and reads back.
        let text = serde_json::to_string(&p).unwrap();
        let back =
            profiler_core::format::parse_profile(text.as_bytes(), std::path::Path::new("p.json"))
                .unwrap();
        assert_eq!(back.before_loop, p.before_loop);
    }
    let (_, p) = run_with_init(Mode::Continuous, true, 3 + 3 * 8);
    assert_eq!(p.windows.len(), 3);
    assert!(p.windows.iter().all(|w| w.wall_ns.len() == 8));
    assert_eq!(names(&p), ["forward_17#0", "backward_17#0"]);
    assert_eq!(before_loop(&p), expected);
}

/// A probe that ran only before the loop and runs again after warmup (a model rebuilt) is
/// scheduled then, as a probe first seen late is, and stays listed with its run before the loop.
#[test]
fn a_probe_that_ran_before_the_loop_and_again_later_is_scheduled_late() {
    let _s = serial();
    let _g = start("s17-again", "layer=s17", Mode::Sample, 3, 4);
    build_model();
    let mut steps = 0;
    while !profiler_core::finished() && steps < 100 {
        forward_17();
        backward_17();
        if steps == 5 {
            build_model();
        }
        profiler_core::step();
        steps += 1;
    }
    let p = snapshot();
    assert!(p.complete);
    assert_eq!(p.before_loop[0].name, "build_model");
    assert_eq!(p.before_loop[0].duration_ns, Some(1600));
    // Learned at step 6 (after warmup), with the three `init_layer` inside it, and scheduled
    // after the loop's two events: their iterations arm them, but they do not run again, so
    // they have no sample.
    let late = [
        "build_model#0",
        "init_layer#0",
        "init_layer#1",
        "init_layer#2",
    ];
    assert_eq!(names(&p)[..2], ["forward_17#0", "backward_17#0"]);
    assert_eq!(names(&p)[2..], late);
    assert_eq!(event(&p, "build_model", 0).samples_ns, [] as [u64; 0]);
    assert_eq!(steps, 3 + 6 * 4);
}

/// A warmup of one iteration cannot tell the loop from what ran before it: every event it saw
/// is scheduled, as before.
#[test]
fn a_warmup_of_one_iteration_schedules_everything_it_saw() {
    let _s = serial();
    let _g = start("s17-one", "layer=s17", Mode::Sample, 1, 2);
    build_model();
    let mut steps = 0;
    while !profiler_core::finished() && steps < 100 {
        forward_17();
        backward_17();
        profiler_core::step();
        steps += 1;
    }
    // 1 + 6 events x 2, of which build_model's four armed in vain.
    assert_eq!(steps, 1 + 6 * 2);
    let p = snapshot();
    assert!(p.before_loop.is_empty());
    assert_eq!(event(&p, "build_model", 0).samples_ns, [] as [u64; 0]);
}

#[profiled(layer = "s2")]
fn traced(ns: u64) {
    clock().advance(ns);
}

#[test]
fn trace_mode_measures_every_event_every_active_iteration() {
    let _s = serial();
    let _g = start("s2", "layer=s2", Mode::Trace, 2, 5);
    let mut steps = 0;
    while !profiler_core::finished() {
        traced(10);
        traced(20);
        traced(30);
        profiler_core::step();
        steps += 1;
        assert!(steps <= 50);
    }
    assert_eq!(steps, 2 + 5);
    let p = snapshot();
    assert_eq!(p.events.len(), 3);
    for (occ, dur) in [(0, 10), (1, 20), (2, 30)] {
        let e = event(&p, "traced", occ);
        assert_eq!(e.samples_ns, [dur; 5]);
        assert_eq!(e.sample_iters, [2, 3, 4, 5, 6]);
    }
    assert_eq!(p.run.mode, "trace");
}

#[profiled(layer = "s2b")]
fn traced_from_the_start(ns: u64) {
    clock().advance(ns);
}

#[profiled(layer = "s2b")]
fn outer_from_the_start() {
    clock().advance(5);
    traced_from_the_start(1);
}

#[test]
fn trace_mode_without_warmup_measures_the_first_iteration_too() {
    let _s = serial();
    let _g = start("s2b", "layer=s2b", Mode::Trace, 0, 3);
    let mut steps = 0;
    while !profiler_core::finished() {
        traced_from_the_start(10);
        traced_from_the_start(20);
        outer_from_the_start();
        profiler_core::step();
        steps += 1;
        assert!(steps <= 50);
    }
    // PROF_WARMUP + PROF_REPEAT iterations, the first one measured.
    assert_eq!(steps, 3);
    let p = snapshot();
    for (occ, dur) in [(0, 10), (1, 20), (2, 1)] {
        let e = event(&p, "traced_from_the_start", occ);
        assert_eq!(e.samples_ns, [dur; 3], "occurrence {occ}");
        assert_eq!(e.sample_iters, [0, 1, 2]);
    }
    let outer = event(&p, "outer_from_the_start", 0);
    assert_eq!(outer.samples_ns, [6; 3]);
    // What the first iteration learned holds: the nested run's parent.
    let inner = event(&p, "traced_from_the_start", 2);
    assert_eq!(inner.parent, Some(outer.order));
    assert!(p.complete);
}

#[profiled(layer = "s2c")]
fn one_shot(ns: u64) {
    clock().advance(ns);
}

#[test]
fn a_one_shot_program_in_trace_mode_gets_its_run_measured() {
    let _s = serial();
    // No step() at all: the guard's end measures what ran.
    let g = start("s2c-none", "layer=s2c", Mode::Trace, 0, 1);
    one_shot(42);
    let path = out_path("s2c-none");
    drop(g);
    let text = std::fs::read_to_string(&path).unwrap();
    let p: Profile = serde_json::from_str(&text).unwrap();
    assert_eq!(event(&p, "one_shot", 0).samples_ns, [42]);
    assert_eq!(event(&p, "one_shot", 0).sample_iters, [0]);
    // One step(): PROF_REPEAT=1 is complete at once.
    let g = start("s2c-one", "layer=s2c", Mode::Trace, 0, 1);
    one_shot(43);
    profiler_core::step();
    assert!(profiler_core::finished());
    drop(g);
    let p: Profile =
        serde_json::from_str(&std::fs::read_to_string(out_path("s2c-one")).unwrap()).unwrap();
    assert!(p.complete);
    assert_eq!(event(&p, "one_shot", 0).samples_ns, [43]);
}

#[profiled(layer = "s3")]
fn always() {
    clock().advance(7);
}

#[profiled(layer = "s3")]
fn late_comer() {
    clock().advance(9);
}

#[test]
fn a_probe_first_seen_after_warmup_is_scheduled_after_the_others() {
    let _s = serial();
    let _g = start("s3", "layer=s3", Mode::Sample, 2, 3);
    let mut steps = 0;
    while !profiler_core::finished() {
        always();
        if steps >= 4 {
            late_comer();
        }
        profiler_core::step();
        steps += 1;
        assert!(steps <= 50);
    }
    assert_eq!(steps, 2 + 2 * 3);
    let p = snapshot();
    assert_eq!(names(&p), ["always#0", "late_comer#0"]);
    assert_eq!(event(&p, "late_comer", 0).samples_ns, [9; 3]);
    assert_eq!(event(&p, "late_comer", 0).sample_iters, [5, 6, 7]);
}

#[profiled(layer = "s4")]
fn worker() {
    let _p = probe!("inner", layer = "s4");
}

#[test]
fn occurrences_are_counted_across_threads() {
    let _s = serial();
    let _g = start("s4", "layer=s4&name=worker", Mode::Sample, 2, 3);
    let mut steps = 0;
    while !profiler_core::finished() {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(worker);
            }
        });
        profiler_core::step();
        steps += 1;
        assert!(steps <= 100);
    }
    assert_eq!(steps, 2 + 4 * 3);
    let p = snapshot();
    assert_eq!(p.events.len(), 4);
    for occ in 0..4 {
        assert_eq!(event(&p, "worker", occ).stats.count, 3);
    }
}

#[profiled(layer = "s5")]
fn hot_loop_body() {
    clock().advance(2);
}

#[test]
fn the_event_bound_folds_later_occurrences_into_a_merged_event_with_exact_stats() {
    let _s = serial();
    let _g = start_with(
        "s5",
        "layer=s5",
        Mode::Sample,
        2,
        2,
        3,
        Box::new(clock().clone()),
    );
    let mut steps = 0;
    while !profiler_core::finished() {
        for _ in 0..10 {
            hot_loop_body();
        }
        profiler_core::step();
        steps += 1;
        assert!(steps <= 100);
    }
    let p = snapshot();
    assert_eq!(
        names(&p),
        [
            "hot_loop_body#0",
            "hot_loop_body#1",
            "hot_loop_body#2",
            "hot_loop_body#3"
        ]
    );
    let merged = event(&p, "hot_loop_body", 3);
    assert!(merged.merged);
    assert!(!event(&p, "hot_loop_body", 0).merged);
    // 7 later runs per iteration, 2 iterations.
    assert_eq!(merged.stats.count, 14);
    assert_eq!(
        (
            merged.stats.mean_ns,
            merged.stats.min_ns,
            merged.stats.max_ns
        ),
        (2, 2, 2)
    );
    assert_eq!(merged.samples_ns.len(), 14);
    assert_eq!(steps, 2 + 4 * 2);
}

#[profiled(layer = "s6")]
fn partial() {
    clock().advance(5);
}

#[test]
fn results_of_an_unfinished_run_are_written_marked_incomplete() {
    let _s = serial();
    let path = out_path("s6");
    let _ = std::fs::remove_file(&path);
    {
        let _g = start("s6", "layer=s6", Mode::Sample, 2, 10);
        for _ in 0..5 {
            partial();
            profiler_core::step();
        }
        assert!(!profiler_core::finished());
    } // the guard writes here
    let p: Profile = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(!p.complete);
    assert_eq!(p.schema, "profiler-core/prof/v1");
    assert_eq!(p.iterations.count, 5);
    assert_eq!(event(&p, "partial", 0).samples_ns, [5, 5, 5]);
    assert_eq!(event(&p, "partial", 0).sample_iters, [2, 3, 4]);
}

fn device() -> &'static FakeClock {
    static DEVICE: OnceLock<FakeClock> = OnceLock::new();
    DEVICE.get_or_init(FakeClock::deferred)
}

#[profiled(layer = "s7")]
fn on_device() {
    device().advance(50);
}

#[test]
fn pending_readings_are_resolved_at_a_later_step_or_at_the_end() {
    let _s = serial();
    let device = device();
    let _g = start_with(
        "s7",
        "layer=s7",
        Mode::Sample,
        1,
        4,
        4096,
        Box::new(device.clone()),
    );
    let run = |device: &FakeClock| {
        device.advance(10);
        on_device();
        device.advance(5);
        profiler_core::step();
    };
    run(device); // warmup
    run(device);
    run(device);
    // The device has not caught up: nothing is resolved yet, and nothing is lost.
    assert_eq!(event(&snapshot(), "on_device", 0).samples_ns.len(), 0);
    device.complete();
    run(device); // resolves the two earlier samples; this one stays pending
    let p = snapshot();
    assert_eq!(event(&p, "on_device", 0).samples_ns, [50, 50]);
    assert_eq!(event(&p, "on_device", 0).offsets_ns, [10, 10]);
    assert!(device.released() >= 4, "marks are released once read");
    run(device);
    assert!(profiler_core::finished());
    // At the end the clock settles: every sample is read.
    let p = snapshot();
    let e = event(&p, "on_device", 0);
    assert_eq!(e.samples_ns, [50; 4]);
    assert_eq!(e.sample_iters, [1, 2, 3, 4]);
    assert_eq!(p.run.clock, "fake");
}

// ---- async ----

struct YieldOnce(bool);
impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[profiled(layer = "s8")]
async fn fetch(ns: u64) -> Result<u64, String> {
    clock().advance(ns);
    YieldOnce(false).await;
    clock().advance(ns);
    let parsed: u64 = "3".parse().map_err(|_| "bad".to_string())?;
    Ok(parsed)
}

struct Noop;
impl Wake for Noop {
    fn wake(self: std::sync::Arc<Self>) {}
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let waker = Waker::from(std::sync::Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        clock().advance(1000); // suspended time counts
    }
}

fn assert_send<T: Send>(_: &T) {}

#[test]
fn async_fn_measures_first_poll_to_completion_and_drops_record_nothing() {
    let _s = serial();
    let _g = start("s8", "layer=s8", Mode::Sample, 1, 3);
    assert_eq!(block_on(fetch(5)), Ok(3));
    profiler_core::step();
    let fut = fetch(7);
    assert_send(&fut);
    clock().advance(1_000_000); // before the first poll: not counted
    assert_eq!(block_on(fut), Ok(3));
    profiler_core::step();
    // A future polled once, then dropped: no sample.
    {
        let fut = fetch(9);
        let waker = Waker::from(std::sync::Arc::new(Noop));
        let mut fut = Box::pin(fut);
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
    }
    profiler_core::step();
    let p = snapshot();
    assert_eq!(event(&p, "fetch", 0).samples_ns, [7 + 1000 + 7]);
}

// ---- panics, methods, ids ----

#[profiled(layer = "s9")]
fn explodes() {
    clock().advance(33);
    panic!("boom");
}

struct Model;
trait Layer {
    fn forward(&self) -> u32;
}
impl Model {
    #[profiled(layer = "s9")]
    fn backward(&mut self) -> u32 {
        let _p = probe!("grad", layer = "s9");
        1
    }
}
impl Layer for Model {
    #[profiled(layer = "s9", name = "fwd_pass")]
    fn forward(&self) -> u32 {
        2
    }
}

#[test]
fn panics_end_the_measurement_and_ids_spell_the_full_path() {
    let _s = serial();
    let _g = start("s9", "layer=s9", Mode::Trace, 1, 1);
    let mut m = Model;
    for _ in 0..2 {
        assert!(std::panic::catch_unwind(explodes).is_err());
        m.backward();
        m.forward();
        profiler_core::step();
    }
    assert!(profiler_core::finished());
    let p = snapshot();
    assert_eq!(event(&p, "explodes", 0).samples_ns, [33]);
    let ids: Vec<&str> = p.events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "schedule::explodes",
            "schedule::Model::backward",
            "schedule::Model::backward::grad",
            "schedule::Model::forward",
        ]
    );
    assert_eq!(event(&p, "fwd_pass", 0).module, "schedule");
    // Every id and name works unchanged as a filter value.
    for probe in profiler_core::probes() {
        for text in [format!("id={}", probe.id), format!("name={}", probe.name)] {
            assert!(Filter::parse(&text).is_ok(), "{text}");
        }
    }
}

#[test]
fn a_filter_that_selects_nothing_is_an_error_that_points_to_the_listing() {
    let _s = serial();
    let config = Config {
        filter: Filter::parse("layer=no_such_layer").unwrap(),
        out: out_path("none"),
        ..Config::default()
    };
    let err = profiler_core::init_with(config, None).unwrap_err();
    assert_eq!(err.var, "PROF_FILTER");
    assert!(err.to_string().contains("--list-probes"), "{err}");
}

#[profiled(layer = "s10")]
fn writes_late() {
    clock().advance(1);
}

#[test]
fn a_write_that_fails_at_the_end_is_reported_and_the_program_goes_on() {
    let _s = serial();
    let dir = std::env::temp_dir().join(format!("prof-gone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = Config {
        filter: Filter::parse("layer=s10").unwrap(),
        warmup: 1,
        repeat: 1,
        out: dir.join("p.json").display().to_string(),
        summary: false,
        ..Config::default()
    };
    let _g = profiler_core::init_with(config, Some(Box::new(clock().clone()))).unwrap();
    std::fs::remove_dir_all(&dir).unwrap(); // the directory vanishes during training
    for _ in 0..2 {
        writes_late();
        profiler_core::step();
    }
    assert!(profiler_core::finished());
    assert!(!dir.exists());
    assert_eq!(event(&snapshot(), "writes_late", 0).samples_ns, [1]);
    // The results were kept: the end of the program writes them once the directory is back
    // (were it still missing, the guard would end the process with status 1: see the
    // write_failure tests).
    std::fs::create_dir_all(&dir).unwrap();
    drop(_g);
    let text = std::fs::read_to_string(dir.join("p.json")).unwrap();
    assert!(text.contains("writes_late"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[profiled(layer = "s11")]
fn many_times() {}

#[test]
fn sample_memory_is_bounded_and_events_past_the_budget_are_left_out() {
    let _s = serial();
    // 10,000 slots of 20 bytes per event: 10 events fit in a 2 MB budget.
    let config = Config {
        filter: Filter::parse("layer=s11").unwrap(),
        warmup: 1,
        repeat: 10_000,
        sample_budget_bytes: 2_000_000,
        out: out_path("s11"),
        summary: false,
        ..Config::default()
    };
    let _g = profiler_core::init_with(config, Some(Box::new(clock().clone()))).unwrap();
    for _ in 0..80 {
        many_times();
    }
    profiler_core::step();
    let p = snapshot();
    assert_eq!(p.events.len(), 10);
    assert!(!profiler_core::finished());
}

#[profiled(layer = "s12")]
fn busy(n: u64) -> u64 {
    (0..n).fold(0, |a, b| a ^ b)
}

#[test]
fn probes_on_many_threads_while_steps_go_on_never_break_the_schedule() {
    let _s = serial();
    for mode in [Mode::Sample, Mode::Trace] {
        let config = Config {
            filter: Filter::parse("layer=s12").unwrap(),
            mode,
            warmup: 2,
            repeat: 5,
            max_events: 8,
            out: out_path("s12"),
            summary: false,
            ..Config::default()
        };
        let _g = profiler_core::init_with(config, None).unwrap(); // the real CPU clock
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            for t in 0..3u64 {
                let stop = &stop;
                s.spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::black_box(busy(50 + t));
                    }
                });
            }
            let mut steps = 0;
            while !profiler_core::finished() && steps < 10_000 {
                std::thread::sleep(std::time::Duration::from_micros(200));
                profiler_core::step();
                steps += 1;
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        assert!(profiler_core::finished(), "{mode:?}");
        let p = snapshot();
        assert!(p.complete);
        assert!(p.events.len() <= 9, "bounded: {}", p.events.len());
        for e in &p.events {
            assert_eq!(e.samples_ns.len(), e.offsets_ns.len());
            assert!(e.merged || e.samples_ns.len() <= 5, "{e:?}");
        }
    }
}

#[profiled(layer = "s13")]
fn outer() {
    inner();
    let _p = probe!("between", layer = "s13");
    inner();
}

#[profiled(layer = "s13")]
fn inner() {
    clock().advance(3);
}

#[test]
fn warmup_learns_which_event_contains_which() {
    let _s = serial();
    let _g = start("s13", "layer=s13", Mode::Sample, 2, 1);
    while !profiler_core::finished() {
        outer();
        inner();
        profiler_core::step();
    }
    let p = snapshot();
    assert_eq!(
        names(&p),
        ["outer#0", "inner#0", "between#0", "inner#1", "inner#2"]
    );
    let parents: Vec<Option<u32>> = p.events.iter().map(|e| e.parent).collect();
    // inner#1 runs inside `between` (a guard alive to the end of outer), inner#2 at top level.
    assert_eq!(parents, [None, Some(0), Some(0), Some(2), None]);
}

#[profiled(layer = "s14")]
fn discarded_outer() {
    let p = probe!("dropped_early", layer = "s14");
    p.discard();
    let _q = probe!("after_discard", layer = "s14");
}

#[test]
fn a_discarded_guard_is_not_taken_for_a_parent() {
    let _s = serial();
    let _g = start("s14", "layer=s14", Mode::Sample, 2, 1);
    while !profiler_core::finished() {
        discarded_outer();
        profiler_core::step();
    }
    let p = snapshot();
    let parents: Vec<(String, Option<u32>)> = p
        .events
        .iter()
        .map(|e| (e.name.clone(), e.parent))
        .collect();
    assert_eq!(
        parents,
        [
            ("discarded_outer".to_owned(), None),
            ("dropped_early".to_owned(), Some(0)),
            ("after_discard".to_owned(), Some(0)),
        ]
    );
}
