//! Every thread of the program sampled, not only those that run a probe (cold path, but for
//! [`on_signal`]).
//!
//! - **Discovery.** When the sampler starts, and then every [`RESCAN_TICKS`] drains (200 ms) on
//!   the sampler's own thread, `/proc/self/task` is listed and each thread that has no timer
//!   yet gets one: a `timer_create` on *that* thread's CPU clock (the clock id glibc's
//!   `pthread_getcpuclockid` makes from a thread id), `SIGEV_THREAD_ID` to it, its ring reserved
//!   and published in [`SLOTS`] before the timer is armed. The sampler's own thread is left
//!   out. A thread that starts and ends between two scans, and runs no probe, is not sampled.
//!   The cap on threads sampled at once is the one of `cpu.rs`; threads over it are counted
//!   once each (the warning at the end).
//! - **Which ring.** Every timer carries its slot (`sigev_value` = slot + 1). The handler takes
//!   the ring from its thread-local when the thread registered itself (it ran a probe), else
//!   from the slot the signal names, and writes only when the slot's thread id is its own (a
//!   signal of a deleted timer may still arrive; a slot may have been given to another thread
//!   since). A counter of handlers inside the slot lets the cold path retire a slot (clear it,
//!   wait for the counter to reach zero) before its ring goes back to the pool: no handler ever
//!   writes into a ring that another thread has been given.
//! - **Stack bounds.** The frame walk reads only inside the thread's stack, and
//!   `pthread_getattr_np` answers only for the calling thread. A discovered thread's bounds
//!   start empty (`[usize::MAX, 0)`: a sample is then its interrupted program counter alone, a
//!   one-frame stack) and the handler notes the interrupted stack pointer; the next scan finds
//!   the mapping of `/proc/self/maps` that holds it (the thread's stack: it stays mapped while
//!   the thread lives) and stores its bounds, low then high, so that a handler that reads one
//!   old and one new bound sees an empty range. From then on the thread's samples are whole
//!   stacks. A thread that later runs a probe keeps its slot and timer (it is adopted), and
//!   takes `pthread_getattr_np`'s bounds if none were known yet. What this leaves: a mapping
//!   the kernel merged with an adjacent read-write one of the same kind counts as stack; if
//!   that neighbour were unmapped while the thread lives, a frame pointer that is garbage
//!   (code built without frame pointers) could point into the hole. Glibc's thread stacks
//!   have a guard page below and are mapped `MAP_STACK`, which makes such a merge unlikely.
//! - **Threads that end.** A thread that registered itself deletes its timer at exit (as
//!   before). A discovered one is found dead at a scan: its timer is disarmed for good (the
//!   kernel stops a CPU timer whose thread is gone, and `timer_gettime` then reads zero; a
//!   live periodic timer never does, an expiry due but not yet delivered reads 1 ns), and
//!   `timer_delete` on it succeeds and frees it; its ring is drained and goes back to the pool.
//!   A thread id reused by a new thread between two scans is seen the same way (the old
//!   timer, bound to the old thread, is dead) and the new thread gets a timer of its own.

use std::collections::HashSet;
use std::sync::atomic::{
    AtomicI32, AtomicPtr, AtomicU32,
    Ordering::{Relaxed, SeqCst},
};

use super::cpu::{Active, Inner, Ring, MAX_THREADS};
use profiler_format::SampledThread;

/// Drains (50 ms each) between two scans of `/proc/self/task`.
pub(super) const RESCAN_TICKS: u32 = 4;

/// One slot of a thread sampled: what the handler needs to find its ring from the signal.
pub(super) struct Slot {
    /// The thread's id; 0 when the slot is free.
    tid: AtomicI32,
    ring: AtomicPtr<Ring>,
    /// Handlers inside this slot now (see [`retire`]).
    busy: AtomicU32,
    /// A stack pointer the handler saw on a thread whose bounds are not known yet.
    seen_sp: std::sync::atomic::AtomicUsize,
}

/// The slots, indexed as `Inner::active`.
static SLOTS: [Slot; MAX_THREADS] = [const {
    Slot {
        tid: AtomicI32::new(0),
        ring: AtomicPtr::new(std::ptr::null_mut()),
        busy: AtomicU32::new(0),
        seen_sp: std::sync::atomic::AtomicUsize::new(0),
    }
}; MAX_THREADS];

/// The discovery's state, under the sampler's lock.
#[derive(Default)]
pub(super) struct Discovery {
    /// Threads not sampled (over the cap, or no timer), each counted once.
    pub(super) unsampled: HashSet<i32>,
}

/// The calling thread's id.
pub(super) fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// The CPU-time clock of thread `tid` of this process (as glibc's `pthread_getcpuclockid`:
/// `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`).
fn thread_clock(tid: i32) -> libc::clockid_t {
    (!tid << 3) | 6
}

