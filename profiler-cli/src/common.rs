//! What several `prof` commands share: the [`Failure`] every command returns, reading profiles,
//! checking and writing an output, printing, and the flags' shared values (`--format`,
//! fractions like `2%`).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use profiler_analysis::{self as analysis, Format};
use profiler_format::Profile;

/// A failure the user can fix: the message, which starts with `error:`, and exit status 2.
pub struct Failure(pub String);

impl Failure {
    /// `message`, with `error: ` in front unless it starts with it already.
    pub fn new(message: impl std::fmt::Display) -> Failure {
        let message = message.to_string();
        if message.starts_with("error:") {
            Failure(message)
        } else {
            Failure(format!("error: {message}"))
        }
    }
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure::new(e)
    }
}

/// `--format` of the commands that print a table: table, csv, json or markdown.
#[derive(Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Table,
    Csv,
    Json,
    Markdown,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Csv => Format::Csv,
            FormatArg::Json => Format::Json,
            FormatArg::Markdown => Format::Markdown,
        }
    }
}

/// `0.02` or `2%`.
pub fn fraction(s: &str) -> Result<f64, String> {
    let (text, scale) = match s.strip_suffix('%') {
        Some(t) => (t, 0.01),
        None => (s, 1.0),
    };
    match text.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() && v * scale < 1.0 => Ok(v * scale),
        _ => Err(format!("`{s}` is not a fraction like 0.02 or 2%")),
    }
}

/// Every profile of `paths`, in order; the first that cannot be loaded is the failure.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Profile>, Failure> {
    Ok(paths
        .iter()
        .map(analysis::load_profile)
        .collect::<Result<_, _>>()?)
}

/// `error: cannot write PATH: WHY`, with a help line.
pub fn cannot_write(path: &Path, why: impl std::fmt::Display) -> Failure {
    Failure(format!(
        "error: cannot write {}: {why}\n  = help: -o takes the path of a regular file (new, or \
         one to replace) in an existing, writable directory",
        path.display()
    ))
}

/// Checks, before any input is read, that `path` can take the output: it names a regular file
/// or nothing yet (not a directory, a FIFO, a device or a link to one), in a directory that
/// exists, and none of the command's `inputs` (the output would replace it).
pub fn check_output<P: AsRef<Path>>(path: &Path, inputs: &[P]) -> Result<(), Failure> {
    // Follows links, the kernel's too (`/dev/stdout` leads through `/proc/self/fd/1` to a pipe).
    use profiler_format::write::OutputPathError as Why;
    match profiler_format::write::check_output_path(path) {
        Ok(_) => {
            if let Some(input) = inputs.iter().find(|i| same_file(path, i.as_ref())) {
                return Err(Failure(format!(
                    "error: cannot write {}: it is the input {} (the output would replace it)\n  \
                     = help: give -o another path",
                    path.display(),
                    input.as_ref().display()
                )));
            }
            Ok(())
        }
        Err(Why::Target(why)) => Err(cannot_write(path, why)),
        Err(Why::NoDirectory(dir)) => Err(cannot_write(
            path,
            format_args!("the directory {} does not exist", dir.display()),
        )),
        // The error of the probe file, without its random name (`at path "/proc/.c9PDk..."`).
        Err(Why::NotWritable(_, e)) => Err(cannot_write(
            path,
            e.to_string().split(" at path ").next().unwrap_or_default(),
        )),
    }
}

/// Whether `a` and `b` name the same file, links followed (false when either is not there).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

/// Writes `bytes` to `path` atomically (a temporary file, then a rename).
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    profiler_format::write_atomic(path, bytes).map_err(|e| cannot_write(path, e))
}

/// Prints `text` to stdout, with a final newline. A closed pipe (`prof report x | head`) is
/// not an error; any other failure (a full disk, `>/dev/full`) is, so that a command whose
/// output was lost does not exit as if it had printed it.
pub fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    let mut written = out.write_all(text.as_bytes());
    if written.is_ok() && !text.ends_with('\n') {
        written = out.write_all(b"\n");
    }
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure(format!(
            "error: cannot write standard output: {e}\n  = help: send it to a file or a pipe \
             that takes it"
        ))),
        _ => Ok(()),
    }
}

