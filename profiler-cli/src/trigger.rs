//! `prof trigger`: asks a running `continuous`-mode job for a trace of its next iterations,
//! by SIGUSR2 to one process (the count rides on the signal's value, `sigqueue`) or through the
//! control file its ranks share (`PROF_CONTROL`, [`profiler_format::control`]).

use std::path::{Path, PathBuf};

/// Whom to ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One process, by SIGUSR2.
    Pid(u32),
    /// Every rank that reads this control file.
    Control(PathBuf),
}

impl Target {
    /// The process that wrote a profile whose run is `run`, when it runs on this host (a
    /// signal reaches no other).
    pub fn on_this_host(run: &profiler_format::Run) -> Result<Target, String> {
        let here = profiler_format::json::host_name();
        if run.host != here {
            return Err(format!(
                "error: rank {} runs on {}, not here ({here}): run prof trigger there, or give \
                 the job's control file (--control)",
                run.rank, run.host
            ));
        }
        Ok(Target::Pid(run.pid))
    }
}

/// Asks `target` for a trace of `iterations` iterations (`None`: the job's `PROF_REPEAT`),
/// starting at iteration `at` (control file only; `None`: rank 0 picks the next few). Returns
/// what was done, for the user.
///
/// A count is checked by the job's own rule
/// ([`profiler_format::control::check_iterations`]: 1 to `u32::MAX`); the job takes at most
/// its `PROF_REPEAT` of it, by signal as through the control file.
pub fn trigger(
    target: &Target,
    iterations: Option<u32>,
    at: Option<u32>,
) -> Result<String, String> {
    if let Some(n) = iterations {
        profiler_format::control::check_iterations(&n.to_string())
            .map_err(|e| format!("error: --iterations {n}: {e}"))?;
    }
    match target {
        Target::Pid(pid) => {
            if at.is_some() {
                return Err(
                    "error: --at needs --control: a signal cannot name an iteration \
                            (every rank of a job starts at the same one only through the \
                            control file)"
                        .into(),
                );
            }
            signal(*pid, iterations)
        }
        Target::Control(path) => write_request(path, iterations, at),
    }
}

/// Writes the request into the control file, with a fresh id so that the same request asked
/// twice is two requests.
fn write_request(path: &Path, iterations: Option<u32>, at: Option<u32>) -> Result<String, String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!(
            "error: --control {shown} is a directory; name the file PROF_CONTROL names"
        ));
    }
    // Only a control file is replaced: a profile or a script named by mistake is left as it
    // is (each line of a control file is a request, a comment or blank).
    let not_control = |why: &str| {
        format!(
            "error: --control {shown}: {why}; it is not a control file, and is left as it is\n  \
             = help: name the file the job's PROF_CONTROL names (a new file, or one that holds \
             a request: `trace iterations=N`)"
        )
    };
    let held = profiler_format::control::read(path).map_err(|why| not_control(&why))?;
    if let Some(line) = held.text.lines().map(str::trim).find(|l| {
        !l.is_empty() && !l.starts_with('#') && l.split_whitespace().next() != Some("trace")
    }) {
        return Err(not_control(&format!(
            "it holds `{}`, not a request",
            profiler_format::write::shorten(line, 40)
        )));
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let request = profiler_format::control::Request {
        iterations,
        at,
        id: Some(format!("{}-{nanos}", std::process::id())),
    };
    profiler_format::write_atomic(path, request.line().as_bytes()).map_err(|e| {
        format!("error: cannot write the request to {shown}: {e}\n  = help: use the path the job's PROF_CONTROL names, in a directory you can write")
    })?;
    let count = asked(iterations);
    let when = at.map_or(
        "rank 0 names the iteration, a moment ahead".to_owned(),
        |a| format!("from iteration {a}"),
    );
    Ok(format!(
        "prof: asked every rank reading {shown} for a trace of {count}, {when}; each writes \
         it to its PROF_TRACE_OUT (by default beside its PROF_OUT, as \
         prof.trace-ITERATION.json)"
    ))
}

/// The iterations asked for, as `prof trigger` says them: `PROF_REPEAT iterations`, or `N
/// iterations` and what the job takes of them.
fn asked(iterations: Option<u32>) -> String {
    iterations.map_or("PROF_REPEAT iterations".to_owned(), |n| {
        format!("{n} iterations (at most the job's PROF_REPEAT are taken)")
    })
}

