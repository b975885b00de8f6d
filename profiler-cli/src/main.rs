//! `prof`: answers from profiler-core's `prof.json`.
//!
//! A thin shell over `profiler_analysis`: every number it prints is computed there, the
//! same code that prints the end-of-run summary. Exit status: 0 on success, 1 when
//! `diff --fail-on-regression` finds a regression, 2 on bad input (a missing, malformed or
//! foreign file, a bad option, an output that cannot be written), 3 when
//! `diff --fail-on-regression` finds none but is inconclusive (one could have gone unseen).
//!
//! Every command and flag, with its values, defaults and outputs, is in the repository's
//! `docs/reference.md` (section "prof"; `tests/docs.rs` holds it to `--help`); how to read
//! the reports, with examples, in `docs/guide.md`.
//!
//! This file is the command line's top and the dispatch only: each command's flags and glue
//! are one file of `commands/` (`commands/report.rs` for `prof report`), what they share is
//! `common.rs`.

/// `eprintln!` that never panics: a line to stderr through [`common::say`] (a closed or full
/// stderr loses the line, not the command's exit status).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::common::say(format_args!($($arg)*))
    };
}

mod ab;
mod commands;
mod common;
mod trigger;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use common::Failure;

#[derive(Parser)]
#[command(
    name = "prof",
    version,
    about = "Reports, traces, comparisons and HTML from profiler-core's prof.json",
    after_help = "Exit status: 0 success, 1 regression found (diff --fail-on-regression), 2 bad input, 3 inconclusive: no regression found, but one of the threshold's size could have gone unseen (diff --fail-on-regression)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The commands, in the order `prof --help` lists them; each one's help is its `Args`
/// struct's doc comment.
#[derive(Subcommand)]
enum Command {
    Report(commands::report::ReportArgs),
    Advise(commands::advise::AdviseArgs),
    Trace(commands::trace::TraceArgs),
    Diff(commands::diff::DiffArgs),
    Scale(commands::scale::ScaleArgs),
    Ab(commands::ab::AbArgs),
    Whatif(commands::whatif::WhatifArgs),
    Merge(commands::merge::MergeArgs),
    Flame(commands::flame::FlameArgs),
    Watch(commands::watch::WatchArgs),
    Html(commands::html::HtmlArgs),
    Trigger(commands::trigger::TriggerArgs),
    Peak(commands::peak::PeakArgs),
    Pprof(commands::pprof::PprofArgs),
}

/// Runs one command; the exit status on success (1 for a regression found with
/// `--fail-on-regression`), a [`Failure`] (status 2) otherwise.
fn run(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Command::Report(args) => commands::report::run(args),
        Command::Advise(args) => commands::advise::run(args),
        Command::Trace(args) => commands::trace::run(args),
        Command::Diff(args) => commands::diff::run(args),
        Command::Scale(args) => commands::scale::run(args),
        Command::Ab(args) => commands::ab::run(args),
        Command::Whatif(args) => commands::whatif::run(args),
        Command::Merge(args) => commands::merge::run(args),
        Command::Flame(args) => commands::flame::run(args),
        Command::Watch(args) => commands::watch::run(args),
        Command::Html(args) => commands::html::run(args),
        Command::Trigger(args) => commands::trigger::run(args),
        Command::Peak(args) => commands::peak::run(args),
        Command::Pprof(args) => commands::pprof::run(args),
    }
}

fn main() -> ExitCode {
    #[cfg(unix)]
    common::end_cleanly_on_signals();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(Failure(message)) => {
            // Every message starts with `error:`; `Failure::new` and the constructors see to it.
            debug_assert!(message.starts_with("error:"), "{message}");
            // A name or path quoted from the input shows its control characters as escapes.
            say!("{}", profiler_analysis::printable_lines(&message));
            ExitCode::from(2)
        }
    }
}