/// Samples thread `tid` from now on: a ring, a slot, a timer of its CPU clock. `bounds` is its
/// stack when known. Returns its slot, serial and ring, or `None` (counted unsampled when
/// the cap or the timer refused it; not when the thread has just ended).
pub(super) fn register(
    inner: &mut Inner,
    tid: i32,
    bounds: Option<(usize, usize)>,
    foreign: bool,
    name: Option<String>,
) -> Option<(usize, u64, &'static Ring)> {
    let live = inner.active.iter().flatten().count();
    if live >= MAX_THREADS {
        inner.unsampled_threads += u64::from(inner.discovery.unsampled.insert(tid));
        return None;
    }
    let ring: &'static Ring = match inner.pool.pop() {
        Some(ring) => ring,
        None => Box::leak(Box::new(Ring::new())),
    };
    ring.head.store(0, SeqCst);
    ring.tail.store(0, SeqCst);
    ring.dropped.store(0, SeqCst);
    let (lo, hi) = bounds.unwrap_or((usize::MAX, 0));
    ring.stack_lo.store(lo, SeqCst);
    ring.stack_hi.store(hi, SeqCst);
    let slot = match inner.active.iter().position(Option::is_none) {
        Some(free) => free,
        None => {
            inner.active.push(None);
            inner.active.len() - 1
        }
    };
    let published = &SLOTS[slot];
    published.seen_sp.store(0, SeqCst);
    published
        .ring
        .store(ring as *const Ring as *mut Ring, SeqCst);
    published.tid.store(tid, SeqCst);
    let clock = if tid == gettid() {
        libc::CLOCK_THREAD_CPUTIME_ID
    } else {
        thread_clock(tid)
    };
    let mut timer: libc::timer_t = std::ptr::null_mut();
    // SAFETY: `event` is zeroed then filled as timer_create(2) says for SIGEV_THREAD_ID;
    // `timer` is written by the call.
    let created = unsafe {
        let mut event: libc::sigevent = std::mem::zeroed();
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = libc::SIGPROF;
        event.sigev_notify_thread_id = tid;
        event.sigev_value.sival_ptr = (slot + 1) as *mut libc::c_void;
        libc::timer_create(clock, &mut event, &mut timer) == 0
    };
    if !created {
        // No timer, so no signal names this slot: nothing to wait for.
        published.tid.store(0, SeqCst);
        published.ring.store(std::ptr::null_mut(), SeqCst);
        inner.pool.push(ring);
        // A discovered thread that has ended meanwhile (EINVAL) is not a thread refused.
        if !foreign || std::path::Path::new(&format!("/proc/self/task/{tid}")).exists() {
            inner.unsampled_threads += u64::from(inner.discovery.unsampled.insert(tid));
        }
        return None;
    }
    ring.timer.store(timer as usize, SeqCst);
    let index = inner.threads.len() as u32;
    inner.threads.push(SampledThread {
        tid: tid as u32,
        name,
    });
    inner.serial += 1;
    let serial = inner.serial;
    inner.active[slot] = Some(Active {
        ring,
        timer: timer as usize,
        index,
        serial,
        tid,
        foreign,
    });
    let period = 1_000_000_000 / i64::from(inner.hz.max(1));
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: period / 1_000_000_000,
            tv_nsec: period % 1_000_000_000,
        },
        it_value: libc::timespec {
            tv_sec: period / 1_000_000_000,
            tv_nsec: period % 1_000_000_000,
        },
    };
    // SAFETY: `timer` was just created; `spec` is a valid itimerspec.
    unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) };
    Some((slot, serial, ring))
}

/// The calling thread, already sampled as a discovered thread, takes its slot as its own
/// (it runs a probe now): its timer and ring stay, and its exit will stop them. Returns the
/// slot, serial and ring.
pub(super) fn adopt(inner: &mut Inner, tid: i32) -> Option<(usize, u64, &'static Ring)> {
    let (slot, active) = inner
        .active
        .iter_mut()
        .enumerate()
        .find_map(|(i, a)| a.as_mut().filter(|a| a.tid == tid).map(|a| (i, a)))?;
    active.foreign = false;
    Some((slot, active.serial, active.ring))
}

/// Empties `slot` so that no handler finds its ring any more, and waits for the handlers
/// inside it to leave (they are a few microseconds of a thread's signal handler, never
/// blocked on us: the handler takes no lock).
pub(super) fn retire(slot: usize) {
    let published = &SLOTS[slot];
    published.tid.store(0, SeqCst);
    published.ring.store(std::ptr::null_mut(), SeqCst);
    while published.busy.load(SeqCst) != 0 {
        std::thread::yield_now();
    }
}