#[cfg(target_os = "linux")]
fn signal(pid: u32, iterations: Option<u32>) -> Result<String, String> {
    const SIGUSR2_BIT: u64 = 1 << (libc::SIGUSR2 - 1);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|_| format!("error: no process {pid} (is the job still running on this host?)"))?;
    let caught = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .ok_or_else(|| format!("error: cannot read the signals process {pid} handles"))?;
    if caught & SIGUSR2_BIT == 0 {
        // SIGUSR2's default action ends the process: never send it to one that does not take it.
        return Err(format!(
            "error: process {pid} does not handle SIGUSR2, so it is not a profiler-core program \
             in continuous mode (or it has a SIGUSR2 handler of its own); nothing was sent\n  \
             = help: run it with PROF_MODE=continuous, or set PROF_CONTROL and use prof trigger \
             --control FILE"
        ));
    }
    let pid_t = libc::pid_t::try_from(pid).map_err(|_| format!("error: {pid} is not a pid"))?;
    let value = libc::sigval {
        sival_ptr: iterations.unwrap_or(0) as usize as *mut libc::c_void,
    };
    // SAFETY: sigqueue takes a pid, a signal number and a value; none is a pointer it follows.
    if unsafe { libc::sigqueue(pid_t, libc::SIGUSR2, value) } != 0 {
        return Err(format!(
            "error: cannot signal process {pid}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let count = asked(iterations);
    Ok(format!(
        "prof: asked process {pid} for a trace of its next {count}; it writes it to its \
         PROF_TRACE_OUT (by default beside its PROF_OUT, as prof.trace-ITERATION.json)"
    ))
}

#[cfg(not(target_os = "linux"))]
fn signal(pid: u32, _: Option<u32>) -> Result<String, String> {
    Err(format!(
        "error: asking process {pid} by signal needs Linux; set PROF_CONTROL and use prof \
         trigger --control FILE"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_request_is_written_whole_with_a_fresh_id() {
        let dir = std::env::temp_dir().join(format!("prof-trigger-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ctl");
        let said = trigger(&Target::Control(path.clone()), Some(20), Some(512)).unwrap();
        assert!(
            said.contains("20 iterations") && said.contains("from iteration 512"),
            "{said}"
        );
        let first = std::fs::read_to_string(&path).unwrap();
        let request = profiler_format::control::parse(&first).unwrap().unwrap();
        assert_eq!((request.iterations, request.at), (Some(20), Some(512)));
        trigger(&Target::Control(path.clone()), Some(20), Some(512)).unwrap();
        let second = std::fs::read_to_string(&path).unwrap();
        assert_ne!(first, second, "the same request twice must read as two");
        // The most that may be asked is what the job reads (and takes up to PROF_REPEAT of).
        let said = trigger(&Target::Control(path.clone()), Some(u32::MAX), None).unwrap();
        assert!(
            said.contains("4294967295 iterations (at most the job's PROF_REPEAT"),
            "{said}"
        );
        let line = std::fs::read_to_string(&path).unwrap();
        let request = profiler_format::control::parse(&line).unwrap().unwrap();
        assert_eq!(request.iterations, Some(u32::MAX));
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(names.len(), 1, "nothing but the control file is left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_requests_are_refused() {
        let e = trigger(&Target::Pid(1), Some(0), None).unwrap_err();
        assert!(
            e.contains("iterations must be a whole number from 1"),
            "{e}"
        );
        let e = trigger(&Target::Pid(1), None, Some(3)).unwrap_err();
        assert!(e.contains("--at needs --control"), "{e}");
        let e = trigger(&Target::Control(std::env::temp_dir()), None, None).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
    }

    /// A file that is not a control file (a profile named by mistake) is left as it is: before,
    /// `prof trigger --control prof.json` replaced the profile with a request line. One that
    /// holds a bad request, or comments, is a control file, and takes the new request.
    #[test]
    fn a_file_that_is_not_a_control_file_is_left_as_it_is() {
        let dir = std::env::temp_dir().join(format!("prof-trigger-not-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let profile = dir.join("prof.json");
        let text = "{\n  \"schema\": \"profiler-core/v2\"\n}\n";
        std::fs::write(&profile, text).unwrap();
        let e = trigger(&Target::Control(profile.clone()), Some(5), None).unwrap_err();
        assert!(e.contains("it holds `{`, not a request"), "{e}");
        assert!(e.contains("is left as it is") && e.contains("help:"), "{e}");
        assert_eq!(std::fs::read_to_string(&profile).unwrap(), text);
        let big = dir.join("big");
        std::fs::write(&big, vec![b'#'; 10_000]).unwrap();
        let e = trigger(&Target::Control(big.clone()), Some(5), None).unwrap_err();
        assert!(e.contains("not a control file"), "{e}");
        assert_eq!(std::fs::metadata(&big).unwrap().len(), 10_000);
        let ctl = dir.join("ctl");
        std::fs::write(&ctl, "# asked by hand\ntrace iterations=abc\n").unwrap();
        trigger(&Target::Control(ctl.clone()), Some(5), None).unwrap();
        let line = std::fs::read_to_string(&ctl).unwrap();
        let request = profiler_format::control::parse(&line).unwrap().unwrap();
        assert_eq!(request.iterations, Some(5));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_process_that_does_not_take_sigusr2_is_never_sent_it() {
        // This test process has no SIGUSR2 handler: the signal would end it.
        let e = trigger(&Target::Pid(std::process::id()), Some(5), None).unwrap_err();
        assert!(
            e.contains("does not handle SIGUSR2") && e.contains("nothing was sent"),
            "{e}"
        );
        let e = trigger(&Target::Pid(u32::MAX - 7), None, None).unwrap_err();
        assert!(e.contains("no process"), "{e}");
    }
}
