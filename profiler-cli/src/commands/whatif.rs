//! `prof whatif`: the program run in interleaved rounds with and without a delay in some
//! probes (the runs by [`crate::ab`]), and the iteration's change per unit of delay
//! ([`profiler_analysis::whatif`]).

use std::path::PathBuf;
use std::process::ExitCode;

use profiler_analysis::diff::DiffOptions;
use profiler_analysis::whatif;

use crate::ab;
use crate::common::{print, Failure};

/// What if these probes were slower: run the program in interleaved rounds, once with every
/// run of the probes FILTER selects delayed by AMOUNT (PROF_DELAY_FILTER, PROF_DELAY) and once
/// with a delay of 0 on the same probes, and report how much the iteration changes per unit of
/// delay: about 1, on the critical path; about 0, hidden behind other work; in between, partly
/// hidden. With an interval, from the same paired statistics as prof ab.
#[derive(clap::Args)]
pub struct WhatifArgs {
    /// The probes to delay (the PROF_FILTER grammar: `layer=mlp`, `name=allreduce`).
    #[arg(long)]
    filter: String,
    /// The delay of each of their runs: a duration (`50us`, `1ms`) or a share of the run's own
    /// duration (`10%`).
    #[arg(long)]
    delay: String,
    /// Most rounds (a run with and a run without the delay per round; at least 2). prof whatif
    /// stops earlier, from 5 rounds on, once the interval is within --precision.
    #[arg(short = 'n', long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..=1000))]
    runs: u32,
    /// Stop once the interval reaches no further than this from the estimate (in units of the
    /// change per unit of delay), from 5 rounds on.
    #[arg(long, default_value_t = 0.05)]
    precision: f64,
    /// Where the runs' profiles go (base-K.json, delayed-K.json).
    #[arg(long, default_value = "prof-whatif")]
    dir: PathBuf,
    /// Stop starting rounds after this many seconds (after 2 rounds).
    #[arg(long, default_value_t = 600)]
    budget: u64,
    /// Seed of the run order and the environment padding.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    program: Vec<String>,
}

/// Checks `--delay` the way the program will read it (the program checks the bounds too).
fn check_delay(delay: &str) -> Result<(), Failure> {
    let t = delay.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let ns_per_unit = match unit {
        "ns" => Some(1.0),
        "us" | "\u{b5}s" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    };
    let number = number
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n > 0.0);
    match (number, ns_per_unit) {
        // A duration is counted in whole nanoseconds: below one, no run would be delayed.
        (Some(n), Some(scale)) if n * scale < 1.0 => Err(Failure::new(format!(
            "error: --delay `{delay}` is less than a nanosecond, which the delay counts in: no \
             run would be delayed\n  = help: give 1ns or more (50us, 1ms), or a share of each \
             run's own duration (10%)"
        ))),
        (Some(_), Some(_)) => Ok(()),
        (Some(_), None) if unit == "%" => Ok(()),
        _ => Err(Failure::new(format!(
            "error: --delay `{delay}` is not a delay\n  = help: give a duration with its unit \
             (50us, 1ms; ns, us, ms or s, above 0) or a share of each run's own duration (10%)"
        ))),
    }
}

/// Runs the rounds and prints the change per unit of delay.
pub fn run(args: WhatifArgs) -> Result<ExitCode, Failure> {
    profiler_format::filter::Filter::parse(&args.filter).map_err(|e| {
        Failure::new(format!(
            "error: --filter: {}\n  = help: the probes to delay, in the PROF_FILTER grammar \
             (layer=mlp, name=allreduce); the program's --list-probes shows them",
            e.to_string().trim_start_matches("error: ")
        ))
    })?;
    check_delay(&args.delay)?;
    if !(args.precision > 0.0 && args.precision.is_finite()) {
        return Err(Failure::new(
            "error: --precision must be a positive number, like 0.05",
        ));
    }
    let filter = ("PROF_DELAY_FILTER".to_owned(), args.filter.clone());
    let plan = ab::Plan {
        label: "prof whatif",
        names: ["base", "delayed"],
        before: args.program.clone(),
        after: args.program,
        env: [
            vec![filter.clone(), ("PROF_DELAY".to_owned(), "0".to_owned())],
            vec![
                filter,
                ("PROF_DELAY".to_owned(), args.delay.trim().to_owned()),
            ],
        ],
        runs: args.runs as usize,
        dir: args.dir,
        seed: args.seed,
        until: None,
        budget: std::time::Duration::from_secs(args.budget),
    };
    let alpha = DiffOptions::default().alpha;
    let precision = args.precision;
    let (base, delayed) = ab::run_rounds(&plan, |b, d, rounds| {
        if rounds < ab::MIN_ROUNDS {
            return None;
        }
        let w = whatif::whatif(b, d, alpha).ok()?;
        let reach = (w.ci_high - w.per_unit).max(w.per_unit - w.ci_low);
        (reach <= precision).then(|| {
            format!(
                "resolved after {rounds} rounds: the interval is within \u{b1}{reach:.3} \
                 (--precision {precision})"
            )
        })
    })
    .map_err(Failure::new)?;
    let result = whatif::whatif(&base, &delayed, alpha).map_err(Failure::new)?;
    print(&whatif::render(&result, args.json))?;
    Ok(ExitCode::SUCCESS)
}
