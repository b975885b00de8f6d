//! CPU samples inside the annotated events (`PROF_CPU_SAMPLE`).
//!
//! - `open.rs`: while sampling is on, each run publishes itself as its thread's open event (a
//!   fixed-size thread-local stack), which tags the samples and answers [`open_event`].
//! - `cpu.rs` (Linux, feature `cpu-sample`): a clock per thread delivering `SIGPROF` to
//!   that thread every period of its CPU time (`perf.rs`'s task-clock event, or, where the
//!   kernel refuses it or `PROF_CPU_SAMPLE_CLOCK=posix`, a `timer_create` timer), the
//!   async-signal-safe handler that walks the frame pointers into the thread's ring of
//!   fixed-size records (with the sample's time in `trace` and `continuous` modes), the drain
//!   that counts identical stacks, and the symbols resolved at the end (the `backtrace`
//!   crate), never in the handler; `continuous` mode's writer collects each window's samples
//!   ([`window_samples`]).
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
//! sampler's own thread is not sampled. A forked child inherits no timer and no event
//! (`timer_create` timers are not inherited; the events have no `inherit` bit, and their
//! signals go to the parent's threads): it is not sampled.

pub(crate) mod open;

#[cfg(all(feature = "cpu-sample", target_os = "linux"))]
pub(crate) mod cpu;
#[cfg(all(feature = "cpu-sample", target_os = "linux"))]
mod perf;
#[cfg(all(feature = "cpu-sample", target_os = "linux"))]
mod threads;

#[cfg(all(feature = "cpu-sample", target_os = "linux"))]
pub(crate) use cpu::Times;

/// What the sampler keeps of each sample's time (without the sampler: nothing).
#[cfg(not(all(feature = "cpu-sample", target_os = "linux")))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Times {
    /// Nothing.
    Off,
    /// When each sample was taken, for `cpu_samples.timeline` (`trace` mode).
    Timeline,
    /// When each sample was taken, cut into windows (`continuous` mode).
    Windows,
}

pub use open::{open_event, open_layer, OpenEvent, OpenLayer};

use profiler_format::Profile;

/// Starts sampling at `hz` samples per second of CPU time, after the session is installed:
/// refused, with a warning, when the program handles `SIGPROF` itself. With `times` other
/// than [`Times::Off`] and the session's CPU clock (`clock`), each sample's time is kept: on
/// `trace` mode's time line, or to cut `continuous` mode's windows.
pub(crate) fn start(
    hz: u32,
    times: Times,
    clock: Option<&'static crate::instrument::clock::CpuClock>,
    source: crate::select::config::SampleClock,
) {
    #[cfg(all(feature = "cpu-sample", target_os = "linux"))]
    {
        if let Err(why) = cpu::start(hz, times, clock, source) {
            say!("profiler-core: warning: CPU sampling is off: {why}");
            return;
        }
        // Every probe's runs leave the fast paths and publish themselves from now on.
        open::start_publishing();
        let _ = open::OPEN.try_with(register_thread);
    }
    #[cfg(not(all(feature = "cpu-sample", target_os = "linux")))]
    let _ = (hz, times, clock, source);
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

/// The samples of a `continuous`-mode window whose iterations began at mark `from` of the
/// session's clock and ended at mark `to`, their symbols resolved; `None` when sampling is off
/// (or windows are not sampled). Cold path: the writer's thread, never the window's close.
pub(crate) fn window_samples(from: u64, to: u64) -> Option<profiler_format::CpuSamples> {
    #[cfg(all(feature = "cpu-sample", target_os = "linux"))]
    if open::publishing() {
        return cpu::collect_window(from, to);
    }
    let _ = (from, to);
    None
}

/// Sampling ends (the results are being written): timers stop, publication ends, and the
/// samples, their symbols resolved, go into `profile`, unless it has samples already (those
/// of the `continuous`-mode window it shows). In `trace` mode, `place` puts each sample on
/// the events' time line (its iteration and its time from that iteration's start, from a
/// mark of the session's clock). Publication without sampling (`publish_open_events`) ends
/// here too.
pub(crate) fn finish_into(profile: &mut Profile, place: &dyn Fn(u64) -> Option<(u32, u64)>) {
    if !open::publishing() {
        return;
    }
    open::stop_publishing();
    #[cfg(all(feature = "cpu-sample", target_os = "linux"))]
    {
        let wanted = profile.cpu_samples.is_none();
        if let Some(all) = cpu::stop_and_collect(place, wanted) {
            profile.cpu_samples = Some(all);
        }
    }
    #[cfg(not(all(feature = "cpu-sample", target_os = "linux")))]
    let _ = (profile, place);
}
