//! The CPU sampler (Linux): a clock per thread, the `SIGPROF` handler, the rings it writes,
//! the drain, and the symbols resolved at the end.
//!
//! - Each sampled thread gets a clock of its own CPU time that signals that thread: a
//!   task-clock perf event (`perf.rs`; a high-resolution timer, one signal per period) where
//!   the kernel allows it, else a timer of its CPU clock (`timer_create` on its thread CPU
//!   clock, `SIGEV_THREAD_ID` to it; `threads.rs`). A thread is sampled for the CPU time it
//!   uses, and the signal lands on the thread that used it. (A process-wide
//!   `setitimer(ITIMER_PROF)` lets the kernel pick the thread, which attributes by who runs at
//!   the tick rather than who used the time.) The kernel checks CPU timers at its tick, so at
//!   rates above the tick rate one timer signal may stand for several expirations: each such
//!   sample is weighted by `1 + timer_getoverrun`. The session picks the clock once at start
//!   (`PROF_CPU_SAMPLE_CLOCK`); a thread whose event cannot be opened or routed (out of
//!   descriptors) gets a timer.
//! - Which threads: every thread of the process (`threads.rs` scans `/proc/self/task` at start
//!   and every 200 ms), and a thread that runs a probe registers itself at once.
//! - The handler is async-signal-safe: it reads two thread-locals (the ring, the open events;
//!   both const-initialized, without destructors; the ring is the one of the slot the
//!   timer's signal carries, when that slot is the thread's, else the thread-local one), walks
//!   the frame pointers from the interrupted context, reading only inside the thread's stack
//!   (bounds taken at registration, or read by a scan for a thread it found), and writes one
//!   fixed-size record into the ring, or counts a drop when the ring is full. In `trace` and
//!   `continuous` modes on the CPU clock the record also holds the sample's time: a mark of the
//!   session's clock, the one the events' marks are (the time-stamp counter, or
//!   `clock_gettime(CLOCK_MONOTONIC)` where it is not trusted; both async-signal-safe). No
//!   allocation, lock or call other than `timer_getoverrun` (timers only), `gettid` and that
//!   clock; `errno` is kept.
//! - A thread of ours drains the rings every 50 ms into counts of identical stacks (cold path,
//!   under a lock), and, when times are kept, each sample's time and stack (at most
//!   [`SampleTimeline::BOUND`]): `trace` mode places them on the events' time line at the end
//!   (`cpu_samples.timeline`); `continuous` mode's writer takes each window's out
//!   ([`collect_window`]). At thread exit the thread's timer is deleted (for a thread a scan
//!   found, at the scan that finds it ended; a thread's event is disabled, then closed), its
//!   ring drained and put back into a pool for the
//!   next thread, so memory follows the threads alive, not the threads
//!   ever started. At the end the timers are deleted, the rings drained, and the addresses
//!   resolved (the `backtrace` crate: symbol tables and debug info, in-process, so that
//!   addresses need no relocation); an address no symbol covers (a stripped binary) stays an
//!   address.
//! - The stack is captured through frame pointers: complete for code built with
//!   `-C force-frame-pointers=yes` (the standard library is), else the sampled function and
//!   whatever callers keep a frame pointer. Stacks deeper than [`FRAMES`] are truncated.

use std::cell::{Cell, UnsafeCell};
use std::collections::HashMap;
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use profiler_format::{CpuSamples, SampleTimeline, SampledFunction, SampledStack, SampledThread};

use super::open::{innermost_or_inherited, OPEN};
use super::perf;
use super::threads;
use crate::instrument::clock::CpuClock;
use crate::register::registry::registry;
use crate::select::config::SampleClock;
use crate::sync::lock;

/// Frames kept per sample.
pub(crate) const FRAMES: usize = 64;
/// Records per thread's ring: 4 s at 1 kHz, drained every 50 ms.
const RECORDS: usize = 4096;
/// The most threads sampled at once; later ones are not sampled (counted).
const MAX_THREADS: usize = threads::SLOTS_LEN;

/// The clock the handler reads each sample's time from (the session's CPU clock, whose marks
/// the events' are), null when no time is kept: `trace` mode draws the samples on the events'
/// time line, `continuous` mode cuts them into windows. A leaked session's, never freed.
static CLOCK: AtomicPtr<CpuClock> = AtomicPtr::new(std::ptr::null_mut());

/// What the sampler keeps of each sample's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Times {
    /// Nothing: the stacks are counted.
    Off,
    /// When each sample was taken, for `cpu_samples.timeline` (`trace` mode).
    Timeline,
    /// When each sample was taken, until the window it falls in is collected
    /// ([`collect_window`]; `continuous` mode).
    Windows,
}

/// One sample, as the handler writes it.
struct Record {
    /// The session clock's mark when it was taken (0 when no time is kept).
    time: u64,
    /// Registry index + 1 of the innermost open event, 0 for none.
    tag: u32,
    /// Frames stored.
    depth: u16,
    /// Bit 0: the stack was deeper than [`FRAMES`]; bit 1: the open events were deeper than
    /// the stack of them keeps.
    flags: u16,
    /// Timer expirations this sample stands for.
    weight: u32,
    frames: [usize; FRAMES],
}

/// A thread's samples: written by the handler on that thread, read by the drain.
struct Ring {
    records: Box<[UnsafeCell<Record>]>,
    /// Records written (the handler's, released after the record).
    head: AtomicUsize,
    /// Records read (the drain's).
    tail: AtomicUsize,
    dropped: AtomicU64,
    /// The thread's stack, `[lo, hi)`: the only memory the frame walk reads.
    stack_lo: AtomicUsize,
    stack_hi: AtomicUsize,
    /// The thread's timer (`timer_t`), for `timer_getoverrun`, when `overruns`.
    timer: AtomicUsize,
    /// Whether the thread is sampled by a timer (whose overruns weigh its samples), not a
    /// task-clock event (one signal per period).
    overruns: AtomicBool,
}

// SAFETY: a record is written only by the handler of the ring's thread, at `head`, before
// `head` is released past it, and read by the drain only below `head` and at or past `tail`,
// which the handler does not write until the drain has released `tail` past it.
unsafe impl Sync for Ring {}

