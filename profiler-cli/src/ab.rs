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
    // One session a folder: two writing one folder's `before-K.json` would each read the
    // other's runs.
    let ran = DirLock::take(&plan.dir).and_then(|_lock| rounds(plan, &mut resolved));
    if ran.is_err() && made {
        // The folder this run made, left empty by a first run that failed: removed, so that
        // nothing but the outputs is left (a folder holding anything stays).
        let _ = std::fs::remove_dir(&plan.dir);
    }
    ran
}

/// A session's hold on its folder: `.prof-ab.lock` in it, locked (`flock`) while the session
/// runs, removed at its end; a lock the system drops with the process, so a session that was
/// killed never keeps the folder.
struct DirLock {
    path: PathBuf,
    #[cfg(unix)]
    _file: std::fs::File,
}

impl DirLock {
    fn take(dir: &Path) -> Result<DirLock, String> {
        let path = dir.join(".prof-ab.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("error: cannot create {}: {e}", path.display()))?;
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            use std::os::unix::fs::MetadataExt;
            let busy = || {
                format!(
                    "error: another prof ab or prof whatif is running with --dir {}\n  = help: \
                     give each session its own --dir (two would read each other's runs)",
                    dir.display()
                )
            };
            // SAFETY: flock(2) on a file this function opened and holds.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    return Err(busy());
                }
                // A file system without locks (NFS without its lock daemon): no exclusion,
                // said, rather than no session at all.
                say!(
                    "prof: warning: cannot lock {} ({e}): nothing keeps another session out of \
                     this folder",
                    path.display()
                );
            }
            // The file locked must still be the one named: a session ending removes it, and
            // one that opened it just before holds a file no other session will see.
            let same = match (file.metadata(), std::fs::metadata(&path)) {
                (Ok(held), Ok(named)) => held.ino() == named.ino() && held.dev() == named.dev(),
                _ => false,
            };
            if !same {
                return Err(busy());
            }
            crate::common::children::holding(Some(path.clone()));
            Ok(DirLock { path, _file: file })
        }
        #[cfg(not(unix))]
        {
            drop(file);
            Ok(DirLock { path })
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        #[cfg(unix)]
        crate::common::children::holding(None);
        let _ = std::fs::remove_file(&self.path);
    }
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
            let profile = profiler_analysis::load_profile(&out).map_err(|e| {
                let e = e.to_string();
                format!(
                    "error: {which} run {round} wrote a profile prof cannot read: {}",
                    e.strip_prefix("error: ").unwrap_or(&e)
                )
            })?;
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
/// It runs as the leader of a process group of its own, which a signal to `prof` ends
/// ([`children`](crate::common::children)); on Linux it is also sent SIGTERM if `prof` dies.
fn run_one(
    command: &[String],
    env: &[(String, String)],
    out: &Path,
    pad: usize,
) -> Result<(), String> {
    // Absolute: a command that changes directory writes where `prof` reads.
    let out = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    let out = out.as_path();
    let template = prof_out(out).ok_or_else(|| {
        format!(
            "{} is not valid UTF-8, which PROF_OUT must be\n  = help: give a --dir whose path is \
             UTF-8",
            out.display()
        )
    })?;
    let shown =
        shlex::try_join(command.iter().map(String::as_str)).unwrap_or_else(|_| command.join(" "));
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..])
        .env("PROF_OUT", template)
        .env("PROF_AB_PAD", "x".repeat(pad))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    own_group(&mut cmd);
    #[cfg(unix)]
    let spawned = crate::common::children::spawn(&mut cmd, out.to_path_buf());
    #[cfg(not(unix))]
    let spawned = cmd.spawn().map(Some);
    let mut child = spawned
        .map_err(|e| format!("cannot run `{}`: {e}", command[0]))?
        .ok_or_else(|| "stopped by a signal".to_owned())?;
    let tail = StderrTail::read(child.stderr.take());
    // Waited for by polling, not `wait`: the signal thread ends the child and waits for this
    // loop to see it gone.
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => break Err(e),
        }
    };
    #[cfg(unix)]
    crate::common::children::ended();
    #[cfg(unix)]
    if crate::common::children::stopping() {
        // A signal ended the child: the signal thread ends `prof` of it, now that the child
        // is gone; nothing more is reported or run.
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let status = status.map_err(|e| format!("cannot wait for `{shown}`: {e}"))?;
    // A process the command left running may hold its stderr open: not waited for long.
    let tail = tail.lines(Duration::from_secs(1));
    let said = if tail.is_empty() {
        String::new()
    } else {
        format!("\n{tail}")
    };
    if !status.success() {
        return Err(format!("`{shown}` failed ({status}):{said}"));
    }
    if !out.is_file() {
        return Err(format!(
            "`{shown}` wrote no {}{said}\n  = help: the command must be a program built with \
             profiling (profiler-core's enable), run without PROF_MODE=off, that writes its \
             results to PROF_OUT",
            out.display()
        ));
    }
    Ok(())
}

/// The child leads a process group of its own, so that the terminal's Ctrl-C reaches `prof`
/// alone, which ends the child's whole group (the shell a command may be, and what it runs);
/// on Linux the child is sent SIGTERM if `prof` dies without ending it (SIGKILL, a crash).
#[cfg(unix)]
fn own_group(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: between fork and exec, prctl(2) only: async-signal-safe, no allocation.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}

/// The end of a child's standard error, read on a thread of its own: at most [`TAIL_BYTES`]
/// kept (a program may log gigabytes over a run).
struct StderrTail {
    kept: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    done: Option<std::sync::mpsc::Receiver<()>>,
}

/// How much of a child's standard error is kept.
const TAIL_BYTES: usize = 64 << 10;

impl StderrTail {
    fn read(stderr: Option<std::process::ChildStderr>) -> StderrTail {
        let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let Some(mut stderr) = stderr else {
            return StderrTail { kept, done: None };
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let into = std::sync::Arc::clone(&kept);
        let started = std::thread::Builder::new()
            .name("prof-ab-stderr".into())
            .spawn(move || {
                use std::io::Read;
                let mut buf = [0u8; 8192];
                while let Ok(n) = stderr.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut kept = into.lock().unwrap_or_else(|e| e.into_inner());
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > 2 * TAIL_BYTES {
                        let cut = kept.len() - TAIL_BYTES;
                        kept.drain(..cut);
                    }
                }
                let _ = tx.send(());
            });
        StderrTail {
            kept,
            done: started.ok().map(|_| rx),
        }
    }

    /// Its last five lines (a carriage return ends one too, as a progress bar draws), each at
    /// most 300 characters (its end), once the stream ends or `patience` has passed.
    fn lines(self, patience: Duration) -> String {
        if let Some(done) = &self.done {
            let _ = done.recv_timeout(patience);
        }
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let text = String::from_utf8_lossy(&kept);
        let mut lines: Vec<String> = text
            .split(['\n', '\r'])
            .filter(|l| !l.trim().is_empty())
            .rev()
            .take(5)
            // Where its last 300 characters begin, if anything is before them.
            .map(|l| match l.char_indices().rev().nth(299) {
                Some((at, _)) if at > 0 => format!("...{}", &l[at..]),
                _ => l.to_owned(),
            })
            .collect();
        lines.reverse();
        lines.join("\n")
    }
}
