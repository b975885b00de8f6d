//! Makes large `trace`-mode profiles, as a real program would: one `#[profiled]` function
//! called `--calls` times per iteration, until the schedule is complete. It is how `prof` is
//! measured on big files (see "Large profiles" in docs/overhead.md).
//!
//! Each call within an iteration is its own event (occurrence 0, 1, ...) up to
//! `PROF_MAX_EVENTS`, and `trace` mode measures every event in each of the `PROF_REPEAT` active
//! iterations, so the profile holds `calls x PROF_REPEAT` samples when `PROF_MAX_EVENTS` is at
//! least `--calls` (past it, the later calls fold into one merged event with a bounded sample).
//!
//! ```sh
//! # 10 million samples (10,000 events x 1,000 iterations), about 450 MB of JSON.
//! PROF_MODE=trace PROF_WARMUP=2 PROF_REPEAT=1000 PROF_MAX_EVENTS=10000 PROF_OUT=big.json \
//!     cargo run --release --example bigtrace -- --calls 10000
//! ```

use profiler_core::profiled;

/// A little work whose result depends on its input, so that the calls are not optimized away.
#[profiled(layer = "big", phase = "fwd")]
fn work(x: u64) -> u64 {
    let mut h = x ^ 0x9E37_79B9_7F4A_7C15;
    for _ in 0..8 {
        h = (h ^ (h >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
    std::hint::black_box(h)
}

const USAGE: &str = "usage: bigtrace [--calls N] (N >= 1 calls of the profiled function per \
                     iteration; default 1000)";

/// `--calls N` from the arguments (`--list-probes` is the profiler's).
fn calls() -> Result<u64, String> {
    let mut calls = 1000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--calls" => {
                let value = args.next().ok_or("--calls needs a value")?;
                calls = value
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| format!("--calls `{value}` is not a positive integer"))?;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(calls)
}

#[profiler_core::main]
fn main() {
    let calls = match calls() {
        Ok(calls) => calls,
        Err(message) => {
            eprintln!("bigtrace: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let mut acc = 0u64;
    // The schedule ends the loop; the bound only stops a run without profiling (PROF_MODE=off
    // or a build without `enable`).
    for _ in 0..100_000 {
        for i in 0..calls {
            acc = work(acc ^ i);
        }
        profiler_core::step();
        if profiler_core::finished() {
            break;
        }
    }
    println!("bigtrace: done ({acc:x})");
}
