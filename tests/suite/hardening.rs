//! End to end, the ways a run can be abused or cut short: signals, special output paths,
//! non-UTF-8 variables, bad ranks, the listing without a filter.
#![cfg(feature = "enable")]

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{default_signals, dlrm, read_json, run, scratch, stderr, stdout};

/// The example with a small schedule, `vars` (values may be any bytes), and `args`.
fn command(dir: &Path, vars: &[(&str, &OsStr)], args: &[&str]) -> Command {
    let mut cmd = Command::new(dlrm());
    cmd.current_dir(dir)
        .args(["--batch", "8", "--iters", "400"])
        .args(args);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("PROF_") || ["RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"].contains(&&*k)
        {
            cmd.env_remove(&*k);
        }
    }
    cmd.env("PROF_WARMUP", "2").env("PROF_REPEAT", "3");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd
}

fn assert_refused_before_training(out: &Output, what: &str, expected: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(err.contains(expected), "{what}: {err}");
    assert!(!stdout(out).contains("iter "), "{what} ran training");
    assert!(!err.contains("panicked"), "{what}: {err}");
}

/// Waits for `child` at most `limit`, then kills it (so that a failure never hangs the suite).
#[cfg(unix)]
fn wait_at_most(mut child: std::process::Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {limit:?}; killed. stderr:\n{}",
                stderr(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The iterations the example reports on its standard output (it prints `iter N` every 200
/// iterations), read on a thread that drains the output to its end.
#[cfg(unix)]
fn reported_iterations(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<u64> {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let n = line
                .strip_prefix("iter ")
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse::<u64>().ok());
            if let Some(n) = n {
                let _ = tx.send(n);
            }
        }
    });
    rx
}

/// Waits until the example has reported iteration `at_least`: told by the program itself, not
/// guessed from a sleep that a busy machine would make too short. Bounded only so that a
/// program that hangs or dies fails the test rather than the suite.
#[cfg(unix)]
fn wait_for_iteration(
    child: &mut std::process::Child,
    reported: &std::sync::mpsc::Receiver<u64>,
    at_least: u64,
) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match reported.recv_timeout(left) {
            Ok(n) if n >= at_least => return,
            Ok(_) => {}
            Err(_) => {
                let _ = child.kill();
                panic!("the run never reported iteration {at_least} (it hung or died)");
            }
        }
    }
}

/// Starts a long run (`PROF_REPEAT=100000` unless `vars` say otherwise), waits until it is
/// training, sends `signal`, and returns its output.
#[cfg(unix)]
fn interrupted(dir: &Path, signal: &str, vars: &[(&str, &str)]) -> Output {
    interrupted_with(dir, signal, vars, false)
}

/// [`interrupted`]; `stderr_gone`: the reader of its stderr is gone from the start.
#[cfg(unix)]
fn interrupted_with(dir: &Path, signal: &str, vars: &[(&str, &str)], stderr_gone: bool) -> Output {
    let mut cmd = command(dir, &[], &["--iters", "100000000"]);
    cmd.env("PROF_REPEAT", "100000");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    default_signals(&mut cmd);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if stderr_gone {
        drop(child.stderr.take());
    }
    // Past warmup and a few of continuous mode's windows (25 events x 3 iterations): told by
    // the program itself, not guessed from a sleep that a busy machine would make too short.
    let reported = reported_iterations(&mut child);
    wait_for_iteration(&mut child, &reported, 400);
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    wait_at_most(child, Duration::from_secs(300), &format!("SIG{signal}"))
}

