//! The `cuda` feature's logic against a simulated device (no GPU needed): samples pending until
//! the device has passed them, events per stream, the bounded event pools, offsets on the
//! device's time line, kernel attribution, and the NVTX, sync and capture hooks.
//!
//! The probes below name their stream with `stream = <expr>`, as users do with a `CudaStream`;
//! the expression is a `profiler_core::device::Stream` here. The host clock is a `FakeClock` advanced by
//! hand, the device a `SimDevice` whose kernels are scripted.
#![cfg(feature = "cuda")]

use profiler_core::device::{Device, Stream};
use profiler_core::format::Event;
use profiler_core::testing::SimDevice;
use profiler_core::{probe, profiled, Mode, Profile};

mod common;
use common::{config, host, serial, snapshot, start, A, B};

fn event<'a>(p: &'a Profile, name: &str, stream: &str, occurrence: u32) -> &'a Event {
    p.events
        .iter()
        .find(|e| {
            e.name == name && e.stream.as_deref() == Some(stream) && e.occurrence == occurrence
        })
        .unwrap_or_else(|| {
            let have: Vec<String> = p
                .events
                .iter()
                .map(|e| format!("{}@{:?}#{}", e.name, e.stream, e.occurrence))
                .collect();
            panic!("no event {name}@{stream}#{occurrence} in {have:?}")
        })
}

// ---- the code under measurement ----

/// A layer whose call takes 40 ns of CPU time and queues a kernel of `gpu_ns` on `stream`.
#[profiled(layer = "mlp", phase = "fwd", stream = stream)]
fn dev_gemm(sim: &SimDevice, stream: Stream, gpu_ns: u64) {
    host().advance(40);
    sim.launch(stream, gpu_ns, "gemm");
}

/// The same with a probe guard and two kernels on two streams.
fn dev_pair(sim: &SimDevice) {
    let _p = probe!("dev_pair", layer = "attn", phase = "bwd", stream = A);
    host().advance(10);
    sim.launch(A, 100, "qk");
    sim.launch(B, 300, "softmax");
}

/// A run that is abandoned: its guard is discarded.
fn dev_discarded(sim: &SimDevice) {
    let p = probe!("dev_discarded", layer = "mlp", stream = A);
    sim.launch(A, 10, "partial");
    p.discard();
}

#[profiled(layer = "opt")]
fn dev_plain() {
    host().advance(7);
}

// ---- tests ----

#[test]
fn device_samples_stay_pending_until_the_device_passes_them() {
    let _s = serial();
    let sim = SimDevice::new();
    let _g = start(config("pending", "name=dev_gemm", Mode::Sample, 2, 4), &sim);
    for _ in 0..2 {
        dev_gemm(&sim, A, 1000);
        sim.advance(1000);
        profiler_core::step();
    }
    // Iterations 2 and 3 are measured, but the device lags behind: their samples cannot be
    // read at their step(), and nothing waits for them.
    let mut seen = Vec::new();
    for _ in 0..2 {
        dev_gemm(&sim, A, 1000);
        profiler_core::step();
        let p = snapshot();
        seen.push(
            event(&p, "dev_gemm", &A.handle().to_string(), 0)
                .samples_ns
                .len(),
        );
    }
    assert_eq!(
        seen,
        vec![0, 0],
        "a sample was read before the device completed it"
    );
    // The device catches up: the next step() resolves both.
    sim.advance(10_000);
    dev_gemm(&sim, A, 1000);
    profiler_core::step();
    let p = snapshot();
    let e = event(&p, "dev_gemm", &A.handle().to_string(), 0);
    assert_eq!(e.samples_ns, vec![1000, 1000], "device time of the kernel");
    assert_eq!(e.sample_iters, vec![2, 3]);
    // Iteration 3's start was recorded on the stream behind iteration 2's kernel: offsets
    // count from where the stream reached the iteration, not from the CPU's step().
    assert_eq!(e.offsets_ns, vec![0, 0]);
    let gpu = e.gpu.as_ref().expect("gpu fields");
    assert_eq!(gpu.cpu_samples_ns, vec![40, 40], "CPU time of the call");
    assert_eq!(p.run.clock, "sim");
    assert_eq!(e.device, Some(0));
}

