//! Locking for the cold path.

use std::sync::{Mutex, MutexGuard};

/// Locks, shrugging off poisoning: a panic elsewhere must not take the profiler down with it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts one of the profiler's own threads (the signal thread, the writer, the metrics
/// endpoint, the CPU sampler) with SIGINT, SIGTERM and SIGHUP blocked in it, so that the kernel
/// delivers them to the program's threads as it would without the profiler: a program that
/// blocks them after `init()` and takes them with `sigwait` or a signalfd still gets them (a
/// thread of ours that left them open would take them instead). The signal handlers the
/// profiler installs run on whichever program thread gets the signal; they only wake the
/// signal thread through a pipe.
pub(crate) fn spawn<F>(name: &str, f: F) -> std::io::Result<std::thread::JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    #[cfg(all(unix, feature = "enable"))]
    // SAFETY: `set` and `old` are valid `sigset_t`s, initialized by sigemptyset and written by
    // pthread_sigmask; the calling thread's mask is restored before returning.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, signal);
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
