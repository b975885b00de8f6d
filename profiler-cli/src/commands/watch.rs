//! `prof watch`: the live view of running continuous-mode jobs (the view itself is
//! [`crate::watch`]), or one frame per file as text with `--once`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::common::{fraction, print, Failure};
use crate::{trigger, watch};

/// A live terminal view of running continuous-mode jobs, from the files they rewrite as
/// their windows close: per layer and per event the median, share, calls, the median per
/// window and the drift; the step breakdown; one tab per file. `?` shows the keys.
#[derive(clap::Args)]
pub struct WatchArgs {
    /// The prof.json files to follow, one per rank (`prof-*.json`).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Seconds between two reads of the files (each is read again only when it changed).
    #[arg(long, default_value = "1", value_parser = seconds)]
    interval: f64,
    /// The smallest drift that matters (0.02 or 2%), as `prof report --drift-threshold`.
    #[arg(long, default_value = "2%", value_parser = fraction)]
    drift_threshold: f64,
    /// Print one frame per file as text and exit, instead of the interactive view (for
    /// scripts, CI, and ssh sessions without a terminal); status 2 when a file cannot be
    /// read.
    #[arg(long)]
    once: bool,
    /// The control file the job's ranks read (PROF_CONTROL): `t` then asks every rank for
    /// a trace through it, instead of signalling the process shown.
    #[arg(long)]
    control: Option<PathBuf>,
}

/// `--interval`: seconds, from 0.05 to one day.
fn seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.05..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "`{s}` is not a number of seconds from 0.05 to 86400"
        )),
    }
}

/// Runs the view until the user quits it (`--once`: prints one frame per file and returns).
pub fn run(args: WatchArgs) -> Result<ExitCode, Failure> {
    let options = watch::WatchOptions {
        files: args.files,
        interval: std::time::Duration::from_secs_f64(args.interval),
        drift_threshold: args.drift_threshold,
    };
    if args.once {
        let (frames, error) = watch::once(&options);
        print(&frames)?;
        if let Some(error) = error {
            return Err(Failure::new(error));
        }
    } else {
        // The `t` key: a trace of the rank shown (by signal, on this host), or of every
        // rank through the control file.
        let control = args.control;
        let trigger: watch::Trigger = Box::new(move |run| {
            let target = match &control {
                Some(path) => trigger::Target::Control(path.clone()),
                None => trigger::Target::on_this_host(run)?,
            };
            trigger::trigger(&target, None, None)
        });
        watch::run(&options, trigger).map_err(Failure::new)?;
    }
    Ok(ExitCode::SUCCESS)
}