impl Ring {
    fn new() -> Ring {
        // Zeroed by the allocator, not written here: a ring (about 2 MiB) is then backed by
        // fresh zero pages that become resident only as far as the handler writes records,
        // rather than all of it at once for every thread sampled.
        // SAFETY: a record is plain integers (and `UnsafeCell` is transparent), for which all
        // zero bits is a valid value.
        let records =
            unsafe { Box::<[UnsafeCell<Record>]>::new_zeroed_slice(RECORDS).assume_init() };
        Ring {
            records,
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            stack_lo: AtomicUsize::new(0),
            stack_hi: AtomicUsize::new(0),
            timer: AtomicUsize::new(0),
            overruns: AtomicBool::new(false),
        }
    }
}

thread_local! {
    /// This thread's ring, null when it is not sampled (read by the handler).
    static RING: Cell<*const Ring> = const { Cell::new(std::ptr::null()) };
    /// Its registration, whose drop (at thread exit) stops the timer and gives the ring back.
    static EXIT: Cell<Option<Registered>> = const { Cell::new(None) };
}

/// The registration of one thread: dropped at its exit.
struct Registered {
    slot: usize,
    /// Which registration it is (a slot is reused once a registration leaves it).
    serial: u64,
    ring: &'static Ring,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = RING.try_with(|r| r.set(std::ptr::null()));
        if !state().owned() {
            return; // a forked child's copy: the parent's to undo
        }
        let mut state = lock(&state().inner);
        let inner = &mut *state;
        let slot = inner.active.get_mut(self.slot);
        if let Some(slot) = slot.filter(|s| s.as_ref().is_some_and(|a| a.serial == self.serial)) {
            if let Some(thread) = slot.take() {
                thread.clock.stop(self.slot);
                inner.counts.drain(thread.ring, thread.index);
            }
        }
        // No signal writes into the ring any more: this thread no longer points at it.
        inner.pool.push(self.ring);
    }
}

/// What interrupts a sampled thread.
#[derive(Clone, Copy, Debug)]
enum Clock {
    /// A task-clock event (`perf.rs`): its descriptor, and when its thread started
    /// (`threads::start_time`, `None` when it could not be read).
    Perf(i32, Option<u64>),
    /// A timer of the thread's CPU clock (`threads.rs`): its `timer_t`.
    Posix(usize),
}

impl Clock {
    /// Stops it for good and retires `slot`, its thread's, so that no handler finds the ring
    /// through it any more (taken once: the caller took the thread out of `active`).
    fn stop(self, slot: usize) {
        match self {
            Clock::Perf(fd, _) => {
                perf::disable(fd);
                threads::retire(slot);
                perf::close(fd);
            }
            Clock::Posix(timer) => {
                // SAFETY: the timer was made by `timer_create` and is deleted once.
                unsafe { libc::timer_delete(timer as libc::timer_t) };
                threads::retire(slot);
            }
        }
    }

    /// Whether the thread it samples, `tid`, has ended (a thread that reused its id is
    /// another).
    fn thread_ended(self, tid: i32) -> bool {
        match self {
            Clock::Perf(_, started) => {
                let now = threads::start_time(tid);
                now.is_none() || (started.is_some() && now != started)
            }
            Clock::Posix(timer) => threads::timer_dead(timer),
        }
    }
}

/// Signals that found no ring: a signal of a stopped timer or event still pending, or one no
/// slot of its thread claims (counted by the handler, reported at the end).
static UNROUTED: AtomicU64 = AtomicU64::new(0);

/// A registered thread that is still sampled.
struct Active {
    ring: &'static Ring,
    clock: Clock,
    /// Index into the threads' table.
    index: u32,
    serial: u64,
    /// The thread's id.
    tid: i32,
    /// Registered by a scan of the threads (`threads.rs`), not by the thread itself: its ring
    /// is not its thread-local one, and goes back to the pool when sampling stops or a scan
    /// finds the thread ended.
    foreign: bool,
}

/// The sampler's cold-path state.
struct Inner {
    hz: u32,
    /// Whether threads get task-clock events (`perf.rs`; else timers).
    perf: bool,
    /// Threads that got a timer although the session samples with task-clock events (their
    /// event could not be opened or routed: out of descriptors).
    timer_threads: u64,
    active: Vec<Option<Active>>,
    pool: Vec<&'static Ring>,
    threads: Vec<SampledThread>,
    counts: Counts,
    unsampled_threads: u64,
    serial: u64,
    /// The names of the addresses resolved so far (`continuous` mode resolves each window's).
    symbols: HashMap<usize, Vec<String>>,
    discovery: threads::Discovery,
}

/// What makes two samples the same: (thread, tag, flags, frames).
type StackKey = (u32, u32, u16, Box<[usize]>);

/// Identical samples counted: each distinct [`StackKey`] numbered, with its weight; and, when
/// times are kept, each sample's time and key, at most [`SampleTimeline::BOUND`] of them.
struct Counts {
    ids: HashMap<StackKey, u32>,
    keys: Vec<StackKey>,
    weights: Vec<u64>,
    times: Times,
    /// `(time, key, weight)` of each sample, each thread's in the order taken.
    timed: Vec<(u64, u32, u32)>,
    /// Samples whose time could not be kept (past the bound).
    untimed: u64,
    taken: u64,
    dropped: u64,
}

impl Counts {
    fn new(times: Times) -> Counts {
        Counts {
            ids: HashMap::new(),
            keys: Vec::new(),
            weights: Vec::new(),
            times,
            timed: Vec::new(),
            untimed: 0,
            taken: 0,
            dropped: 0,
        }
    }

    /// Reads every record `ring` holds (under the sampler's lock).
    fn drain(&mut self, ring: &Ring, thread: u32) {
        let head = ring.head.load(Acquire);
        let mut tail = ring.tail.load(Relaxed);
        while tail < head {
            // SAFETY: below `head` (acquired), at or past `tail`: written and not rewritten
            // until `tail` is released past it (see `Ring`).
            let record = unsafe { &*ring.records[tail % RECORDS].get() };
            let frames: Box<[usize]> = record.frames[..usize::from(record.depth)].into();
            let weight = record.weight.max(1);
            let key = (thread, record.tag, record.flags, frames);
            let id = match self.ids.get(&key) {
                Some(&id) => id,
                None => {
                    let id = self.keys.len() as u32;
                    self.keys.push(key.clone());
                    self.weights.push(0);
                    self.ids.insert(key, id);
                    id
                }
            };
            self.weights[id as usize] += u64::from(weight);
            self.taken += u64::from(weight);
            if self.times != Times::Off {
                if self.timed.len() < SampleTimeline::BOUND {
                    self.timed.push((record.time, id, weight));
                } else {
                    self.untimed += 1;
                }
            }
            tail += 1;
        }
        ring.tail.store(tail, Release);
        self.dropped += ring.dropped.swap(0, Relaxed);
    }
}

