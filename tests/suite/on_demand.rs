//! Traces taken on demand from a running `continuous`-mode job: the dlrm example, asked through
//! its control file (`PROF_CONTROL`) and by signal (`prof trigger PID`), run for real.
//!
//! What is checked does not depend on how busy the machine is: the trace holds exactly the
//! iterations asked for, every event once in each, from the iteration the control file names
//! (or later, when the job saw the request late, which the job then says); the sampling window
//! the trace fell in is longer by exactly those iterations; and sampling goes on after it.
#![cfg(all(feature = "enable", target_os = "linux"))]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{default_signals, dlrm, read_json, scratch};
use serde_json::Value;

/// A running job, killed if the test ends without stopping it (a failed assertion must not
/// leave it training forever).
struct Job(Option<Child>);

impl Job {
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// dlrm in continuous mode in `dir`, running until it is stopped: 25 events, windows of
/// 25 x 6 iterations after 2 of warmup, every window kept.
fn start(dir: &Path, vars: &[(&str, &str)]) -> Job {
    let mut cmd = Command::new(dlrm());
    cmd.current_dir(dir)
        .args(["--batch", "8", "--iters", "100000000"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars() {
        if k.starts_with("PROF_") || k == "RANK" {
            cmd.env_remove(k);
        }
    }
    cmd.env("PROF_MODE", "continuous")
        .env("PROF_WARMUP", "2")
        .env("PROF_REPEAT", "6")
        .env("PROF_WINDOWS", "100000");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    limit_memory(&mut cmd);
    // `stop` ends the job with SIGINT, which a test run started in the background inherits
    // ignored (the job then never stops).
    default_signals(&mut cmd);
    Job(Some(cmd.spawn().unwrap()))
}

/// Caps the job's address space at 4 GiB (dlrm needs far less), so that a job that reads a
/// device without end fails (its allocation fails, and it aborts) instead of taking the
/// machine's memory.
fn limit_memory(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only setrlimit(2), async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 4 << 30,
                rlim_max: 4 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
}

/// Waits (at most a minute) for a job that should end by itself, and returns its stderr; a job
/// still running then is killed and the test fails (a hang must fail, never hang the suite).
fn ended_within_a_minute(mut job: Job, what: &str) -> (Option<i32>, String) {
    let mut child = job.0.take().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after a minute; killed. stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// The iterations the job's `prof.json` covers (it grows at each rewrite).
fn covered(dir: &Path) -> u64 {
    // The file is replaced atomically: it is always whole.
    let text = std::fs::read_to_string(dir.join("prof.json")).unwrap_or_default();
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["iterations"]["count"].as_u64())
        .unwrap_or(0)
}

/// Waits until the job has rewritten its `prof.json` twice since now: between the two writes
/// its writer thread looked at the control file at least once, as it was then.
fn rewritten_twice(dir: &Path, what: &str) {
    for _ in 0..2 {
        let before = covered(dir);
        wait_for(&format!("prof.json to be rewritten ({what})"), || {
            covered(dir) > before
        });
    }
}

/// Puts `make`'s file in the control file's place by renaming it over it (as an atomic write
/// does).
fn replace_control(control: &Path, make: impl FnOnce(&Path)) {
    let new = control.with_extension("new");
    let _ = std::fs::remove_file(&new);
    make(&new);
    std::fs::rename(&new, control).unwrap();
}

/// Waits (at most three minutes, a guard against a hang: a loaded machine is slow, never wrong;
/// one CI run waited more than a minute for a trace that takes 5 s alone) until `done` holds.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops the job with SIGINT (it writes its results, then ends of the signal) and returns its
/// stderr.
fn stop(mut job: Job) -> String {
    let child = job.0.take().unwrap();
    // SAFETY: kill with a valid pid and signal number.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The trace files in `dir`.
fn traces(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("prof.trace-") && n.ends_with(".json"))
        })
        .collect();
    found.sort_by_key(|p| first_of(p));
    found
}

/// The first iteration a trace's file name gives.
fn first_of(path: &Path) -> u64 {
    let name = path.file_name().unwrap().to_str().unwrap();
    name["prof.trace-".len()..name.len() - ".json".len()]
        .parse()
        .unwrap()
}

/// Checks a trace of `n` iterations: what it says of itself, and every event once in each of
/// its iterations. Returns its first iteration.
fn check_trace(trace: &Value, n: u64, source: &str) -> u64 {
    assert_eq!(trace["run"]["mode"], "trace");
    assert_eq!(trace["complete"], true);
    assert_eq!(trace["run"]["on_demand"]["source"], source);
    assert_eq!(trace["run"]["on_demand"]["asked_iterations"], n);
    let first = trace["iterations"]["first"].as_u64().unwrap();
    let wall = trace["iterations"]["wall_ns"].as_array().unwrap();
    assert_eq!(wall.len() as u64, n);
    assert!(wall.iter().all(|w| w.as_u64().unwrap() > 0));
    assert_eq!(trace["iterations"]["count"].as_u64().unwrap(), first + n);
    let events = trace["events"].as_array().unwrap();
    assert_eq!(events.len(), 25, "every event of dlrm is traced");
    let expected: Vec<u64> = (first..first + n).collect();
    for e in events {
        let iters: Vec<u64> = e["sample_iters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap())
            .collect();
        assert_eq!(iters, expected, "event {}", e["id"]);
        let offsets = e["offsets_ns"].as_array().unwrap();
        let wall_of = |k: usize| wall[k].as_u64().unwrap();
        for (k, (s, o)) in e["samples_ns"]
            .as_array()
            .unwrap()
            .iter()
            .zip(offsets)
            .enumerate()
        {
            let (s, o) = (s.as_u64().unwrap(), o.as_u64().unwrap());
            assert!(s > 0 && o + s <= wall_of(k), "{} in iteration {k}", e["id"]);
        }
    }
    first
}

/// The window of the continuous profile that holds iteration `first`: its length in
/// iterations, less those of the traces (first iteration, length) that began in it.
fn sampled_in_window_around(profile: &Value, first: u64, traces: &[(u64, u64)]) -> u64 {
    let window = profile["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| {
            let start = w["first_iteration"].as_u64().unwrap();
            let len = w["wall_ns"].as_array().unwrap().len() as u64;
            (start..start + len).contains(&first)
        })
        .unwrap_or_else(|| panic!("no window holds iteration {first}"));
    let start = window["first_iteration"].as_u64().unwrap();
    let len = window["wall_ns"].as_array().unwrap().len() as u64;
    let traced: u64 = traces
        .iter()
        .filter(|(f, _)| (start..start + len).contains(f))
        .map(|&(_, n)| n)
        .sum();
    len - traced
}

#[test]
fn a_trace_asked_through_the_control_file_starts_where_rank_0_says() {
    let dir = scratch("on-demand-control");
    let control = dir.join("ctl");
    // A request left from an earlier job is not this job's.
    std::fs::write(&control, "trace iterations=2 id=old\n").unwrap();
    let child = start(&dir, &[("PROF_CONTROL", control.to_str().unwrap())]);
    wait_for("the first window", || dir.join("prof.json").exists());
    std::fs::write(&control, "trace iterations=5 id=t1\n").unwrap();
    // Rank 0 names the iteration, a little ahead of its own.
    let mut at = None;
    wait_for("rank 0 to name the iteration", || {
        let text = std::fs::read_to_string(&control).unwrap_or_default();
        at = profiler_format::control::parse(&text)
            .ok()
            .flatten()
            .and_then(|r| r.at);
        at.is_some()
    });
    let text = std::fs::read_to_string(&control).unwrap();
    assert!(
        text.contains("iterations=5") && text.contains("id=t1"),
        "{text}"
    );
    wait_for(&format!("the trace asked at iteration {at:?}"), || {
        !traces(&dir).is_empty()
    });
    // The sampling goes on after the trace: wait for a window that starts after it (on a busy
    // machine the job may not have closed one yet when the trace appears).
    let traced_from = first_of(&traces(&dir)[0]);
    wait_for("a window after the trace", || {
        std::fs::read(dir.join("prof.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|p| p["windows"].as_array()?.last()?["first_iteration"].as_u64())
            .is_some_and(|f| f > traced_from + 5)
    });
    let err = stop(child);
    let found = traces(&dir);
    assert_eq!(found.len(), 1, "one request, one trace: {found:?}\n{err}");
    let trace = read_json(&found[0]);
    let first = check_trace(&trace, 5, "control file");
    let at = u64::from(at.unwrap());
    assert_eq!(trace["run"]["on_demand"]["asked_at"], at);
    assert_eq!(trace["run"]["on_demand"]["id"], "t1");
    if first != at {
        // Seen late (a busy machine): said, and never earlier than asked.
        assert!(first > at, "{first} < {at}");
        assert!(err.contains(&format!("asked for iteration {at}")), "{err}");
    }
    assert_eq!(found[0], dir.join(format!("prof.trace-{first}.json")));
    assert!(
        err.contains(&format!(
            "trace on demand (control file): iterations {first}.."
        )),
        "{err}"
    );
    // The sampling paused for exactly the trace, and went on after it.
    let profile = read_json(&dir.join("prof.json"));
    assert_eq!(
        sampled_in_window_around(&profile, first, &[(first, 5)]),
        25 * 6
    );
    let last = profile["windows"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(last["first_iteration"].as_u64().unwrap() > first + 5);
    assert!(profile["events"].as_array().unwrap().len() == 25);
    // Nothing but the outputs and the control file.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["ctl", "prof.json", &format!("prof.trace-{first}.json")]
    );
}

#[test]
fn prof_trigger_asks_one_process_by_signal() {
    let dir = scratch("on-demand-signal");
    let child = start(&dir, &[]);
    wait_for("the first window", || dir.join("prof.json").exists());
    let prof = common::prof();
    let out = Command::new(&prof)
        .args(["trigger", &child.id().to_string(), "--iterations", "4"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(said.contains("next 4 iterations"), "{said}");
    wait_for("the trace", || !traces(&dir).is_empty());
    // More than PROF_REPEAT: the trace holds PROF_REPEAT, and says so.
    let out = Command::new(&prof)
        .args(["trigger", &child.id().to_string(), "--iterations", "50"])
        .output()
        .unwrap();
    assert!(out.status.success());
    wait_for("the second trace", || traces(&dir).len() == 2);
    // The most a request may ask for: the same rule as the control file's.
    let out = Command::new(&prof)
        .args([
            "trigger",
            &child.id().to_string(),
            "--iterations",
            "4294967295",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for("the third trace", || traces(&dir).len() == 3);
    let err = stop(child);
    let found = traces(&dir);
    let first = check_trace(&read_json(&found[0]), 4, "signal");
    let second = read_json(&found[1]);
    let second_first = second["iterations"]["first"].as_u64().unwrap();
    assert_eq!(second["iterations"]["wall_ns"].as_array().unwrap().len(), 6);
    assert_eq!(second["run"]["on_demand"]["asked_iterations"], 50);
    assert!(err.contains("50 iterations asked, 6 taken"), "{err}");
    let third = read_json(&found[2]);
    assert_eq!(third["iterations"]["wall_ns"].as_array().unwrap().len(), 6);
    assert_eq!(
        third["run"]["on_demand"]["asked_iterations"],
        4_294_967_295u64
    );
    assert!(
        err.contains("4294967295 iterations asked, 6 taken"),
        "{err}"
    );
    let third_first = third["iterations"]["first"].as_u64().unwrap();
    let profile = read_json(&dir.join("prof.json"));
    // Every trace, wherever it fell: on a slow machine two or three of them land in one window.
    let all = [(first, 4), (second_first, 6), (third_first, 6)];
    assert_eq!(sampled_in_window_around(&profile, first, &all), 25 * 6);
    assert_eq!(
        sampled_in_window_around(&profile, second_first, &all),
        25 * 6
    );
}

#[test]
fn a_control_file_that_is_not_a_regular_file_is_refused_before_training() {
    let dir = scratch("on-demand-special-control");
    mkfifo(&dir.join("fifo"));
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
    for (name, kind) in [
        ("fifo", "a named pipe (FIFO)"),
        ("zero", "a character device"),
    ] {
        let path = dir.join(name);
        let job = start(&dir, &[("PROF_CONTROL", path.to_str().unwrap())]);
        let (code, err) = ended_within_a_minute(job, name);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(
            err.contains(&format!("PROF_CONTROL={}: it is {kind}", path.display())),
            "{name}: {err}"
        );
        assert!(err.contains("regular file"), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(!dir.join("prof.json").exists(), "{name}: training ran");
    }
    // Left as they were.
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(dir.join("fifo"))
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn a_control_file_replaced_by_a_fifo_or_a_device_is_passed_over_and_the_job_goes_on() {
    let dir = scratch("on-demand-control-replaced");
    let control = dir.join("ctl");
    let child = start(&dir, &[("PROF_CONTROL", control.to_str().unwrap())]);
    wait_for("the first window", || dir.join("prof.json").exists());
    // A FIFO would block the writer thread in open(), and /dev/zero would be read without end:
    // the writer opens without blocking, reads nothing but a regular file, and goes on
    // rewriting prof.json.
    replace_control(&control, mkfifo);
    rewritten_twice(&dir, "the control file a FIFO");
    replace_control(&control, |p| {
        std::os::unix::fs::symlink("/dev/zero", p).unwrap()
    });
    rewritten_twice(&dir, "the control file a link to /dev/zero");
    // Valid again: the next request is served.
    replace_control(&control, |p| {
        std::fs::write(p, "trace iterations=3 id=after\n").unwrap()
    });
    wait_for("the trace", || !traces(&dir).is_empty());
    let err = stop(child);
    let found = traces(&dir);
    assert_eq!(found.len(), 1, "{found:?}\n{err}");
    let trace = read_json(&found[0]);
    check_trace(&trace, 3, "control file");
    assert_eq!(trace["run"]["on_demand"]["id"], "after");
    // One warning for each, however many times the writer looked.
    let shown = control.display().to_string();
    for kind in ["a named pipe (FIFO)", "a character device"] {
        let warning = format!("PROF_CONTROL={shown}: it is {kind}, not a regular file");
        assert_eq!(err.matches(&warning).count(), 1, "{warning}\n{err}");
    }
}

#[test]
fn a_control_file_too_big_or_not_utf8_is_reported_once_and_any_count_is_taken_up_to_repeat() {
    let dir = scratch("on-demand-control-bytes");
    let control = dir.join("ctl");
    let child = start(&dir, &[("PROF_CONTROL", control.to_str().unwrap())]);
    wait_for("the first window", || dir.join("prof.json").exists());
    replace_control(&control, |p| {
        std::fs::write(p, b"trace iterations=3 id=\xff\xfe\n").unwrap()
    });
    rewritten_twice(&dir, "the control file not UTF-8");
    // A request after a megabyte of comments is not read: a control file is one line.
    replace_control(&control, |p| {
        let mut text = "# padding\n".repeat(100_000);
        text.push_str("trace iterations=3 id=big\n");
        std::fs::write(p, text).unwrap()
    });
    rewritten_twice(&dir, "the control file too big");
    // prof trigger leaves a file that is no control file (too big) as it is.
    let out = Command::new(common::prof())
        .args(["trigger", "--control", control.to_str().unwrap()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("it is not a control file, and is left as it is"),
        "{said}"
    );
    assert!(std::fs::metadata(&control).unwrap().len() > 1_000_000);
    std::fs::remove_file(&control).unwrap();
    // The most a request may ask for: prof trigger writes it, the job takes PROF_REPEAT.
    let out = Command::new(common::prof())
        .args(["trigger", "--control", control.to_str().unwrap()])
        .args(["--iterations", "4294967295"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(said.contains("4294967295 iterations"), "{said}");
    wait_for("the trace", || !traces(&dir).is_empty());
    let err = stop(child);
    let found = traces(&dir);
    assert_eq!(found.len(), 1, "{found:?}\n{err}");
    let trace = read_json(&found[0]);
    assert_eq!(trace["iterations"]["wall_ns"].as_array().unwrap().len(), 6);
    assert_eq!(
        trace["run"]["on_demand"]["asked_iterations"],
        4_294_967_295u64
    );
    assert!(
        err.contains("4294967295 iterations asked, 6 taken"),
        "{err}"
    );
    let shown = control.display().to_string();
    for problem in ["not UTF-8", "more than 4 KiB"] {
        let warning = format!("PROF_CONTROL={shown}: {problem}");
        assert_eq!(err.matches(&warning).count(), 1, "{warning}\n{err}");
    }
    assert!(!err.contains("iterations must be"), "{err}");
}
