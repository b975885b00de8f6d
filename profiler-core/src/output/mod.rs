//! The end of the pipeline: where the results go (`PROF_OUT`'s placeholders, the rank, the
//! checks of the path before training), `prof.json` written atomically, and the summary on
//! stderr.

use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering::SeqCst};

use crate::select::config::{shorten, Config, ConfigError};
use profiler_format::{write_atomic_with, Profile};
use profiler_tables::summary;

impl Config {
    /// The output path: `%p` is the process id, `%r` the rank, `%%` a `%`.
    pub fn output_path(&self) -> PathBuf {
        let mut out = String::new();
        let mut chars = self.out.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('p') => out.push_str(&std::process::id().to_string()),
                Some('r') => out.push_str(&rank().to_string()),
                Some(other) => out.push(other),
                None => out.push('%'),
            }
        }
        PathBuf::from(out)
    }

    /// Checks, before training starts, that the output can be written: the path names a file
    /// (not a directory, a FIFO, a device or an open descriptor such as `/dev/stdout`), its
    /// directory exists, and a temporary file such as the final write renames into place can
    /// be created there (so a directory that cannot be written fails now, not after training). A rank that `%r` cannot use is an error
    /// too.
    pub fn check_output(&self) -> Result<(), ConfigError> {
        if self.out.contains("%r") {
            if let Err(why) = rank_checked() {
                return Err(ConfigError::new(
                    "PROF_OUT",
                    format!(
                        "error: PROF_OUT={} uses %r, but {why}\n  = help: set the rank variable \
                         to a whole number from 0 to {}, or leave %r out of PROF_OUT",
                        shorten(&self.out, 200),
                        u32::MAX
                    ),
                ));
            }
        }
        let path = self.output_path();
        let fail = |reason: String| {
            ConfigError::new(
                "PROF_OUT",
                format!(
                    "error: PROF_OUT={} cannot be written: {reason}\n  = help: point PROF_OUT \
                     at a regular file in an existing, writable directory",
                    shorten(&self.out, 200)
                ),
            )
        };
        // The new file that checks the directory is created exclusively under a name as long
        // as the target's, so nothing that is there is opened, let alone emptied, and removed
        // at once: permission and name length fail now rather than after training.
        use profiler_format::write::OutputPathError as Why;
        profiler_format::write::check_output_path(&path).map_err(|why| match why {
            Why::Target(reason) => fail(reason),
            Why::NoDirectory(dir) => {
                fail(format!("the directory {} does not exist", dir.display()))
            }
            Why::NotWritable(dir, e) => fail(format!(
                "cannot create a temporary file in {}: {e}",
                dir.display()
            )),
        })?;
        Ok(())
    }
}

impl Config {
    /// Where a trace taken on demand that begins at iteration `first` goes (`PROF_TRACE_OUT`,
    /// by default beside `PROF_OUT`).
    pub(crate) fn trace_output_path(&self, first: u32) -> PathBuf {
        let template = match &self.trace_out {
            Some(t) => t.clone(),
            None => default_trace_out(&self.out),
        };
        trace_path(&template, first)
    }