struct Sampler {
    inner: Mutex<Inner>,
    running: AtomicBool,
    /// The process that started sampling: a process forked from it copies `running` and the
    /// lock (held, if the reader thread held it at the fork), but samples nothing, and its
    /// threads' exits touch neither (a perf event's descriptor is shared with the parent:
    /// disabling it in the child would stop the parent's thread).
    owner: AtomicU32,
    /// Which sampling period runs: the reader thread of an earlier one stops even when a new
    /// one started before it looked.
    period: AtomicU64,
}

impl Sampler {
    /// Whether this process is the one sampling (not a child forked from it).
    fn owned(&self) -> bool {
        self.owner.load(SeqCst) == std::process::id()
    }
}

fn state() -> &'static Sampler {
    static STATE: OnceLock<Sampler> = OnceLock::new();
    STATE.get_or_init(|| Sampler {
        inner: Mutex::new(Inner {
            hz: 0,
            perf: false,
            timer_threads: 0,
            active: Vec::new(),
            pool: Vec::new(),
            threads: Vec::new(),
            counts: Counts::new(Times::Off),
            unsampled_threads: 0,
            serial: 0,
            symbols: HashMap::new(),
            discovery: threads::Discovery::default(),
        }),
        owner: AtomicU32::new(0),
        period: AtomicU64::new(0),
        running: AtomicBool::new(false),
    })
}

/// Whether `SIGPROF` is still at its default disposition.
fn sigprof_is_free() -> bool {
    // SAFETY: a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGPROF, std::ptr::null(), &mut old) == 0
            && (old.sa_sigaction == libc::SIG_DFL
                || old.sa_sigaction == on_sigprof as *const () as libc::sighandler_t)
    }
}

/// Installs the handler and the drain; threads are registered as they come. With `times`
/// other than [`Times::Off`], the handler reads `clock` for each sample's time. `source`: which
/// clock interrupts the threads ([`SampleClock::Auto`]: task-clock events when the kernel
/// allows them, else timers, said once on stderr).
pub(crate) fn start(
    hz: u32,
    times: Times,
    clock: Option<&'static CpuClock>,
    source: SampleClock,
) -> Result<(), String> {
    let sampler = state();
    if sampler.running.load(SeqCst) {
        return Err("a sampler is already running in this process".into());
    }
    if !sigprof_is_free() {
        return Err(
            "the program handles SIGPROF itself (another profiler?); PROF_CPU_SAMPLE is \
             ignored, and the program's handler kept"
                .into(),
        );
    }
    // SAFETY: the action is zeroed then filled as sigaction(2) says; `on_sigprof` is
    // async-signal-safe (see the module's documentation).
    let installed = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigprof as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGPROF, &action, std::ptr::null_mut()) == 0
    };
    if !installed {
        return Err(format!(
            "cannot handle SIGPROF ({})",
            std::io::Error::last_os_error()
        ));
    }
    let perf = match source {
        SampleClock::Posix => false,
        SampleClock::Auto => match perf::available(hz) {
            Ok(()) => true,
            Err(why) => {
                say!(
                    "profiler-core: CPU samples come from POSIX CPU-time timers, checked at the \
                     kernel's tick (one signal may stand for several periods), not from a \
                     perf_event task clock ({why})"
                );
                false
            }
        },
    };
    {
        let mut inner = lock(&sampler.inner);
        inner.hz = hz;
        inner.perf = perf;
        inner.timer_threads = 0;
        UNROUTED.store(0, SeqCst);
        inner.threads.clear();
        let times = if clock.is_some() { times } else { Times::Off };
        inner.counts = Counts::new(times);
        inner.unsampled_threads = 0;
        inner.symbols.clear();
        let clock = clock
            .filter(|_| times != Times::Off)
            .map_or(std::ptr::null_mut(), |c| {
                c as *const CpuClock as *mut CpuClock
            });
        CLOCK.store(clock, SeqCst);
        inner.discovery = threads::Discovery::default();
    }
    sampler.owner.store(std::process::id(), SeqCst);
    let period = sampler.period.fetch_add(1, SeqCst) + 1;
    sampler.running.store(true, SeqCst);
    // Every thread alive now is sampled from here on; later ones are found by the scans.
    scan(&mut lock(&sampler.inner), None);
    let spawned = crate::sync::spawn("profiler-sampler", move || {
        let sampler = state();
        let me = threads::gettid();
        let mut ticks = 0u32;
        while sampler.running.load(SeqCst) && sampler.period.load(SeqCst) == period {
            std::thread::sleep(Duration::from_millis(50));
            let mut inner = lock(&sampler.inner);
            let inner = &mut *inner;
            ticks += 1;
            if ticks.is_multiple_of(threads::RESCAN_TICKS) && sampler.running.load(SeqCst) {
                scan(inner, Some(me));
            }
            for thread in inner.active.iter().flatten() {
                inner.counts.drain(thread.ring, thread.index);
            }
        }
    });
    if let Err(e) = spawned {
        // The timers of the first scan stop.
        let _ = stop_and_collect(&|_| None, false);
        return Err(format!(
            "cannot start the thread that reads the samples ({e})"
        ));
    }
    Ok(())
}

/// The calling thread's stack, `[lo, hi)`.
fn stack_bounds() -> Option<(usize, usize)> {
    // SAFETY: `attr` is initialized by `pthread_getattr_np` before it is read, and destroyed
    // once.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        ok.then(|| (addr as usize, addr as usize + size))
    }
}

/// The calling thread's name, if it has one.
fn thread_name() -> Option<String> {
    std::thread::current().name().map(str::to_owned)
}

