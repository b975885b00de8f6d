//! Locking for the cold path.

use std::sync::{Mutex, MutexGuard};

/// Locks, shrugging off poisoning: a panic elsewhere must not take the profiler down with it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts one of the profiler's own threads (the signal thread, the writer, the metrics
/// endpoint, the CPU sampler) with every asynchronous signal blocked in it, so that the kernel
/// delivers them to the program's threads as it would without the profiler: a program that
/// blocks SIGTERM after `init()` and takes it with `sigwait` or a signalfd still gets it (a
/// thread of ours that left it open would take it instead), and a handler of the program's
/// (which may run a probe) never runs on a thread of ours, in the middle of its work. The
/// signals a fault raises on the faulting thread (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
/// SIGSYS) stay open. The handlers the profiler installs run on whichever program thread gets
/// the signal; they only wake the signal thread through a pipe.
pub(crate) fn spawn<F>(name: &str, f: F) -> std::io::Result<std::thread::JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    #[cfg(all(unix, feature = "enable"))]
    // SAFETY: `set` and `old` are valid `sigset_t`s, initialized by sigfillset and written by
    // pthread_sigmask; the calling thread's mask is restored before returning.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        for fault in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGSYS,
        ] {
            libc::sigdelset(&mut set, fault);
        }
        // The new thread inherits the calling thread's mask: block, spawn, restore.
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let spawned = std::thread::Builder::new().name(name.to_owned()).spawn(f);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        spawned
    }
    #[cfg(not(all(unix, feature = "enable")))]
    std::thread::Builder::new().name(name.to_owned()).spawn(f)
}
