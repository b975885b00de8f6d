//! `prof merge`: the profiles of several ranks, merged.

use std::path::PathBuf;
use std::process::ExitCode;

use profiler_analysis::merge;

use crate::common::{check_output, load_all, print, write_output, Failure, FormatArg};

/// Merge the profiles of several ranks: per event the min, median and max across ranks,
/// and the straggler.
#[derive(clap::Args)]
pub struct MergeArgs {
    /// One prof.json per rank.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Where to write the merged JSON (schema profiler-core/merged/v1).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Format of what is printed.
    #[arg(long, value_enum, default_value = "table")]
    format: FormatArg,
}

/// Prints the merge, and writes its JSON to `--output` when given (checked before any input
/// is read).
pub fn run(args: MergeArgs) -> Result<ExitCode, Failure> {
    let output = args.output.as_deref();
    if let Some(output) = output {
        check_output(output, &args.files)?;
    }
    let profiles = load_all(&args.files)?;
    let merged = merge::merge(&profiles)?;
    if let Some(output) = output {
        write_output(output, &serde_json::to_vec_pretty(&merged)?)?;
        say!("prof: wrote {}", output.display());
    }
    print(&merge::render(&merged, args.format.into()))?;
    Ok(ExitCode::SUCCESS)
}
