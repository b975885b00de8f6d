//! The sampler's preferred clock (Linux): a per-thread `perf_event_open` task-clock event
//! (`PERF_TYPE_SOFTWARE`, `PERF_COUNT_SW_TASK_CLOCK`, user time only) whose overflow every
//! `1/hz` s of the thread's CPU time sends `SIGPROF` to that thread (`O_ASYNC`, `F_SETSIG`,
//! `F_SETOWN_EX` with `F_OWNER_TID`). The event is driven by a high-resolution timer, not the
//! scheduler's tick: at 1 kHz a thread gets one signal per period, where a `timer_create` timer
//! of its CPU clock gets one per tick with an overrun count (`threads.rs`). No ring buffer is
//! mapped: the signal alone is the sample.
//!
//! - **Which ring.** The signal's `siginfo` carries the event's descriptor (`si_fd`, `si_code`
//!   `POLL_IN`); [`FDS`] maps a descriptor to its slot (`threads.rs`), filled on the cold path
//!   before the event is enabled. Descriptors are small integers; one at or past [`FDS_LEN`],
//!   or past half the process's limit on descriptors, is not used (the thread gets a timer
//!   instead, see [`FD_CAP`]). The handler still checks the slot's thread id
//!   against its own: a descriptor closed and then reused for another thread's event may route
//!   a signal still pending for the first thread to the second's slot, whose thread id is not
//!   the first's, so it is refused there.
//! - **Threads that end.** Nothing on the event says so (`poll` reports an event without a
//!   ring buffer hung up whether or not its thread lives), so a scan compares the thread's
//!   start time (`/proc/self/task/TID/stat`) with the one read when the event was opened:
//!   gone, or another thread under a reused id, and the event is retired.
//! - **Retiring.** An event is disabled (`PERF_EVENT_IOC_DISABLE`: also a copy of its
//!   descriptor a forked child holds stops counting), its descriptor unmapped, its slot
//!   retired, then closed.
//! - **Fork and exec.** The descriptor is close-on-exec; the event is not inherited by a forked
//!   child's threads (no `inherit` bit), and its signals go to the thread that owns it in the
//!   parent, never to the child.
//! - **Refused.** `perf_event_open` fails under `perf_event_paranoid` 3 (Debian's default on
//!   some kernels), a seccomp filter (containers), or a kernel without perf events; the
//!   sampler then uses the timers for the whole session, and says so once.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::SeqCst};

/// Descriptors the handler can route: an event whose descriptor is at or past this is closed
/// and its thread gets a timer instead.
pub(super) const FDS_LEN: usize = 4096;

/// The first descriptor not used for an event: [`FDS_LEN`], or half the process's soft limit
/// on descriptors (`RLIMIT_NOFILE`, read by [`available`]) when that is less. Descriptors are
/// given lowest first, so an event at or past it means the program's table is half full: the
/// thread gets a timer, and the program keeps the other half (1,024 threads would otherwise
/// take every descriptor of the usual limit of 1,024).
static FD_CAP: AtomicUsize = AtomicUsize::new(FDS_LEN);

/// Descriptor -> slot + 1 (0: none), for the handler.
static FDS: [AtomicU32; FDS_LEN] = [const { AtomicU32::new(0) }; FDS_LEN];

/// `PERF_TYPE_SOFTWARE`.
const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_TASK_CLOCK`.
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `PERF_EVENT_IOC_ENABLE`: `_IO('$', 0)`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE`: `_IO('$', 1)`.
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
/// `fcntl`'s `F_SETSIG`.
const F_SETSIG: libc::c_int = 10;
/// `fcntl`'s `F_SETOWN_EX`.
const F_SETOWN_EX: libc::c_int = 15;
/// `f_owner_ex`'s `F_OWNER_TID`.
const F_OWNER_TID: libc::c_int = 0;
/// The `si_code` of a descriptor's `O_ASYNC` signal: `POLL_IN` (1) to `POLL_HUP` (6).
pub(super) const POLL_CODES: std::ops::RangeInclusive<libc::c_int> = 1..=6;

/// `struct perf_event_attr` as of its first version (`PERF_ATTR_SIZE_VER0`, 64 bytes), which
/// every kernel with perf events takes.
#[repr(C)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// Bit 0 `disabled`, 5 `exclude_kernel`, 6 `exclude_hv` (`inherit`, bit 1, left clear).
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// `struct f_owner_ex`.
#[repr(C)]
struct OwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// The head of a `siginfo_t` sent for a descriptor (`SIGPOLL`'s fields).
#[repr(C)]
struct PollInfo {
    signo: libc::c_int,
    errno: libc::c_int,
    code: libc::c_int,
    band: libc::c_long,
    fd: libc::c_int,
}

