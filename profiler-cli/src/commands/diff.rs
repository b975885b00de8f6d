//! `prof diff`: two runs, or several a side, compared event by event.

use std::path::PathBuf;
use std::process::ExitCode;

use profiler_analysis::diff;

use crate::common::{fraction, print, Failure, FormatArg};
use profiler_analysis::load_profile;

/// Compare two runs: per event and for the whole iteration, the change of the fastest-5% time
/// (what a busy machine's delays cannot move) with its 95% interval beyond the machine's shared
/// shift, a p-value adjusted over every row (Holm) and a verdict. With several runs a side
/// (`prof diff b1.json b2.json -- a1.json a2.json`), the run is the unit.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The baseline run, then the run to judge; or, with `--`, every baseline run.
    #[arg(required = true, num_args = 1..)]
    before: Vec<PathBuf>,
    /// After `--`: every run to judge (several runs a side).
    #[arg(last = true)]
    after: Vec<PathBuf>,
    /// Changes smaller than this are noise (0.02 or 2%).
    #[arg(long, default_value = "2%", value_parser = fraction)]
    threshold: f64,
    /// Significance level, after Holm's correction across events.
    #[arg(long, default_value_t = 0.05, value_parser = probability)]
    alpha: f64,
    /// Bootstrap resamples, from 100 to 1000000.
    #[arg(long, default_value_t = 2000, value_parser = resamples_range())]
    resamples: usize,
    /// Seed of the bootstrap (results are reproducible).
    #[arg(long, default_value_t = 0x5eed, allow_negative_numbers = true)]
    seed: u64,
    /// Exit with status 1 when the iteration or an event that matters regressed, 3 when none
    /// did but a regression of the threshold's size could have gone unseen in one of them
    /// (inconclusive), for CI.
    #[arg(long)]
    fail_on_regression: bool,
    /// The K-th before run and the K-th after run ran adjacent, in rounds (as `prof ab` runs
    /// them): compare round by round. Needs as many runs a side.
    #[arg(long)]
    paired: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: FormatArg,
}

/// The values `--resamples` accepts: fewer than 100 resamples make a confidence interval of
/// little use, and each resample of each event costs time (and the ratios, memory).
fn resamples_range() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(100..=1_000_000)
}

/// `--alpha`: strictly between 0 and 1.
fn probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a probability between 0 and 1 (like 0.05)"
        )),
    }
}

/// Prints the comparison; status 1 when `--fail-on-regression` and anything regressed, 3 when
/// nothing did but the comparison is inconclusive, for CI.
pub fn run(args: DiffArgs) -> Result<ExitCode, Failure> {
    let options = diff::DiffOptions {
        threshold: args.threshold,
        alpha: args.alpha,
        resamples: args.resamples,
        seed: args.seed,
        paired: args.paired,
        ..diff::DiffOptions::default()
    };
    let (before, after) = diff_sides(args.before, args.after)?;
    if args.paired && before.len() != after.len() {
        return Err(Failure::new(format!(
            "error: --paired needs as many runs a side, in round order: {} before, {} \
             after\n  = help: list the K-th before run and the K-th after run of each \
             round in the same position, or leave out --paired",
            before.len(),
            after.len()
        )));
    }
    let b = before
        .iter()
        .map(load_profile)
        .collect::<Result<Vec<_>, _>>()?;
    let a = after
        .iter()
        .map(load_profile)
        .collect::<Result<Vec<_>, _>>()?;
    let result = diff::diff_runs(&b, &a, &options);
    print(&diff::render(&result, args.format.into()))?;
    if args.fail_on_regression && result.has_regression() {
        return Ok(ExitCode::from(1));
    }
    if args.fail_on_regression && result.is_inconclusive() {
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}

/// The runs of `prof diff`'s two sides: `BEFORE AFTER`, or several runs a side around `--`.
fn diff_sides(
    before: Vec<PathBuf>,
    after: Vec<PathBuf>,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Failure> {
    if after.is_empty() {
        return match <[PathBuf; 2]>::try_from(before) {
            Ok([b, a]) => Ok((vec![b], vec![a])),
            Err(_) => Err(Failure::new(
                "error: prof diff takes two files (before, after), or several runs a side \
                 around `--`\n  = help: prof diff before.json after.json, or prof diff b1.json \
                 b2.json -- a1.json a2.json",
            )),
        };
    }
    // Everything after `--` is a file: an option there is a mistake.
    if let Some(option) = after.iter().find(|p| p.to_string_lossy().starts_with('-')) {
        return Err(Failure::new(format!(
            "error: `{}` after `--` would be read as a file\n  = help: options go before `--`: \
             prof diff --fail-on-regression b1.json b2.json -- a1.json a2.json",
            option.display()
        )));
    }
    Ok((before, after))
}