#[test]
fn a_probe_on_two_streams_is_one_event_per_stream_and_occurrence() {
    let _s = serial();
    let sim = SimDevice::new();
    let _g = start(config("streams", "name=dev_gemm", Mode::Trace, 2, 4), &sim);
    for _ in 0..8 {
        dev_gemm(&sim, A, 100);
        dev_gemm(&sim, B, 200);
        dev_gemm(&sim, A, 300);
        profiler_core::step();
        sim.advance(100_000);
    }
    let p = snapshot();
    assert_eq!(p.events.len(), 3, "{:?}", p.events);
    let (a0, b0, a1) = (
        event(&p, "dev_gemm", "160", 0),
        event(&p, "dev_gemm", "176", 0),
        event(&p, "dev_gemm", "160", 1),
    );
    assert_eq!((a0.order, b0.order, a1.order), (0, 1, 2));
    assert_eq!(a0.samples_ns, vec![100; 4]);
    assert_eq!(b0.samples_ns, vec![200; 4]);
    assert_eq!(a1.samples_ns, vec![300; 4]);
    assert_eq!((a0.device, b0.device), (Some(0), Some(1)));
    assert_eq!(a0.id, b0.id, "one probe, two events");
}

#[test]
fn offsets_are_measured_on_the_stream_from_the_iteration_start() {
    let _s = serial();
    let sim = SimDevice::new();
    let _g = start(config("offsets", "name=dev_gemm", Mode::Sample, 2, 3), &sim);
    for _ in 0..6 {
        // Work queued on the stream before the layer: 500 ns of data preparation.
        sim.launch(A, 500, "prep");
        dev_gemm(&sim, A, 250);
        sim.advance(100_000); // the device finishes the iteration's work
        profiler_core::step();
    }
    let p = snapshot();
    let e = event(&p, "dev_gemm", "160", 0);
    assert_eq!(e.samples_ns, vec![250; 3]);
    assert_eq!(e.offsets_ns, vec![500; 3], "offset on the device time line");
    assert_eq!(e.sample_iters, vec![2, 3, 4]);
}

#[test]
fn event_pools_are_bounded_and_given_back() {
    let _s = serial();
    let sim = SimDevice::new();
    let _g = start(config("pool", "name=dev_gemm", Mode::Sample, 2, 40), &sim);
    for _ in 0..42 {
        dev_gemm(&sim, A, 10);
        profiler_core::step();
        sim.advance(1000);
    }
    let capacity = sim
        .pool_capacity(A)
        .expect("the stream's pool was prepared");
    assert!(capacity < 100, "pool of {capacity} events for 40 samples");
    let p = snapshot();
    assert_eq!(event(&p, "dev_gemm", "160", 0).samples_ns.len(), 40);
    assert!(profiler_core::finished());
    assert_eq!(sim.events_in_use(), 0, "every event went back to its pool");
}

#[test]
fn a_discarded_run_gives_its_event_back() {
    let _s = serial();
    let sim = SimDevice::new();
    let _g = start(
        config("discard", "name=dev_discarded", Mode::Sample, 2, 40),
        &sim,
    );
    for _ in 0..42 {
        dev_discarded(&sim);
        sim.advance(1000);
        profiler_core::step();
    }
    assert!(profiler_core::finished());
    let p = snapshot();
    assert!(p.events[0].samples_ns.is_empty());
    assert_eq!(
        sim.events_in_use(),
        0,
        "a discarded run kept its start event"
    );
    assert_eq!(sim.lost_marks(), 0);
}

#[test]
fn an_event_skipped_in_its_iteration_holds_no_stream_marks_back() {
    let _s = serial();
    let sim = SimDevice::new();
    // More iterations than the pool holds iteration marks (its size is (2 x 2 + 1) x 16).
    let _g = start(config("skip", "name=dev_gemm", Mode::Trace, 2, 150), &sim);
    for i in 0..152 {
        dev_gemm(&sim, A, 10);
        if i != 5 {
            dev_gemm(&sim, A, 20); // occurrence 1 runs in every iteration but one
        }
        sim.advance(1000);
        profiler_core::step();
    }
    assert!(profiler_core::finished());
    let p = snapshot();
    assert_eq!(event(&p, "dev_gemm", "160", 0).samples_ns.len(), 150);
    assert_eq!(event(&p, "dev_gemm", "160", 1).samples_ns.len(), 149);
    assert_eq!(sim.lost_marks(), 0, "the pool ran out");
    assert_eq!(sim.events_in_use(), 0);
}

#[test]
fn an_exhausted_pool_loses_samples_and_says_so() {
    let _s = serial();
    // Three events per stream: a device that lags never lets the marks go back in time.
    let sim = SimDevice::new().with_pool_limit(3);
    let _g = start(config("lost", "name=dev_gemm", Mode::Trace, 1, 4), &sim);
    for _ in 0..5 {
        dev_gemm(&sim, A, 10);
        profiler_core::step();
    }
    let p = snapshot();
    let e = event(&p, "dev_gemm", "160", 0);
    let gpu = e.gpu.as_ref().unwrap();
    assert!(gpu.lost > 0, "lost samples are counted");
    assert_eq!(e.samples_ns.len() as u64 + gpu.lost, 4);
}

