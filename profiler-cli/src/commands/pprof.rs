//! `prof pprof`: the CPU samples of a profile as pprof's `profile.proto`, gzipped.

use std::path::PathBuf;
use std::process::ExitCode;

use profiler_analysis::cpu;

use crate::common::{
    check_output, no_cpu_samples, no_sampled_stack, parse_cpu_filter, write_output, Failure,
};
use profiler_analysis::load_profile;

/// The CPU samples of a prof.json (taken with PROF_CPU_SAMPLE) as a gzipped pprof profile
/// (profile.proto), each sample labelled with its event's `layer`, `phase` and `event` (the
/// probe's id), its `thread` and the run's `rank`: read it with `go tool pprof`, speedscope,
/// Pyroscope or Parca (`go tool pprof -top -tagfocus layer=mlp profile.pb.gz`).
#[derive(clap::Args)]
pub struct PprofArgs {
    /// The prof.json to read.
    file: PathBuf,
    /// Where to write the profile (`profile.pb.gz`).
    #[arg(short, long)]
    output: PathBuf,
    /// Only the samples of the events this PROF_FILTER expression matches (keys `name`,
    /// `id`, `layer`, `phase`).
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
}

/// Writes the profile; the output and the filter are checked before the input is read.
pub fn run(args: PprofArgs) -> Result<ExitCode, Failure> {
    check_output(&args.output, &[&args.file])?;
    let filter = parse_cpu_filter(args.filter.as_deref())?;
    let profile = load_profile(&args.file)?;
    let Some(pprof) = cpu::pprof(&profile, filter.as_ref()) else {
        return Err(no_cpu_samples(&args.file));
    };
    if pprof.sample.is_empty() {
        return Err(no_sampled_stack(&args.file, args.filter.as_deref()));
    }
    write_output(&args.output, &cpu::pprof_gz(&pprof))?;
    Ok(ExitCode::SUCCESS)
}