/// Samples the calling thread from now on (cold path: its first annotated run). A thread a
/// scan already samples keeps its timer and ring, now its own.
pub(crate) fn register_current() {
    let sampler = state();
    if !sampler.running.load(SeqCst) || EXIT.try_with(|_| ()).is_err() || !sampler.owned() {
        return;
    }
    let Some((lo, hi)) = stack_bounds() else {
        return;
    };
    let tid = threads::gettid();
    let mut guard = lock(&sampler.inner);
    // Sampling may have stopped while this thread waited for the lock: a clock armed now
    // would outlive the period.
    if !sampler.running.load(SeqCst) {
        return;
    }
    let inner = &mut *guard;
    // A thread a scan found takes its slot as its own: timer and ring stay.
    let found = inner
        .active
        .iter_mut()
        .enumerate()
        .find_map(|(slot, active)| active.as_mut().filter(|a| a.tid == tid).map(|a| (slot, a)));
    let registered = match found {
        Some((slot, active)) => {
            active.foreign = false;
            if active.ring.stack_hi.load(SeqCst) == 0 {
                set_bounds(active.ring, lo, hi);
                threads::bounds_known(slot);
            }
            Some((slot, active.serial, active.ring))
        }
        None => register(inner, tid, Some((lo, hi)), false, thread_name()),
    };
    drop(guard);
    let Some((slot, serial, ring)) = registered else {
        return;
    };
    // A previous registration of this thread (an earlier sampling period) is dropped here,
    // after this one took its place: its slot was emptied when that period stopped. Its drop
    // empties the thread-local ring, so that is set after.
    let _ = EXIT.try_with(|exit| exit.set(Some(Registered { slot, serial, ring })));
    let _ = RING.try_with(|r| r.set(ring));
}

/// Samples thread `tid` from now on: a ring, a slot, a timer of its CPU clock. `bounds` is its
/// stack when known (the calling thread's); `foreign`: a thread a scan found. Returns its
/// slot, serial and ring, or `None` (counted unsampled when the cap or the kernel refused it;
/// not when a thread a scan found has ended meanwhile).
fn register(
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
    // Unknown bounds are an empty range, `[usize::MAX, 0)` (see `set_bounds`).
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
    threads::publish(slot, tid, ring as *const Ring as usize, bounds.is_some());
    // A task-clock event when the session has them (the calling thread's is opened as
    // `pid = 0`: the same event), else, or when it cannot be opened or routed, a timer.
    let event = if inner.perf {
        let target = if tid == threads::gettid() { 0 } else { tid };
        match perf::open(target, inner.hz) {
            Ok(fd) => Some(fd),
            // The thread has ended: no timer either.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                threads::retire(slot);
                inner.pool.push(ring);
                return None;
            }
            Err(_) => None,
        }
    } else {
        None
    };
    let clock = match event {
        Some(fd) => Some(Clock::Perf(fd, threads::start_time(tid))),
        None => threads::create_timer(tid, slot).map(Clock::Posix),
    };
    let Some(clock) = clock else {
        // No timer, so no signal names this slot.
        threads::retire(slot);
        inner.pool.push(ring);
        if !foreign || threads::alive(tid) {
            inner.unsampled_threads += u64::from(inner.discovery.unsampled.insert(tid));
        }
        return None;
    };
    match clock {
        Clock::Perf(..) => ring.overruns.store(false, SeqCst),
        Clock::Posix(timer) => {
            ring.timer.store(timer, SeqCst);
            ring.overruns.store(true, SeqCst);
            inner.timer_threads += u64::from(inner.perf);
        }
    }
    let index = inner.threads.len() as u32;
    inner.threads.push(SampledThread {
        tid: tid as u32,
        name,
    });
    inner.serial += 1;
    let serial = inner.serial;
    inner.active[slot] = Some(Active {
        ring,
        clock,
        index,
        serial,
        tid,
        foreign,
    });
    match clock {
        Clock::Posix(timer) => threads::arm(timer, inner.hz),
        Clock::Perf(fd, _) => {
            if !perf::route_and_enable(fd, tid, slot) {
                // Its descriptor is past what the handler routes (or fcntl refused): a timer
                // instead, in the same slot.
                inner.active[slot] = None;
                perf::disable(fd);
                threads::retire(slot);
                perf::close(fd);
                threads::publish(slot, tid, ring as *const Ring as usize, bounds.is_some());
                let Some(timer) = threads::create_timer(tid, slot) else {
                    threads::retire(slot);
                    inner.pool.push(ring);
                    inner.unsampled_threads += u64::from(inner.discovery.unsampled.insert(tid));
                    return None;
                };
                ring.timer.store(timer, SeqCst);
                ring.overruns.store(true, SeqCst);
                inner.timer_threads += 1;
                inner.active[slot] = Some(Active {
                    ring,
                    clock: Clock::Posix(timer),
                    index,
                    serial,
                    tid,
                    foreign,
                });
                threads::arm(timer, inner.hz);
            }
        }
    }
    Some((slot, serial, ring))
}

/// Gives `ring`, whose bounds are unknown (`[usize::MAX, 0)`), the bounds `[lo, hi)`: low
/// first, so that a handler reading between the two stores sees an empty range either way.
fn set_bounds(ring: &Ring, lo: usize, hi: usize) {
    ring.stack_lo.store(lo, SeqCst);
    ring.stack_hi.store(hi, SeqCst);
}

