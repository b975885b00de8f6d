//! The GPU rules of `prof advise` (`profiler_tables::advice`) on profiles recorded with the
//! simulated device: each fires on a run made to show it and is silent on one made not to.
//! The host clock is a `FakeClock` advanced by hand, the device a `SimDevice` whose kernels are
//! scripted, so every figure is exact.
#![cfg(feature = "cuda")]

use profiler_core::device::Stream;
use profiler_core::testing::SimDevice;
use profiler_core::{profiled, Mode, Profile};
use profiler_tables::advice::{advise, AdviceOptions, Finding};
use profiler_tables::breakdown::breakdown;
use profiler_tables::rows::profile_rows;

#[allow(dead_code)] // stream B and other helpers this file does not use
mod common;
use common::{config, host, serial, snapshot, start, A};

/// A layer that queues `gpu_ns` of work on `stream` and, when `wait`, waits for it as a
/// synchronisation does (the host's time passes with the device's).
#[profiled(layer = "mlp", phase = "fwd", stream = stream)]
fn adv_layer(sim: &SimDevice, stream: Stream, gpu_ns: u64, wait: bool) {
    host().advance(40);
    sim.launch(stream, gpu_ns, "gemm");
    if wait {
        host().advance(gpu_ns);
        sim.advance(gpu_ns);
    }
}

/// A layer that launches 10 kernels of 2µs, the device `gap_ns` ahead between launches (the
/// host slow to launch the next).
#[profiled(layer = "attn", phase = "fwd", stream = stream)]
fn adv_small_kernels(sim: &SimDevice, stream: Stream, gap_ns: u64) {
    for _ in 0..10 {
        host().advance(100);
        sim.launch(stream, 2_000, "small");
        sim.advance(gap_ns);
    }
}

/// A copy to the device: `ns` on the stream.
#[profiled(layer = "input", phase = "h2d", stream = stream)]
fn adv_copy(sim: &SimDevice, stream: Stream, ns: u64) {
    host().advance(20);
    sim.launch(stream, ns, "memcpy_htod");
}

/// Host work of `ns` outside every probe (the iteration's own time).
fn host_work(ns: u64) {
    host().advance(ns);
}

/// Runs `body` for enough iterations of a `sample`-mode session (warmup 2, repeat 4), the
/// device caught up after each step, with kernels attributed when `kernels`; the profile.
fn record(name: &str, kernels: bool, body: impl Fn(&SimDevice)) -> Profile {
    let _s = serial();
    let sim = SimDevice::new();
    let mut c = config(name, "layer=mlp|layer=attn|layer=input", Mode::Sample, 2, 4);
    c.kernels = kernels;
    let _g = start(c, &sim);
    for _ in 0..20 {
        body(&sim);
        profiler_core::step();
        sim.advance(10_000_000);
    }
    snapshot()
}

fn findings(p: &Profile) -> Vec<Finding> {
    let rows = profile_rows(p, 0.25, 0.05);
    let b = breakdown(p, &rows);
    advise(p, &rows, b.as_ref(), &AdviceOptions::default())
}

fn find(p: &Profile, id: &str) -> Option<Finding> {
    findings(p).into_iter().find(|f| f.id == id)
}

#[test]
fn sync_stall_fires_when_the_call_waits_for_the_device() {
    let p = record("adv-sync", false, |sim| adv_layer(sim, A, 200_000, true));
    let f = find(&p, "sync-stall").unwrap_or_else(|| panic!("{:#?}", findings(&p)));
    assert_eq!(f.evidence.figures["device_median_ns"], 200_000.0);
    assert_eq!(f.evidence.figures["cpu_median_ns"], 200_040.0);
    assert_eq!(f.at_stake_ns, 200_040.0);
    let p = record("adv-async", false, |sim| adv_layer(sim, A, 200_000, false));
    assert!(find(&p, "sync-stall").is_none(), "{:#?}", findings(&p));
}

#[test]
fn device_idle_fires_when_the_host_keeps_the_device_waiting() {
    let p = record("adv-idle", false, |sim| {
        adv_layer(sim, A, 100_000, false);
        host_work(900_000);
    });
    let f = find(&p, "device-idle").unwrap_or_else(|| panic!("{:#?}", findings(&p)));
    // 100µs on the device in an iteration of 900.04µs on the host.
    let share = f.evidence.figures["share"];
    assert!((share - 100_000.0 / 900_040.0).abs() < 1e-9, "{share}");
    assert_eq!(f.at_stake_ns, 800_040.0);
    let p = record("adv-busy", false, |sim| {
        adv_layer(sim, A, 800_000, false);
        host_work(200_000);
    });
    assert!(find(&p, "device-idle").is_none(), "{:#?}", findings(&p));
}

#[test]
fn launch_bound_fires_when_the_device_idles_between_kernels() {
    let p = record("adv-launch", true, |sim| adv_small_kernels(sim, A, 10_000));
    let f = find(&p, "launch-bound").unwrap_or_else(|| panic!("{:#?}", findings(&p)));
    // Ten 2µs kernels 10µs apart: 20µs of kernels in a span of 92µs.
    assert_eq!(f.evidence.figures["kernel_sum_ns"], 20_000.0);
    assert_eq!(f.evidence.figures["kernel_span_ns"], 92_000.0);
    assert_eq!(f.evidence.figures["launches_per_run"], 10.0);
    let p = record("adv-packed", true, |sim| adv_small_kernels(sim, A, 0));
    assert!(find(&p, "launch-bound").is_none(), "{:#?}", findings(&p));
}

#[test]
fn h2d_every_iteration_fires_on_copies_that_take_their_share() {
    let p = record("adv-h2d", false, |sim| {
        adv_copy(sim, A, 50_000);
        host_work(500_000);
    });
    let f = find(&p, "h2d-every-iteration").unwrap_or_else(|| panic!("{:#?}", findings(&p)));
    assert_eq!(f.at_stake_ns, 50_000.0);
    let p = record("adv-h2d-small", false, |sim| {
        adv_copy(sim, A, 5_000);
        host_work(500_000);
    });
    assert!(
        find(&p, "h2d-every-iteration").is_none(),
        "{:#?}",
        findings(&p)
    );
}
