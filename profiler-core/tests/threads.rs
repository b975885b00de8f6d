//! Probes on free-running worker threads while the main thread calls `step()`: each sample
//! belongs to the iteration in which its run started, whatever the race with `step()`.
#![cfg(feature = "enable")]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use profiler_core::{profiled, Config, Filter, Mode};

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Runs of `work` started so far.
static STARTED: AtomicU64 = AtomicU64::new(0);

#[profiled(layer = "worker", phase = "fwd")]
fn work() {
    STARTED.fetch_add(1, Ordering::Relaxed);
    spin(Duration::from_micros(15));
}

#[test]
fn samples_of_worker_threads_belong_to_the_iteration_they_started_in() {
    let out = std::env::temp_dir().join(format!("prof-threads-{}.json", std::process::id()));
    let config = Config {
        filter: Filter::parse("layer=worker").unwrap(),
        mode: Mode::Trace,
        warmup: 3,
        repeat: 150,
        out: out.display().to_string(),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, None).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    work();
                    // A pause between runs, so that 8 workers do not keep 2 cores busy and the
                    // main thread's iterations stretch with the machine's load (this test took
                    // 10 s quiet and 85 s beside a build with workers that never paused; 0.5 s
                    // and 1.5 s now). Runs still start at every point of the iterations: about
                    // 10,000 samples, 60 of them starting in the last 15 µs of their iteration.
                    std::thread::sleep(Duration::from_micros(20));
                }
            })
        })
        .collect();
    for _ in 0..200 {
        // At least 8 runs start in every iteration, however the threads are scheduled (a busy
        // machine starves them): the count below holds whatever the load.
        let before = STARTED.load(Ordering::Relaxed);
        spin(Duration::from_micros(400));
        while STARTED.load(Ordering::Relaxed) < before + 8 {
            std::thread::yield_now();
        }
        profiler_core::step();
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    drop(guard);
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let p: serde_json::Value = serde_json::from_str(&text).unwrap();
    let wall: Vec<u64> = p["iterations"]["wall_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let (mut checked, mut beyond) = (0, Vec::new());
    for e in p["events"].as_array().unwrap() {
        let iters = e["sample_iters"].as_array().unwrap();
        let offsets = e["offsets_ns"].as_array().unwrap();
        for (i, o) in iters.iter().zip(offsets) {
            let (i, o) = (i.as_u64().unwrap() as usize, o.as_u64().unwrap());
            // The last iteration never ended: it has no wall time to compare with.
            let Some(&w) = wall.get(i) else { continue };
            checked += 1;
            if o >= w {
                beyond.push((e["occurrence"].clone(), i, o, w));
            }
        }
    }
    // At least 8 runs in each of the 150 measured iterations (thousands on an idle machine).
    assert!(checked > 100, "only {checked} samples");
    assert!(
        beyond.is_empty(),
        "{} of {checked} samples start after the end of their iteration: {:?}",
        beyond.len(),
        &beyond[..beyond.len().min(5)]
    );
}