/// One scan of the threads (under the sampler's lock; see `threads.rs`): threads a scan found
/// that have ended give their slots back, threads without a timer get one, and threads a scan
/// found whose stack pointer the handler noted get their stack's bounds. `skip`: the sampler's
/// own thread.
fn scan(inner: &mut Inner, skip: Option<i32>) {
    // Ended threads first: a reused thread id is then free to be registered again.
    for slot in 0..inner.active.len() {
        let dead = inner.active[slot]
            .as_ref()
            .is_some_and(|a| a.foreign && a.clock.thread_ended(a.tid));
        if let Some(thread) = inner.active[slot].take_if(|_| dead) {
            thread.clock.stop(slot);
            inner.counts.drain(thread.ring, thread.index);
            inner.pool.push(thread.ring);
        }
    }
    // Those left are alive: their names read again.
    refresh_names(inner);
    let sampled: std::collections::HashSet<i32> =
        inner.active.iter().flatten().map(|a| a.tid).collect();
    for tid in threads::list_threads() {
        if Some(tid) != skip && !sampled.contains(&tid) && !inner.discovery.unsampled.contains(&tid)
        {
            register(inner, tid, None, true, threads::thread_name(tid));
        }
    }
    // Bounds from the stack pointers the handlers saw.
    let waiting: Vec<(usize, usize)> = (0..inner.active.len())
        .filter(|&slot| inner.active[slot].is_some())
        .filter_map(|slot| Some((slot, threads::seen_stack_pointer(slot)?)))
        .collect();
    if waiting.is_empty() {
        return;
    }
    let points: Vec<usize> = waiting.iter().map(|&(_, sp)| sp).collect();
    for ((slot, _), bounds) in waiting.into_iter().zip(threads::mappings_holding(&points)) {
        if let (Some(active), Some((lo, hi))) = (&inner.active[slot], bounds) {
            if active.ring.stack_hi.load(SeqCst) == 0 {
                set_bounds(active.ring, lo, hi);
            }
            threads::bounds_known(slot);
        }
    }
}

/// The names of the threads a scan found, read again: a thread found just after it was
/// created may not have set its name yet (it then has its creator's).
fn refresh_names(inner: &mut Inner) {
    for active in inner.active.iter().flatten().filter(|a| a.foreign) {
        if let Some(name) = threads::thread_name(active.tid) {
            if let Some(thread) = inner.threads.get_mut(active.index as usize) {
                thread.name = Some(name);
            }
        }
    }
}

/// Where a sample taken at a mark of the session's clock lies on the events' time line: its
/// iteration and its time from that iteration's start; `None` outside the iterations.
pub(crate) type Place<'a> = &'a dyn Fn(u64) -> Option<(u32, u64)>;

/// The samples of one `continuous`-mode window, whose iterations began at mark `from` and
/// ended at mark `to`: every ring is drained, the samples taken in `[from, to)` are counted and
/// resolved, those taken before are forgotten (a window dropped unseen, warmup), those after
/// kept for the next window. `None` when windows are not sampled. Cold path (the writer's
/// thread).
pub(crate) fn collect_window(from: u64, to: u64) -> Option<CpuSamples> {
    let sampler = state();
    if !sampler.running.load(SeqCst) {
        return None;
    }
    let mut guard = lock(&sampler.inner);
    let inner = &mut *guard;
    if inner.counts.times != Times::Windows {
        return None;
    }
    for thread in inner.active.iter().flatten() {
        inner.counts.drain(thread.ring, thread.index);
    }
    let counts = &mut inner.counts;
    let mut weights = vec![0u64; counts.keys.len()];
    let mut taken = 0;
    counts.timed.retain(|&(time, id, weight)| {
        if time >= to {
            return true;
        }
        if time >= from {
            weights[id as usize] += u64::from(weight);
            taken += u64::from(weight);
        }
        false
    });
    let dropped = std::mem::take(&mut counts.dropped) + std::mem::take(&mut counts.untimed);
    let stacks: Vec<(StackKey, u64)> = counts
        .keys
        .iter()
        .zip(&weights)
        .filter(|(_, &w)| w > 0)
        .map(|(key, &w)| (key.clone(), w))
        .collect();
    let (hz, threads, clock) = (inner.hz, inner.threads.clone(), clock_name(inner.perf));
    let mut symbols = std::mem::take(&mut inner.symbols);
    inner.forget_what_no_window_needs();
    let period = sampler.period.load(SeqCst);
    // The symbols are resolved without the lock: the first window's reads the binary's debug
    // info (a second or more), and meanwhile the sampler's thread must drain the rings and a
    // training thread's first annotated run registers under this lock.
    drop(guard);
    let (mut samples, _) = resolve(
        hz,
        threads,
        stacks.iter().map(|(k, w)| (k, *w)),
        &mut symbols,
    );
    let mut guard = lock(&sampler.inner);
    if sampler.period.load(SeqCst) == period {
        symbols.extend(guard.symbols.drain());
        guard.symbols = symbols;
    }
    drop(guard);
    samples.taken = taken;
    samples.dropped = dropped;
    samples.clock = Some(clock.to_owned());
    samples.unrouted = UNROUTED.load(SeqCst);
    Some(samples)
}

impl Inner {
    /// After a window is collected (`continuous` mode), keeps only what a later window may
    /// need: the stacks of the samples not yet in a window, and the threads alive or named by
    /// them; indices are renumbered. A program that starts a thread per iteration (a scoped
    /// thread per batch) grew both for as long as it ran, and listed every thread it had ever
    /// started in each window's samples. (The whole run's counts of the stacks let go are lost:
    /// `continuous` mode reports windows only.)
    fn forget_what_no_window_needs(&mut self) {
        let counts = &mut self.counts;
        let mut keep_key = vec![false; counts.keys.len()];
        for &(_, id, _) in &counts.timed {
            keep_key[id as usize] = true;
        }
        let mut keep_thread = vec![false; self.threads.len()];
        for thread in self.active.iter().flatten() {
            keep_thread[thread.index as usize] = true;
        }
        for (key, _) in counts.keys.iter().zip(&keep_key).filter(|(_, &k)| k) {
            keep_thread[key.0 as usize] = true;
        }
        if keep_key.iter().all(|&k| k) && keep_thread.iter().all(|&k| k) {
            return;
        }
        let mut thread_at = vec![u32::MAX; keep_thread.len()];
        let threads = std::mem::take(&mut self.threads);
        for (i, thread) in threads.into_iter().enumerate() {
            if keep_thread[i] {
                thread_at[i] = self.threads.len() as u32;
                self.threads.push(thread);
            }
        }
        for thread in self.active.iter_mut().flatten() {
            thread.index = thread_at[thread.index as usize];
        }
        let mut key_at = vec![u32::MAX; keep_key.len()];
        let keys = std::mem::take(&mut counts.keys);
        let weights = std::mem::take(&mut counts.weights);
        counts.ids.clear();
        for (i, (mut key, weight)) in keys.into_iter().zip(weights).enumerate() {
            if keep_key[i] {
                key.0 = thread_at[key.0 as usize];
                key_at[i] = counts.keys.len() as u32;
                counts.ids.insert(key.clone(), key_at[i]);
                counts.keys.push(key);
                counts.weights.push(weight);
            }
        }
        for sample in &mut counts.timed {
            sample.1 = key_at[sample.1 as usize];
        }
    }
}