/// Writes one line to stderr. Unlike `eprintln!`, which panics when it cannot, a stderr that
/// is closed or full loses the line and nothing else.
pub fn say(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A `--filter` expression (the `PROF_FILTER` language), parsed; its error points at the
/// column at fault.
pub fn parse_filter(
    text: Option<&str>,
) -> Result<Option<profiler_format::filter::Filter>, Failure> {
    text.map(|text| {
        profiler_format::filter::Filter::parse(text).map_err(|e| {
            Failure::new(profiler_format::filter::render_error(
                "--filter",
                &e.input,
                e.column,
                e.width,
                &e.problem,
                &e.expected,
            ))
        })
    })
    .transpose()
}

/// `file` has no `cpu_samples` section (`prof pprof`, `prof flame --cpu`).
pub fn no_cpu_samples(file: &Path) -> Failure {
    Failure::new(format!(
        "error: {} has no CPU samples\n  = help: run the program with PROF_CPU_SAMPLE=1000 (a \
         build with profiler-core's `cpu-sample` feature, on Linux) to take them",
        file.display()
    ))
}

/// `file`'s CPU samples leave nothing to write: `filter` (given as `--filter`) kept no stack,
/// or, without one, the run took no sample.
pub fn no_sampled_stack(file: &Path, filter: Option<&str>) -> Failure {
    Failure::new(match filter {
        Some(text) => format!(
            "error: --filter {text} matches no sampled event\n  = help: `prof report` lists the \
             sampled events"
        ),
        None => format!(
            "error: {} holds CPU samples but no sampled stack\n  = help: the run took no sample \
             (too short for PROF_CPU_SAMPLE's rate: raise it, or run longer)",
            file.display()
        ),
    })
}

/// [`parse_filter`] for the CPU samples (`prof pprof`, `prof flame --cpu`), whose stacks know
/// their event's `name`, `id`, `layer` and `phase` only: a filter on another key is refused
/// (before, `module=...` matched nothing and the message blamed the filter, `kind!=fn` matched
/// every stack).
pub fn parse_cpu_filter(
    text: Option<&str>,
) -> Result<Option<profiler_format::filter::Filter>, Failure> {
    use profiler_format::filter::Key;
    let filter = parse_filter(text)?;
    if let (Some(f), Some(text)) = (&filter, text) {
        let known = [Key::Name, Key::Id, Key::Layer, Key::Phase];
        if let Some(key) = Key::ALL
            .into_iter()
            .find(|&k| !known.contains(&k) && f.mentions(k))
        {
            return Err(Failure::new(format!(
                "error: --filter {text}: the CPU samples know each event's name, id, layer and \
                 phase, not its {}\n  = help: filter on name, id, layer or phase (`prof report` \
                 lists the sampled events with them)",
                key.as_str()
            )));
        }
    }
    Ok(filter)
}

/// SIGINT, SIGTERM and SIGHUP end `prof` as they would without it (the process ends of the
/// signal), but first remove the temporary file of a write under way (a trace of a large
/// profile takes seconds to write): before, Ctrl-C left a hidden `.NAME.XXXX.tmp` of hundreds
/// of megabytes beside the output. signal-hook's handler wakes a thread of its own, which
/// removes them and then acts as the default would. A handler, not a blocked signal: a program
/// `prof ab` runs would inherit a mask (it does not inherit a handler). A signal the shell
/// ignores (`nohup`'s SIGHUP) is left ignored.
#[cfg(unix)]
pub fn end_cleanly_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let defaults: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .filter(|&sig| {
            // SAFETY: sigaction(2) only reads the signal's action into `old`, a zeroed struct of
            // this frame.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_DFL
            }
        })
        .collect();
    // The handler is installed by the thread that takes the signals: a thread that could not
    // be started leaves them as they were (signal-hook never restores a default action).
    // It says when they are in place, so that no write begins before: waited for however long
    // it takes (a second was not always enough on a loaded machine, and a write then began
    // with the default actions in place, its temporary file left by a signal). It sends before
    // anything that could block, and a thread that ends without sending closes the channel.
    let (installed, ready) = std::sync::mpsc::channel();
    let started = std::thread::Builder::new()
        .name("prof-signals".into())
        .spawn(move || {
            let signals = signal_hook::iterator::Signals::new(&defaults);
            let _ = installed.send(());
            let Ok(mut signals) = signals else {
                return;
            };
            if let Some(sig) = signals.forever().next() {
                // The program `prof ab` runs ends first (given time to stop as a signal stops
                // it), then the temporaries go and `prof` ends of the signal.
                children::end_for_signal(std::time::Duration::from_secs(10));
                profiler_format::write::remove_temporaries_and(|_| {
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    // Not reached: the default action of these signals ends the process.
                    std::process::exit(128 + sig);
                });
            }
        });
    if started.is_ok() {
        let _ = ready.recv();
    }
}

