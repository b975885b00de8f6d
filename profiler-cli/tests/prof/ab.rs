//! `prof ab` end to end, deterministically: its "programs" are shell commands that copy a
//! recorded profile to the `PROF_OUT` they are given (and note what they saw), so the runner's
//! mechanics (interleaving, one output per run, the environment padding, the stopping rules,
//! the comparison and its exit status) are checked without timing anything.
#![cfg(unix)]

use std::path::{Path, PathBuf};

use crate::common;
use common::{prof, scratch};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cli")
        .join(name)
}

/// A command that copies `profile` to `$PROF_OUT` and logs `which` and its padding's length.
fn copier(profile: &Path, which: &str, log: &Path) -> String {
    format!(
        "sh -c 'cp {} \"$PROF_OUT\" && printf \"%s %s\\n\" {which} ${{#PROF_AB_PAD}} >> {}'",
        profile.display(),
        log.display()
    )
}

/// `batch32.json` with `top_backward` 40% slower, written into `dir`.
fn slowed(dir: &Path) -> PathBuf {
    let path = dir.join("slow.json");
    common::slowed_copy(&data("batch32.json"), "top_backward", 1.4, &path);
    path
}

#[test]
fn runs_interleaved_each_with_its_own_output_and_padding_then_compares() {
    let dir = scratch("ab");
    let log = dir.join("log.txt");
    let slow = slowed(&dir);
    let runs = dir.join("runs");
    let before = copier(&data("batch32.json"), "before", &log);
    let after = copier(&slow, "after", &log);
    let out = prof(&[
        "ab",
        "-n",
        "6",
        "--before",
        &before,
        "--after",
        &after,
        "--dir",
        runs.to_str().unwrap(),
        "--fail-on-regression",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    // Only the slowed layer is named, with the round as the unit; every round the same, every
    // interval is exact, so the run stops resolved at the fewest rounds it takes (5 of 6).
    assert_eq!(out.status.code(), Some(1), "{text}\n{err}");
    assert!(
        text.contains("runs: 5 rounds, each a before and an after run"),
        "{text}"
    );
    assert!(err.contains("prof ab: resolved after 5 rounds"), "{err}");
    assert!(
        text.contains("1 regressed: top_mlp/bwd top_backward (+40.0%)"),
        "{text}"
    );
    for k in 0..5 {
        assert!(runs.join(format!("before-{k}.json")).is_file());
        assert!(runs.join(format!("after-{k}.json")).is_file());
    }
    // Interleaved in a seeded random order (not always before first), each with its padding.
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 10);
    let firsts: Vec<&str> = lines
        .chunks(2)
        .map(|pair| pair[0].split(' ').next().unwrap())
        .collect();
    assert!(
        firsts.contains(&"before") && firsts.contains(&"after"),
        "{firsts:?}"
    );
    let pads: Vec<usize> = lines
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap().trim().parse().unwrap())
        .collect();
    assert!(pads.iter().any(|&p| p != pads[0]), "{pads:?}");
    assert!(err.contains("prof ab: round 5/6"), "{err}");

    // The same profile on both sides: nothing changed, exit 0; `--until` stops at 2 rounds
    // (every interval is exactly no change).
    let same = copier(&data("batch32.json"), "after", &log);
    let out = prof(&[
        "ab",
        "-n",
        "6",
        "--until",
        "1%",
        "--before",
        &before,
        "--after",
        &same,
        "--dir",
        runs.to_str().unwrap(),
        "--fail-on-regression",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}\n{err}");
    assert!(text.contains("runs: 2 rounds"), "{text}");
    assert!(
        text.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("no regression"),
        "{text}"
    );
    assert!(err.contains("every interval is within"), "{err}");
}

#[test]
fn bad_commands_are_errors_that_say_why() {
    let dir = scratch("ab-bad");
    let runs = dir.join("runs");
    let r = runs.to_str().unwrap();
    let good = copier(&data("batch32.json"), "after", &dir.join("log.txt"));
    for (before, expected) in [
        ("", "--before is empty"),
        ("'unclosed", "unclosed quote"),
        ("/nonexistent/program", "cannot run `/nonexistent/program`"),
        ("true", "wrote no"),
        ("sh -c 'echo boom >&2; exit 3'", "boom"),
    ] {
        let out = prof(&[
            "ab", "-n", "2", "--before", before, "--after", &good, "--dir", r,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{before}: {err}");
        assert!(err.contains(expected), "{before}: {err}");
        // The folder the failed run made is not left behind empty (it stays when the other
        // command's run wrote its profile there first).
        let empty = std::fs::read_dir(&runs).is_ok_and(|mut d| d.next().is_none());
        assert!(!empty, "{before}: {} left empty", runs.display());
        let _ = std::fs::remove_dir_all(&runs);
    }
    // A first run that fails leaves no empty folder behind.
    let out = prof(&[
        "ab", "-n", "2", "--before", "true", "--after", "true", "--dir", r,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!runs.exists(), "{} left empty", runs.display());
    // A file given as the folder is refused as such, and left as it is.
    let file = dir.join("log.txt");
    std::fs::write(&file, "kept").unwrap();
    let out = prof(&[
        "ab",
        "-n",
        "2",
        "--before",
        &good,
        "--after",
        &good,
        "--dir",
        file.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is a file, not a folder") && err.contains("help:"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
}

/// Profiles left in `--dir` by an earlier session are never compared: each run's output is
/// removed before the run, so a command that writes nothing is an error even where an old
/// `before-K.json` lies.
#[test]
fn stale_profiles_in_the_folder_are_never_compared() {
    let dir = scratch("ab-stale");
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    for name in ["before-0", "before-1", "after-0", "after-1"] {
        std::fs::copy(data("batch32.json"), runs.join(format!("{name}.json"))).unwrap();
    }
    let out = prof(&[
        "ab",
        "--before",
        "true",
        "--after",
        "true",
        "-n",
        "2",
        "--dir",
        runs.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("wrote no"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // A stale output that cannot be removed (a folder in its place) is an error too.
    let blocked = dir.join("blocked");
    std::fs::create_dir_all(blocked.join("before-0.json")).unwrap();
    std::fs::create_dir_all(blocked.join("after-0.json")).unwrap();
    let good = copier(&data("batch32.json"), "x", &dir.join("log.txt"));
    let out = prof(&[
        "ab",
        "--before",
        &good,
        "--after",
        &good,
        "-n",
        "2",
        "--dir",
        blocked.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot remove"), "{err}");
}

/// A command that copies its first argument to `$PROF_OUT` read as profiler-core reads it:
/// `%%` a `%`, `%p` its process id, `%r` rank 0, another `%` an error (status 2).
fn placeholder_reader(dir: &Path) -> PathBuf {
    let script = dir.join("reader.sh");
    std::fs::write(
        &script,
        "out=$(printf '%s' \"$PROF_OUT\" | sed -e 's/%%/\\x01/g' -e \"s/%p/$$/g\" -e 's/%r/0/g')\n\
         case \"$out\" in *%*) echo \"PROF_OUT=$PROF_OUT: unknown % placeholder\" >&2; exit 2;; esac\n\
         out=$(printf '%s' \"$out\" | sed 's/\\x01/%/g')\n\
         cp \"$1\" \"$out\"\n",
    )
    .unwrap();
    script
}

/// `--dir` is a folder, not a `PROF_OUT` template: a `%` in it reaches the program as `%%`.
#[test]
fn a_folder_with_a_percent_sign_is_the_folder_written_to() {
    let dir = scratch("ab-percent");
    let reader = placeholder_reader(&dir);
    let command = format!("sh {} {}", reader.display(), data("batch32.json").display());
    for name in ["runs-50%", "r%p", "a%%b%r"] {
        let runs = dir.join(name);
        let out = prof(&[
            "ab",
            "--before",
            &command,
            "--after",
            &command,
            "-n",
            "2",
            "--dir",
            runs.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {err}");
        for k in 0..2 {
            assert!(runs.join(format!("before-{k}.json")).is_file(), "{name}");
            assert!(runs.join(format!("after-{k}.json")).is_file(), "{name}");
        }
    }
}

/// `prof ab`'s default folder, `prof-ab`, lands in the current directory: the repository's
/// `.gitignore` keeps it out of commits, and none is committed.
#[test]
fn the_default_folder_is_ignored_and_never_committed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let ignore = std::fs::read_to_string(root.join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l.trim() == "prof-ab/"), "{ignore}");
    let Ok(out) = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "--", "*prof-ab/*"])
        .output()
    else {
        eprintln!("git not found: the committed files are not checked");
        return;
    };
    if out.status.success() {
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(listed.trim().is_empty(), "committed: {listed}");
    }
}

/// A signal to `prof ab` ends the program it runs (the child's whole process group) before
/// `prof` ends of it: before, Ctrl-C or a CI job's SIGTERM left the run going, writing into
/// the folder after `prof` was gone. The lock file goes too.
#[test]
fn a_signal_ends_the_running_command_too() {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("ab-signal");
    let runs = dir.join("runs");
    let pids = dir.join("pids");
    let slow = format!("sh -c 'sleep 1000 & echo $$ $! > {}; wait'", pids.display());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_prof"))
        .args(["ab", "-n", "2", "--before", &slow, "--after", &slow])
        .args(["--dir", runs.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !pids.exists() {
        assert!(
            started.elapsed().as_secs() < 60,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let ran: Vec<String> = std::fs::read_to_string(&pids)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(ran.len(), 2);
    // SAFETY: kill(2) with a process id of this test's child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    for pid in &ran {
        let gone = (0..500).any(|_| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !s.contains(") Z "));
            if alive {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            !alive
        });
        assert!(gone, "process {pid} of the command still runs");
    }
    assert!(!runs.join(".prof-ab.lock").exists());
}

/// Two sessions with one folder would read each other's runs: the second is refused while the
/// first runs.
#[test]
fn one_folder_holds_one_session_at_a_time() {
    let dir = scratch("ab-two");
    let runs = dir.join("runs");
    let started = dir.join("started");
    let slow = format!(
        "sh -c 'touch {}; sleep 3; cp {} \"$PROF_OUT\"'",
        started.display(),
        data("batch32.json").display()
    );
    let r = runs.to_str().unwrap();
    let mut first = std::process::Command::new(env!("CARGO_BIN_EXE_prof"))
        .args([
            "ab", "-n", "2", "--before", &slow, "--after", &slow, "--dir", r,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !started.exists() {
        assert!(
            t0.elapsed().as_secs() < 60,
            "the first session never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let good = copier(&data("batch32.json"), "x", &dir.join("log.txt"));
    let out = prof(&[
        "ab", "-n", "2", "--before", &good, "--after", &good, "--dir", r,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("another prof ab"), "{err}");
    assert!(first.wait().unwrap().success());
    assert!(
        !runs.join(".prof-ab.lock").exists(),
        "the lock is removed at the end"
    );
}

/// The profile's path is absolute (a command that changes directory writes where `prof`
/// reads); a command that writes none is told with the end of its stderr, which is bounded
/// however much it wrote.
#[test]
fn commands_are_given_an_absolute_output_and_their_stderr_is_bounded() {
    let dir = scratch("ab-abs");
    let wander = format!(
        "sh -c 'cd / && cp {} \"$PROF_OUT\"'",
        data("batch32.json").display()
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_prof"))
        .current_dir(&dir)
        .args(["ab", "-n", "2", "--before", &wander, "--after", &wander])
        .args(["--dir", "runs"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let silent = "sh -c 'echo ran fine >&2'";
    let out = prof(&[
        "ab",
        "-n",
        "2",
        "--before",
        silent,
        "--after",
        silent,
        "--dir",
        dir.join("r2").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("wrote no") && err.contains("ran fine"),
        "{err}"
    );
    let loud = "sh -c 'head -c 3000000 /dev/zero | tr \"\\0\" x >&2; exit 1'";
    let out = prof(&[
        "ab",
        "-n",
        "2",
        "--before",
        loud,
        "--after",
        loud,
        "--dir",
        dir.join("r3").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", &err[..err.len().min(500)]);
    assert!(err.len() < 2_000, "{} bytes of error", err.len());
}
