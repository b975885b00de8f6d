//! Work per event: the `flops` and `bytes` keys of `#[profiled]` and `probe!`, and the work of
//! runtime probes (`RuntimeProbe::with_work`). Known work on a fake clock gives exact lists
//! beside exact durations, and the keys' expressions (a runtime probe's closure) run only for
//! the runs of a probe whose event is armed: never in warmup, never for a probe that takes no
//! part, never in `off` or `trace` mode.
#![cfg(feature = "enable")]

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use profiler_core::testing::FakeClock;
use profiler_core::{probe, profiled, Config, Filter, Mode, Profile, RuntimeProbe, WorkKeys};

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many times the keys' expressions of `matmul` were evaluated.
static EVALUATED: AtomicU64 = AtomicU64::new(0);

fn counted(n: u64) -> u64 {
    EVALUATED.fetch_add(1, Relaxed);
    n
}

/// A fake matrix product of `n` units of work: 2n flops, 8n bytes, n nanoseconds.
#[profiled(layer = "work", flops = 2 * counted(n), bytes = 8 * n)]
fn matmul(clock: &FakeClock, n: u64) {
    clock.advance(n);
}

fn start(clock: &FakeClock, mode: Mode, filter: &str, name: &str) -> profiler_core::InitGuard {
    start_on(Box::new(clock.clone()), mode, filter, name)
}

