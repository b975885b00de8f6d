//! `prof ab`: two commands (before and after) run in randomized interleaved order, several runs
//! each, then compared with the run as the unit ([`diff::diff_runs`]).
//!
//! Each round runs both commands once, in an order drawn from the seed (randomized multiple
//! interleaved trials, after Abedi and Brecht): a change of the machine's speed over the session
//! falls on both sides alike. Each run gets its own `PROF_OUT` (`before-K.json`, `after-K.json`
//! in the output folder, every `%` of the folder written `%%` so that the program reads the
//! folder as it is named, not as placeholders), removed before the run so that a profile left
//! by an earlier session is never taken for the run's, and an environment variable
//! `PROF_AB_PAD` of a random length (0 to
//! 4,095 bytes), which moves the stack and so where the program's data lands (after Mytkowicz
//! et al.): layout is averaged over the runs instead of fixed by the run's environment. Other
//! `PROF_*` variables are passed on. The rounds are compared as pairs (`DiffOptions::paired`:
//! the ratio within a round is the unit). By default it runs up to `-n` rounds (20) and stops
//! from [`MIN_ROUNDS`] on once every row that decides the gate is resolved (its interval within
//! the threshold of its change), or once `--budget` (300 s) is spent; `--until` stops instead
//! once every event's interval is narrower than a target (after at least 2 rounds).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use profiler_analysis::diff::{self, DiffOptions};
use profiler_analysis::stats::SplitMix64;
use profiler_format::Profile;

