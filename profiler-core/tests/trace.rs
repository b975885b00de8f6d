//! `trace` mode's recording path: runs recorded into per-thread buffers and turned into events
//! on the cold path. Driven by a fake clock, so that every duration is exact: the event bound
//! and its exact merged totals, the first iteration without warmup, worker threads that never
//! call `step()`, threads that come and go, long runs, discarded runs, `async fn` parents,
//! the buffers' bound, and no allocation per recorded run.
#![cfg(feature = "enable")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Wake, Waker};

use profiler_core::testing::FakeClock;
use profiler_core::{probe, profiled, Config, Filter, InitGuard, Mode, Profile};

/// Counts this thread's allocations (the tests of this binary run on several threads).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed to the system allocator unchanged; the count is a side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

fn clock() -> &'static FakeClock {
    static CLOCK: OnceLock<FakeClock> = OnceLock::new();
    CLOCK.get_or_init(FakeClock::new)
}

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn config(name: &str, filter: &str, warmup: u32, repeat: u32, max_events: u32) -> Config {
    let dir = std::env::temp_dir().join(format!("prof-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Config {
        filter: Filter::parse(filter).unwrap(),
        mode: Mode::Trace,
        warmup,
        repeat,
        max_events,
        out: dir.join(format!("{name}.json")).display().to_string(),
        summary: false,
        ..Config::default()
    }
}

fn start(name: &str, filter: &str, warmup: u32, repeat: u32, max_events: u32) -> InitGuard {
    let config = config(name, filter, warmup, repeat, max_events);
    profiler_core::init_with(config, Some(Box::new(clock().clone()))).unwrap()
}

fn snapshot() -> Profile {
    profiler_core::snapshot().expect("a session runs")
}

fn event<'a>(p: &'a Profile, name: &str, occurrence: u32) -> &'a profiler_core::format::Event {
    p.events
        .iter()
        .find(|e| e.name == name && e.occurrence == occurrence)
        .unwrap_or_else(|| panic!("no event {name}#{occurrence}"))
}

/// What the buffers dropped: nothing, in every test but the one about their bound.
fn dropped() -> u64 {
    profiler_core::__private::record_buffers().unwrap().1
}

#[profiled(layer = "t1")]
fn hot(ns: u64) {
    clock().advance(ns);
}

/// Runs `hot` `n` times, the `i`th run lasting `1 + i % 7` ns; returns the durations.
fn hot_loop(n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| {
            hot(1 + i % 7);
            1 + i % 7
        })
        .collect()
}

/// The merged event's count, mean, min and max against the durations it folds.
fn assert_merged(p: &Profile, name: &str, at: u32, folded: &[u64]) {
    let merged = event(p, name, at);
    assert!(merged.merged);
    let n = folded.len() as u64;
    let sum: u64 = folded.iter().sum();
    let s = &merged.stats;
    assert_eq!(s.count, n);
    assert_eq!(s.mean_ns, (sum as f64 / n as f64).round() as u64);
    assert_eq!(
        (s.min_ns, s.max_ns),
        (*folded.iter().min().unwrap(), *folded.iter().max().unwrap())
    );
    // The reservoir: bounded, and only durations that ran.
    assert!(!merged.samples_ns.is_empty() && merged.samples_ns.len() <= 1024);
    assert!(merged.samples_ns.iter().all(|d| folded.contains(d)));
}

#[test]
fn runs_past_the_event_bound_fold_into_exact_totals() {
    let _s = serial();
    // 70,000 runs per iteration: past the 64 chunks at which a thread drains the buffers
    // itself, so that the heap of earliest runs is carried across drains within an iteration.
    let _g = start("bound", "layer=t1", 1, 2, 4);
    hot_loop(70_000);
    profiler_core::step();
    let mut folded = Vec::new();
    let mut firsts = Vec::new();
    while !profiler_core::finished() {
        let runs = hot_loop(70_000);
        firsts.push(runs[..4].to_vec());
        folded.extend_from_slice(&runs[4..]);
        profiler_core::step();
    }
    let p = snapshot();
    for occ in 0..4 {
        let e = event(&p, "hot", occ);
        assert!(!e.merged);
        assert_eq!(
            e.samples_ns,
            [firsts[0][occ as usize], firsts[1][occ as usize]]
        );
        assert_eq!(e.sample_iters, [1, 2]);
    }
    assert_merged(&p, "hot", 4, &folded);
    assert_eq!(dropped(), 0);
}