    /// Checks, before training starts, that traces taken on demand can be written (their
    /// directory exists and takes a new file) and that the control file's directory exists.
    pub fn check_on_demand(&self) -> Result<(), ConfigError> {
        if self.mode != crate::select::config::Mode::Continuous {
            return Ok(());
        }
        let var = if self.trace_out.is_some() {
            "PROF_TRACE_OUT"
        } else {
            "PROF_OUT"
        };
        let path = self.trace_output_path(0);
        use profiler_format::write::OutputPathError as Why;
        profiler_format::write::check_output_path(&path).map_err(|why| {
            let reason = match why {
                Why::Target(reason) => reason,
                Why::NoDirectory(dir) => format!("the directory {} does not exist", dir.display()),
                Why::NotWritable(dir, e) => {
                    format!("cannot create a temporary file in {}: {e}", dir.display())
                }
            };
            ConfigError::new(
                var,
                format!(
                    "error: traces taken on demand would go to {}, which cannot be written: \
                     {reason}\n  = help: point PROF_TRACE_OUT at a file in an existing, writable \
                     directory",
                    shorten(&path.display().to_string(), 200)
                ),
            )
        })?;
        if let Some(control) = &self.control {
            let path = std::path::Path::new(control);
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => std::path::Path::new("."),
            };
            if !dir.is_dir() || path.is_dir() {
                return Err(ConfigError::new(
                    "PROF_CONTROL",
                    format!(
                        "error: PROF_CONTROL={}: {}\n  = help: name a file (it need not exist \
                         yet) in an existing directory",
                        shorten(control, 200),
                        if path.is_dir() {
                            "names a directory, not a file".to_owned()
                        } else {
                            format!("the directory {} does not exist", dir.display())
                        }
                    ),
                ));
            }
            // A FIFO would block the job at the first read, a device (`/dev/zero`) be read
            // without end: only a regular file (or a link to one) is a control file. `stat`
            // opens nothing; every later read checks again, on the descriptor it reads.
            if let Ok(meta) = std::fs::metadata(path) {
                if !meta.is_file() {
                    return Err(ConfigError::new(
                        "PROF_CONTROL",
                        format!(
                            "error: PROF_CONTROL={}: it is {}, not a regular file\n  = help: \
                             name a regular file, or one that does not exist yet (prof trigger \
                             --control writes it)",
                            shorten(control, 200),
                            profiler_format::read::file_kind(&meta)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `PROF_TRACE_OUT`'s default: `PROF_OUT` with `.trace-%i` before its `.json` (or at its end).
pub(crate) fn default_trace_out(out: &str) -> String {
    match out.strip_suffix(".json") {
        Some(stem) => format!("{stem}.trace-%i.json"),
        None => format!("{out}.trace-%i"),
    }
}

/// The path of a trace that begins at iteration `first`, from `template` (`%p`, `%r`, `%i`,
/// `%%`).
pub(crate) fn trace_path(template: &str, first: u32) -> PathBuf {
    let mut out = String::new();
    let mut chars = template.chars();
    while let Some(ch) = chars.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        match chars.next() {
            Some('p') => out.push_str(&std::process::id().to_string()),
            Some('r') => out.push_str(&rank().to_string()),
            Some('i') => out.push_str(&first.to_string()),
            Some(other) => out.push(other),
            None => out.push('%'),
        }
    }
    PathBuf::from(out)
}

/// The variables a rank is read from, in order.
pub const RANK_VARS: [&str; 3] = ["RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"];

/// This process's rank: the first of `RANK`, `OMPI_COMM_WORLD_RANK`, `SLURM_PROCID` that is
/// set; 0 when none is. A set value that is not a whole number from 0 to `u32::MAX` is an
/// error naming the variable (it is not skipped, nor read as 0).
pub fn rank_checked() -> Result<u32, String> {
    for var in RANK_VARS {
        let Some(value) = std::env::var_os(var) else {
            continue;
        };
        let Some(text) = value.to_str() else {
            return Err(format!("{var} is not valid UTF-8"));
        };
        return text.trim().parse::<u32>().map_err(|_| {
            format!(
                "{var}={} is not a rank (a whole number from 0 to {})",
                shorten(text, 60),
                u32::MAX
            )
        });
    }
    Ok(0)
}

/// This process's rank, as [`rank_checked`], with 0 for a value it rejects (start-up warns or,
/// when `PROF_OUT` uses `%r`, stops before that can happen).
pub fn rank() -> u32 {
    rank_checked().unwrap_or(0)
}

// A second signal while results are written (see `signals`): the writes stop, remove their
// temporary files, and the process then ends of that signal.

/// Writes of results under way (each holds a temporary file until it renames or removes it).
#[cfg(unix)]
pub(crate) static WRITING: AtomicUsize = AtomicUsize::new(0);

/// The signal that arrived second while results were written (0: none).
#[cfg(unix)]
pub(crate) static SECOND: AtomicI32 = AtomicI32::new(0);

/// Runs `write`, a write of results, giving it a test to make between chunks: true once a
/// second signal asks the process to end, when the write must stop and remove its temporary
/// file (returning an error). If such a signal came, the process then ends of it.
#[cfg(unix)]
pub(crate) fn writing<T>(write: impl FnOnce(&dyn Fn() -> bool) -> T) -> T {
    WRITING.fetch_add(1, SeqCst);
    let result = write(&|| SECOND.load(SeqCst) != 0);
    WRITING.fetch_sub(1, SeqCst);
    end_if_asked();
    result
}

/// Ends the process of the second signal, if one came while results were written: once the
/// other writes under way (on other threads) have seen it too and removed their temporary files,
/// which they do between two chunks (a second at most is waited for them).
#[cfg(unix)]
fn end_if_asked() {
    let signal = SECOND.load(SeqCst);
    if signal != 0 {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while WRITING.load(SeqCst) != 0 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let _ = signal_hook::low_level::emulate_default_handler(signal);
        std::process::exit(128 + signal);
    }
}

/// Encodes `profile` and writes it to `path` atomically, streaming the text into the temporary
/// file rather than holding all of it (a trace-mode profile of millions of samples is hundreds
/// of megabytes); the error says why it could not.
pub fn write_profile(profile: &Profile, path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    return writing(|stop| write_profile_until(profile, path, stop));
    #[cfg(not(unix))]
    return write_profile_until(profile, path, &|| false);
}

/// [`write_profile`], stopping (the temporary file removed, an error returned) as soon as
/// `stop` says so between two chunks of text.
fn write_profile_until(
    profile: &Profile,
    path: &Path,
    stop: &dyn Fn() -> bool,
) -> Result<(), String> {
    struct Until<'a, W: ?Sized> {
        out: &'a mut W,
        stop: &'a dyn Fn() -> bool,
    }
    impl<W: std::io::Write + ?Sized> std::io::Write for Until<'_, W> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if (self.stop)() {
                return Err(std::io::Error::other(
                    "a second signal came while the results were written; the write was \
                     abandoned",
                ));
            }
            self.out.write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.out.flush()
        }
    }
    write_atomic_with(path, |out| {
        serde_json::to_writer_pretty(Until { out, stop }, profile).map_err(std::io::Error::other)
    })
    .map_err(|e| e.to_string())
}

/// Writes the profile to `path` and the summary to stderr. A failure is reported on stderr
/// with the path and the reason, and the summary says that nothing was written; the program
/// goes on.
pub fn emit(profile: &Profile, path: &Path, print_summary: bool) -> bool {
    let written = match write_profile(profile, path) {
        Ok(()) => true,
        Err(e) => {
            say!(
                "profiler-core: error: cannot write the results to {}: {e} (the program goes on)",
                path.display()
            );
            false
        }
    };
    if print_summary {
        let shown = path.display().to_string();
        say!(
            "{}",
            if written {
                summary::summary(profile, &shown)
            } else {
                summary::summary_unwritten(profile, &shown)
            }
        );
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_placeholders_and_checks() {
        let mut c = Config {
            out: "run-%p-%%-%r.json".into(),
            ..Config::default()
        };
        let path = c.output_path();
        let expected = format!("run-{}-%-{}.json", std::process::id(), rank());
        assert_eq!(path, PathBuf::from(expected));
        c.out = "/nonexistent-dir-xyz/prof.json".into();
        let e = c.check_output().unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let dir = std::env::temp_dir();
        c.out = dir.join("prof-check.json").display().to_string();
        c.check_output().unwrap();
        c.out = dir.display().to_string();
        assert!(c
            .check_output()
            .unwrap_err()
            .to_string()
            .contains("is a directory"));
    }

    /// A control file that is not a regular file is refused before training (a FIFO would
    /// block the first read, `/dev/zero` be read without end); a missing one is not.
    #[cfg(unix)]
    #[test]
    fn a_control_file_must_be_a_regular_file() {
        let dir = std::env::temp_dir().join(format!("prof-control-check-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
        let mut c = Config {
            mode: crate::select::config::Mode::Continuous,
            out: dir.join("prof.json").display().to_string(),
            ..Config::default()
        };
        for (name, kind) in [
            ("fifo", "a named pipe (FIFO)"),
            ("zero", "a character device"),
            ("", "names a directory"),
        ] {
            c.control = Some(dir.join(name).display().to_string());
            let e = c.check_on_demand().unwrap_err();
            assert_eq!(e.var, "PROF_CONTROL");
            assert!(e.to_string().contains(kind), "{name}: {e}");
        }
        for ok in ["missing", "regular"] {
            if ok == "regular" {
                std::fs::write(dir.join(ok), "").unwrap();
            }
            c.control = Some(dir.join(ok).display().to_string());
            c.check_on_demand().unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod stop_tests {
    use super::*;

    /// A write asked to stop halfway (a second signal) leaves neither its temporary file nor
    /// a changed output: the directory holds what it held.
    #[test]
    fn a_write_told_to_stop_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("prof-out-stop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("prof.json");
        std::fs::write(&path, b"before").unwrap();
        let mut profile: Profile = serde_json::from_str(include_str!(
            "../../../profiler-cli/tests/data/cli/batch32.json"
        ))
        .unwrap();
        // Large enough to take many chunks.
        for _ in 0..6 {
            profile.events.extend(profile.events.clone());
        }
        let calls = std::cell::Cell::new(0u32);
        let stop = || {
            calls.set(calls.get() + 1);
            calls.get() > 1000
        };
        let e = write_profile_until(&profile, &path, &stop).unwrap_err();
        assert!(e.contains("second signal"), "{e}");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["prof.json"], "{names:?}");
        assert_eq!(std::fs::read(&path).unwrap(), b"before");
        // Not told to stop, it writes.
        write_profile_until(&profile, &path, &|| false).unwrap();
        assert!(std::fs::read(&path).unwrap().len() > 1000);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn trace_paths() {
        assert_eq!(default_trace_out("prof.json"), "prof.trace-%i.json");
        assert_eq!(default_trace_out("out/p-%r.json"), "out/p-%r.trace-%i.json");
        assert_eq!(default_trace_out("prof"), "prof.trace-%i");
        assert_eq!(
            trace_path("t-%i-%%.json", 5120),
            PathBuf::from("t-5120-%.json")
        );
    }
}
