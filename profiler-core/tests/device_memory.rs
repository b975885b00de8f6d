//! Device memory against the simulated device (no GPU needed): the bytes in use on each device in
//! use at every `step()` (`iterations.device_memory`, aligned with `wall_ns`), and around every
//! armed run timed on a stream (`gpu.memory`), with exact figures for scripted allocations; on
//! two devices; in `trace` and `continuous` mode; and nothing when no device is in use or the
//! device cannot say.
#![cfg(feature = "cuda")]

use profiler_core::device::Stream;
use profiler_core::format::{DeviceUsage, Event, SCHEMA, SCHEMA_V2};
use profiler_core::testing::SimDevice;
use profiler_core::{profiled, Mode, Profile};

mod common;
use common::{config, host, serial, snapshot, start, A, B};

fn event<'a>(p: &'a Profile, name: &str, stream: Stream) -> &'a Event {
    let stream = stream.handle().to_string();
    p.events
        .iter()
        .find(|e| e.name == name && e.stream.as_deref() == Some(stream.as_str()))
        .unwrap_or_else(|| panic!("no event {name} on stream {stream}"))
}

/// An event's device memory: (used bytes at each run's end, change over each run).
fn figures(e: &Event) -> (Vec<Option<u64>>, Vec<Option<i64>>) {
    let m = e
        .gpu
        .as_ref()
        .and_then(|g| g.memory.as_ref())
        .unwrap_or_else(|| panic!("{} has no device memory", e.name));
    (m.used_bytes.clone(), m.change_bytes.clone())
}

/// Each device's series of used bytes at the steps.
fn steps(p: &Profile) -> Vec<(u32, Vec<Option<u64>>)> {
    p.iterations
        .device_memory
        .iter()
        .map(|DeviceUsage { device, used_bytes }| (*device, used_bytes.clone()))
        .collect()
}

// ---- the code under measurement ----

/// A layer that allocates `alloc` bytes and frees `free` on its stream's device, and queues a
/// kernel there.
#[profiled(layer = "devmem", phase = "fwd", stream = stream)]
fn dm_layer(sim: &SimDevice, stream: Stream, alloc: u64, free: u64) {
    host().advance(20);
    sim.allocate(stream.device(), alloc);
    sim.launch(stream, 100, "kernel");
    sim.free(stream.device(), free);
}

/// A layer timed on the CPU only.
#[profiled(layer = "devmem_cpu")]
fn dm_cpu(sim: &SimDevice) {
    host().advance(5);
    sim.allocate(0, 1);
}

/// Lets the device pass everything queued, then ends the iteration.
fn step(sim: &SimDevice) {
    sim.advance(10_000);
    profiler_core::step();
}

// ---- tests ----

/// At each step and around each armed run: the exact bytes the scripted allocations leave.
#[test]
fn used_bytes_at_each_step_and_around_each_armed_run() {
    let _s = serial();
    let sim = SimDevice::new();
    let g = start(config("steps", "name=dm_layer", Mode::Sample, 2, 3), &sim);
    // Iteration i: the run allocates 1000 (i + 1) and frees 100; then 5 more outside it.
    for i in 0..5u64 {
        dm_layer(&sim, A, 1000 * (i + 1), 100);
        sim.allocate(0, 5);
        step(&sim);
    }
    assert!(profiler_core::finished());
    let p = snapshot();
    drop(g);
    let used_after = |i: u64| (0..=i).map(|k| 1000 * (k + 1) - 100 + 5).sum::<u64>();
    assert_eq!(p.iterations.wall_ns.len(), 5);
    assert_eq!(
        steps(&p),
        vec![(0, (0..5).map(|i| Some(used_after(i))).collect())],
        "the bytes in use at each step, one per iteration listed"
    );
    let e = event(&p, "dm_layer", A);
    assert_eq!(e.sample_iters, vec![2, 3, 4]);
    let (used, change) = figures(e);
    // The run of iteration i ends before the 5 bytes allocated after it.
    assert_eq!(
        used,
        (2..5).map(|i| Some(used_after(i) - 5)).collect::<Vec<_>>()
    );
    assert_eq!(change, vec![Some(2900), Some(3900), Some(4900)]);
    assert_eq!(p.schema, SCHEMA_V2);
    // One reading per step, and two per armed run: 5 + 2 x 3.
    assert_eq!(sim.memory_queries(), 11);
}

/// Two devices: one series each (the second from the iteration it was first used in, `null`
/// before), and each event's figures from its own stream's device.
#[test]
fn two_devices_have_a_series_each_and_events_read_their_own() {
    let _s = serial();
    let sim = SimDevice::new();
    let g = start(config("two", "name=dm_layer", Mode::Sample, 2, 2), &sim);
    // 2 warmup iterations, then 2 events x 2 repeats; device 1 is used from iteration 1 on.
    for i in 0..6u64 {
        dm_layer(&sim, A, 100, 0);
        if i >= 1 {
            dm_layer(&sim, B, 10_000, 1_000);
        }
        step(&sim);
    }
    assert!(profiler_core::finished());
    let p = snapshot();
    drop(g);
    assert_eq!(
        steps(&p),
        vec![
            (0, (1..=6).map(|i| Some(100 * i)).collect()),
            (
                1,
                std::iter::once(None)
                    .chain((1..=5).map(|i| Some(9_000 * i)))
                    .collect()
            ),
        ]
    );
    let a = event(&p, "dm_layer", A);
    assert_eq!(a.sample_iters, vec![2, 3]);
    assert_eq!(figures(a), (vec![Some(300), Some(400)], vec![Some(100); 2]));
    let b = event(&p, "dm_layer", B);
    assert_eq!(b.sample_iters, vec![4, 5]);
    assert_eq!(
        figures(b),
        (vec![Some(36_000), Some(45_000)], vec![Some(9_000); 2])
    );
}