#[test]
fn kernels_are_attributed_with_their_sum_and_projection() {
    let _s = serial();
    let sim = SimDevice::new();
    let mut c = config("kernels", "name=dev_pair", Mode::Sample, 2, 3);
    c.kernels = true;
    let _g = start(c, &sim);
    for _ in 0..6 {
        sim.launch(A, 50, "outside"); // not inside a measured run
        dev_pair(&sim);
        profiler_core::step();
        sim.advance(100_000);
    }
    let p = snapshot();
    let e = event(&p, "dev_pair", "160", 0);
    let k = e.gpu.as_ref().unwrap().kernels.as_ref().expect("kernels");
    // qk (100 ns on A) and softmax (300 ns on B) run side by side.
    assert_eq!(k.sum_ns, vec![400; 3]);
    assert_eq!(k.projection_ns, vec![300; 3]);
    let names: Vec<&str> = k.list.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, vec!["softmax", "qk"]);
    assert_eq!(k.list[0].count, 3);
    assert!(sim.log().contains(&"kernels on".to_owned()));
    // The records are turned off (and flushed) only once the device has done its work: a
    // flush before it hands over the last iteration's kernels incomplete.
    let log = sim.log();
    let off = log
        .iter()
        .position(|l| l == "kernels off")
        .expect("kernels off");
    assert_eq!(log[off - 1], "sync", "{log:?}");
}

/// Continuous mode: `events` shows the last closed window's runs with their stream, and the
/// kernels of those runs, which the writer reads from the cold-path state when it makes the
/// profile; each window keeps the device times.
#[test]
fn continuous_mode_shows_the_last_window_with_its_stream_and_kernels() {
    let _s = serial();
    let sim = SimDevice::new();
    let mut c = config(
        "kernels-continuous",
        "name=dev_pair",
        Mode::Continuous,
        2,
        3,
    );
    c.kernels = true;
    let _g = start(c, &sim);
    // Warmup 2, then windows of 1 event x 3 iterations: 2-4, 5-7, 8-10; 11 is under way.
    for _ in 0..12 {
        sim.launch(A, 50, "outside");
        dev_pair(&sim);
        profiler_core::step();
        sim.advance(100_000);
    }
    let p = snapshot();
    let index: Vec<u64> = p.windows.iter().map(|w| w.index).collect();
    assert_eq!(index, [0, 1, 2]);
    let e = event(&p, "dev_pair", "160", 0);
    assert_eq!(e.device, Some(0));
    // A device sample still pending when its window closes is resolved into the next window
    // (known, left as it was): the last window shows iterations 7 to 9.
    assert_eq!(e.sample_iters, [7, 8, 9]);
    let k = e.gpu.as_ref().unwrap().kernels.as_ref().expect("kernels");
    assert_eq!(k.sum_ns, vec![400; e.samples_ns.len()]);
    assert_eq!(k.projection_ns, vec![300; e.samples_ns.len()]);
    let last = p.windows.last().unwrap();
    assert_eq!(last.events[0].samples_ns, e.samples_ns);
}

#[test]
fn nvtx_ranges_wrap_every_selected_probe_every_iteration() {
    let _s = serial();
    let sim = SimDevice::new();
    let mut c = config("nvtx", "name=dev_gemm|name=dev_plain", Mode::Sample, 2, 2);
    c.nvtx = true;
    let _g = start(c, &sim);
    for _ in 0..6 {
        dev_gemm(&sim, A, 10);
        dev_plain();
        profiler_core::step();
        sim.advance(1000);
    }
    let log = sim.log();
    let pushes = |name: &str| log.iter().filter(|l| *l == &format!("push {name}")).count();
    assert_eq!(pushes("dev_gemm"), 6, "{log:?}");
    assert_eq!(pushes("dev_plain"), 6, "{log:?}");
    assert_eq!(log.iter().filter(|l| *l == "pop").count(), 12);
}

