//! CPU samples inside the annotated events (`PROF_CPU_SAMPLE`).
//!
//! - `open.rs`: while sampling is on, each run publishes itself as its thread's open event (a
//!   fixed-size thread-local stack), which tags the samples and answers [`open_event`].
//! - `cpu.rs` (Linux, feature `cpu-sample`): a per-thread CPU-time timer
//!   (`timer_create(CLOCK_THREAD_CPUTIME_ID)` delivering `SIGPROF` to that thread), the
//!   async-signal-safe handler that walks the frame pointers into the thread's ring of
//!   fixed-size records, the drain that counts identical stacks, and the symbols resolved at
//!   the end (the `backtrace` crate), never in the handler.
//!
//! - `threads.rs` (same): every thread of the process is sampled, not only those that run a
//!   probe: `/proc/self/task` is scanned when sampling starts and every 200 ms after, and each
//!   thread without a timer gets one on its CPU clock.
//!
//! Which threads are sampled: every thread alive when the session starts, and every thread
//! started later from the next scan on (at most 200 ms); a thread also registers itself when it
//! first runs an annotated function or probe (a ring from the pool or a new one, and a timer;
//! one a scan already found keeps its own). A thread that starts and ends between two scans
//! without running a probe is not sampled; [`sample_this_thread`] registers one at once. The
//! sampler's own thread is not sampled. A forked child inherits no timer (`timer_create`
//! timers are not inherited): it is not sampled.

pub(crate) mod open;

#[cfg(all(feature = "cpu-sample", target_os = "linux"))]
mod cpu;
#[cfg(all(feature = "cpu-sample", target_os = "linux"))]
mod threads;

pub use open::{open_event, OpenEvent};

use profiler_format::Profile;

/// Starts sampling at `hz` samples per second of CPU time, after the session is installed:
/// refused, with a warning, when the program handles `SIGPROF` itself.
pub(crate) fn start(hz: u32) {
    #[cfg(all(feature = "cpu-sample", target_os = "linux"))]
    {
        if let Err(why) = cpu::start(hz) {
            eprintln!("profiler-core: warning: CPU sampling is off: {why}");
            return;
        }
        open::start_publishing();
        // The probes that take no part are tagged from now on.
        for entry in crate::register::registry::registry().iter() {
            entry.desc.state.tag_if_off();
        }
        let _ = open::OPEN.try_with(register_thread);
    }
    #[cfg(not(all(feature = "cpu-sample", target_os = "linux")))]
    let _ = hz;
}

/// Registers the thread of `open` with the sampler (once per thread and period of sampling).
#[cold]
#[inline(never)]
pub(crate) fn register_thread(open: &open::OpenStack) {
    open.registered.set(open::generation());
    #[cfg(all(feature = "cpu-sample", target_os = "linux"))]
    cpu::register_current();
}

/// Samples the calling thread from now on, when sampling is on. Every thread is found by the
/// sampler's scans (every 200 ms) anyway; this one is sampled at once, with its whole stacks
/// from its first sample (a thread a scan found has one-frame samples until the next scan has
/// read its stack's bounds). Does nothing when sampling is off.
pub fn sample_this_thread() {
    if open::publishing() {
        let _ = open::OPEN.try_with(|open| {
            if open.registered.get() != open::generation() {
                register_thread(open);
            }
        });
    }
}

/// Sampling ends (the results are being written): timers stop, publication ends, and the
/// samples, their symbols resolved, go into `profile`.
pub(crate) fn finish_into(profile: &mut Profile) {
    #[cfg(all(feature = "cpu-sample", target_os = "linux"))]
    if open::publishing() {
        open::stop_publishing();
        profile.cpu_samples = cpu::stop_and_collect();
    }
    #[cfg(not(all(feature = "cpu-sample", target_os = "linux")))]
    let _ = profile;
}