#[profiled(layer = "t2")]
fn first(ns: u64) {
    clock().advance(ns);
}

#[profiled(layer = "t2")]
fn around() {
    clock().advance(3);
    for _ in 0..2 {
        first(1);
    }
}

#[test]
fn the_first_iteration_without_warmup_is_measured_past_a_chunk() {
    let _s = serial();
    // 3,000 runs in the iteration that learns the events and is measured: three chunks.
    let _g = start("first", "layer=t2", 0, 2, 100);
    let mut folded = Vec::new();
    while !profiler_core::finished() {
        around();
        for i in 0..3000u64 {
            first(1 + i % 5);
            if i >= 97 {
                folded.push(1 + i % 5);
            }
        }
        profiler_core::step();
    }
    let p = snapshot();
    let outer = event(&p, "around", 0);
    assert_eq!(outer.samples_ns, [5, 5]);
    assert_eq!(outer.sample_iters, [0, 1]);
    // The two runs inside `around` come first, with `around` as their parent.
    for occ in 0..2 {
        let inner = event(&p, "first", occ);
        assert_eq!(inner.samples_ns, [1, 1]);
        assert_eq!(inner.parent, Some(outer.order));
    }
    let loose = event(&p, "first", 2);
    assert_eq!((loose.samples_ns.clone(), loose.parent), (vec![1, 1], None));
    // 100 events (`around` and 99 of `first`), the 2,903 later runs of `first` merged.
    assert_eq!(event(&p, "first", 98).samples_ns, [2, 2]);
    assert_merged(&p, "first", 99, &folded);
    assert_eq!(dropped(), 0);
}

#[profiled(layer = "t3")]
fn shared(ns: u64) {
    clock().advance(ns);
}

#[test]
fn a_worker_thread_that_never_steps_is_read_and_occurrences_follow_start_order() {
    let _s = serial();
    let _g = start("worker", "layer=t3", 1, 3, 4096);
    let (go, wait) = mpsc::channel::<u64>();
    let (done, finished) = mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        for ns in wait {
            shared(ns);
            done.send(()).unwrap();
        }
    });
    let mut steps = 0;
    while !profiler_core::finished() {
        // Main, worker, main: three occurrences in the order they start, on two threads.
        shared(10);
        go.send(20).unwrap();
        finished.recv().unwrap();
        shared(30);
        profiler_core::step();
        steps += 1;
        assert!(steps < 10);
    }
    drop(go);
    worker.join().unwrap();
    let p = snapshot();
    for (occ, ns) in [(0, 10), (1, 20), (2, 30)] {
        let e = event(&p, "shared", occ);
        assert_eq!(e.samples_ns, [ns; 3], "occurrence {occ}");
        assert_eq!(e.sample_iters, [1, 2, 3]);
    }
    // Offsets on the main thread's iteration marks: 0, 10 and 30 ns into each iteration.
    assert_eq!(event(&p, "shared", 1).offsets_ns, [10; 3]);
    assert_eq!(event(&p, "shared", 2).offsets_ns, [30; 3]);
}

#[profiled(layer = "t4")]
fn spawned(ns: u64) {
    clock().advance(ns);
}

#[test]
fn threads_that_come_and_go_reuse_the_buffers() {
    let _s = serial();
    let _g = start("threads", "layer=t4", 1, 200, 4096);
    let mut steps = 0;
    while !profiler_core::finished() {
        // One after another: threads running at once would advance the one fake clock in each
        // other's runs (a run would read 8 or 12).
        for _ in 0..3 {
            std::thread::spawn(|| spawned(4)).join().unwrap();
        }
        profiler_core::step();
        steps += 1;
    }
    assert_eq!(steps, 201);
    let p = snapshot();
    for occ in 0..3 {
        assert_eq!(event(&p, "spawned", occ).samples_ns, [4; 200]);
    }
    // Threads that come and go (and a log freed one drain after its thread exits): a handful
    // of chunks, not one per thread spawned (603).
    let (chunks, dropped) = profiler_core::__private::record_buffers().unwrap();
    assert!(chunks <= 8, "{chunks} chunks for 3 threads at a time");
    assert_eq!(dropped, 0);
}

#[profiled(layer = "t5")]
fn long_one(ns: u64) {
    clock().advance(ns);
}

