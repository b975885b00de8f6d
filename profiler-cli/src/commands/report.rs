//! `prof report`: one row per event (and per group) of one profile.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use profiler_analysis::report;

use crate::common::{fraction, print, Failure, FormatArg};
use profiler_analysis::load_profile;

/// One row per event (and per group): calls per iteration, median, mean, min, max, stddev,
/// p90, coefficient of variation, share, self and total time; noisy events and the
/// profiler's own perturbation are flagged.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// The prof.json to read.
    file: PathBuf,
    /// Also print one row per group.
    #[arg(long, value_enum)]
    group_by: Option<GroupByArg>,
    /// Row order.
    #[arg(long, value_enum, default_value = "order")]
    sort: SortArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: FormatArg,
    /// Flag events whose coefficient of variation is above this.
    #[arg(long, default_value_t = 0.25, value_parser = non_negative)]
    cv_threshold: f64,
    /// Continuous mode: the smallest drift that matters (0.02 or 2%); an event is stable
    /// only where its windows rule out a drift of this size, else inconclusive.
    #[arg(long, default_value = "2%", value_parser = fraction)]
    drift_threshold: f64,
    /// A peak.json written by `prof peak`: the peak the MFU and roofline columns are
    /// judged against, instead of the profile's run.peak.
    #[arg(long)]
    peak: Option<PathBuf>,
}

/// `--group-by`.
#[derive(Clone, Copy, ValueEnum)]
enum GroupByArg {
    Layer,
    Phase,
    #[value(name = "layer,phase")]
    LayerPhase,
}

impl From<GroupByArg> for report::GroupBy {
    fn from(g: GroupByArg) -> report::GroupBy {
        match g {
            GroupByArg::Layer => report::GroupBy::Layer,
            GroupByArg::Phase => report::GroupBy::Phase,
            GroupByArg::LayerPhase => report::GroupBy::LayerPhase,
        }
    }
}

/// `--sort`.
#[derive(Clone, Copy, ValueEnum)]
enum SortArg {
    Order,
    Median,
    Total,
    /// Median bytes allocated per run (needs memory figures: `profiler_core::Alloc`).
    Alloc,
    /// Median peak of live bytes per run (needs memory figures).
    Peak,
}

impl From<SortArg> for report::SortBy {
    fn from(s: SortArg) -> report::SortBy {
        match s {
            SortArg::Order => report::SortBy::Order,
            SortArg::Median => report::SortBy::Median,
            SortArg::Total => report::SortBy::Total,
            SortArg::Alloc => report::SortBy::Alloc,
            SortArg::Peak => report::SortBy::Peak,
        }
    }
}

/// `--cv-threshold`: a finite number, 0 or more.
fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a non-negative number")),
    }
}

/// Functions listed per event under the CPU samples.
const TOP_FUNCTIONS: usize = 5;

/// Prints the report of `args.file`, judged against `--peak`'s peak when given: the profile
/// read, [`report::build`] (every figure, once) and [`report::render`] (the text).
pub fn run(args: ReportArgs) -> Result<ExitCode, Failure> {
    let mut profile = load_profile(&args.file)?;
    if let Some(path) = args.peak {
        let peak = profiler_format::peak::load_peak(&path)
            .map_err(|e| Failure::new(format!("error: --peak {e}")))?;
        profile.run.peak = Some(peak);
    }
    let options = report::ReportOptions {
        group_by: args.group_by.map(Into::into),
        sort: args.sort.into(),
        cv_threshold: args.cv_threshold,
        drift_threshold: args.drift_threshold,
        ..report::ReportOptions::default()
    };
    let built = report::build(&profile, &options);
    print(&report::render(&built, args.format.into()))?;
    // The CPU samples (PROF_CPU_SAMPLE): per event, its top functions, after the table.
    if let (Some(samples), FormatArg::Table) = (&profile.cpu_samples, args.format) {
        print(&profiler_analysis::cpu::report_text(samples, TOP_FUNCTIONS))?;
    }
    Ok(ExitCode::SUCCESS)
}