#[test]
fn sync_levels_and_capture() {
    let _s = serial();
    let sim = SimDevice::new();
    let mut c = config("sync", "name=dev_gemm|name=dev_plain", Mode::Sample, 2, 2);
    c.sync = 2;
    c.capture = true;
    let _g = start(c, &sim);
    for _ in 0..6 {
        dev_gemm(&sim, A, 10); // has a phase: synchronized before and after
        dev_plain(); // no phase: not at level 2
        profiler_core::step(); // synchronized at every level from 1
        sim.advance(1000);
    }
    // 6 steps, 2 per dev_gemm run while the schedule ran (it completes at step 6), and the
    // settling before the results are written.
    assert_eq!(sim.synchronizations(), 6 + 2 * 6 + 1, "{:?}", sim.log());
    let log = sim.log();
    let on = log
        .iter()
        .position(|l| l == "capture on")
        .expect("capture on");
    let off = log
        .iter()
        .position(|l| l == "capture off")
        .expect("capture off");
    assert!(on < off);
    // Capture starts when measuring begins: after the 2 warmup steps.
    let syncs_before_on = log[..on].iter().filter(|l| *l == "sync").count();
    assert_eq!(syncs_before_on, 2 * 2 + 2);
}

#[test]
fn without_a_device_stream_probes_are_timed_on_the_cpu() {
    let _s = serial();
    let sim = SimDevice::new();
    let c = config("nodevice", "name=dev_gemm", Mode::Sample, 2, 2);
    let _g = profiler_core::init_with(c, Some(Box::new(host().clone()))).unwrap();
    for _ in 0..5 {
        dev_gemm(&sim, A, 1000);
        profiler_core::step();
    }
    let p = snapshot();
    assert_eq!(p.events.len(), 1);
    let e = &p.events[0];
    assert_eq!((e.stream.as_deref(), e.device), (None, None));
    assert_eq!(e.samples_ns, vec![40, 40]);
    assert!(e.gpu.is_none());
    assert_eq!(p.run.clock, "fake");
}

/// A trace on demand in continuous mode while the device runs an iteration behind the host (as
/// training with `PROF_SYNC=0` does): a sample is pending at every `step()`. The trace waited
/// for none to be pending while the sampling schedule went on arming, so it never began (no
/// trace file); now sampling pauses while they land, the trace takes its iterations, and
/// sampling waits again for the trace's last samples before it arms a slot they hold. Asked
/// at four iterations in a row, so that sampling resumes at each of the window's slots.
#[cfg(target_os = "linux")]
#[test]
fn a_trace_on_demand_begins_while_the_device_runs_behind() {
    let _s = serial();
    // Each sample is its own iteration's kernel: iteration i's takes 1000 + i ns.
    let kernels_of = |e: &Event| -> Vec<u64> {
        e.sample_iters
            .iter()
            .map(|&i| 1000 + u64::from(i))
            .collect()
    };
    for asked in 10..14 {
        let (trace, sampled) = trace_behind(asked);
        // Its 4 iterations in a row, each with its own kernel's device time.
        let e = event(&trace, "dev_gemm", &A.handle().to_string(), 0);
        let first = u32::try_from(trace.iterations.first).unwrap();
        assert_eq!(
            e.sample_iters,
            (first..first + 4).collect::<Vec<u32>>(),
            "asked at {asked}"
        );
        assert_eq!(e.samples_ns, kernels_of(e), "asked at {asked}: the trace");
        // The sampling windows around it hold no sample of another iteration's kernel, and
        // none more than PROF_REPEAT.
        let s = event(&sampled, "dev_gemm", &A.handle().to_string(), 0);
        assert_eq!(s.samples_ns, kernels_of(s), "asked at {asked}: the windows");
        for w in &sampled.windows {
            assert!(w.events[0].samples_ns.len() <= 4, "asked at {asked}: {w:?}");
        }
    }
}

/// 40 iterations of continuous mode whose kernel of iteration `i` takes `1000 + i` ns and ends
/// after the iteration's `step()`, a trace asked at iteration `asked`: the trace written, and
/// the run's profile.
#[cfg(target_os = "linux")]
fn trace_behind(asked: u64) -> (Profile, Profile) {
    let sim = SimDevice::new();
    let mut c = config("behind", "name=dev_gemm", Mode::Continuous, 2, 4);
    let dir = std::path::Path::new(&c.out).with_file_name("behind-traces");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    c.trace_out = Some(dir.join("t-%i.json").display().to_string());
    let g = start(c, &sim);
    for i in 0..40u64 {
        dev_gemm(&sim, A, 1000 + i);
        if i == asked {
            // What `prof trigger PID` sends, taken by the next step().
            // SAFETY: raise(3) of a signal whose handler the continuous session installed.
            assert_eq!(unsafe { libc::raise(libc::SIGUSR2) }, 0);
        }
        profiler_core::step();
        // The kernel ends only after the step(): its sample is read at the next one.
        sim.advance(10_000);
    }
    let sampled = snapshot();
    drop(g);
    let traces: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assert_eq!(traces.len(), 1, "asked at {asked}: {traces:?}");
    let trace = serde_json::from_slice(&std::fs::read(&traces[0]).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (trace, sampled)
}