/// `trace` mode: every run on a stream, every active iteration, has its figures.
#[test]
fn trace_mode_reads_every_run_on_a_stream() {
    let _s = serial();
    let sim = SimDevice::new();
    let g = start(config("trace", "name=dm_layer", Mode::Trace, 1, 3), &sim);
    for i in 0..4u64 {
        dm_layer(&sim, A, 10 * (i + 1), 0);
        dm_layer(&sim, A, 1, 0);
        step(&sim);
    }
    assert!(profiler_core::finished());
    let p = snapshot();
    drop(g);
    let runs: Vec<&Event> = p.events.iter().filter(|e| e.name == "dm_layer").collect();
    assert_eq!(runs.len(), 2, "two occurrences");
    // Used after iteration i's first run: the runs before it (11, 21, 31, ...) plus its own.
    let before = |i: u64| (0..i).map(|k| 10 * (k + 1) + 1).sum::<u64>();
    assert_eq!(
        figures(runs[0]),
        (
            (1..4).map(|i| Some(before(i) + 10 * (i + 1))).collect(),
            (1..4).map(|i| Some(10 * (i as i64 + 1))).collect()
        )
    );
    assert_eq!(figures(runs[1]).1, vec![Some(1); 3]);
    assert_eq!(steps(&p)[0].1.len(), 4);
}

/// `continuous` mode lists the last closed window's iterations: the steps' memory is listed
/// for the same ones, from `iterations.first`, and older readings are dropped.
#[test]
fn continuous_mode_keeps_the_series_aligned_with_the_window_shown() {
    let _s = serial();
    let sim = SimDevice::new();
    let mut c = config("continuous", "name=dm_layer", Mode::Continuous, 1, 2);
    c.windows = 2;
    let g = start(c, &sim);
    // 1 warmup iteration, then windows of 2: [1,3) [3,5) [5,7) [7,9); iteration 9 is running.
    // A snapshot at every step absorbs each window as it closes, so that every close reuses
    // the buffers of a window absorbed before (as the writer thread does when it keeps up): no
    // figure of an earlier window may come back with them.
    for _ in 0..9u64 {
        dm_layer(&sim, A, 100, 0);
        step(&sim);
        snapshot();
    }
    let p = snapshot();
    // However long the run, the readings kept are those of the window shown and the one
    // running.
    for _ in 0..200u64 {
        dm_layer(&sim, A, 0, 0);
        step(&sim);
    }
    let kept = profiler_core::__private::device_memory_kept().unwrap();
    drop(g);
    assert!(kept <= 4, "{kept} iterations' readings kept");
    assert_eq!((p.iterations.first, p.iterations.wall_ns.len()), (7, 2));
    assert_eq!(steps(&p), vec![(0, vec![Some(800), Some(900)])]);
    let e = event(&p, "dm_layer", A);
    assert_eq!(e.sample_iters, vec![7, 8]);
    assert_eq!(
        figures(e),
        (vec![Some(800), Some(900)], vec![Some(100), Some(100)])
    );
}

/// With a device but no run on any of its streams, nothing is read and nothing written; the
/// file keeps schema v1.
#[test]
fn nothing_when_no_device_is_in_use() {
    let _s = serial();
    let sim = SimDevice::new();
    let g = start(config("cpu", "name=dm_cpu", Mode::Sample, 1, 2), &sim);
    for _ in 0..3 {
        dm_cpu(&sim);
        step(&sim);
    }
    assert!(profiler_core::finished());
    let p = snapshot();
    drop(g);
    assert_eq!(sim.memory_queries(), 0, "no device in use: never asked");
    assert!(p.iterations.device_memory.is_empty());
    assert!(p.events.iter().all(|e| e.gpu.is_none()));
    assert_eq!(p.schema, SCHEMA);
}

/// A device that cannot say: asked, but no figures and no `null` lists are written.
#[test]
fn nothing_when_the_device_cannot_say() {
    let _s = serial();
    let sim = SimDevice::new().without_memory_info();
    let g = start(config("mute", "name=dm_layer", Mode::Sample, 1, 2), &sim);
    for _ in 0..3 {
        dm_layer(&sim, A, 100, 0);
        step(&sim);
    }
    assert!(profiler_core::finished());
    let p = snapshot();
    drop(g);
    assert!(sim.memory_queries() > 0);
    assert!(p.iterations.device_memory.is_empty());
    let e = event(&p, "dm_layer", A);
    assert_eq!(e.samples_ns.len(), 2, "still timed on the device");
    assert!(e.gpu.as_ref().is_some_and(|g| g.memory.is_none()));
    assert_eq!(p.schema, SCHEMA);
}
