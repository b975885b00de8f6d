//! End to end, the ways a run can be abused or cut short: signals, special output paths,
//! non-UTF-8 variables, bad ranks, the listing without a filter.
#![cfg(feature = "enable")]

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{dlrm, read_json, run, scratch, stderr, stdout};

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

/// Gives the child the default disposition of the signals the tests send: a test run started
/// in the background by a non-interactive shell (`cmd &`) inherits SIGINT ignored, and an
/// ignored signal is one the profiler rightly leaves alone.
#[cfg(unix)]
fn default_signals(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (signal(2)) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
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

/// Starts a long run, waits until it is training, sends `signal`, and returns its output.
#[cfg(unix)]
fn interrupted(dir: &Path, signal: &str, vars: &[(&str, &str)]) -> Output {
    let mut cmd = command(dir, &[], &["--iters", "100000000"]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    default_signals(&mut cmd);
    let child = cmd
        .env("PROF_REPEAT", "100000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Past warmup: a few hundred iterations of a few milliseconds.
    std::thread::sleep(Duration::from_millis(1500));
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    wait_at_most(child, Duration::from_secs(20), &format!("SIG{signal}"))
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
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let pid = child.id().to_string();
    Command::new("kill").args(["-HUP", &pid]).status().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGHUP ended a nohup'd run"
    );
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let out = wait_at_most(child, Duration::from_secs(20), "SIGTERM after SIGHUP");
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
