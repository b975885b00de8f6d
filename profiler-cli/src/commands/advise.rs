//! `prof advise`: what to do about a profile, as findings of rules with their evidence and the
//! time at stake per iteration.

use std::path::PathBuf;
use std::process::ExitCode;

use profiler_analysis::advise::{self, AdviceOptions};

use crate::common::{load_all, print, Failure};

/// What to do about it: the rules true of a profile (input-bound, one layer dominating, far
/// below the peak, allocation churn, noise, stretches no probe covers, a straggler rank,
/// drift, GPU stalls...), each with its evidence (numbers, events, file:line), the time at
/// stake per iteration (an upper bound) and what to try; the most time at stake first.
#[derive(clap::Args)]
pub struct AdviseArgs {
    /// The prof.json to judge; several (one per rank, as `prof merge` takes them) add the
    /// straggler rule and judge the slowest rank's.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON (fields: id, title, at_stake_ns, evidence, try) instead of text.
    #[arg(long)]
    json: bool,
    /// Show only the first N findings (those with the most time at stake).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    top: Option<u64>,
    /// A peak.json written by `prof peak`: the peak the rules on FLOP/s and bandwidth judge
    /// against, instead of the profile's run.peak.
    #[arg(long)]
    peak: Option<PathBuf>,
    /// Events whose coefficient of variation is above this are too noisy to judge.
    #[arg(long, default_value_t = 0.25, value_parser = non_negative, allow_negative_numbers = true)]
    cv_threshold: f64,
}

/// `--cv-threshold`: a finite number, 0 or more.
fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a non-negative number")),
    }
}

/// Prints the findings on `args.files`.
pub fn run(args: AdviseArgs) -> Result<ExitCode, Failure> {
    let mut profiles = load_all(&args.files)?;
    if let Some(path) = args.peak {
        let peak = profiler_format::peak::load_peak(&path)
            .map_err(|e| Failure::new(format!("error: --peak {e}")))?;
        for p in &mut profiles {
            p.run.peak = Some(peak.clone());
        }
    }
    let options = AdviceOptions {
        cv_threshold: args.cv_threshold,
    };
    let advice = advise::advise(&profiles, &options).map_err(Failure::new)?;
    let top = args.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    print(&if args.json {
        advise::render_json(&advice, top)
    } else {
        advise::render_text(&advice, top)
    })?;
    Ok(ExitCode::SUCCESS)
}
