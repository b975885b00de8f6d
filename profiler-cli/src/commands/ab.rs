//! `prof ab`: two commands run in interleaved rounds (the runs by [`crate::ab`]), then compared
//! as `prof diff --paired` compares.

use std::path::PathBuf;
use std::process::ExitCode;

use profiler_analysis::diff;

use crate::ab;
use crate::common::{fraction, print, Failure, FormatArg};

/// Run two commands, before and after, in randomized interleaved order (several runs each,
/// each with its own PROF_OUT and a random environment size), then compare them with the
/// run as the unit, as `prof diff b1 b2 -- a1 a2` does.
#[derive(clap::Args)]
pub struct AbArgs {
    /// The baseline command, as one string split as a shell would (`'./before --steps 500'`).
    #[arg(long)]
    before: String,
    /// The command to judge, as one string.
    #[arg(long)]
    after: String,
    /// Most rounds (a run of each command per round; at least 2). Unless --until is given,
    /// prof ab stops earlier, from 5 rounds on, once every row that matters is resolved
    /// (its interval within the threshold of its change).
    #[arg(short = 'n', long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(2..=1000))]
    runs: u32,
    /// Where the runs' profiles go (before-K.json, after-K.json).
    #[arg(long, default_value = "prof-ab")]
    dir: PathBuf,
    /// Stop once every interval is narrower than this (a fraction, `3%`), after 2 rounds.
    #[arg(long, value_parser = fraction)]
    until: Option<f64>,
    /// Stop starting rounds after this many seconds (after 2 rounds; default 300).
    #[arg(long, default_value_t = 300)]
    budget: u64,
    /// Seed of the run order and the environment padding.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    seed: u64,
    /// Changes smaller than this are noise (0.02 or 2%).
    #[arg(long, default_value = "2%", value_parser = fraction)]
    threshold: f64,
    /// Accepted for scripts written before it became the default: prof ab always exits
    /// with status 1 when the iteration or an event that matters regressed, 3 when one is
    /// inconclusive, 0 otherwise.
    #[arg(long)]
    fail_on_regression: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: FormatArg,
}

/// Runs the rounds and prints the comparison; status 1 when anything regressed, 3 when the
/// comparison is inconclusive.
pub fn run(args: AbArgs) -> Result<ExitCode, Failure> {
    let plan = ab::Plan {
        label: "prof ab",
        names: ["before", "after"],
        before: ab::split(&args.before, "before").map_err(Failure::new)?,
        after: ab::split(&args.after, "after").map_err(Failure::new)?,
        env: [Vec::new(), Vec::new()],
        runs: args.runs as usize,
        dir: args.dir,
        seed: args.seed,
        until: args.until,
        budget: std::time::Duration::from_secs(args.budget),
    };
    let options = diff::DiffOptions {
        threshold: args.threshold,
        paired: true,
        ..diff::DiffOptions::default()
    };
    let (b, a) = ab::run(&plan, &options).map_err(Failure::new)?;
    let result = diff::diff_runs(&b, &a, &options);
    print(&diff::render(&result, args.format.into()))?;
    Ok(match result.gate() {
        diff::Gate::Regressed => ExitCode::from(1),
        diff::Gate::Inconclusive => ExitCode::from(3),
        diff::Gate::Pass => ExitCode::SUCCESS,
    })
}
