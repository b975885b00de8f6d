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
#![cfg(feature = "enable")]

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

    // The rates as `prof report` computes them (the rows of `profiler_tables::measure`, with
    // the run's peak)...
    let measures = profiler_tables::measure::measure(&profile, 0.1, 0.1);
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