/// Opens a disabled task-clock event of thread `tid` (0: the calling thread) that overflows
/// every `1/hz` s of its user CPU time; its descriptor, or the kernel's refusal.
pub(super) fn open(tid: i32, hz: u32) -> Result<i32, std::io::Error> {
    let attr = Attr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<Attr>() as u32,
        config: PERF_COUNT_SW_TASK_CLOCK,
        sample_period: 1_000_000_000 / u64::from(hz.max(1)),
        sample_type: 0,
        read_format: 0,
        flags: 1 | (1 << 5) | (1 << 6),
        wakeup_events: 1,
        bp_type: 0,
        config1: 0,
    };
    // SAFETY: `attr` is a valid perf_event_attr of the size it states, alive for the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            tid as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd as i32)
}

/// Whether this process may sample its threads with task-clock events: `Err` with the
/// kernel's refusal, in words, when not (an event of the calling thread is opened and closed).
pub(super) fn available(hz: u32) -> Result<(), String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is written by the call.
    let cap = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        usize::try_from(limit.rlim_cur / 2)
            .unwrap_or(FDS_LEN)
            .min(FDS_LEN)
    } else {
        FDS_LEN
    };
    FD_CAP.store(cap, SeqCst);
    match open(0, hz) {
        Ok(fd) => {
            close(fd);
            Ok(())
        }
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::EACCES | libc::EPERM) => {
                    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                        .map(|p| format!("perf_event_paranoid is {}", p.trim()))
                        .unwrap_or_else(|_| "perf_event_paranoid unreadable".into());
                    format!("{paranoid}, or a seccomp filter refuses it")
                }
                Some(libc::ENOSYS | libc::ENOENT | libc::EOPNOTSUPP) => {
                    "this kernel has no perf events".into()
                }
                _ => "refused".into(),
            };
            Err(format!("perf_event_open: {e}: {why}"))
        }
    }
}

/// Routes the signals of event `fd` to `slot` (for the handler) and to thread `tid`, then
/// enables it. `false` when it is not (`fd` at or past [`FD_CAP`], or `fcntl` refused): the
/// caller closes it.
pub(super) fn route_and_enable(fd: i32, tid: i32, slot: usize) -> bool {
    let Some(entry) = usize::try_from(fd)
        .ok()
        .filter(|&i| i < FD_CAP.load(SeqCst))
        .and_then(|i| FDS.get(i))
    else {
        return false;
    };
    entry.store(slot as u32 + 1, SeqCst);
    let owner = OwnerEx {
        kind: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: `fd` is our open event; the arguments are those fcntl(2) and perf_event_open(2)
    // give these commands.
    let routed = unsafe {
        libc::fcntl(fd, F_SETSIG, libc::SIGPROF) == 0
            && libc::fcntl(fd, F_SETOWN_EX, &owner as *const OwnerEx) == 0
            && libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) == 0
            && libc::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0
    };
    if !routed {
        entry.store(0, SeqCst);
    }
    routed
}

/// Stops event `fd` counting and signalling (a forked child's copy of the descriptor too) and
/// unmaps it: no handler finds a slot through it any more. The caller retires the slot, then
/// [`close`]s it.
pub(super) fn disable(fd: i32) {
    // SAFETY: `fd` is our open event.
    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) };
    if let Some(entry) = usize::try_from(fd).ok().and_then(|i| FDS.get(i)) {
        entry.store(0, SeqCst);
    }
}

/// Closes event `fd` (disabled and unmapped first, see [`disable`]).
pub(super) fn close(fd: i32) {
    // SAFETY: `fd` is ours, closed once.
    unsafe { libc::close(fd) };
}

/// The slot the descriptor of an `O_ASYNC` signal's `info` maps to, if any. Async-signal-safe.
pub(super) fn slot_of(info: &libc::siginfo_t) -> Option<usize> {
    // SAFETY: a siginfo with a POLL_* code carries SIGPOLL's fields, laid out as `PollInfo`.
    let fd = unsafe { (*(info as *const libc::siginfo_t as *const PollInfo)).fd };
    let mapped = FDS.get(usize::try_from(fd).ok()?)?.load(SeqCst);
    (mapped as usize).checked_sub(1)
}
