//! SIGINT, SIGTERM and SIGHUP in the middle of a run (Ctrl-C, a scheduler's time limit, a
//! closed terminal): the results measured so far are written, marked incomplete, and the process
//! then ends of the same signal, as it would have without the profiler (status 130, 143 and 129
//! in a shell).
//!
//! Only signals whose disposition is still the default are taken: a program with its own
//! handler (a graceful shutdown) keeps it and writes its results when its guard drops, and a
//! signal that is ignored (`nohup` ignores SIGHUP) stays ignored. A second signal ends the
//! process at once, except while results are being written: then the writes stop at their next
//! chunk, their temporary files are removed (nothing is left beside the output), and the process
//! ends of that signal; a third ends it at once, whatever is under way.
//!
//! The handlers only set a flag and write to a pipe (`signal-hook`); the results are written by
//! a thread of ours, off the signal handler, with the ordinary cold-path code.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use crate::output::{SECOND, WRITING};
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Whether `signal`'s disposition is the default one (not ignored, no handler).
fn has_default_disposition(signal: libc::c_int) -> bool {
    // SAFETY: a null new action only reads the current one into `old`, which is a valid,
    // writable `sigaction`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_DFL
    }
}

/// Takes SIGINT, SIGTERM and SIGHUP (those still at their default), once per process; a signal
/// ends the session current when it arrives. Failing to is not fatal: the run goes on, with one
/// warning.
pub(crate) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(install_now);
}

fn install_now() {
    let taken: Vec<libc::c_int> = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .filter(|&s| has_default_disposition(s))
        .collect();
    if taken.is_empty() {
        return;
    }
    if let Err(e) = try_install(&taken) {
        say!(
            "profiler-core: warning: cannot handle SIGINT/SIGTERM ({e}); a run stopped by one \
             of them writes no results"
        );
    }
}

fn try_install(taken: &[libc::c_int]) -> std::io::Result<()> {
    let got_one = Arc::new(AtomicBool::new(false));
    // A process forked from this one (a data-loading worker) inherits the handlers but not the
    // thread that writes the results: there a signal takes its default action at once, as it
    // would without the profiler (the results are the parent's to write).
    let owner = std::process::id();
    for &signal in taken {
        // Registered first, so it runs first: the second signal finds the flag set and ends
        // the process with the default action, at once unless results are being written
        // (then `writing` ends it once their temporary files are gone; a third signal at once).
        let seen = Arc::clone(&got_one);
        let action = move || {
            // SAFETY: getpid(2) is async-signal-safe and cannot fail.
            let forked = unsafe { libc::getpid() } as u32 != owner;
            if forked
                || seen.load(SeqCst)
                    && (WRITING.load(SeqCst) == 0 || SECOND.swap(signal, SeqCst) != 0)
            {
                // Async-signal-safe: it resets the disposition and raises the signal.
                let _ = signal_hook::low_level::emulate_default_handler(signal);
            }
        };
        // SAFETY: the action only touches atomics, calls getpid and `emulate_default_handler`,
        // which signal-hook documents as async-signal-safe.
        unsafe { signal_hook::low_level::register(signal, action) }?;
        signal_hook::flag::register(signal, Arc::clone(&got_one))?;
    }
    let mut signals = Signals::new(taken)?;
    crate::sync::spawn("profiler-signals", move || {
        if let Some(signal) = signals.forever().next() {
            let name = signal_hook::low_level::signal_name(signal).unwrap_or("a signal");
            if let Some(session) = crate::session::current() {
                say!("profiler-core: {name}: writing the results measured so far");
                session.end_on_signal();
            }
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            // Only reached if the default action did not end the process.
            std::process::exit(128 + signal);
        }
    })?;
    Ok(())
}

/// `continuous` mode: SIGUSR2 asks for a trace on demand (`prof trigger PID`), when its
/// disposition is still the default (a program with its own SIGUSR2 handler keeps it, and is
/// asked through `PROF_CONTROL` instead). The count of iterations rides on the signal's value
/// (`sigqueue`); a plain `kill -USR2` asks for `PROF_REPEAT`. The handler only stores the count.
#[cfg(target_os = "linux")]
pub(crate) fn install_trigger() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if !has_default_disposition(libc::SIGUSR2) {
            say!(
                "profiler-core: note: the program handles SIGUSR2 itself, so `prof trigger PID` \
                 cannot ask it for a trace; set PROF_CONTROL and use `prof trigger --control`"
            );
            return;
        }
        // SAFETY: `asked` is async-signal-safe (it reads the siginfo it is given and stores
        // into an atomic); the action struct is zeroed, then filled as sigaction(2) says.
        let ok = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = asked as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()) == 0
        };
        if !ok {
            say!(
                "profiler-core: warning: cannot handle SIGUSR2 ({}); ask for traces through \
                 PROF_CONTROL",
                std::io::Error::last_os_error()
            );
        }
    });
}

/// The SIGUSR2 handler: the iterations asked for, from the value `sigqueue` sent (`prof
/// trigger`), or the default for a plain `kill`.
#[cfg(target_os = "linux")]
extern "C" fn asked(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    use crate::session::on_demand::{DEFAULT_COUNT, SIGNALLED};
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; `si_value` is the
    // union member `sigqueue` fills when `si_code` is SI_QUEUE.
    let count = unsafe {
        match info.as_ref() {
            // A count from 1 to u32::MAX, as through the control file (the trace takes at most
            // PROF_REPEAT of it); a larger value (not one `prof trigger` sends) asks for the
            // most, and 0 for the default.
            Some(info) if info.si_code == libc::SI_QUEUE => {
                match info.si_value().sival_ptr as usize as u64 {
                    0 => DEFAULT_COUNT,
                    value => value.min(u64::from(u32::MAX)),
                }
            }
            _ => DEFAULT_COUNT,
        }
    };
    SIGNALLED.store(count, SeqCst);
}
