//! `prof trigger`: a running continuous-mode job asked for a trace (how: [`crate::trigger`]).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::common::Failure;
use crate::trigger;

/// Ask a running continuous-mode job for a trace of its next iterations: one process by
/// SIGUSR2, or every rank through the control file PROF_CONTROL names.
#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("target").required(true))]
pub struct TriggerArgs {
    /// The process to ask (it must be a profiler-core program in continuous mode, on this
    /// host).
    #[arg(group = "target")]
    pid: Option<u32>,
    /// The control file the job's ranks read (PROF_CONTROL): all of them trace the same
    /// iterations.
    #[arg(long, group = "target")]
    control: Option<PathBuf>,
    /// How many iterations, 1 to 4294967295: the job takes at most its PROF_REPEAT (the
    /// default), by signal as through the control file, and says so.
    #[arg(long, value_parser = trigger_iterations)]
    iterations: Option<u32>,
    /// With --control: the iteration to start at (by default rank 0 picks one half a
    /// second ahead).
    #[arg(long, requires = "control")]
    at: Option<u32>,
}

/// `--iterations`: the rule the job reads a request's count by.
fn trigger_iterations(s: &str) -> Result<u32, String> {
    profiler_format::control::check_iterations(s)
}

/// Sends the request and says on stderr what the job was asked.
pub fn run(args: TriggerArgs) -> Result<ExitCode, Failure> {
    let target = match (args.pid, args.control) {
        (_, Some(path)) => trigger::Target::Control(path),
        (Some(pid), None) => trigger::Target::Pid(pid),
        (None, None) => return Err(Failure::new("error: name a PID or --control FILE")),
    };
    let said = trigger::trigger(&target, args.iterations, args.at).map_err(Failure::new)?;
    say!("{said}");
    Ok(ExitCode::SUCCESS)
}
