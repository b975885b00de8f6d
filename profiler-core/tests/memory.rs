//! Memory per event, counted by `profiler_core::Alloc` installed as this test binary's global
//! allocator: known allocation patterns give exact figures, only while the event is armed and
//! only on the thread that armed it.
#![cfg(feature = "enable")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use profiler_core::testing::FakeClock;
use profiler_core::{probe, Config, Filter, Mode, Profile};

#[global_allocator]
static ALLOC: profiler_core::Alloc = profiler_core::Alloc::system();

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn start(clock: &FakeClock, mode: Mode, name: &str) -> profiler_core::InitGuard {
    let config = Config {
        filter: Filter::parse("layer=mem").unwrap(),
        mode,
        warmup: 2,
        repeat: 3,
        out: std::env::temp_dir()
            .join(format!("prof-memory-{}-{name}.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap()
}

/// `n` vectors of `m` bytes, each dropped before the next is made.
fn one_at_a_time(n: usize, m: usize) {
    for _ in 0..n {
        std::hint::black_box(vec![1u8; m]);
    }
}

/// `n` vectors of `m` bytes, all alive at once, then dropped.
fn all_at_once(n: usize, m: usize) -> usize {
    let kept: Vec<Vec<u8>> = (0..n).map(|_| vec![1u8; m]).collect();
    std::hint::black_box(&kept);
    kept.len()
}

fn memory<'a>(p: &'a Profile, name: &str) -> &'a profiler_core::format::Memory {
    let e = p.events.iter().find(|e| e.name == name).unwrap();
    e.memory
        .as_ref()
        .unwrap_or_else(|| panic!("{name} has no memory figures"))
}

#[test]
fn known_patterns_are_counted_exactly_and_only_while_armed() {
    let _s = serial();
    let clock = FakeClock::new();
    let _g = start(&clock, Mode::Sample, "patterns");
    // Another thread allocates all along: none of it is counted.
    let stop = Arc::new(AtomicBool::new(false));
    let noise = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::hint::black_box(vec![0u8; 4096]);
            }
        })
    };
    let mut steps = 0;
    while !profiler_core::finished() && steps < 100 {
        // Allocations outside every probe are not counted either.
        std::hint::black_box(vec![0u8; 999]);
        probe!("one_at_a_time", layer = "mem" => { one_at_a_time(8, 1000) });
        probe!("all_at_once", layer = "mem" => {
            // The Vec of 5 handles (5 x 24 bytes) is allocated too.
            all_at_once(5, 2000)
        });
        probe!("nothing", layer = "mem" => { clock.advance(1) });
        profiler_core::step();
        steps += 1;
    }
    stop.store(true, Ordering::Relaxed);
    noise.join().unwrap();
    let p = profiler_core::snapshot().unwrap();
    assert_eq!(p.schema, profiler_core::format::SCHEMA_V2);
    let m = memory(&p, "one_at_a_time");
    assert_eq!(m.alloc_bytes, [8000; 3]);
    assert_eq!(m.freed_bytes, [8000; 3]);
    assert_eq!(m.allocs, [8; 3]);
    assert_eq!(m.peak_bytes, [1000; 3]);
    let handles = 5 * std::mem::size_of::<Vec<u8>>() as u64;
    let m = memory(&p, "all_at_once");
    assert_eq!(m.alloc_bytes, [10_000 + handles; 3]);
    assert_eq!(m.allocs, [6; 3]);
    assert_eq!(m.peak_bytes, [10_000 + handles; 3]);
    let m = memory(&p, "nothing");
    assert_eq!(
        (m.alloc_bytes.clone(), m.allocs.clone()),
        (vec![0; 3], vec![0; 3])
    );
}

/// An event armed on a worker thread counts that thread's allocations, and a nested event's
/// allocations are inside its parent's.
#[test]
fn each_thread_counts_its_own_and_nesting_adds_up() {
    let _s = serial();
    let clock = FakeClock::new();
    let _g = start(&clock, Mode::Trace, "threads");
    for _ in 0..5 {
        let workers: Vec<_> = (0..4)
            .map(|k| {
                std::thread::spawn(move || {
                    probe!("worker", layer = "mem" => {
                        one_at_a_time(k + 1, 512);
                        probe!("inner", layer = "mem" => { one_at_a_time(2, 64) });
                    });
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        profiler_core::step();
    }
    let p = profiler_core::snapshot().unwrap();
    let workers: Vec<_> = p.events.iter().filter(|e| e.name == "worker").collect();
    assert_eq!(workers.len(), 4);
    let mut counts: Vec<u64> = workers
        .iter()
        .flat_map(|e| e.memory.as_ref().unwrap().allocs.clone())
        .collect();
    counts.sort_unstable();
    counts.dedup();
    // k + 1 vectors of its own and the 2 of the nested probe: 3, 4, 5 or 6.
    assert_eq!(counts, [3, 4, 5, 6]);
    for e in p.events.iter().filter(|e| e.name == "inner") {
        let m = e.memory.as_ref().unwrap();
        assert!(m.alloc_bytes.iter().all(|&b| b == 128), "{m:?}");
        assert!(m.peak_bytes.iter().all(|&b| b == 64), "{m:?}");
    }
}