fn start_on(
    clock: Box<dyn profiler_core::Clock>,
    mode: Mode,
    filter: &str,
    name: &str,
) -> profiler_core::InitGuard {
    let config = Config {
        filter: Filter::parse(filter).unwrap(),
        mode,
        warmup: 2,
        repeat: 3,
        out: std::env::temp_dir()
            .join(format!("prof-work-{}-{name}.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    profiler_core::init_with(config, Some(clock)).unwrap()
}

/// Runs the loop until the schedule completes (at most 40 iterations): `matmul` of 100 + the
/// iteration's index units, a probe with a `bytes` key only, and one without keys.
fn train(clock: &FakeClock) -> u64 {
    let mut iter = 0;
    while !profiler_core::finished() && iter < 40 {
        iteration(clock, iter);
        profiler_core::step();
        iter += 1;
    }
    iter
}

/// The body of `train`'s iteration `iter`.
fn iteration(clock: &FakeClock, iter: u64) {
    matmul(clock, 100 + iter);
    {
        let _p = probe!("copy", layer = "work", bytes = 3 * iter as usize);
        clock.advance(7);
    }
    probe!("plain", layer = "work" => { clock.advance(1) });
}

fn event<'a>(p: &'a Profile, name: &str) -> &'a profiler_core::format::Event {
    p.events.iter().find(|e| e.name == name).unwrap()
}

#[test]
fn known_work_is_kept_per_sample_and_evaluated_only_when_armed() {
    let _s = serial();
    EVALUATED.store(0, Relaxed);
    let clock = FakeClock::new();
    let _g = start(&clock, Mode::Sample, "layer=work", "known");
    train(&clock);
    let p = profiler_core::snapshot().unwrap();
    let m = event(&p, "matmul");
    assert_eq!(m.samples_ns.len(), 3);
    let work = m.work.as_ref().expect("matmul has work");
    let n: Vec<u64> = m.samples_ns.clone();
    assert_eq!(
        work.flops.as_deref(),
        Some(&n.iter().map(|n| 2 * n).collect::<Vec<_>>()[..])
    );
    assert_eq!(
        work.bytes.as_deref(),
        Some(&n.iter().map(|n| 8 * n).collect::<Vec<_>>()[..])
    );
    // Each duration is the iteration's work: 100 + the iteration's index.
    for (d, it) in m.samples_ns.iter().zip(&m.sample_iters) {
        assert_eq!(*d, 100 + u64::from(*it));
    }
    // Three armed runs; warmup's two and the iterations that measure other events evaluate
    // nothing.
    assert_eq!(EVALUATED.load(Relaxed), 3);
    let c = event(&p, "copy");
    let work = c.work.as_ref().expect("copy has work");
    assert_eq!(work.flops, None);
    let bytes: Vec<u64> = c.sample_iters.iter().map(|&i| 3 * u64::from(i)).collect();
    assert_eq!(work.bytes.as_deref(), Some(&bytes[..]));
    assert_eq!(event(&p, "plain").work, None);
    // prof.json carries it, and its checks accept it.
    let text = serde_json::to_string(&p).unwrap();
    assert!(text.contains("\"work\":{\"flops\":["), "{text}");
    profiler_core::format::parse_profile(text.as_bytes(), std::path::Path::new("work.json"))
        .unwrap();
}

#[test]
fn keys_are_not_evaluated_for_probes_that_take_no_part() {
    let _s = serial();
    EVALUATED.store(0, Relaxed);
    let clock = FakeClock::new();
    {
        // matmul is not selected: its keys never run.
        let _g = start(&clock, Mode::Sample, "name=plain", "unselected");
        train(&clock);
        let p = profiler_core::snapshot().unwrap();
        assert!(p.events.iter().all(|e| e.name != "matmul"));
    }
    assert_eq!(EVALUATED.load(Relaxed), 0);
    {
        let _g = start(&clock, Mode::Off, "layer=work", "off");
        for _ in 0..10 {
            matmul(&clock, 1);
            profiler_core::step();
        }
    }
    assert_eq!(EVALUATED.load(Relaxed), 0);
}

/// How many times a key's expression with a side effect runs in each mode, for one program (2
/// warmup iterations, then 3 events of 3 repeats): once per armed run of `matmul` in `sample`
/// and `continuous` mode, which keep each run's work (`continuous` in every window: 3 per
/// window), and never in `trace` mode, which keeps none (no `work` and no zeros in its events,
/// none in the summary), whether its runs are recorded (the fake clock) or armed (a clock whose
/// readings come late, as a device's do), nor in `off` mode.
#[test]
fn keys_run_in_the_armed_runs_of_the_modes_that_keep_work() {
    let _s = serial();
    let run = |mode: Mode, name: &str, iterations: u64, deferred: bool| {
        EVALUATED.store(0, Relaxed);
        let clock = if deferred {
            FakeClock::deferred()
        } else {
            FakeClock::new()
        };
        let _g = start_on(Box::new(clock.clone()), mode, "layer=work", name);
        for iter in 0..iterations {
            iteration(&clock, iter);
            clock.complete();
            profiler_core::step();
        }
        let p = profiler_core::snapshot();
        (EVALUATED.load(Relaxed), p)
    };
    let (evaluated, p) = run(Mode::Sample, "modes-sample", 2 + 9, false);
    let p = p.unwrap();
    assert!(p.complete);
    assert_eq!(evaluated, 3, "sample");
    assert_eq!(
        event(&p, "matmul")
            .work
            .as_ref()
            .unwrap()
            .flops
            .as_ref()
            .unwrap()
            .len(),
        3
    );

    // Three windows of 9 iterations.
    let (evaluated, p) = run(Mode::Continuous, "modes-continuous", 2 + 27, false);
    let p = p.unwrap();
    assert_eq!(p.windows.len(), 3);
    assert_eq!(evaluated, 9, "continuous");
    let m = event(&p, "matmul");
    let flops: Vec<u64> = m.samples_ns.iter().map(|n| 2 * n).collect();
    assert_eq!(m.work.as_ref().unwrap().flops.as_ref(), Some(&flops));
    assert_eq!(
        event(&p, "copy")
            .work
            .as_ref()
            .unwrap()
            .bytes
            .as_ref()
            .unwrap()
            .len(),
        3
    );

    for deferred in [false, true] {
        let (evaluated, p) = run(Mode::Trace, "modes-trace", 2 + 3, deferred);
        let p = p.unwrap();
        assert!(p.complete);
        assert_eq!(evaluated, 0, "trace (deferred clock: {deferred})");
        for e in &p.events {
            assert_eq!(e.samples_ns.len(), 3, "{}", e.name);
            assert_eq!(e.work, None, "{}: trace mode keeps no work", e.name);
            assert_eq!(e.shapes, None, "{}", e.name);
        }
        let text = serde_json::to_string(&p).unwrap();
        assert!(
            !text.contains("\"work\":{") && !text.contains("\"shapes\":{"),
            "{text}"
        );
        let summary = profiler_core::summary(&p);
        assert!(
            !summary.contains("FLOP/s") && !summary.contains("work:"),
            "{summary}"
        );
    }

    let (evaluated, _) = run(Mode::Off, "modes-off", 20, false);
    assert_eq!(evaluated, 0, "off");
}

/// `continuous` mode reuses a closed window's buffers for a later window: the work of every
/// window shown is that window's own, however many windows came before. (A snapshot at each
/// step absorbs each window as it closes, so every close reuses an emptied buffer; a buffer
/// left holding an earlier window's work had more work than samples, and `prof.json` lost it.)
#[test]
fn continuous_mode_shows_each_windows_own_work() {
    let _s = serial();
    let clock = FakeClock::new();
    let _g = start(&clock, Mode::Continuous, "layer=work", "windows-work");
    // 2 warmup iterations, then windows of 9 (3 events, 3 repeats each).
    for iter in 0..2 + 9 * 4 {
        iteration(&clock, iter);
        profiler_core::step();
        let p = profiler_core::snapshot().unwrap();
        if p.windows.is_empty() {
            continue;
        }
        for name in ["matmul", "copy"] {
            let e = event(&p, name);
            let work = e.work.as_ref().unwrap_or_else(|| {
                panic!("{name} has no work in the window shown after iteration {iter}")
            });
            let expected: Vec<u64> = if name == "matmul" {
                e.samples_ns.iter().map(|n| 2 * n).collect()
            } else {
                e.sample_iters.iter().map(|&i| 3 * u64::from(i)).collect()
            };
            let listed = if name == "matmul" {
                &work.flops
            } else {
                &work.bytes
            };
            assert_eq!(listed.as_ref(), Some(&expected), "{name} after {iter}");
        }
    }
}

#[test]
fn the_peak_given_is_recorded_in_run_peak() {
    let _s = serial();
    let clock = FakeClock::new();
    let config = Config {
        filter: Filter::parse("layer=work").unwrap(),
        warmup: 2,
        repeat: 1,
        out: std::env::temp_dir()
            .join(format!("prof-work-{}-peak.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        peak_flops: Some(1.5e12),
        ..Config::default()
    };
    let _g = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    train(&clock);
    let p = profiler_core::snapshot().unwrap();
    let peak = p.run.peak.expect("run.peak");
    assert_eq!((peak.flops, peak.bytes), (Some(1.5e12), None));
    assert_eq!(peak.source, "given");
}

/// How many times the work closures of the runtime probes were called.
static RUNTIME_EVALUATED: AtomicU64 = AtomicU64::new(0);

/// The runtime probes of `runtime_train`: a product counting both keys, a copy counting bytes,
/// and a probe of the product's name, layer and phase that counts nothing (another probe).
fn runtime_probes() -> [RuntimeProbe; 3] {
    [
        RuntimeProbe::with_work("rt.gemm", Some("rtwork"), Some("fwd"), WorkKeys::BOTH),
        RuntimeProbe::with_work("rt.copy", Some("rtwork"), None, WorkKeys::BYTES),
        RuntimeProbe::new("rt.gemm", Some("rtwork"), Some("fwd")),
    ]
}

/// The loop of `train` on runtime probes: `rt.gemm` of 100 + the iteration's index units (2n
/// FLOPs as an integer, 8n bytes as a float), `rt.copy` entered with a guard (3 x the index
/// bytes; its FLOPs, a key it does not count, are dropped), and the plain one.
fn runtime_train(clock: &FakeClock, max: u64) -> u64 {
    let [gemm, copy, plain] = runtime_probes();
    let mut iter = 0;
    while !profiler_core::finished() && iter < max {
        let n = 100 + iter;
        gemm.measure_work(
            || {
                RUNTIME_EVALUATED.fetch_add(1, Relaxed);
                (2 * n, 8.0 * n as f64)
            },
            || clock.advance(n),
        );
        {
            let _p = copy.enter_work(|| {
                RUNTIME_EVALUATED.fetch_add(1, Relaxed);
                (999u16, 3 * iter as i64)
            });
            clock.advance(7);
        }
        plain.measure(|| clock.advance(1));
        profiler_core::step();
        iter += 1;
    }
    iter
}

#[test]
fn runtime_probes_count_their_work_when_armed() {
    let _s = serial();
    RUNTIME_EVALUATED.store(0, Relaxed);
    let clock = FakeClock::new();
    let [gemm, copy, plain] = runtime_probes();
    assert_eq!(gemm.work_keys(), WorkKeys::BOTH);
    assert_eq!(copy.work_keys(), WorkKeys::BYTES);
    assert_eq!(plain.work_keys(), WorkKeys::NONE);
    // The keys are part of the identity: two probes of one name, the second id with `.2`.
    let ids: Vec<_> = profiler_core::probes()
        .into_iter()
        .filter(|p| p.name == "rt.gemm")
        .map(|p| p.id)
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"rt.gemm".to_owned()) && ids.contains(&"rt.gemm.2".to_owned()));

    let _g = start(&clock, Mode::Sample, "kind=runtime&layer=rtwork", "runtime");
    // 2 warmup iterations, then 3 events x 3 repeats.
    assert_eq!(runtime_train(&clock, 40), 2 + 3 * 3);
    let p = profiler_core::snapshot().unwrap();
    let events: Vec<_> = p.events.iter().filter(|e| e.name == "rt.gemm").collect();
    assert_eq!(events.len(), 2);
    let (counting, timing): (Vec<_>, Vec<_>) = events.into_iter().partition(|e| e.work.is_some());
    let (g, plain) = (counting[0], timing[0]);
    assert_eq!(plain.samples_ns, [1; 3]);
    let work = g.work.as_ref().unwrap();
    let n = &g.samples_ns;
    for (d, it) in n.iter().zip(&g.sample_iters) {
        assert_eq!(*d, 100 + u64::from(*it));
    }
    assert_eq!(
        work.flops.as_deref(),
        Some(&n.iter().map(|n| 2 * n).collect::<Vec<_>>()[..])
    );
    assert_eq!(
        work.bytes.as_deref(),
        Some(&n.iter().map(|n| 8 * n).collect::<Vec<_>>()[..])
    );
    let c = event(&p, "rt.copy");
    let work = c.work.as_ref().expect("rt.copy has work");
    assert_eq!(work.flops, None);
    let bytes: Vec<u64> = c.sample_iters.iter().map(|&i| 3 * u64::from(i)).collect();
    assert_eq!(work.bytes.as_deref(), Some(&bytes[..]));
    // One call per armed run (3 of each), none in warmup or for the other events' iterations.
    assert_eq!(RUNTIME_EVALUATED.load(Relaxed), 6);
    // prof.json carries it, and its checks accept it.
    let text = serde_json::to_string(&p).unwrap();
    profiler_core::format::parse_profile(text.as_bytes(), std::path::Path::new("rt.json")).unwrap();
}

#[test]
fn runtime_work_is_not_evaluated_unarmed() {
    let _s = serial();
    RUNTIME_EVALUATED.store(0, Relaxed);
    let clock = FakeClock::new();
    for (mode, name) in [(Mode::Off, "rt-off"), (Mode::Trace, "rt-trace")] {
        let _g = start(&clock, mode, "kind=runtime&layer=rtwork", name);
        runtime_train(&clock, 20);
    }
    {
        // Not selected: never evaluated.
        let _g = start(
            &clock,
            Mode::Sample,
            "kind=runtime&name=rt.none",
            "rt-unselected",
        );
        runtime_train(&clock, 20);
    }
    // No session at all.
    runtime_train(&clock, 5);
    assert_eq!(RUNTIME_EVALUATED.load(Relaxed), 0);
}

#[test]
fn negative_counts_are_zero() {
    let _s = serial();
    let clock = FakeClock::new();
    let _g = start(&clock, Mode::Sample, "layer=negative", "negative");
    let mut iter = 0;
    while !profiler_core::finished() && iter < 20 {
        let below = -(iter as i64);
        probe!("negative", layer = "negative", flops = below - 1, bytes = -1i8 => {
            clock.advance(1)
        });
        profiler_core::step();
        iter += 1;
    }
    let p = profiler_core::snapshot().unwrap();
    let work = event(&p, "negative").work.clone().unwrap();
    assert_eq!(work.flops, Some(vec![0; 3]));
    assert_eq!(work.bytes, Some(vec![0; 3]));
}

/// Evaluating a key of `shaped` costs 1,000 fake nanoseconds, which the run's time must not
/// include: the keys are evaluated and stored before the start mark.
fn slow(clock: &FakeClock, n: u64) -> u64 {
    clock.advance(1000);
    n
}

/// A layer of `rows` by 4 inputs, taking `rows` nanoseconds.
#[profiled(layer = "shaped", shape = (slow(clock, rows), 4), flops = slow(clock, rows))]
fn shaped(clock: &FakeClock, rows: u64) {
    clock.advance(rows);
}

#[test]
fn shapes_split_samples_within_the_bound_and_are_not_timed() {
    let _s = serial();
    let clock = FakeClock::new();
    let config = Config {
        filter: Filter::parse("layer=shaped").unwrap(),
        warmup: 2,
        repeat: 6,
        max_shapes: 2,
        out: std::env::temp_dir()
            .join(format!("prof-work-{}-shapes.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    let _g = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    let rows = [8, 16, 8, 32, 8, 16];
    let mut iter = 0;
    while !profiler_core::finished() && iter < 40 {
        shaped(&clock, rows[iter % rows.len()]);
        {
            let _p = probe!("block", layer = "shaped", shape = [iter % 2, 3]);
            clock.advance(5);
        }
        profiler_core::step();
        iter += 1;
    }
    let p = profiler_core::snapshot().unwrap();
    let e = event(&p, "shaped");
    // Each run's time is its rows: the 2,000 ns its keys took are outside it.
    let expected: Vec<u64> = e
        .sample_iters
        .iter()
        .map(|&i| rows[i as usize % 6])
        .collect();
    assert_eq!(e.samples_ns, expected);
    let shapes = e.shapes.as_ref().expect("shaped has shapes");
    // 8 rows three times, 16 twice, 32 once: the bound of 2 keeps the first two.
    assert_eq!(shapes.values, ["8x4", "16x4"]);
    assert_eq!(shapes.others, 1);
    let named: Vec<Option<&str>> = shapes
        .sample_shapes
        .iter()
        .map(|k| k.map(|k| shapes.values[k as usize].as_str()))
        .collect();
    let want: Vec<Option<&str>> = expected
        .iter()
        .map(|r| match r {
            8 => Some("8x4"),
            16 => Some("16x4"),
            _ => None,
        })
        .collect();
    assert_eq!(named, want);
    let b = event(&p, "block");
    let shapes = b.shapes.as_ref().expect("block has shapes");
    assert_eq!(shapes.values.len(), 2);
    assert!(shapes.values.iter().all(|v| v == "0x3" || v == "1x3"));
    assert_eq!(b.work, None);
    let text = serde_json::to_string(&p).unwrap();
    profiler_core::format::parse_profile(text.as_bytes(), std::path::Path::new("shapes.json"))
        .unwrap();
}

#[test]
fn runtime_probes_keep_their_shapes() {
    let _s = serial();
    let clock = FakeClock::new();
    let probe = RuntimeProbe::with_work("rt.shaped", Some("rtshape"), None, WorkKeys::ALL);
    let _g = start(&clock, Mode::Sample, "layer=rtshape", "rt-shapes");
    assert_eq!(probe.work_keys(), WorkKeys::ALL);
    let mut iter = 0u64;
    while !profiler_core::finished() && iter < 40 {
        let m = if iter.is_multiple_of(2) { 8u64 } else { 16 };
        {
            let _p = probe.enter_shaped(|| (2 * m * 4, 4 * m, ([m, 4], [4u64, 4])));
            clock.advance(m);
        }
        profiler_core::step();
        iter += 1;
    }
    let p = profiler_core::snapshot().unwrap();
    let e = event(&p, "rt.shaped");
    let shapes = e.shapes.as_ref().expect("rt.shaped has shapes");
    let named: Vec<&str> = shapes
        .sample_shapes
        .iter()
        .map(|k| shapes.values[k.unwrap() as usize].as_str())
        .collect();
    let want: Vec<&str> = e
        .samples_ns
        .iter()
        .map(|&ns| if ns == 8 { "8x4, 4x4" } else { "16x4, 4x4" })
        .collect();
    assert_eq!(named, want);
    let flops: Vec<u64> = e.samples_ns.iter().map(|ns| 8 * ns).collect();
    assert_eq!(e.work.as_ref().unwrap().flops.as_deref(), Some(&flops[..]));
}

// A busy loop on a real clock (one test binary with the others, to keep the suite's builds few).
mod rate {
    //! A busy loop of known work gets its rates right, on a real clock, whatever the machine's load.
    //!
    //! `busy` does exactly `n` f64 multiply-adds (2n FLOPs) over `n` f64 it reads (8n bytes), and
    //! says so with its `flops` and `bytes` keys. Each call is also timed from outside the probe, on
    //! the same time line as the session's clock: a clock that reads the monotonic clock `Instant`
    //! reads. The probe's marks are taken inside the call, so each sample's duration lies within
    //! the outer reading, exactly, however long the machine makes the call wait: a busy machine
    //! lengthens both and the verdict does not move. (The default CPU clock, the time-stamp counter
    //! calibrated against that monotonic clock at start-up, agrees with it only within its
    //! calibration, which a loaded machine can upset; it is not what this test is about.) Then the
    //! rates `prof report` prints, from `profiler_tables` as it computes them, are each sample's
    //! count over that sample's duration, never less than the count over the outer reading.

    use std::time::Instant;

    use profiler_core::format::Event;
    use profiler_core::{profiled, Clock, Config, Filter, Mode, Reading};
    use profiler_tables::work::{Bound, Rate, WorkRow};

    /// Multiply-adds (and f64 read) per call: about 20 µs of work.
    const N: usize = 1 << 14;
    /// Measured calls: odd, so that a median is one sample's rate.
    const REPEAT: u32 = 9;

    /// The monotonic clock as a session clock: marks are nanoseconds since `base`, truncated as
    /// the test's own readings are, so that readings inside a call never span more than readings
    /// around it.
    #[derive(Clone, Copy)]
    struct Monotonic {
        base: Instant,
    }

    impl Monotonic {
        fn now(&self) -> u64 {
            self.base.elapsed().as_nanos() as u64
        }
    }

    impl Clock for Monotonic {
        fn name(&self) -> &'static str {
            "monotonic"
        }

        fn mark(&self) -> u64 {
            self.now()
        }

        fn elapsed(&self, start: u64, stop: u64) -> Reading {
            Reading::Ready(stop.saturating_sub(start))
        }
    }

    /// `acc = acc * x + c` over every element of `xs`: `xs.len()` multiply-adds (a multiply and an
    /// add, 2 FLOPs) and `8 xs.len()` bytes read. The dependency through `acc` keeps the compiler
    /// from dropping or merging any of them; `black_box` from knowing the values.
    #[profiled(layer = "rate", flops = 2 * xs.len(), bytes = 8 * xs.len())]
    fn busy(xs: &[f64], c: f64) -> f64 {
        let mut acc = 1.0f64;
        for &x in std::hint::black_box(xs) {
            acc = acc * x + c;
        }
        acc
    }

    /// Median of an odd number of values.
    fn median(mut v: Vec<f64>) -> f64 {
        assert_eq!(v.len() % 2, 1);
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    #[test]
    fn a_busy_loop_of_known_work_gets_its_rates_right() {
        let _s = super::serial();
        let clock = Monotonic {
            base: Instant::now(),
        };
        let config = Config {
            filter: Filter::parse("layer=rate").unwrap(),
            mode: Mode::Sample,
            warmup: 2,
            repeat: REPEAT,
            out: std::env::temp_dir()
                .join(format!("prof-work-rate-{}.json", std::process::id()))
                .display()
                .to_string(),
            summary: false,
            // A peak given, so that the MFU is computed too: 1 TFLOP/s, 100 GB/s.
            peak_flops: Some(1e12),
            peak_bytes: Some(1e11),
            ..Config::default()
        };
        let _session = profiler_core::init_with(config, Some(Box::new(clock))).unwrap();
        let xs: Vec<f64> = (0..N).map(|i| 1.0 - 1.0 / (i as f64 + 2.0)).collect();
        // The outer reading of each iteration's call, by iteration index.
        let mut outer: Vec<u64> = Vec::new();
        let mut sink = 0.0;
        while !profiler_core::finished() && outer.len() < 100 {
            let before = clock.now();
            sink += busy(&xs, 1e-3);
            outer.push(clock.now() - before);
            profiler_core::step();
        }
        assert!(sink.is_finite());
        let profile = profiler_core::snapshot().unwrap();
        let e: &Event = profile.events.iter().find(|e| e.name == "busy").unwrap();
        assert_eq!(e.samples_ns.len(), REPEAT as usize, "{e:?}");

        // The counts kept are the keys' values, each in its own list.
        let flops = 2 * N as u64;
        let bytes = 8 * N as u64;
        let work = e.work.as_ref().expect("busy has work");
        assert_eq!(work.flops.as_deref(), Some(&[flops; REPEAT as usize][..]));
        assert_eq!(work.bytes.as_deref(), Some(&[bytes; REPEAT as usize][..]));

        // Each sample lies within its call's outer reading: same clock, marks taken inside.
        for (&ns, &iter) in e.samples_ns.iter().zip(&e.sample_iters) {
            let around = outer[iter as usize];
            assert!(ns > 0 && ns <= around, "sample {ns} ns, call {around} ns");
        }

        // The rates as `prof report` computes them (the rows of `profiler_tables::rows`, with
        // the run's peak)...
        let measures = profiler_tables::rows::profile_rows(&profile, 0.1, 0.1);
        let index = profile
            .events
            .iter()
            .position(|x| x.name == "busy")
            .unwrap();
        let row: &WorkRow = measures.events[index].work.as_ref().unwrap();
        assert_eq!(
            Some(row),
            WorkRow::of(e, profile.run.peak.as_ref()).as_ref()
        );
        let rate = |count: u64, ns: u64| count as f64 * 1e9 / ns as f64;
        let (f, b): (&Rate, &Rate) = (
            row.flops_per_s.as_ref().unwrap(),
            row.bytes_per_s.as_ref().unwrap(),
        );
        // ... are each sample's count over its own duration, the median of them exactly (an odd
        // number of samples: the median is one sample's)...
        let per_sample = |count| e.samples_ns.iter().map(|&ns| rate(count, ns)).collect();
        assert_eq!(f.median, median(per_sample(flops)));
        assert_eq!(b.median, median(per_sample(bytes)));
        let fastest = *e.samples_ns.iter().min().unwrap();
        let slowest = *e.samples_ns.iter().max().unwrap();
        assert!(f.low >= rate(flops, slowest) && f.high <= rate(flops, fastest));
        assert!(f.low <= f.median && f.median <= f.high);
        // ... never below the count over the outer reading, call by call and for the median ...
        let outer_rates: Vec<f64> = e
            .sample_iters
            .iter()
            .map(|&i| rate(flops, outer[i as usize]))
            .collect();
        for ((&ns, &i), outer_rate) in e.samples_ns.iter().zip(&e.sample_iters).zip(&outer_rates) {
            assert!(rate(flops, ns) >= *outer_rate, "iteration {i}");
        }
        assert!(f.median >= median(outer_rates));
        // ... with the intensity of the counts, 2 FLOPs per 8 bytes, below the peak's ridge of 10
        // FLOPs a byte, and the MFU against the peak given.
        assert_eq!(row.intensity, Some(0.25));
        assert_eq!(row.bound, Some(Bound::Memory));
        assert_eq!(row.mfu, Some(f.median / 1e12));
    }
}