#[test]
fn a_run_longer_than_a_32_bit_length_keeps_its_duration() {
    let _s = serial();
    let _g = start("long", "layer=t5", 0, 2, 4096);
    while !profiler_core::finished() {
        long_one(5_000_000_000);
        long_one(7);
        profiler_core::step();
    }
    let p = snapshot();
    assert_eq!(event(&p, "long_one", 0).samples_ns, [5_000_000_000; 2]);
    assert_eq!(event(&p, "long_one", 1).samples_ns, [7; 2]);
    assert_eq!(event(&p, "long_one", 1).offsets_ns, [5_000_000_000; 2]);
}

fn maybe_kept(ns: u64, keep: bool) {
    let p = probe!("maybe_kept", layer = "t6");
    clock().advance(ns);
    if !keep {
        p.discard();
    }
}

#[test]
fn a_discarded_run_counts_as_an_occurrence_but_keeps_no_sample() {
    let _s = serial();
    for warmup in [0, 1] {
        let _g = start("discard", "layer=t6", warmup, 2, 4096);
        while !profiler_core::finished() {
            maybe_kept(1, true);
            maybe_kept(2, false);
            maybe_kept(3, true);
            profiler_core::step();
        }
        let p = snapshot();
        assert_eq!(event(&p, "maybe_kept", 0).samples_ns, [1, 1]);
        assert!(event(&p, "maybe_kept", 1).samples_ns.is_empty());
        assert_eq!(
            event(&p, "maybe_kept", 2).samples_ns,
            [3, 3],
            "warmup {warmup}"
        );
    }
}

#[profiled(layer = "t7")]
async fn fetched(ns: u64) -> u64 {
    clock().advance(ns);
    Yield(false).await;
    clock().advance(ns);
    ns
}

#[profiled(layer = "t7")]
fn driver() -> u64 {
    block_on(fetched(5))
}

struct Yield(bool);
impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
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
        clock().advance(100);
    }
}

#[test]
fn an_async_fn_is_recorded_with_the_run_it_started_in() {
    let _s = serial();
    let _g = start("async", "layer=t7", 0, 2, 4096);
    while !profiler_core::finished() {
        assert_eq!(driver(), 5);
        profiler_core::step();
    }
    let p = snapshot();
    let outer = event(&p, "driver", 0);
    let inner = event(&p, "fetched", 0);
    assert_eq!(inner.samples_ns, [110; 2]);
    assert_eq!(outer.samples_ns, [110; 2]);
    assert_eq!(inner.parent, Some(outer.order));
}

#[profiled(layer = "t8")]
fn flood() {
    clock().advance(1);
}

#[test]
fn the_records_of_a_learning_iteration_are_bounded() {
    let _s = serial();
    // A budget of 1 MiB: a quarter of it, 16 chunks of 1,024 records, for the buffers.
    let mut config = config("flood", "layer=t8", 0, 1, 4096);
    config.sample_budget_bytes = 1 << 20;
    let _g = profiler_core::init_with(config, Some(Box::new(clock().clone()))).unwrap();
    for _ in 0..20_000 {
        flood();
    }
    let (chunks, dropped) = profiler_core::__private::record_buffers().unwrap();
    assert_eq!(chunks, 16);
    assert_eq!(dropped, 20_000 - 16 * 1024);
    profiler_core::step();
    let p = snapshot();
    let measured: u64 = p.events.iter().map(|e| e.stats.count).sum();
    assert_eq!(measured, 16 * 1024);
}

#[profiled(layer = "t9")]
fn counted() {
    clock().advance(2);
}

#[test]
fn a_recorded_run_allocates_nothing() {
    let _s = serial();
    let _g = start("alloc", "layer=t9", 1, 10, 2);
    counted();
    counted();
    counted();
    profiler_core::step();
    // Two iterations for the buffers' chunks and lists to reach the size an iteration needs.
    for _ in 0..2 {
        for _ in 0..10_000 {
            counted();
        }
        profiler_core::step();
    }
    let before = allocations();
    // 10,000 runs: ten chunks handed over, taken from those the last step() freed.
    for _ in 0..10_000 {
        counted();
    }
    assert_eq!(allocations() - before, 0);
    profiler_core::step();
    let p = snapshot();
    assert_eq!(event(&p, "counted", 2).stats.count, 3 * 9_998);
}

#[profiled(layer = "t10")]
fn outer() {
    inner();
    let _p = probe!("between", layer = "t10");
    inner();
}

#[profiled(layer = "t10")]
fn inner() {
    clock().advance(3);
}

#[profiled(layer = "t10")]
fn instant_outer() {
    instant_a();
    let _b = probe!("instant_b", layer = "t10");
}

