//! Every thread of the program sampled, not only those that run a probe: the means `cpu.rs`
//! uses for it (cold path, but for [`on_signal`]), knowing nothing of its rings (`cpu.rs` names
//! this module, not the other way round).
//!
//! - **Discovery.** When the sampler starts, and then every [`RESCAN_TICKS`] drains (200 ms) on
//!   the sampler's own thread, `/proc/self/task` is listed and each thread that has no clock
//!   yet gets one: a task-clock event of that thread (`perf.rs`), or a `timer_create` on *that*
//!   thread's CPU clock (the clock id glibc's `pthread_getcpuclockid` makes from a thread id),
//!   `SIGEV_THREAD_ID` to it; its ring reserved and published in [`SLOTS`] before the clock
//!   is armed. The sampler's own thread is left
//!   out. A thread that starts and ends between two scans, and runs no probe, is not sampled.
//!   The cap on threads sampled at once is [`SLOTS_LEN`]; threads over it are counted once
//!   each (the warning at the end).
//! - **Which ring.** Every timer carries its slot (`sigev_value` = slot + 1); an event's
//!   signal carries its descriptor, which `perf.rs` maps to the slot. The handler takes
//!   the ring of the slot the signal names when the slot's thread id is its own (a signal of a
//!   deleted timer may still arrive; a slot may have been given to another thread since), else
//!   the thread's thread-local ring if it has one. The slot comes first: the thread-local ring
//!   of a thread that registered itself in an earlier sampling period is drained no more, and
//!   the slot is what samples that thread in the next one. A counter of handlers inside the slot lets the cold path retire a slot (clear it,
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
//!   `timer_delete` on it succeeds and frees it; its ring is drained and goes back to the pool
//!   (`a_thread_that_runs_no_probe_and_ends_gives_its_timer_back` watches `/proc/self/timers`,
//!   and the owners of the perf event descriptors).
//!   A thread id reused by a new thread between two scans is seen the same way (the old
//!   timer, bound to the old thread, is dead) and the new thread gets a timer of its own. A
//!   thread's task-clock event is found dead when its thread's start time ([`start_time`])
//!   is gone or differs from the one read when the event was opened (a reused id; `perf.rs`):
//!   it is disabled, unmapped and closed.

use std::collections::HashSet;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU32, AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};

/// Drains (50 ms each) between two scans of `/proc/self/task`.
pub(super) const RESCAN_TICKS: u32 = 4;

/// Slots: the most threads sampled at once.
pub(super) const SLOTS_LEN: usize = 1024;

/// One slot of a thread sampled: what the handler needs to find its ring from the signal.
struct Slot {
    /// The thread's id; 0 when the slot is free.
    tid: AtomicI32,
    /// The address of its ring (`cpu.rs`'s), 0 when none.
    ring: AtomicUsize,
    /// Handlers inside this slot now (see [`retire`]).
    busy: AtomicU32,
    /// Whether the thread's stack bounds are still unknown (the handler then notes `seen_sp`).
    need_sp: AtomicBool,
    /// A stack pointer the handler saw on the thread, while `need_sp`.
    seen_sp: AtomicUsize,
}

/// The slots, indexed as `cpu.rs`'s active threads.
static SLOTS: [Slot; SLOTS_LEN] = [const {
    Slot {
        tid: AtomicI32::new(0),
        ring: AtomicUsize::new(0),
        busy: AtomicU32::new(0),
        need_sp: AtomicBool::new(false),
        seen_sp: AtomicUsize::new(0),
    }
}; SLOTS_LEN];

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

/// Puts `ring` (an address that stays valid for the life of the process) in `slot` for thread
/// `tid`, before its timer exists. `bounds_known`: whether the ring already has its thread's
/// stack bounds (else the handler notes a stack pointer for [`seen_stack_pointer`]).
pub(super) fn publish(slot: usize, tid: i32, ring: usize, bounds_known: bool) {
    let published = &SLOTS[slot];
    published.seen_sp.store(0, SeqCst);
    published.need_sp.store(!bounds_known, SeqCst);
    published.ring.store(ring, SeqCst);
    published.tid.store(tid, SeqCst);
}

/// A timer of thread `tid`'s CPU clock that sends `SIGPROF` to that thread, carrying `slot`
/// (unarmed); `None` when the kernel refuses (the thread has ended, or no more timers).
pub(super) fn create_timer(tid: i32, slot: usize) -> Option<usize> {
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
    created.then_some(timer as usize)
}

