//! A program that forks after `init()` (a data-loading worker, as PyTorch's DataLoader makes),
//! and one that takes its signals itself after `init()`: the profiler keeps to its own process
//! and its own threads.
//!
//! - A forked worker ends of one SIGTERM, as it would without the profiler (it inherits the
//!   profiler's handlers, but not the thread that writes the results).
//! - A forked worker that returns through `main` (its copy of the guard drops) writes nothing:
//!   the results are the parent's.
//! - A worker forked while one of the profiler's threads held the session's lock (the writer
//!   thread holds it a moment each second) steps and ends: that lock stays held for ever in the
//!   worker, where the thread does not exist, and a worker that took it hung at its first
//!   `step()`. A forked copy of the session is inert.
//! - A program that blocks SIGTERM after `init()` and takes it with `sigtimedwait` gets it: the
//!   profiler's own threads block it, so the kernel does not give it to them.
//!
//! Each case runs in a child process (this test binary run again with `PROF_TEST_CASE`).

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use profiler_core::{profiled, Config, Mode};

#[profiled(layer = "f", phase = "fwd")]
fn layer() {
    std::hint::black_box((0..100u64).sum::<u64>());
}

fn config(out: &Path) -> Config {
    Config {
        mode: Mode::Sample,
        warmup: 2,
        repeat: 3,
        out: out.display().to_string(),
        summary: false,
        ..Config::default()
    }
}

/// Waits (10 s at most) for `pid` to end; its wait status, or `None` if it still runs.
fn wait_for(pid: libc::pid_t) -> Option<libc::c_int> {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let mut status = 0;
        // SAFETY: waitpid(2) on our own child, with a valid status pointer.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// Waits for `worker` and says how it ended: `exited: N`, `ended of signal N`, or, still
/// running after 10 s, `still running` (then it is killed).
fn how_it_ended(worker: libc::pid_t) -> String {
    match wait_for(worker) {
        Some(status) if libc::WIFEXITED(status) => format!("exited: {}", libc::WEXITSTATUS(status)),
        Some(status) if libc::WIFSIGNALED(status) => {
            format!("ended of signal {}", libc::WTERMSIG(status))
        }
        Some(status) => format!("ended with wait status {status}"),
        None => {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(worker, libc::SIGKILL) };
            wait_for(worker);
            "still running".to_owned()
        }
    }
}

/// The `pid` field of the profile at `path`.
fn writer_of(path: &Path) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    v["run"]["pid"].as_u64()
}

/// What the child process does, by case; it prints what the test checks.
fn child(case: &str, dir: &Path) {
    let out = dir.join("prof.json");
    let guard = profiler_core::init_with(config(&out), None).unwrap();
    match case {
        "worker-sigterm" => {
            // SAFETY: the forked process only sleeps until a signal ends it.
            let worker = unsafe { libc::fork() };
            if worker == 0 {
                loop {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(worker, libc::SIGTERM) };
            println!("worker {}", how_it_ended(worker));
        }
        "worker-returns" => {
            let mut fds = [0; 2];
            // SAFETY: pipe(2) into a valid two-element array.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            // SAFETY: the forked process reads one byte, then drops its copy of the guard (what
            // returning from `main` does) and leaves with _exit.
            let worker = unsafe { libc::fork() };
            if worker == 0 {
                let mut byte = 0u8;
                // SAFETY: read(2) of one byte into a valid buffer.
                unsafe { libc::read(fds[0], (&mut byte as *mut u8).cast(), 1) };
                drop(guard);
                // SAFETY: ends the forked process without running the parent's exit handlers.
                unsafe { libc::_exit(0) };
            }
            // The parent completes its schedule (its results are written), then lets the
            // worker end.
            for _ in 0..6 {
                layer();
                profiler_core::step();
            }
            println!("parent wrote: {:?}", writer_of(&out));
            // SAFETY: write(2) of one byte from a valid buffer.
            unsafe { libc::write(fds[1], [1u8].as_ptr().cast(), 1) };
            let status = wait_for(worker);
            println!("worker exited: {status:?}");
            println!("written by: {:?}", writer_of(&out));
            println!("parent: {}", std::process::id());
            drop(guard);
        }
        "worker-while-locked" => {
            // Warmup under way: the next step() takes the session's lock.
            layer();
            profiler_core::step();
            let (locked_tx, locked) = std::sync::mpsc::channel();
            let (done, done_rx) = std::sync::mpsc::channel::<()>();
            let holder = std::thread::spawn(move || {
                profiler_core::__private::while_session_locked(|| {
                    locked_tx.send(()).unwrap();
                    let _ = done_rx.recv_timeout(Duration::from_secs(30));
                });
            });
            locked.recv().unwrap();
            // SAFETY: the forked process runs the profiled code, steps, drops its copy of the
            // guard (what returning from `main` does) and leaves with _exit.
            let worker = unsafe { libc::fork() };
            if worker == 0 {
                for _ in 0..4 {
                    layer();
                    profiler_core::step();
                }
                let finished = profiler_core::finished();
                drop(guard);
                // SAFETY: ends the forked process without running the parent's exit handlers.
                unsafe { libc::_exit(if finished { 3 } else { 0 }) };
            }
            println!("worker {}", how_it_ended(worker));
            done.send(()).unwrap();
            holder.join().unwrap();
            for _ in 0..6 {
                layer();
                profiler_core::step();
            }
            drop(guard);
            println!("written by: {:?}", writer_of(&out));
            println!("parent: {}", std::process::id());
        }
        "sigwait" => {
            // SAFETY: a signal set built by sigemptyset/sigaddset, this thread's mask changed
            // by pthread_sigmask, a process-directed signal to ourselves, and sigtimedwait with
            // a valid timeout.
            let got = unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGTERM);
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                libc::kill(libc::getpid(), libc::SIGTERM);
                // The signal comes while the program is busy (an iteration under way); it
                // looks for it between iterations.
                std::thread::sleep(Duration::from_millis(300));
                let timeout = libc::timespec {
                    tv_sec: 10,
                    tv_nsec: 0,
                };
                libc::sigtimedwait(&set, std::ptr::null_mut(), &timeout)
            };
            println!("sigtimedwait returned {got}");
            drop(guard);
        }
        other => panic!("unknown case {other}"),
    }
}