#[profiled(layer = "t10")]
fn instant_a() {
    let _child = probe!("instant_a_child", layer = "t10");
}

#[test]
fn learning_from_records_finds_the_order_and_parents_of_nested_runs() {
    let _s = serial();
    // `outer`, `inner` and `between` start at the same mark (nothing advances the clock
    // between them): only the nesting each thread recorded tells their order.
    let _g = start("nested", "layer=t10", 2, 1, 4096);
    while !profiler_core::finished() {
        outer();
        inner();
        // Runs that take no time at all: `instant_a_child` (inside `instant_a`) starts at
        // the same mark as `instant_b`, after it in no order but the thread's.
        instant_outer();
        profiler_core::step();
    }
    let p = snapshot();
    let names: Vec<String> = (p.events.iter())
        .map(|e| format!("{}#{}", e.name, e.occurrence))
        .collect();
    assert_eq!(
        names,
        [
            "outer#0",
            "inner#0",
            "between#0",
            "inner#1",
            "inner#2",
            "instant_outer#0",
            "instant_a#0",
            "instant_a_child#0",
            "instant_b#0"
        ]
    );
    let parents: Vec<Option<u32>> = p.events.iter().map(|e| e.parent).collect();
    // inner#1 runs inside `between` (a guard alive to the end of outer), inner#2 at top level.
    assert_eq!(
        parents,
        [
            None,
            Some(0),
            Some(0),
            Some(2),
            None,
            None,
            Some(5),
            Some(6),
            Some(5)
        ]
    );
    assert_eq!(event(&p, "outer", 0).samples_ns, [6]);
    assert_eq!(event(&p, "inner", 2).offsets_ns, [6]);
}

#[profiled(layer = "t11")]
fn first_a() {}

#[profiled(layer = "t11")]
fn first_b() {}

#[profiled(layer = "t11")]
fn late_p(ns: u64) {
    clock().advance(ns);
}

#[profiled(layer = "t11")]
fn late_r() {
    clock().advance(1);
}

#[test]
fn a_merged_event_takes_the_place_of_its_last_run() {
    let _s = serial();
    // Two events fit: `first_a` and `first_b`; every run of `late_p` and `late_r` is merged.
    // `late_p` runs before and after `late_r`: its merged event comes after `late_r`'s, as
    // the learner places an event where its most recent run was.
    let _g = start("merged-place", "layer=t11", 1, 1, 2);
    while !profiler_core::finished() {
        first_a();
        first_b();
        late_p(2);
        late_r();
        late_p(4);
        profiler_core::step();
    }
    let p = snapshot();
    let names: Vec<(String, bool)> = (p.events.iter())
        .map(|e| (e.name.clone(), e.merged))
        .collect();
    let expected = [
        ("first_a", false),
        ("first_b", false),
        ("late_r", true),
        ("late_p", true),
    ];
    assert_eq!(names, expected.map(|(n, m)| (n.to_owned(), m)));
    assert_eq!(event(&p, "late_p", 0).stats.count, 2);
    assert_eq!(event(&p, "late_p", 0).stats.mean_ns, 3);
}

#[profiled(layer = "t12")]
fn before_exit() {
    clock().advance(3);
}

#[profiled(layer = "t12")]
async fn in_a_destructor(ns: u64) -> u64 {
    clock().advance(ns);
    ns
}

/// A thread-local whose destructor runs an `async fn` probe.
struct Late;
impl Drop for Late {
    fn drop(&mut self) {
        block_on(in_a_destructor(1));
    }
}
thread_local! { static LATE: Late = const { Late }; }

/// An `async fn` probe run from a thread-local's destructor, after the thread's buffer was
/// given back, during warmup (where an `async fn` looks up its thread's buffer to name where
/// it started): the run is not recorded, and the program goes on. Before, the look-up
/// registered the exiting thread anew, which panicked inside a thread-local's destructor: the
/// runtime aborted the whole program.
#[test]
fn an_async_fn_in_a_thread_locals_destructor_does_not_abort_the_program() {
    let _s = serial();
    let _g = start("async-exit", "layer=t12", 1, 2, 4096);
    std::thread::spawn(|| {
        // Its destructor is registered first, so it runs after the buffers' own.
        LATE.with(|_| ());
        before_exit(); // a learning run: this thread's buffer, and its exit hook
    })
    .join()
    .unwrap();
    profiler_core::step();
    before_exit();
    profiler_core::step();
    assert_eq!(event(&snapshot(), "before_exit", 0).stats.count, 1);
}
