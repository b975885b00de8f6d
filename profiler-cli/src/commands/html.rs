//! `prof html`: one self-contained HTML report.

use std::path::PathBuf;
use std::process::ExitCode;

use profiler_analysis::html;

use crate::common::{check_output, write_output, Failure};
use profiler_analysis::load_profile;

/// One self-contained HTML report (no network needed to view it).
#[derive(clap::Args)]
pub struct HtmlArgs {
    /// The prof.json to read.
    file: PathBuf,
    /// A baseline run to compare against.
    #[arg(long)]
    diff: Option<PathBuf>,
    /// Where to write the report.
    #[arg(short, long)]
    output: PathBuf,
}

/// Writes the report of `args.file`, against `--diff`'s baseline when given; the output is
/// checked before any input is read.
pub fn run(args: HtmlArgs) -> Result<ExitCode, Failure> {
    let inputs: Vec<&PathBuf> = std::iter::once(&args.file).chain(&args.diff).collect();
    check_output(&args.output, &inputs)?;
    let profile = load_profile(&args.file)?;
    let baseline = args.diff.as_deref().map(load_profile).transpose()?;
    let page = html::html_report(&profile, baseline.as_ref());
    write_output(&args.output, page.as_bytes())?;
    say!("prof: wrote {}", args.output.display());
    Ok(ExitCode::SUCCESS)
}