/// The handler's way to a discovered thread's ring (the thread has no thread-local ring): the
/// slot the signal names, if it is this thread's; `record` writes the sample. Async-signal-safe:
/// atomics and `gettid`.
pub(super) fn on_signal(
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
    record: fn(&Ring, *mut libc::c_void),
) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let Some(info) = (unsafe { info.as_ref() }) else {
        return;
    };
    if info.si_code != libc::SI_TIMER {
        return;
    }
    // SAFETY: an SI_TIMER siginfo carries the timer's sigev_value.
    let slot = unsafe { info.si_value() }.sival_ptr as usize;
    let Some(published) = slot.checked_sub(1).and_then(|i| SLOTS.get(i)) else {
        return;
    };
    published.busy.fetch_add(1, SeqCst);
    if published.tid.load(SeqCst) == gettid() {
        let ring = published.ring.load(SeqCst);
        // SAFETY: a ring in a slot whose thread id is ours is a leaked ring, not retired
        // (retiring waits for `busy`).
        if let Some(ring) = unsafe { ring.as_ref() } {
            if ring.stack_hi.load(Relaxed) == 0 {
                if let Some(sp) = stack_pointer(context) {
                    published.seen_sp.store(sp, Relaxed);
                }
            }
            record(ring, context);
        }
    }
    published.busy.fetch_sub(1, SeqCst);
}

/// The stack pointer of an interrupted context.
fn stack_pointer(context: *mut libc::c_void) -> Option<usize> {
    // SAFETY: the kernel passes a valid `ucontext_t` to an SA_SIGINFO handler.
    let uc = unsafe { (context as *const libc::ucontext_t).as_ref()? };
    #[cfg(target_arch = "x86_64")]
    {
        Some(uc.uc_mcontext.gregs[libc::REG_RSP as usize] as usize)
    }
    #[cfg(target_arch = "aarch64")]
    {
        Some(uc.uc_mcontext.sp as usize)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = uc;
        None
    }
}

/// The ids of this process's threads (`/proc/self/task`).
fn list_threads() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Thread `tid`'s name (`/proc/self/task/TID/comm`).
fn thread_name(tid: i32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
    Some(comm.trim_end().to_owned()).filter(|n| !n.is_empty())
}

/// Whether the timer of a discovered thread is dead (its thread has ended).
fn timer_dead(timer: usize) -> bool {
    // SAFETY: `timer` is a live timer id of ours; `now` is written by the call.
    unsafe {
        let mut now: libc::itimerspec = std::mem::zeroed();
        libc::timer_gettime(timer as libc::timer_t, &mut now) != 0
            || (now.it_value.tv_sec == 0 && now.it_value.tv_nsec == 0)
    }
}

/// The read-write mappings of `/proc/self/maps` holding each of `points`, as `[lo, hi)`.
fn mappings_holding(points: &[usize]) -> Vec<Option<(usize, usize)>> {
    let mut found = vec![None; points.len()];
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return found;
    };
    for line in maps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !perms.starts_with("rw") {
            continue;
        }
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        else {
            continue;
        };
        for (point, found) in points.iter().zip(found.iter_mut()) {
            if (lo..hi).contains(point) {
                *found = Some((lo, hi));
            }
        }
    }
    found
}

/// One scan (under the sampler's lock): discovered threads that ended give their slots back,
/// threads without a timer get one, and discovered threads whose stack pointer the handler
/// noted get their stack's bounds. `skip` is the sampler's own thread.
pub(super) fn scan(inner: &mut Inner, skip: Option<i32>) {
    // Ended threads first: a reused thread id is then free to be registered again.
    for slot in 0..inner.active.len() {
        let dead = inner.active[slot]
            .as_ref()
            .is_some_and(|a| a.foreign && timer_dead(a.timer));
        if dead {
            if let Some(thread) = inner.active[slot].take() {
                // SAFETY: the timer was made by `timer_create` and is deleted once (taken).
                unsafe { libc::timer_delete(thread.timer as libc::timer_t) };
                retire(slot);
                inner.counts.drain(thread.ring, thread.index);
                inner.pool.push(thread.ring);
            }
        }
    }
    let sampled: HashSet<i32> = inner.active.iter().flatten().map(|a| a.tid).collect();
    for tid in list_threads() {
        if Some(tid) == skip || sampled.contains(&tid) || inner.discovery.unsampled.contains(&tid) {
            continue;
        }
        let name = thread_name(tid);
        register(inner, tid, None, true, name);
    }
    // Bounds from the stack pointers the handlers saw.
    let mut waiting = Vec::new();
    for (slot, active) in inner.active.iter().enumerate() {
        if let Some(active) = active {
            let sp = SLOTS[slot].seen_sp.load(Relaxed);
            if active.ring.stack_hi.load(Relaxed) == 0 && sp != 0 {
                waiting.push((active.ring, sp));
            }
        }
    }
    if waiting.is_empty() {
        return;
    }
    let points: Vec<usize> = waiting.iter().map(|&(_, sp)| sp).collect();
    for ((ring, _), bounds) in waiting.into_iter().zip(mappings_holding(&points)) {
        if let Some((lo, hi)) = bounds {
            set_bounds(ring, lo, hi);
        }
    }
}

/// Gives `ring`, whose bounds are unknown (`[usize::MAX, 0)`), the bounds `[lo, hi)`: low
/// first, so that a handler reading between the two stores sees an empty range either way.
pub(super) fn set_bounds(ring: &Ring, lo: usize, hi: usize) {
    ring.stack_lo.store(lo, SeqCst);
    ring.stack_hi.store(hi, SeqCst);
}
