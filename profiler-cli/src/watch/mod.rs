//! `prof watch`: a terminal view of running `continuous`-mode jobs, from the files they
//! rewrite as their windows close, with no change to the programs (over ssh too).
//!
//! - `model.rs`: the pure part: files' profiles made into snapshots (the report and the drift
//!   of `prof report`), the state the keys change, the keys, the rows of the table.
//! - `source.rs`: polling a file (modification time, size, inode) and reading it again when it
//!   changed; a missing, half-written or malformed file is an error shown beside the last good
//!   view, never a crash.
//! - `view.rs`: drawing the state into a ratatui frame, or into text (`--once`).
//! - `term.rs`: the terminal loop (raw mode, alternate screen, a reader thread, keys).
//!
//! Keys, flags and what each part of the screen says: `docs/reference.md`, "`prof watch`".

mod model;
mod source;
mod term;
mod view;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

pub use model::Trigger;
use model::{Update, Watch};
use source::Source;

/// The width `--once` draws at when the standard output is not a terminal (its frames are as
/// tall as what they show).
pub const ONCE_WIDTH: u16 = 140;

/// The width `--once` draws at on a terminal that says it is `reported` columns wide: a
/// terminal that reports 0 (a pseudo-terminal not sized yet, as `docker exec -t` or `ssh -tt`
/// give early on) drew an empty frame; below 20 columns nothing fits either.
fn once_width(reported: u16) -> u16 {
    if reported < 20 {
        ONCE_WIDTH
    } else {
        reported
    }
}

/// What `prof watch` was asked for.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// The files to follow, one per rank.
    pub files: Vec<PathBuf>,
    /// How often the files are polled.
    pub interval: Duration,
    /// The smallest drift that matters (`prof report --drift-threshold`).
    pub drift_threshold: f64,
}

impl WatchOptions {
    fn watch(&self, trigger: Trigger) -> Watch {
        let paths: Vec<String> = self.files.iter().map(|p| p.display().to_string()).collect();
        Watch::new(&paths, self.interval, trigger)
    }
}

/// Runs the interactive view until the user quits; `t` calls `trigger`. An error when the
/// standard output is not a terminal (`--once` is for that) or the terminal fails.
pub fn run(options: &WatchOptions, trigger: Trigger) -> Result<(), String> {
    if !std::io::stdout().is_terminal() {
        return Err(
            "error: prof watch needs a terminal on its standard output\n  = help: \
                    prof watch --once prints one frame as text"
                .to_owned(),
        );
    }
    let mut watch = options.watch(trigger);
    term::run(&mut watch, options.files.clone(), options.drift_threshold)
        .map_err(|e| format!("error: prof watch: the terminal failed: {e}"))
}

/// One frame per file, as text, from one read of each (`--once`): at the terminal's width,
/// else [`ONCE_WIDTH`], each as tall as what it shows (every row of its table, no blank lines
/// filling a screen). The second value is the first file's error, if any could not be read.
pub fn once(options: &WatchOptions) -> (String, Option<String>) {
    let no_trigger: Trigger = Box::new(|_| Err("not in --once".to_owned()));
    let mut watch = options.watch(no_trigger);
    let mut first_error = None;
    for (i, path) in options.files.iter().enumerate() {
        if let Some(update) = Source::new(path).poll(options.drift_threshold) {
            if let (Update::Failed { message, .. }, None) = (&update, &first_error) {
                // The status line keeps the first line; the error is told whole, its help
                // line too (read again: the update holds the status line's text only).
                let whole = profiler_analysis::load_profile(path)
                    .err()
                    .map_or_else(|| message.clone(), |e| e.to_string());
                first_error = Some(whole);
            }
            watch.apply(i, update);
        }
    }
    let width = if std::io::stdout().is_terminal() {
        ratatui::crossterm::terminal::size().map_or(ONCE_WIDTH, |(w, _)| once_width(w))
    } else {
        ONCE_WIDTH
    };
    let now = SystemTime::now();
    let mut out = String::new();
    for i in 0..watch.ranks.len() {
        watch.selected = i;
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&view::render_once(&watch, width, now));
    }
    (out, first_error)
}

#[cfg(test)]
mod tests;