/// Stops every timer, drains every ring and, when `wanted`, resolves the stacks (the results
/// are being written); in `trace` mode, each sample is placed on the time line by `place`.
/// `None` when sampling was not running or the samples are not `wanted` (the file holds a
/// `continuous`-mode window's already).
pub(crate) fn stop_and_collect(place: Place<'_>, wanted: bool) -> Option<CpuSamples> {
    let sampler = state();
    if !sampler.running.swap(false, SeqCst) {
        return None;
    }
    let mut guard = lock(&sampler.inner);
    let inner = &mut *guard;
    refresh_names(inner);
    for (index, slot) in inner.active.iter_mut().enumerate() {
        if let Some(thread) = slot.take() {
            thread.clock.stop(index);
            inner.counts.drain(thread.ring, thread.index);
            // A thread's own ring stays its own (its pointer is still set) until the thread
            // exits or registers again; then it goes back to the pool. A discovered thread's
            // ring is no longer reachable from any handler (retired): back to the pool now.
            if thread.foreign {
                inner.pool.push(thread.ring);
            }
        }
    }
    // No timer is left to fire: the handler reads no clock any more.
    CLOCK.store(std::ptr::null_mut(), SeqCst);
    if inner.unsampled_threads > 0 {
        say!(
            "profiler-core: warning: {} threads were not sampled (more than {MAX_THREADS} at \
             once, or no timer could be made)",
            inner.unsampled_threads
        );
    }
    if inner.timer_threads > 0 {
        say!(
            "profiler-core: warning: {} threads were sampled by POSIX timers (checked at the \
             kernel's tick), not task-clock events: their event could not be opened, or it \
             would have taken the program's file descriptors past half its limit (or {})",
            inner.timer_threads,
            perf::FDS_LEN
        );
    }
    let unrouted = UNROUTED.swap(0, SeqCst);
    let counts = std::mem::replace(&mut inner.counts, Counts::new(Times::Off));
    if !wanted {
        inner.threads.clear();
        return None;
    }
    let stacks = counts
        .keys
        .iter()
        .zip(&counts.weights)
        .map(|(key, &w)| (key, w));
    let threads = std::mem::take(&mut inner.threads);
    let (mut samples, index) = resolve(inner.hz, threads, stacks, &mut inner.symbols);
    samples.taken = counts.taken;
    samples.dropped = counts.dropped;
    samples.clock = Some(clock_name(inner.perf).to_owned());
    samples.unrouted = unrouted;
    if counts.times == Times::Timeline {
        samples.timeline = Some(timeline(&counts, &index, place));
    }
    Some(samples)
}

/// `cpu_samples.clock`: what interrupts the threads.
fn clock_name(perf: bool) -> &'static str {
    if perf {
        "perf_task_clock"
    } else {
        "posix_timer"
    }
}

/// Each timed sample of `counts` placed by `place`, its stack the one `index` gives its key.
fn timeline(counts: &Counts, index: &[u32], place: Place<'_>) -> SampleTimeline {
    let mut out = SampleTimeline {
        dropped: counts.untimed,
        ..SampleTimeline::default()
    };
    for &(time, id, _) in &counts.timed {
        let Some((iter, offset)) = place(time) else {
            out.dropped += 1;
            continue;
        };
        out.threads.push(counts.keys[id as usize].0);
        out.iters.push(iter);
        out.offsets_ns.push(offset);
        out.stacks.push(index[id as usize]);
    }
    out
}

/// Turns counted stacks of addresses (`(key, count)`, each key once) into functions (cold
/// path); returns the samples (`taken` and `dropped` left at 0) and, for each key in the order
/// given, the index of its stack in them. `symbols` keeps the names of the addresses resolved.
fn resolve<'k>(
    hz: u32,
    threads: Vec<SampledThread>,
    counted: impl Iterator<Item = (&'k StackKey, u64)>,
    symbols: &mut HashMap<usize, Vec<String>>,
) -> (CpuSamples, Vec<u32>) {
    let reg = registry();
    let mut functions: Vec<SampledFunction> = Vec::new();
    let mut by_name: HashMap<String, u32> = HashMap::new();
    let mut by_addr: HashMap<usize, Vec<u32>> = HashMap::new();
    // Stacks of addresses that resolve to the same functions are one stack.
    let mut merged: HashMap<(u32, u32, u16, Vec<u32>), u64> = HashMap::new();
    let mut merged_of: Vec<(u32, u32, u16, Vec<u32>)> = Vec::new();
    for ((thread, tag, flags, frames), count) in counted {
        let (thread, tag, flags) = (*thread, *tag, *flags);
        let frames: Vec<u32> = frames
            .iter()
            .enumerate()
            .flat_map(|(i, &addr)| {
                // A caller's frame holds a return address: its call is the byte before.
                let pc = if i == 0 { addr } else { addr.saturating_sub(1) };
                if let Some(f) = by_addr.get(&pc) {
                    return f.clone();
                }
                let names = symbols.entry(pc).or_insert_with(|| symbol(pc));
                // The functions inlined at `pc` are frames of their own, innermost first, as
                // the stack is (a leaf's inlined helpers above it, each caller below).
                let f: Vec<u32> = if names.is_empty() {
                    functions.push(SampledFunction {
                        name: None,
                        addr: format!("{pc:#x}"),
                    });
                    vec![functions.len() as u32 - 1]
                } else {
                    names
                        .iter()
                        .map(|name| {
                            *by_name.entry(name.clone()).or_insert_with(|| {
                                functions.push(SampledFunction {
                                    name: Some(name.clone()),
                                    addr: format!("{pc:#x}"),
                                });
                                functions.len() as u32 - 1
                            })
                        })
                        .collect()
                };
                by_addr.insert(pc, f.clone());
                f
            })
            .collect();
        let key = (thread, tag, flags, frames);
        *merged.entry(key.clone()).or_insert(0) += count;
        merged_of.push(key);
    }
    let mut stacks: Vec<SampledStack> = Vec::with_capacity(merged.len());
    let mut keys: Vec<(u32, u32, u16, Vec<u32>)> = Vec::with_capacity(merged.len());
    for ((thread, tag, flags, frames), count) in merged {
        keys.push((thread, tag, flags, frames.clone()));
        let entry = tag
            .checked_sub(1)
            .map(|i| i as usize)
            .filter(|&i| i < reg.len())
            .map(|i| reg.entry(i));
        stacks.push(SampledStack {
            thread,
            event: entry.map(|e| e.id.clone()),
            name: entry.map(|e| e.desc.info.name.to_owned()),
            layer: entry.and_then(|e| e.desc.info.layer.map(str::to_owned)),
            phase: entry.and_then(|e| e.desc.info.phase.map(str::to_owned)),
            frames,
            truncated: flags & 1 != 0,
            inherited: flags & 4 != 0,
            count,
        });
    }
    let mut order: Vec<usize> = (0..stacks.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&stacks[a], &stacks[b]);
        b.count
            .cmp(&a.count)
            .then(a.frames.cmp(&b.frames))
            .then(a.thread.cmp(&b.thread))
            .then(a.event.cmp(&b.event))
            .then(a.truncated.cmp(&b.truncated))
    });
    let mut position: HashMap<(u32, u32, u16, Vec<u32>), u32> = HashMap::new();
    let mut sorted = Vec::with_capacity(stacks.len());
    let mut stacks: Vec<Option<SampledStack>> = stacks.into_iter().map(Some).collect();
    for (at, i) in order.into_iter().enumerate() {
        position.insert(keys[i].clone(), at as u32);
        sorted.extend(stacks[i].take());
    }
    let index = merged_of.iter().map(|key| position[key]).collect();
    let samples = CpuSamples {
        hz,
        taken: 0,
        dropped: 0,
        threads,
        functions,
        stacks: sorted,
        timeline: None,
        clock: None,
        unrouted: 0,
    };
    (samples, index)
}