fn run_case(case: &str) -> Output {
    let dir = std::env::temp_dir().join(format!("prof-fork-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .env("PROF_TEST_CASE", case)
        .env("PROF_TEST_DIR", &dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// What the child printed on stdout.
fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The child printed `line`; else its whole output, and how it ended, is the message.
fn assert_said(out: &Output, line: &str) {
    assert!(
        stdout(out).contains(line),
        "no `{line}` in:\n{}\n{}\n{:?}",
        stdout(out),
        String::from_utf8_lossy(&out.stderr),
        out.status
    );
}

fn a_worker_forked_after_init_ends_of_one_sigterm() {
    assert_said(&run_case("worker-sigterm"), "worker ended of signal 15");
}

/// The results the child printed were written by the parent (the `parent: PID` line).
fn assert_written_by_the_parent(out: &Output) {
    let text = stdout(out);
    let parent = text
        .lines()
        .find_map(|l| l.strip_prefix("parent: "))
        .unwrap_or_else(|| panic!("{text}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_said(out, &format!("written by: Some({parent})"));
}

fn a_worker_forked_after_init_writes_nothing_over_the_parents_results() {
    let out = run_case("worker-returns");
    assert_written_by_the_parent(&out);
    assert_said(&out, "worker exited: Some(0)");
}

fn a_worker_forked_while_the_sessions_lock_is_held_steps_and_ends() {
    let out = run_case("worker-while-locked");
    assert_said(&out, "worker exited: 0");
    assert_written_by_the_parent(&out);
}

fn a_program_that_blocks_sigterm_after_init_takes_it_with_sigwait() {
    let out = run_case("sigwait");
    assert_said(&out, "sigtimedwait returned 15");
    assert!(out.status.success(), "{:?}", out.status);
}

/// Without libtest's harness (`harness = false`): the sigwait case needs a process whose every
/// thread but the profiler's is the program's own, and libtest's main thread would leave
/// SIGTERM open. Each case runs in this binary run again with `PROF_TEST_CASE`.
fn main() {
    if let (Ok(case), Ok(dir)) = (
        std::env::var("PROF_TEST_CASE"),
        std::env::var("PROF_TEST_DIR"),
    ) {
        child(&case, Path::new(&dir));
        return;
    }
    let cases: [(&str, fn()); 4] = [
        (
            "a_worker_forked_after_init_ends_of_one_sigterm",
            a_worker_forked_after_init_ends_of_one_sigterm,
        ),
        (
            "a_worker_forked_after_init_writes_nothing_over_the_parents_results",
            a_worker_forked_after_init_writes_nothing_over_the_parents_results,
        ),
        (
            "a_worker_forked_while_the_sessions_lock_is_held_steps_and_ends",
            a_worker_forked_while_the_sessions_lock_is_held_steps_and_ends,
        ),
        (
            "a_program_that_blocks_sigterm_after_init_takes_it_with_sigwait",
            a_program_that_blocks_sigterm_after_init_takes_it_with_sigwait,
        ),
    ];
    for (name, case) in cases {
        case();
        println!("test {name} ... ok");
    }
    println!("test result: ok. {} passed; 0 failed", cases.len());
}
