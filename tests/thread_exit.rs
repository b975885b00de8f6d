//! Probes run by thread-local destructors (pools and caches release their resources there):
//! such runs come after the thread's own thread-locals may be gone, and must never abort the
//! program. They are skipped, counted and reported, in every mode, and the results are written.
//!
//! Each case runs in a child process (this test binary run again with `PROF_THREAD_EXIT_CHILD`
//! naming the mode), so that an abort is seen as a failed child rather than a dead test runner.
#![cfg(feature = "enable")]

use std::process::Command;

use profiler_core::{profiled, Config, Filter, Mode};

#[profiled(layer = "pool", phase = "fwd")]
fn work(n: u64) -> u64 {
    (0..n).fold(0, |a, b| std::hint::black_box(a ^ b))
}

#[profiled(layer = "pool", phase = "update")]
fn release(n: u64) -> u64 {
    (0..n).fold(1, |a, b| std::hint::black_box(a.wrapping_add(b)))
}

/// A thread-local resource whose destructor runs a profiled function.
struct Pool;

impl Drop for Pool {
    fn drop(&mut self) {
        std::hint::black_box(release(100));
    }
}

thread_local! {
    static POOL: Pool = const { Pool };
}

/// One iteration: a worker that takes the pool first (so that its destructor is registered
/// before the profiler's own thread-locals, and runs after theirs), works, and exits.
fn iteration() {
    std::thread::spawn(|| {
        POOL.with(|_| ());
        std::hint::black_box(work(1000));
        std::hint::black_box(release(10));
    })
    .join()
    .unwrap();
    work(10);
}

fn child(mode: &str, out: &str) {
    let mode = match mode {
        "sample" => Mode::Sample,
        "trace" => Mode::Trace,
        _ => Mode::Continuous,
    };
    let config = Config {
        filter: Filter::parse("layer=pool").unwrap(),
        mode,
        warmup: 3,
        repeat: 5,
        out: out.to_owned(),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, None).unwrap();
    for _ in 0..60 {
        iteration();
        profiler_core::step();
        if profiler_core::finished() {
            break;
        }
    }
    drop(guard);
}

#[test]
fn probes_in_thread_local_destructors_are_skipped_and_reported_never_fatal() {
    if let (Ok(mode), Ok(out)) = (
        std::env::var("PROF_THREAD_EXIT_CHILD"),
        std::env::var("PROF_THREAD_EXIT_OUT"),
    ) {
        child(&mode, &out);
        return;
    }
    let dir = std::env::temp_dir().join(format!("prof-thread-exit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for mode in ["sample", "continuous", "trace"] {
        let out = dir.join(format!("{mode}.json"));
        let output = Command::new(std::env::current_exe().unwrap())
            .args([
                "probes_in_thread_local_destructors_are_skipped_and_reported_never_fatal",
                "--exact",
                "--nocapture",
            ])
            .env("PROF_THREAD_EXIT_CHILD", mode)
            .env("PROF_THREAD_EXIT_OUT", &out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{mode}: {:?}\n{err}",
            output.status
        );
        assert!(out.exists(), "{mode}: nothing written\n{err}");
        assert!(
            err.contains("while their thread was exiting"),
            "{mode}: the skipped runs are not reported\n{err}"
        );
        assert!(!err.contains("sample budget"), "{mode}: wrong cause\n{err}");
    }
}