/// The demangled names (without their hashes) of the functions at `pc`: the innermost function
/// inlined there first, the function holding `pc` last; only the latter without debug info
/// (the symbol table), none when nothing names it.
fn symbol(pc: usize) -> Vec<String> {
    #[cfg(test)]
    if let Some(hook) = lock(&tests::WHILE_RESOLVING).take() {
        hook();
    }
    let mut names = Vec::new();
    backtrace::resolve(pc as *mut libc::c_void, |symbol| {
        if let Some(name) = symbol.name() {
            let name = format!("{name:#}");
            // The symbol table and the debug info can both name the holder.
            if names.last() != Some(&name) {
                names.push(name);
            }
        }
    });
    names
}

/// The `SIGPROF` handler: one record into this thread's ring (see the module's documentation
/// for what makes it async-signal-safe).
extern "C" fn on_sigprof(_: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: errno is this thread's; it is put back before returning.
    let errno = unsafe { *libc::__errno_location() };
    // The ring the timer's slot names, when the slot is this thread's (every timer carries its
    // slot; the thread-local ring may be an earlier sampling period's, which nothing drains).
    let recorded = threads::on_signal(info, context, |ring| {
        // SAFETY: slots hold only leaked rings (`register`).
        record(unsafe { &*(ring as *const Ring) }, context);
    });
    if !recorded {
        let ring = RING.try_with(Cell::get).unwrap_or(std::ptr::null());
        // SAFETY: a non-null ring pointer is a leaked ring, never freed.
        match unsafe { ring.as_ref() } {
            Some(ring) => record(ring, context),
            None => {
                UNROUTED.fetch_add(1, Relaxed);
            }
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Writes one sample of the interrupted `context` into `ring`.
fn record(ring: &Ring, context: *mut libc::c_void) {
    let head = ring.head.load(Relaxed);
    let tail = ring.tail.load(Acquire);
    if head.wrapping_sub(tail) >= RECORDS {
        ring.dropped.fetch_add(1, Relaxed);
        return;
    }
    let (tag, deep, inherited) = OPEN
        .try_with(innermost_or_inherited)
        .unwrap_or((0, false, false));
    // SAFETY: the slot at `head` is not read by the drain until `head` is released past it,
    // and only this thread's handler writes it (a handler does not interrupt itself: SIGPROF
    // is blocked while it runs).
    let slot = unsafe { &mut *ring.records[head % RECORDS].get() };
    let (depth, truncated) = walk(
        context,
        ring.stack_lo.load(Relaxed),
        ring.stack_hi.load(Relaxed),
        &mut slot.frames,
    );
    // A task-clock event signals once per period; a timer's signal may stand for several.
    let overrun = if ring.overruns.load(Relaxed) {
        // SAFETY: the timer is this thread's, alive while its ring pointer is set.
        unsafe { libc::timer_getoverrun(ring.timer.load(Relaxed) as libc::timer_t) }
    } else {
        0
    };
    // SAFETY: a non-null clock is a leaked session's; `raw` reads the time-stamp counter or
    // `clock_gettime(CLOCK_MONOTONIC)`, both async-signal-safe.
    slot.time = unsafe { CLOCK.load(Relaxed).as_ref() }.map_or(0, CpuClock::raw);
    slot.tag = tag;
    slot.depth = depth as u16;
    slot.flags = u16::from(truncated) | (u16::from(deep) << 1) | (u16::from(inherited) << 2);
    slot.weight = 1 + overrun.max(0) as u32;
    ring.head.store(head.wrapping_add(1), Release);
}

/// The program counter and frame pointer of an interrupted context.
fn registers(context: *mut libc::c_void) -> Option<(usize, usize)> {
    // SAFETY: the kernel passes a valid `ucontext_t` to an SA_SIGINFO handler.
    let uc = unsafe { (context as *const libc::ucontext_t).as_ref()? };
    #[cfg(target_arch = "x86_64")]
    {
        let regs = &uc.uc_mcontext.gregs;
        Some((
            regs[libc::REG_RIP as usize] as usize,
            regs[libc::REG_RBP as usize] as usize,
        ))
    }
    #[cfg(target_arch = "aarch64")]
    {
        Some((uc.uc_mcontext.pc as usize, uc.uc_mcontext.regs[29] as usize))
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = uc;
        None
    }
}

/// Walks the frame-pointer chain of `context` into `frames`, reading only inside `[lo, hi)`;
/// returns the frames stored and whether the chain went on past them.
fn walk(context: *mut libc::c_void, lo: usize, hi: usize, frames: &mut [usize]) -> (usize, bool) {
    let Some((pc, mut fp)) = registers(context) else {
        return (0, false);
    };
    let word = std::mem::size_of::<usize>();
    frames[0] = pc;
    let mut n = 1;
    loop {
        // A frame record is two words: the caller's frame pointer, then the return address.
        if fp < lo || fp % word != 0 || fp.checked_add(2 * word).is_none_or(|end| end > hi) {
            return (n, false);
        }
        // SAFETY: `fp` and `fp + word` are aligned and inside this thread's stack, which is
        // mapped while the thread runs.
        let (next, ret) = unsafe {
            (
                std::ptr::read_volatile(fp as *const usize),
                std::ptr::read_volatile((fp + word) as *const usize),
            )
        };
        if ret == 0 {
            return (n, false);
        }
        if n == frames.len() {
            return (n, true);
        }
        frames[n] = ret;
        n += 1;
        // The stack grows down: each caller's frame is above its callee's.
        if next <= fp {
            return (n, false);
        }
        fp = next;
    }
}

/// Held by each test of this crate's binary that starts the sampler (there is one per
/// process): run beside each other, one found it running and sampled nothing (seen in CI).
#[cfg(test)]
pub(crate) fn one_sampler_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    lock(&ONE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Called once, by the next address resolved (then cleared).
    pub(super) static WHILE_RESOLVING: Mutex<Option<fn()>> = Mutex::new(None);

    /// Whether the sampler's lock could be taken while a window's symbols were resolved.
    static LOCK_FREE: AtomicBool = AtomicBool::new(false);

    /// A window's symbols are resolved without the sampler's lock, which the reader thread and
    /// a training thread's first annotated run (`register_current`) take: before, both waited
    /// for the resolution (a second or more for the first window, which reads the debug info).
    /// The hook, run in the middle of it, takes the lock from another thread and waits up to
    /// 120 s for it (held for the whole resolution, it is never free there).
    #[test]
    fn a_window_is_resolved_without_the_samplers_lock() {
        let _one = one_sampler_at_a_time();
        let clock: &'static CpuClock = Box::leak(Box::new(CpuClock::new()));
        start(1000, Times::Windows, Some(clock), SampleClock::Posix).unwrap();
        register_current();
        let from = clock.raw();
        // 300 ms of this thread's CPU time, however busy the machine.
        let cpu_ns = || {
            let mut t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `t` is a valid timespec to write.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
            t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
        };
        let busy = cpu_ns();
        let mut x = 0u64;
        while cpu_ns() - busy < 300_000_000 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let to = clock.raw();
        *lock(&WHILE_RESOLVING) = Some(|| {
            let (taken, got) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                drop(lock(&state().inner));
                let _ = taken.send(());
            });
            let free = got.recv_timeout(Duration::from_secs(120)).is_ok();
            LOCK_FREE.store(free, SeqCst);
        });
        let samples = collect_window(from, to).expect("a window's samples");
        let _ = stop_and_collect(&|_| None, false);
        assert!(samples.taken > 0, "no sample in 300 ms of work");
        assert!(lock(&WHILE_RESOLVING).is_none(), "no address was resolved");
        assert!(LOCK_FREE.load(SeqCst), "the lock was held while resolving");
    }

    /// Sampling periods started one after the other within the reader thread's 50 ms nap
    /// leave one reader thread, not one per period (found in review: 3 to 4 at once, which
    /// then sampled each other).
    #[test]
    fn periods_started_in_quick_succession_leave_one_reader_thread() {
        let _one = one_sampler_at_a_time();
        let readers = || {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .filter(|name| name.starts_with("profiler-sampl"))
                .count()
        };
        for _ in 0..5 {
            start(1000, Times::Off, None, SampleClock::Posix).unwrap();
            let _ = stop_and_collect(&|_| None, false);
        }
        start(1000, Times::Off, None, SampleClock::Posix).unwrap();
        // The earlier periods' readers leave at their next look (every 50 ms), however late;
        // the new one names itself once it runs.
        let started = std::time::Instant::now();
        while readers() != 1 && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let running = readers();
        let _ = stop_and_collect(&|_| None, false);
        assert_eq!(running, 1, "reader threads running at once");
    }

    /// The names of a resolved stack's frames, leaf first.
    fn names(samples: &CpuSamples, stack: usize) -> Vec<&str> {
        samples.stacks[stack]
            .frames
            .iter()
            .map(|&f| samples.functions[f as usize].name.as_deref().unwrap_or("?"))
            .collect()
    }

    #[test]
    fn inlined_functions_are_frames_of_their_own() {
        // The addresses' names as the debug info gives them (innermost inlined first): the
        // leaf's pc holds `softmax` inlined into `closure` inlined into `call_mut`; its caller's
        // return address (0x2001, its call at 0x2000) is plain `run`; 0x3000 is unnamed.
        let mut symbols: HashMap<usize, Vec<String>> = HashMap::new();
        symbols.insert(
            0x1000,
            vec!["softmax".into(), "closure".into(), "call_mut".into()],
        );
        symbols.insert(0x2000, vec!["run".into()]);
        symbols.insert(0x3000, vec![]);
        let leaf: StackKey = (0, 0, 0, vec![0x1000, 0x2001].into_boxed_slice());
        let other: StackKey = (0, 0, 0, vec![0x3000, 0x2001].into_boxed_slice());
        let threads = vec![SampledThread { tid: 1, name: None }];
        let (samples, index) = resolve(
            1000,
            threads,
            [(&leaf, 3), (&other, 1)].into_iter(),
            &mut symbols,
        );
        assert_eq!(
            names(&samples, index[0] as usize),
            ["softmax", "closure", "call_mut", "run"]
        );
        assert_eq!(names(&samples, index[1] as usize), ["?", "run"]);
        // Each name is one function, however many addresses hold it.
        assert_eq!(samples.functions.len(), 5);
        assert_eq!(samples.stacks[index[0] as usize].count, 3);
    }
}
