//! A training step made of busy-waits of known lengths: the program `prof diff` is judged on.
//!
//! Each layer waits a fixed time on the clock (an attention forward of 200 µs, ffn layers of
//! 100 µs, an allreduce of 150 µs, ...), so an event's true duration is known and does not
//! depend on how fast the machine computes; a busy machine can only stretch a run by taking the
//! processor away in the middle of it. A data-loader thread prepares the next batch while the
//! step runs, as real training loops do, which makes the iterations uneven on their own.
//!
//! ```text
//! cargo run --example waits -- --slow forward=1.75     # the attention forward 75% slower
//! ```

use std::sync::mpsc;
use std::time::{Duration, Instant};

use profiler_core::{probe, profiled};

const USAGE: &str = "\
usage: waits [--iters N] [--slow NAME=FACTOR]... [--list-probes[=json]]
  --iters N            at most N iterations (default 100000); a profiling run stops as soon as
                       its schedule is complete
  --slow NAME=FACTOR   wait FACTOR times as long in the probe NAME (forward, ffn_forward,
                       ffn_backward, backward, allreduce, update, loader), e.g. forward=1.2";

/// Waits `us` microseconds, scaled by the factor `--slow` gave `name`, on the clock.
fn wait(us: f64, name: &str, slow: &[(String, f64)]) {
    let factor = slow
        .iter()
        .find(|(n, _)| n == name)
        .map_or(1.0, |&(_, f)| f);
    let deadline = Instant::now() + Duration::from_secs_f64(us * factor * 1e-6);
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// The model: its layers wait their fixed times.
struct Model {
    slow: Vec<(String, f64)>,
}

impl Model {
    #[profiled(layer = "attn", phase = "fwd")]
    fn forward(&self) {
        wait(200.0, "forward", &self.slow);
    }

    #[profiled(layer = "ffn", phase = "fwd")]
    fn ffn_forward(&self) {
        wait(100.0, "ffn_forward", &self.slow);
    }

    #[profiled(layer = "ffn", phase = "bwd")]
    fn ffn_backward(&self) {
        wait(100.0, "ffn_backward", &self.slow);
    }

    #[profiled(layer = "attn", phase = "bwd")]
    fn backward(&self) {
        wait(200.0, "backward", &self.slow);
    }

    #[profiled(layer = "comm", phase = "comm")]
    fn allreduce(&self) {
        wait(150.0, "allreduce", &self.slow);
    }

    #[profiled(layer = "optim", phase = "update")]
    fn update(&self) {
        wait(50.0, "update", &self.slow);
    }

    fn train_step(&self) {
        self.forward();
        self.ffn_forward();
        self.ffn_forward();
        self.ffn_backward();
        self.ffn_backward();
        self.backward();
        self.allreduce();
        self.update();
    }
}

/// What the command line asked for.
struct Args {
    iters: u64,
    slow: Vec<(String, f64)>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut parsed = Args {
        iters: 100_000,
        slow: Vec::new(),
    };
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--iters" => {
                let value = args.next().ok_or("--iters needs a value")?;
                parsed.iters = value
                    .parse()
                    .map_err(|_| format!("--iters: `{value}` is not a non-negative integer"))?;
            }
            "--slow" => {
                let value = args.next().ok_or("--slow needs NAME=FACTOR")?;
                let (name, factor) = value
                    .split_once('=')
                    .ok_or_else(|| format!("--slow: `{value}` is not NAME=FACTOR"))?;
                let factor: f64 = factor
                    .parse()
                    .ok()
                    .filter(|f: &f64| f.is_finite() && *f > 0.0 && *f <= 100.0)
                    .ok_or_else(|| format!("--slow: `{factor}` is not a factor in (0, 100]"))?;
                parsed.slow.push((name.to_owned(), factor));
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Some(parsed))
}

#[profiler_core::main]
fn main() {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            std::process::exit(0);
        }
        Err(message) => {
            eprintln!("waits: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let model = Model {
        slow: args.slow.clone(),
    };

    // The data loader: a thread that prepares each batch (300 µs of work) while the step runs,
    // up to 64 batches ahead (a prefetching loader: the step waits only if the loader was kept
    // off the processor for long).
    let (tx, rx) = mpsc::sync_channel::<u64>(64);
    let slow = args.slow.clone();
    let iters = args.iters;
    let loader = std::thread::spawn(move || {
        for batch in 0..iters {
            wait(300.0, "loader", &slow);
            if tx.send(batch).is_err() {
                break;
            }
        }
    });

    let start = Instant::now();
    let mut done = 0;
    for _ in 0..args.iters {
        let batch = probe!("batches", layer = "data", phase = "data" => { rx.recv() });
        if batch.is_err() {
            break;
        }
        model.train_step();
        done += 1;
        profiler_core::step();
        if profiler_core::finished() {
            break;
        }
    }
    drop(rx);
    let _ = loader.join();
    println!(
        "done: {done} iterations, wall time {:.3} s",
        start.elapsed().as_secs_f64()
    );
}