/// Arms `timer` to expire every `1/hz` s of its thread's CPU time.
pub(super) fn arm(timer: usize, hz: u32) {
    let period = 1_000_000_000 / i64::from(hz.max(1));
    let every = libc::timespec {
        tv_sec: period / 1_000_000_000,
        tv_nsec: period % 1_000_000_000,
    };
    let spec = libc::itimerspec {
        it_interval: every,
        it_value: every,
    };
    // SAFETY: `timer` was made by `timer_create`; `spec` is a valid itimerspec.
    unsafe { libc::timer_settime(timer as libc::timer_t, 0, &spec, std::ptr::null_mut()) };
}

/// Empties `slot` so that no handler finds its ring any more, and waits for the handlers
/// inside it to leave (they are a few microseconds of a thread's signal handler, never
/// blocked on us: the handler takes no lock).
pub(super) fn retire(slot: usize) {
    let published = &SLOTS[slot];
    published.tid.store(0, SeqCst);
    published.ring.store(0, SeqCst);
    while published.busy.load(SeqCst) != 0 {
        std::thread::yield_now();
    }
}

/// The handler's way to a thread's ring: the slot the signal names, if it is this thread's;
/// `record` gets the ring's address and writes the sample. Returns whether it did (not for a
/// signal that names no slot of this thread: a deleted timer's, or one sent by hand).
/// Async-signal-safe: atomics and `gettid`.
pub(super) fn on_signal(
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
    record: impl FnOnce(usize),
) -> bool {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let Some(info) = (unsafe { info.as_ref() }) else {
        return false;
    };
    let slot = if info.si_code == libc::SI_TIMER {
        // SAFETY: an SI_TIMER siginfo carries the timer's sigev_value.
        (unsafe { info.si_value() }.sival_ptr as usize).checked_sub(1)
    } else if super::perf::POLL_CODES.contains(&info.si_code) {
        // A task-clock event's signal: its descriptor names the slot.
        super::perf::slot_of(info)
    } else {
        None
    };
    let Some(published) = slot.and_then(|i| SLOTS.get(i)) else {
        return false;
    };
    let mut recorded = false;
    published.busy.fetch_add(1, SeqCst);
    if published.tid.load(SeqCst) == gettid() {
        let ring = published.ring.load(SeqCst);
        if ring != 0 {
            if published.need_sp.load(Relaxed) {
                if let Some(sp) = stack_pointer(context) {
                    published.seen_sp.store(sp, Relaxed);
                }
            }
            // Not retired while `busy` counts this handler.
            record(ring);
            recorded = true;
        }
    }
    published.busy.fetch_sub(1, SeqCst);
    recorded
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

/// A stack pointer the handler saw on the thread of `slot`, while its bounds are unknown.
pub(super) fn seen_stack_pointer(slot: usize) -> Option<usize> {
    let published = &SLOTS[slot];
    let sp = published.seen_sp.load(Relaxed);
    (published.need_sp.load(Relaxed) && sp != 0).then_some(sp)
}

/// The thread of `slot` has its stack bounds: the handler stops noting stack pointers.
pub(super) fn bounds_known(slot: usize) {
    SLOTS[slot].need_sp.store(false, Relaxed);
}

/// The ids of this process's threads (`/proc/self/task`).
pub(super) fn list_threads() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// When thread `tid` of this process started (clock ticks after boot, `/proc/self/task/TID/stat`'s
/// 22nd field), `None` when it is gone: with its id, it tells a thread from a later one that
/// reused the id.
pub(super) fn start_time(tid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // The name, in parentheses, may hold spaces: the fields after it start at the 3rd.
    let (_, after) = stat.rsplit_once(')')?;
    after.split_ascii_whitespace().nth(22 - 3)?.parse().ok()
}

/// Whether thread `tid` of this process is alive.
pub(super) fn alive(tid: i32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
}

/// Thread `tid`'s name (`/proc/self/task/TID/comm`).
pub(super) fn thread_name(tid: i32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
    Some(comm.trim_end().to_owned()).filter(|n| !n.is_empty())
}

/// Whether the timer of a thread a scan found is dead (its thread has ended).
pub(super) fn timer_dead(timer: usize) -> bool {
    // SAFETY: `timer` is a live timer id of ours; `now` is written by the call.
    unsafe {
        let mut now: libc::itimerspec = std::mem::zeroed();
        libc::timer_gettime(timer as libc::timer_t, &mut now) != 0
            || (now.it_value.tv_sec == 0 && now.it_value.tv_nsec == 0)
    }
}

/// The read-write mappings of `/proc/self/maps` holding each of `points`, as `[lo, hi)`.
pub(super) fn mappings_holding(points: &[usize]) -> Vec<Option<(usize, usize)>> {
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