/// What `prof ab` (or `prof whatif`) runs and how long.
pub struct Plan {
    /// Who runs the rounds, for the progress lines (`prof ab`).
    pub label: &'static str,
    /// The sides' names, for the progress lines and the profiles' files (`before`, `after`).
    pub names: [&'static str; 2],
    /// The baseline command and its arguments.
    pub before: Vec<String>,
    /// The command to judge and its arguments.
    pub after: Vec<String>,
    /// Variables set for each side's runs (before, after), besides `PROF_OUT` and the
    /// padding.
    pub env: [Vec<(String, String)>; 2],
    /// Most runs of each command.
    pub runs: usize,
    /// Where the runs' profiles go.
    pub dir: PathBuf,
    /// Seed of the order and of the environment padding.
    pub seed: u64,
    /// Stop once every event's interval (and the iteration's) is narrower than this, as a
    /// relative half-width.
    pub until: Option<f64>,
    /// Stop starting rounds once this much time has passed.
    pub budget: Duration,
}

/// Splits a command as a shell would (quotes, escapes); an error names what is wrong.
pub fn split(command: &str, which: &str) -> Result<Vec<String>, String> {
    match shlex::split(command) {
        Some(words) if !words.is_empty() => Ok(words),
        Some(_) => Err(format!("error: --{which} is empty\n  = help: give the command to run, e.g. --{which} './target/release/train --steps 500'")),
        None => Err(format!("error: --{which} `{command}` has an unclosed quote or a trailing backslash")),
    }
}

/// Runs the plan, stopping as `prof ab` does (see the module documentation): returns the
/// profiles of each side, in run order.
pub fn run(plan: &Plan, options: &DiffOptions) -> Result<(Vec<Profile>, Vec<Profile>), String> {
    run_rounds(plan, |before, after, rounds| {
        diff_resolved(plan, options, before, after, rounds)
    })
}

/// Runs the plan's rounds until `resolved` (given the profiles so far and the rounds done,
/// from the second round on) says why to stop, the rounds are done or the budget is spent:
/// returns the profiles of each side, in run order.
pub fn run_rounds(
    plan: &Plan,
    mut resolved: impl FnMut(&[Profile], &[Profile], usize) -> Option<String>,
) -> Result<(Vec<Profile>, Vec<Profile>), String> {
    if plan.dir.to_str().is_none() {
        return Err(format!(
            "error: --dir {} is not valid UTF-8, which the programs' PROF_OUT must be\n  = help: \
             give a folder whose path is UTF-8",
            plan.dir.display()
        ));
    }
    if plan.dir.exists() && !plan.dir.is_dir() {
        return Err(format!(
            "error: --dir {} is a file, not a folder\n  = help: give a folder for the runs' \
             profiles (made if it does not exist)",
            plan.dir.display()
        ));
    }
    let made = !plan.dir.exists();
    std::fs::create_dir_all(&plan.dir).map_err(|e| {
        format!(
            "error: cannot create {}: {e}\n  = help: give --dir a folder you can write",
            plan.dir.display()
        )
    })?;
    let ran = rounds(plan, &mut resolved);
    if ran.is_err() && made {
        // The folder this run made, left empty by a first run that failed: removed, so that
        // nothing but the outputs is left (a folder holding anything stays).
        let _ = std::fs::remove_dir(&plan.dir);
    }
    ran
}

/// [`run_rounds`]'s rounds, in a folder that exists.
fn rounds(
    plan: &Plan,
    resolved: &mut impl FnMut(&[Profile], &[Profile], usize) -> Option<String>,
) -> Result<(Vec<Profile>, Vec<Profile>), String> {
    let mut rng = SplitMix64::new(plan.seed);
    let start = Instant::now();
    let (mut before, mut after): (Vec<Profile>, Vec<Profile>) = (Vec::new(), Vec::new());
    for round in 0..plan.runs {
        // The two commands of this round, in an order drawn from the seed.
        let sides = if rng.below(2) == 0 { [0, 1] } else { [1, 0] };
        for side in sides {
            let which = plan.names[side];
            let command = if side == 0 { &plan.before } else { &plan.after };
            let out = plan.dir.join(format!("{which}-{round}.json"));
            let pad = rng.below(4096);
            let t0 = Instant::now();
            remove_stale(&out)?;
            run_one(command, &plan.env[side], &out, pad)
                .map_err(|e| format!("error: {which} run {round}: {e}"))?;
            let profile = profiler_analysis::load_profile(&out).map_err(|e| e.to_string())?;
            say!(
                "{}: round {}/{}: {which} ({:.1} s) -> {}",
                plan.label,
                round + 1,
                plan.runs,
                t0.elapsed().as_secs_f64(),
                out.display()
            );
            if side == 0 {
                before.push(profile);
            } else {
                after.push(profile);
            }
        }
        if round + 1 < 2 {
            continue;
        }
        if start.elapsed() >= plan.budget {
            say!(
                "{}: the time budget ({} s) is spent after {} rounds",
                plan.label,
                plan.budget.as_secs(),
                round + 1
            );
            break;
        }
        if let Some(why) = resolved(&before, &after, round + 1) {
            say!("{}: {why}", plan.label);
            break;
        }
    }
    Ok((before, after))
}

/// `prof ab`'s rule: why to stop after `rounds` rounds, if it is time (`--until`'s target
/// met, or every row that decides the gate resolved from [`MIN_ROUNDS`] on).
fn diff_resolved(
    plan: &Plan,
    options: &DiffOptions,
    before: &[Profile],
    after: &[Profile],
    rounds: usize,
) -> Option<String> {
    let d = diff::diff_runs(before, after, options);
    match plan.until {
        Some(target) => {
            let widest = std::iter::once(&d.iteration)
                .chain(&d.events)
                .map(|e| half_width(e.ci_low, e.ci_high))
                .fold(0.0f64, f64::max);
            if widest <= target {
                return Some(format!(
                    "every interval is within \u{b1}{:.1}% after {rounds} rounds",
                    100.0 * widest,
                ));
            }
        }
        None if rounds >= MIN_ROUNDS => {
            // Resolved: no row that decides is inconclusive, and each has an interval within
            // the threshold of its own change (a rule mostly on the intervals' widths, so
            // that stopping does not pick a lucky moment).
            let reach = d
                .deciding()
                .map(|e| spread_of(e.ci_low, e.ci_high))
                .fold(0.0f64, f64::max);
            let open = d
                .deciding()
                .any(|e| e.verdict == diff::Verdict::Inconclusive);
            if !open && reach <= options.threshold {
                return Some(format!(
                    "resolved after {rounds} rounds: every row that matters is known \
                     within \u{b1}{:.1}% (the threshold {:.1}%)",
                    100.0 * reach,
                    100.0 * options.threshold
                ));
            }
        }
        None => {}
    }
    None
}

/// Fewest rounds before `prof ab` may stop on its own (without `--until`).
pub const MIN_ROUNDS: usize = 5;

/// How far an interval of a ratio reaches from its middle, on the log scale (infinite without an
/// interval).
fn spread_of(low: f64, high: f64) -> f64 {
    let w = 0.5 * (high.ln() - low.ln());
    if w.is_finite() {
        w.exp_m1()
    } else {
        f64::INFINITY
    }
}

/// How far an interval of a ratio reaches from no change (infinite without an interval).
fn half_width(low: f64, high: f64) -> f64 {
    let w = (high - 1.0).max(1.0 - low);
    if w.is_finite() {
        w
    } else {
        f64::INFINITY
    }
}

/// Removes `out`, a run's output left by an earlier session (or an earlier round), so that the
/// profile read after the run is the one the run wrote: a command that writes nothing is then
/// told so instead of compared on old data. Nothing there is not an error.
fn remove_stale(out: &Path) -> Result<(), String> {
    match std::fs::remove_file(out) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!(
            "error: cannot remove {}, a run's output left from before: {e}\n  = help: each run \
             writes a new profile there; move what is there away, or give another --dir",
            out.display()
        )),
    }
}

/// `out` as a `PROF_OUT` value: every `%` doubled, so that profiler-core, which reads `%p`,
/// `%r` and `%%` as placeholders, writes to `out` itself. `None` when `out` is not valid UTF-8
/// (a `PROF_OUT` must be).
fn prof_out(out: &Path) -> Option<String> {
    out.to_str().map(|s| s.replace('%', "%%"))
}

/// One run of `command`, its profile written to `out`, with `env` and `pad` bytes of padding
/// in its environment. Its output is discarded; a failure gives the end of its standard error.
fn run_one(
    command: &[String],
    env: &[(String, String)],
    out: &Path,
    pad: usize,
) -> Result<(), String> {
    let template = prof_out(out).ok_or_else(|| {
        format!(
            "{} is not valid UTF-8, which PROF_OUT must be\n  = help: give a --dir whose path is \
             UTF-8",
            out.display()
        )
    })?;
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..])
        .env("PROF_OUT", template)
        .env("PROF_AB_PAD", "x".repeat(pad))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", command[0]))?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "`{}` failed ({}): {}",
            command.join(" "),
            output.status,
            tail.join("\n")
        ));
    }
    if !out.is_file() {
        return Err(format!(
            "`{}` wrote no {}\n  = help: the command must be a program built with profiling \
             (profiler-core's enable) that writes its results to PROF_OUT",
            command.join(" "),
            out.display()
        ));
    }
    Ok(())
}
