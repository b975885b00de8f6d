//! The program `prof whatif` is judged on (issue 39): a training step whose probes have known
//! places on the iteration's critical path.
//!
//! - a loader thread (`name=load_batch`, 4 ms) prepares the next batch while the model computes:
//!   overlapped, with about 8 ms of slack, so delaying it costs the iteration about **0**;
//! - a dense layer (`name=dense`, 2 ms) runs on the main thread between the embedding and the
//!   backward pass: on the critical path, about **1**;
//! - the gradients' all-reduce (`name=allreduce`) runs on a communication thread in two buckets
//!   of 2 ms: the first starts with the backward pass (5 ms) and hides behind it, the second
//!   starts after it and the step waits for it: half hidden, about **0.5**.
//!
//! The work is waiting (`thread::sleep`), as a training loop's host threads wait for a device or
//! for the network: how long each part takes does not depend on how fast the processor is or on
//! what else runs, so what `prof whatif` measures is the schedule alone. The delay `prof whatif`
//! injects is a spin on the processor.
//!
//! ```text
//! cargo build --release --example whatif
//! prof whatif --filter name=dense --delay 1ms -- target/release/examples/whatif
//! ```

use std::sync::mpsc;
use std::time::Duration;

use profiler_core::{probe, profiled};

const USAGE: &str = "\
usage: whatif [--iters N] [--list-probes[=json]]
  --iters N   at most N iterations (default 100000); a profiling run stops as soon as its
              schedule is complete";

/// Waits `us` microseconds (a device's or the network's time, not the processor's).
fn wait(us: u64) {
    std::thread::sleep(Duration::from_micros(us));
}

/// The loader thread's work: read and prepare one batch.
#[profiled(layer = "data")]
fn load_batch(k: u64) -> u64 {
    wait(4_000);
    k
}

/// One bucket of the gradients' all-reduce, on the communication thread.
fn allreduce(bucket: u32) {
    let _p = probe!("allreduce", layer = "comm", phase = "bwd");
    let _ = bucket;
    wait(2_000);
}

#[profiled(layer = "embedding", phase = "fwd")]
fn embed(_batch: u64) {
    wait(2_000);
}

#[profiled(layer = "mlp", phase = "fwd")]
fn dense() {
    wait(2_000);
}

#[profiled(layer = "mlp", phase = "bwd")]
fn backward() {
    wait(5_000);
}

#[profiled(phase = "update")]
fn update() {
    wait(1_000);
}

fn iterations() -> u64 {
    let mut args = std::env::args().skip(1);
    let mut iters = 100_000;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--iters" => match args.next().and_then(|v| v.parse().ok()) {
                Some(n) => iters = n,
                None => {
                    eprintln!("error: --iters needs a whole number\n{USAGE}");
                    std::process::exit(2);
                }
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => {
                eprintln!("error: unknown argument `{other}`\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    iters
}

#[profiler_core::main]
fn main() {
    let iters = iterations();
    // The loader runs one batch ahead.
    let (batches, next_batch) = mpsc::sync_channel::<u64>(1);
    std::thread::spawn(move || {
        for k in 0.. {
            if batches.send(load_batch(k)).is_err() {
                break;
            }
        }
    });
    // The communication thread reduces each bucket it is handed.
    let (buckets, to_reduce) = mpsc::channel::<u32>();
    let (reduced, done) = mpsc::channel::<u32>();
    std::thread::spawn(move || {
        for bucket in to_reduce {
            allreduce(bucket);
            if reduced.send(bucket).is_err() {
                break;
            }
        }
    });
    for _ in 0..iters {
        let Ok(batch) = next_batch.recv() else { break };
        embed(batch);
        dense();
        // The first bucket's gradients are ready as the backward pass starts.
        let _ = buckets.send(0);
        backward();
        let _ = buckets.send(1);
        for _ in 0..2 {
            let _ = done.recv();
        }
        update();
        profiler_core::step();
        if profiler_core::finished() {
            break;
        }
    }
}