#[cfg(unix)]
#[test]
fn a_signal_writes_the_results_so_far_and_ends_with_that_signal() {
    use std::os::unix::process::ExitStatusExt;
    for (signal, number) in [("INT", 2), ("TERM", 15), ("HUP", 1)] {
        let dir = scratch(&format!("signal-{signal}"));
        let out = interrupted(&dir, signal, &[]);
        let err = stderr(&out);
        // Ended by the signal itself, so a shell reports 128 + n (130, 143, 129).
        assert_eq!(out.status.signal(), Some(number), "SIG{signal}: {err}");
        assert!(err.contains(&format!("SIG{signal}")), "{err}");
        assert!(err.contains("INCOMPLETE"), "{err}");
        let p = read_json(&dir.join("prof.json"));
        assert_eq!(p["complete"], false);
        let samples: usize = p["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["samples_ns"].as_array().unwrap().len())
            .sum();
        assert!(samples > 0, "nothing measured before SIG{signal}");
    }
    // Trace mode too.
    let dir = scratch("signal-trace");
    let out = interrupted(&dir, "TERM", &[("PROF_MODE", "trace")]);
    assert_eq!(out.status.signal(), Some(15), "{}", stderr(&out));
    assert_eq!(read_json(&dir.join("prof.json"))["complete"], false);
}

/// A job whose stderr is a pipe no one reads any more (its launcher died, `prof ab` was stopped
/// by Ctrl-C) still writes its results on a signal and ends of it: before, the signal thread's
/// one line on stderr panicked (`eprintln!` on a broken pipe), the signal went unanswered and
/// the job trained on, then died of the next message.
#[cfg(unix)]
#[test]
fn a_signal_with_stderr_gone_still_writes_the_results() {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("signal-no-stderr");
    let out = interrupted_with(&dir, "TERM", &[], true);
    assert_eq!(out.status.signal(), Some(15), "{:?}", out.status);
    assert_eq!(read_json(&dir.join("prof.json"))["complete"], false);
}

/// In continuous mode too, a run cut short by a signal says `complete: false`, with the windows
/// closed before it (the last one's samples in `events`); only a run whose program ends by
/// itself says `true`.
#[cfg(unix)]
#[test]
fn a_signal_in_continuous_mode_writes_an_incomplete_file() {
    use std::os::unix::process::ExitStatusExt;
    let vars = [("PROF_MODE", "continuous"), ("PROF_REPEAT", "3")];
    for (signal, number) in [("INT", 2), ("TERM", 15), ("HUP", 1)] {
        let dir = scratch(&format!("signal-continuous-{signal}"));
        let out = interrupted(&dir, signal, &vars);
        let err = stderr(&out);
        assert_eq!(out.status.signal(), Some(number), "SIG{signal}: {err}");
        assert!(err.contains("first window closed"), "{err}");
        assert!(
            err.contains("INCOMPLETE (written while the run went on, or when a signal stopped it)"),
            "{err}"
        );
        let p = read_json(&dir.join("prof.json"));
        assert_eq!(p["complete"], false, "SIG{signal}");
        assert_eq!(p["run"]["mode"], "continuous");
        let windows = p["windows"].as_array().unwrap();
        assert!(windows.len() >= 2, "SIG{signal}: {} windows", windows.len());
        assert_eq!(windows[0]["baseline"], true);
        let samples: usize = p["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["samples_ns"].as_array().unwrap().len())
            .sum();
        assert!(samples > 0, "SIG{signal}: no samples in events");
    }
    // The same run ending by itself says complete.
    let dir = scratch("continuous-complete");
    let out = command(&dir, &vars.map(|(k, v)| (k, OsStr::new(v))), &[])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read_json(&dir.join("prof.json"))["complete"], true);
}

#[cfg(unix)]
#[test]
fn an_ignored_signal_stays_ignored() {
    // `nohup` ignores SIGHUP: the profiler must not turn it back into a way to die.
    let dir = scratch("signal-ignored");
    let mut cmd = Command::new("sh");
    cmd.current_dir(&dir).args([
        "-c",
        &format!(
            "trap '' HUP; exec {} --batch 8 --iters 100000000",
            dlrm().display()
        ),
    ]);
    for (k, _) in std::env::vars() {
        if k.starts_with("PROF_") {
            cmd.env_remove(k);
        }
    }
    default_signals(&mut cmd);
    let mut child = cmd
        .env("PROF_WARMUP", "2")
        .env("PROF_REPEAT", "100000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Training (the handlers are installed before the first iteration).
    let reported = reported_iterations(&mut child);
    wait_for_iteration(&mut child, &reported, 200);
    let pid = child.id().to_string();
    Command::new("kill").args(["-HUP", &pid]).status().unwrap();
    // Still training after it: the run reports later iterations (it would have died at once).
    wait_for_iteration(&mut child, &reported, 400);
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGHUP ended a nohup'd run"
    );
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let out = wait_at_most(child, Duration::from_secs(300), "SIGTERM after SIGHUP");
    assert!(stderr(&out).contains("SIGTERM"), "{}", stderr(&out));
    assert_eq!(read_json(&dir.join("prof.json"))["complete"], false);
}

#[cfg(unix)]
#[test]
fn special_files_as_prof_out_are_refused_before_training_and_left_alone() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("special-out");
    let fifo = dir.join("pipe.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::os::unix::fs::symlink("/dev/null", dir.join("null.json")).unwrap();
    let cases = [
        (
            "/dev/stdout",
            "PROF_OUT=/dev/stdout cannot be written: /dev/stdout is a",
        ),
        ("/dev/null", "character device"),
        ("pipe.json", "FIFO"),
        ("null.json", "character device (through a symbolic link)"),
    ];
    for (out_path, expected) in cases {
        let out = run(&dir, &[("PROF_OUT", out_path)], &[]);
        assert_refused_before_training(&out, out_path, expected);
        assert!(stderr(&out).contains("PROF_OUT"), "{}", stderr(&out));
    }
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(std::fs::symlink_metadata(dir.join("null.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // A link to a regular file is written through: the link stays a link.
    std::fs::write(dir.join("real.json"), b"{}").unwrap();
    std::os::unix::fs::symlink("real.json", dir.join("latest.json")).unwrap();
    let out = run(
        &dir,
        &[
            ("PROF_OUT", "latest.json"),
            ("PROF_FILTER", "layer=embedding"),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(dir.join("latest.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(read_json(&dir.join("real.json"))["complete"], true);
}

#[test]
fn prof_out_naming_a_directory_or_too_long_a_name_is_refused_before_training() {
    let dir = scratch("out-names");
    std::fs::create_dir_all(dir.join("d")).unwrap();
    let long = format!("{}.json", "p".repeat(300));
    let cases = [
        ("d/", "names a directory"),
        ("d", "is a directory"),
        ("missing/", "names a directory"),
        (long.as_str(), "File name too long"),
    ];
    for (out_path, expected) in cases {
        let out = run(&dir, &[("PROF_OUT", out_path)], &[]);
        assert_refused_before_training(&out, out_path, expected);
    }
    // The 300-character name is not echoed whole.
    let out = run(&dir, &[("PROF_OUT", &long)], &[]);
    assert!(!stderr(&out).contains(&long), "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn non_utf8_values_are_errors_naming_the_variable() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("non-utf8");
    let cases: [(&str, &[u8]); 4] = [
        ("PROF_FILTER", b"layer=top_mlp\xff"),
        ("PROF_MODE", b"tr\xe9ce"),
        ("PROF_OUT", b"prof-\xff.json"),
        ("PROF_REPEAT", b"\xc3"),
    ];
    for (var, value) in cases {
        let out = command(&dir, &[(var, OsStr::from_bytes(value))], &[])
            .output()
            .unwrap();
        assert_refused_before_training(&out, var, &format!("{var} is not valid UTF-8"));
    }
    // --list-probes reads PROF_FILTER too.
    let out = command(
        &dir,
        &[("PROF_FILTER", OsStr::from_bytes(b"layer=\xff"))],
        &["--list-probes"],
    )
    .output()
    .unwrap();
    assert_refused_before_training(&out, "--list-probes", "PROF_FILTER is not valid UTF-8");
    assert!(!dir.join("prof.json").exists());
}

#[test]
fn a_rank_that_is_not_a_number_is_an_error_with_percent_r_and_a_warning_without() {
    let dir = scratch("rank");
    for rank in ["abc", "-1", "4294967296"] {
        let out = run(&dir, &[("RANK", rank), ("PROF_OUT", "prof-%r.json")], &[]);
        assert_refused_before_training(&out, rank, &format!("RANK={rank} is not a rank"));
        assert!(stderr(&out).contains("%r"), "{}", stderr(&out));
    }
    // The first rank variable that is set is the one read: a bad RANK is not skipped.
    let out = run(
        &dir,
        &[
            ("RANK", "x"),
            ("SLURM_PROCID", "5"),
            ("PROF_OUT", "prof-%r.json"),
        ],
        &[],
    );
    assert_refused_before_training(&out, "RANK=x", "RANK=x");
    // Without %r nothing is overwritten by the bad rank: a warning, and the run goes on.
    let out = run(
        &dir,
        &[("RANK", "abc"), ("PROF_FILTER", "layer=embedding")],
        &["--iters", "40"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: RANK=abc is not a rank"),
        "{}",
        stderr(&out)
    );
    assert_eq!(read_json(&dir.join("prof.json"))["run"]["rank"], 0);
}

#[test]
fn the_json_listing_without_a_filter_selects_every_probe() {
    let dir = scratch("list-all");
    for filter in [None, Some(""), Some("  ")] {
        let mut cmd = command(&dir, &[], &["--list-probes=json"]);
        if let Some(f) = filter {
            cmd.env("PROF_FILTER", f);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let probes: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let probes = probes.as_array().unwrap();
        assert!(probes.len() > 10);
        assert!(
            probes.iter().all(|p| p["selected"] == true),
            "filter {filter:?}: {probes:?}"
        );
    }
    // With a filter, only what it selects.
    let out = command(&dir, &[], &["--list-probes=json"])
        .env("PROF_FILTER", "layer=embedding")
        .output()
        .unwrap();
    let probes: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let selected = probes
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["selected"] == true)
        .count();
    assert!(selected > 0 && selected < probes.as_array().unwrap().len());
}

#[test]
fn a_huge_filter_is_not_echoed_whole() {
    let dir = scratch("huge-filter");
    // Near the kernel's limit for one variable (128 KiB).
    let filter = format!("{}layr=x", "name=a|".repeat(17_000));
    let out = run(&dir, &[("PROF_FILTER", &filter)], &[]);
    assert_refused_before_training(&out, "huge filter", "unknown key `layr`");
    assert!(stderr(&out).len() < 2_000, "{} bytes", stderr(&out).len());
    // One that parses but selects nothing is shortened in its message too.
    let filter = format!("{}name=none", "name=a|".repeat(17_000));
    let out = run(&dir, &[("PROF_FILTER", &filter)], &[]);
    assert_refused_before_training(&out, "huge filter", "selects none");
    assert!(stderr(&out).len() < 2_000, "{} bytes", stderr(&out).len());
}

/// The old scheme wrote to `.NAME.tmp.PID`, a name anyone could predict. A link or a FIFO
/// planted there (here by the shell that then becomes the program, so the PID is known) is
/// never opened: the victim keeps its bytes, the run neither hangs nor writes elsewhere.
#[cfg(unix)]
#[test]
fn links_and_fifos_planted_at_the_old_temporary_name_are_never_opened() {
    let dir = scratch("planted-before");
    std::fs::write(dir.join("victim"), b"V\n").unwrap();
    for plant in ["ln -s \"$PWD/victim\"", "mkfifo"] {
        let script = format!("{plant} .p.json.tmp.$$; exec \"$0\" --batch 8 --iters 400");
        let mut cmd = Command::new("sh");
        cmd.current_dir(&dir)
            .args(["-c", &script])
            .arg(dlrm())
            .env("PROF_WARMUP", "2")
            .env("PROF_REPEAT", "3")
            .env("PROF_OUT", dir.join("p.json"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let out = wait_at_most(cmd.spawn().unwrap(), Duration::from_secs(60), plant);
        assert!(out.status.success(), "{plant}: {}", stderr(&out));
        assert_eq!(
            std::fs::read(dir.join("victim")).unwrap(),
            b"V\n",
            "{plant}"
        );
        let meta = std::fs::symlink_metadata(dir.join("p.json")).unwrap();
        assert!(
            meta.file_type().is_file(),
            "{plant}: p.json is not a regular file"
        );
        assert_eq!(read_json(&dir.join("p.json"))["complete"], true);
        std::fs::remove_file(dir.join("p.json")).unwrap();
        for e in std::fs::read_dir(&dir).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            if name.starts_with(".p.json.tmp.") {
                std::fs::remove_file(dir.join(name)).unwrap();
            }
        }
    }
}

/// While a continuous-mode run rewrites its file (about once a second), another thread swaps
/// every temporary file it sees for a link to a victim, and plants links and FIFOs at guessable
/// names. The victim is never written, the output is never turned into a link, the run ends.
#[cfg(unix)]
#[test]
fn a_race_planting_links_and_fifos_at_the_temporary_names_writes_nothing_else() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = scratch("planted-race");
    let victim = dir.join("victim");
    std::fs::write(&victim, b"V\n").unwrap();
    let mut cmd = command(
        &dir,
        &[
            ("PROF_MODE", OsStr::new("continuous")),
            ("PROF_OUT", OsStr::new("p.json")),
        ],
        &["--iters", "2500"],
    );
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let swapped = Arc::new(AtomicUsize::new(0));
    let planter = {
        let (dir, stop, swapped) = (dir.clone(), stop.clone(), swapped.clone());
        std::thread::spawn(move || {
            let _ = std::os::unix::fs::symlink(&victim, dir.join(format!(".p.json.tmp.{pid}")));
            let fifo = dir.join(format!(".p.json.{pid}.tmp"));
            let _ = Command::new("mkfifo").arg(&fifo).status();
            while !stop.load(Ordering::Relaxed) {
                for e in std::fs::read_dir(&dir).unwrap().flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let ours = e.file_type().is_ok_and(|t| t.is_file());
                    if ours && name.starts_with(".p.json.") && name.ends_with(".tmp") {
                        let bait = dir.join(".bait");
                        let _ = std::fs::remove_file(&bait);
                        if std::os::unix::fs::symlink(&victim, &bait).is_ok()
                            && std::fs::rename(&bait, dir.join(&name)).is_ok()
                        {
                            swapped.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        })
    };
    let out = wait_at_most(
        child,
        Duration::from_secs(120),
        "continuous run under attack",
    );
    stop.store(true, Ordering::Relaxed);
    planter.join().unwrap();
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    // A write that found its temporary file replaced fails and says so; the next one, or the
    // one at the end, is tried again.
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{err}");
    assert_eq!(std::fs::read(dir.join("victim")).unwrap(), b"V\n", "{err}");
    // Renaming a link over the temporary file just before it is renamed into place can put
    // that link at p.json (whoever may rename files in the directory can do that to p.json
    // directly): the rewrites after it refuse to follow it, and say so.
    let meta = std::fs::symlink_metadata(dir.join("p.json"));
    match meta {
        Ok(meta) if meta.file_type().is_file() => {
            read_json(&dir.join("p.json"));
        }
        Ok(meta) if meta.file_type().is_symlink() => {
            assert!(err.contains("is not followed"), "{err}");
            assert_eq!(
                out.status.code(),
                Some(1),
                "results lost, yet exit 0: {err}"
            );
        }
        Ok(_) => panic!("p.json is a special file"),
        Err(_) => assert_eq!(out.status.code(), Some(1), "no p.json, yet exit 0: {err}"),
    }
    eprintln!(
        "temporary files swapped for links: {}; writes refused: {}",
        swapped.load(Ordering::Relaxed),
        err.matches("was replaced while").count()
    );
}

/// `PROF_OUT=/dev/stdout` (and `/proc/self/fd/1`, and the log's own path) when standard output
/// is appended to a log file: refused before training, and the log keeps its earlier lines.
#[cfg(target_os = "linux")]
#[test]
fn prof_out_leading_to_standard_output_never_replaces_the_log() {
    let dir = scratch("stdout-log");
    let log = dir.join("train.log");
    for out_path in ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1", "train.log"] {
        std::fs::write(&log, b"earlier lines\n").unwrap();
        let file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        let mut cmd = command(&dir, &[("PROF_OUT", OsStr::new(out_path))], &[]);
        let out = cmd.stdout(file).stderr(Stdio::piped()).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{out_path}: {err}");
        assert!(err.contains("PROF_OUT"), "{out_path}: {err}");
        assert!(
            err.contains("descriptor 1 (standard output)") || err.contains("open file descriptor"),
            "{out_path}: {err}"
        );
        assert_eq!(
            std::fs::read(&log).unwrap(),
            b"earlier lines\n",
            "{out_path}: the log changed"
        );
    }
}

/// A file name of 255 bytes, the most most file systems allow, is written; the temporary name
/// stays within the limit.
#[test]
fn a_255_byte_output_name_is_written() {
    let dir = scratch("name-255");
    let name = format!("{}.json", "p".repeat(250));
    let out = run(&dir, &[("PROF_OUT", &name)], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read_json(&dir.join(&name))["complete"], true);
}
