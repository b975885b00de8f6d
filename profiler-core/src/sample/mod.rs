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
//! Which threads are sampled: the thread that starts the session, and every thread when it
//! first runs an annotated function or probe (the first such run pays the registration: a
//! ring from the pool or a new one, and a timer). A thread that never runs one is not sampled;
//! [`sample_this_thread`] registers one by hand. A forked child inherits no timer
//! (`timer_create` timers are not inherited): it is not sampled.

pub(crate) mod open;

#[cfg(all(feature = "cpu-sample", target_os = "linux"))]
mod cpu;

pub use open::{open_event, open_layer, publish_open_events, OpenEvent, OpenLayer};

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
        // Every probe's runs leave the fast paths and publish themselves from now on.
        open::start_publishing();
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

/// Samples the calling thread from now on, when sampling is on (a thread that runs no
/// annotated function is not sampled otherwise). Does nothing when sampling is off.
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
    if !open::publishing() {
        return;
    }
    open::stop_publishing();
    #[cfg(all(feature = "cpu-sample", target_os = "linux"))]
    {
        profile.cpu_samples = cpu::stop_and_collect();
    }
    #[cfg(not(all(feature = "cpu-sample", target_os = "linux")))]
    let _ = profile;
}