/// The program `prof ab` or `prof whatif` runs now, so that a signal to `prof` ends it too:
/// before, Ctrl-C or a CI job's SIGTERM ended `prof` and left the training run going (in its
/// own time, writing into `--dir` after `prof` was gone).
#[cfg(unix)]
pub mod children {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// The running child (its process group's id: the child leads its own group) and the
    /// profile it writes.
    static RUNNING: Mutex<Option<(u32, PathBuf)>> = Mutex::new(None);
    /// A signal is ending `prof`: no child is started any more.
    static STOPPING: AtomicBool = AtomicBool::new(false);
    /// The lock file of the session's folder (`prof ab`'s `.prof-ab.lock`), removed on a
    /// signal as at the session's end.
    static LOCK: Mutex<Option<PathBuf>> = Mutex::new(None);

    /// The session holds the lock file `path` (`None`: it let it go).
    pub fn holding(path: Option<PathBuf>) {
        *LOCK.lock().unwrap_or_else(|e| e.into_inner()) = path;
    }

    fn running() -> std::sync::MutexGuard<'static, Option<(u32, PathBuf)>> {
        RUNNING.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True once a signal is ending `prof`: a command about to start must not.
    pub fn stopping() -> bool {
        STOPPING.load(SeqCst)
    }

    /// Starts `cmd` (set to lead a process group of its own), which writes `out`, unless a
    /// signal is ending `prof` (`Ok(None)`). Under the lock the signal thread takes to find the
    /// running child: a signal during the start finds the child once it has started.
    pub fn spawn(
        cmd: &mut std::process::Command,
        out: PathBuf,
    ) -> std::io::Result<Option<std::process::Child>> {
        let mut running = running();
        if stopping() {
            return Ok(None);
        }
        let child = cmd.spawn()?;
        *running = Some((child.id(), out));
        Ok(Some(child))
    }

    /// The child ended and was waited for.
    pub fn ended() {
        *running() = None;
    }

    /// Ends the running child's process group for a signal that ends `prof`: SIGTERM, so that
    /// the program stops as a signal stops it, then SIGKILL if it has not ended within
    /// `patience`; its partial profile is removed. Called by the signal thread.
    pub fn end_for_signal(patience: Duration) {
        STOPPING.store(true, SeqCst);
        // The folder's lock goes last, once the child is gone: a new session must not start
        // in the folder while the child still writes there.
        let lock = LOCK.lock().unwrap_or_else(|e| e.into_inner()).take();
        end_child(patience);
        if let Some(lock) = lock {
            let _ = std::fs::remove_file(lock);
        }
    }

    fn end_child(patience: Duration) {
        let Some((pid, out)) = running().clone() else {
            return;
        };
        let group = -(pid as libc::pid_t);
        for (signal, limit) in [
            (libc::SIGTERM, patience),
            (libc::SIGKILL, Duration::from_secs(2)),
        ] {
            // SAFETY: kill(2) with a process group this process started; no memory is touched.
            unsafe { libc::kill(group, signal) };
            // The main thread waits for the child and says when it is gone.
            let deadline = Instant::now() + limit;
            while running().is_some() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if running().is_none() {
                break;
            }
        }
        let _ = std::fs::remove_file(out);
    }
}
