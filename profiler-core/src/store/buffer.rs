//! Per-thread buffers of 16-byte records: how `trace` mode keeps a run without a lock, an
//! allocation or a shared read-modify-write (after puffin's and tracy's per-thread streams).
//!
//! Each thread that records into a [`Buffers`] is given a log of its own the first time it does
//! (the cold path: one lock, and a chunk from the free list or, within the bound, a new one). It
//! then writes [`Record`]s into its log's current chunk through a thread-local cursor and
//! publishes each with one release store of the write position (a plain `mov` on x86), so that
//! the consumer sees every record the moment it is complete. When a chunk is full the thread
//! hands it over under the lock, once per [`CHUNK`] records, and takes a free one. When none is
//! left within the bound, the buffers say so in one flag ([`Buffers::full_up`]), which a thread
//! without a chunk reads before it takes the lock: its runs are then dropped (and counted) with
//! one load each, not a lock each, until a drain frees a chunk.
//!
//! The consumer is the cold path (`step()`, the end of the run, or a thread whose hand-over finds
//! many full chunks waiting): [`Buffers::drain`] reads the chunks handed over and what each log
//! has published since the last drain, so the records of worker threads that never call
//! `step()` reach the results too. A thread that exits retires its log; once drained, the log
//! and its chunk are reused by the next thread, so threads spawned per iteration cost no memory
//! beyond those alive at once.

use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::Mutex;

use crate::sync::lock;

/// Records per chunk: a hand-over (one lock) every 1,024 records, 16 KiB a chunk.
pub(crate) const CHUNK: usize = 1024;

/// Bytes of one chunk.
pub(crate) const CHUNK_BYTES: usize = CHUNK * std::mem::size_of::<Record>();

/// One run as a thread records it: its start mark, its length in clock units and a tag saying
/// what ran (its meaning is the session's business).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Record {
    pub start: u64,
    pub len: u32,
    pub tag: u32,
}

const _: () = assert!(std::mem::size_of::<Record>() == 16);

/// A chunk's storage; written by one thread, read by the consumer, never both at one index.
///
/// Held by a raw pointer, not a `Box`: moving a `Box` (into a slot, onto the full list) asserts
/// that it is the only way to its storage, which the writing thread's cursor into it is not, so
/// the cursor's next write was undefined behaviour under Stacked Borrows (found by Miri).
struct Chunk(NonNull<UnsafeCell<Record>>);

impl Chunk {
    fn new() -> Chunk {
        let storage: Box<[UnsafeCell<Record>]> = (0..CHUNK)
            .map(|_| UnsafeCell::new(Record::default()))
            .collect();
        let base = NonNull::new(Box::into_raw(storage).cast::<UnsafeCell<Record>>());
        Chunk(base.expect("a box is never null"))
    }

    fn base(&self) -> *mut Record {
        UnsafeCell::raw_get(self.0.as_ptr())
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        let storage = std::ptr::slice_from_raw_parts_mut(self.0.as_ptr(), CHUNK);
        // SAFETY: `storage` is the slice `new` leaked with `Box::into_raw`, freed once, here.
        drop(unsafe { Box::from_raw(storage) });
    }
}

// SAFETY: a chunk is written only by the thread that owns it through its log, and read by the
// consumer only below the position that thread published with a release store.
unsafe impl Send for Chunk {}

/// One thread's log, shared between that thread and the consumer.
#[derive(Debug)]
struct Log {
    /// One past the last record published in the current chunk.
    published: AtomicPtr<Record>,
    /// The thread exited (or moved to another session's buffers): nothing more is written.
    retired: AtomicBool,
    index: u32,
}

/// A log, its current chunk and how far the consumer has read it (behind the lock).
struct Slot {
    log: Box<Log>,
    chunk: Option<Chunk>,
    read: usize,
    /// Retired and drained: free for another thread.
    free: bool,
}

#[derive(Default)]
struct Inner {
    slots: Vec<Slot>,
    /// Chunks handed over and not drained yet: (log, chunk, first record not read yet, one past
    /// the last record written).
    full: Vec<(u32, Chunk, usize, usize)>,
    spare: Vec<Chunk>,
    /// Chunks allocated so far.
    chunks: usize,
}

impl Inner {
    /// A chunk for a log: a spare one, else a new one within the bound.
    fn take_chunk(&mut self, max_chunks: usize) -> Option<Chunk> {
        if let Some(chunk) = self.spare.pop() {
            return Some(chunk);
        }
        (self.chunks < max_chunks).then(|| {
            self.chunks += 1;
            Chunk::new()
        })
    }
}

/// The buffers of one session: the logs of the threads that record into it.
pub(crate) struct Buffers {
    inner: Mutex<Inner>,
    max_chunks: usize,
    /// Runs whose records found no room (no chunk left within the bound): one a run, whether
    /// its record is one word or a pair (the end of the run reports them as runs).
    dropped: AtomicU64,
    /// Records of runs made while their thread was exiting (in a thread-local's destructor,
    /// after this thread's log was retired).
    exiting: AtomicU64,
    /// Chunks handed over and waiting for the consumer.
    held: AtomicUsize,
    /// No chunk was left within the bound at the last try, and no drain has freed one since:
    /// set under the lock where a chunk is refused, cleared under it where a drain frees one.
    /// A thread without a chunk reads it (relaxed) before it would lock for one, so that once
    /// the bound is reached its runs do not queue on the lock; a stale value costs at most a
    /// record dropped while a chunk had just come free, or one lock that finds none.
    full_up: AtomicBool,
}

impl std::fmt::Debug for Buffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffers")
            .field("max_chunks", &self.max_chunks)
            .field("held", &self.held.load(Relaxed))
            .finish()
    }
}

/// This thread's cursor into its log (no destructor, so reaching it is one TLS access).
struct Local {
    owner: Cell<*const Buffers>,
    log: Cell<*const Log>,
    at: Cell<*mut Record>,
    end: Cell<*mut Record>,
    /// Runs open on this thread that nest, during learning (see [`enter_depth`]).
    depth: Cell<u32>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            owner: Cell::new(std::ptr::null()),
            log: Cell::new(std::ptr::null()),
            at: Cell::new(std::ptr::null_mut()),
            end: Cell::new(std::ptr::null_mut()),
            depth: Cell::new(0),
        }
    };
    /// Retires this thread's log when the thread exits (registered on the cold path).
    static EXIT: Retire = const { Retire };
}

struct Retire;

impl Drop for Retire {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|l| {
            retire(l.log.get());
            // A probe run by a later thread-local destructor takes the cold path, which drops
            // its record rather than write into a log that may already serve another thread.
            l.owner.set(std::ptr::null());
            l.log.set(std::ptr::null());
            l.at.set(std::ptr::null_mut());
            l.end.set(std::ptr::null_mut());
        });
    }
}

fn retire(log: *const Log) {
    // SAFETY: logs are boxed in their `Buffers`, which belong to sessions that are never freed.
    if let Some(log) = unsafe { log.as_ref() } {
        log.retired.store(true, Release);
    }
}

/// The nesting depth of this thread's open learning runs, raised by one: the caller's depth.
/// Learning uses it to find each run's parent (the next run of depth one less that this thread
/// records). Deeper than 63 levels it stays at 63.
#[inline]
pub(crate) fn enter_depth() -> u32 {
    LOCAL.with(|l| {
        let depth = l.depth.get();
        l.depth.set((depth + 1).min(63));
        depth
    })
}

/// This thread's nesting depth (that of a run starting now), without raising it.
#[inline]
pub(crate) fn depth() -> u32 {
    LOCAL.with(|l| l.depth.get())
}

/// A run that raised the depth to `depth + 1` ended.
#[inline]
pub(crate) fn leave_depth(depth: u32) {
    LOCAL.with(|l| l.depth.set(depth));
}

impl Buffers {
    /// Buffers that hold at most `max_chunks` chunks of [`CHUNK`] records.
    pub(crate) fn new(max_chunks: usize) -> Buffers {
        Buffers {
            inner: Mutex::new(Inner::default()),
            max_chunks: max_chunks.max(1),
            dropped: AtomicU64::new(0),
            exiting: AtomicU64::new(0),
            held: AtomicUsize::new(0),
            full_up: AtomicBool::new(false),
        }
    }

    /// A chunk for a log ([`Inner::take_chunk`]), marking the buffers [full up](Self::full_up)
    /// when none is left.
    fn take_chunk(&self, inner: &mut Inner) -> Option<Chunk> {
        let chunk = inner.take_chunk(self.max_chunks);
        if chunk.is_none() {
            self.full_up.store(true, Relaxed);
        }
        chunk
    }

    /// Appends one record to this thread's log: the hot path, a thread-local cursor, three
    /// stores (field by field: a record built on the stack and copied whole would be read back
    /// before its stores retire, a stall of a few nanoseconds) and one release store. Returns
    /// how many full chunks wait for the consumer when this call handed one over (`None`
    /// otherwise, the common case).
    #[inline(always)]
    pub(crate) fn push_one(&self, start: u64, len: u32, tag: u32) -> Option<usize> {
        let fast = LOCAL.with(|l| {
            let at = l.at.get();
            if !std::ptr::eq(l.owner.get(), self) || at == l.end.get() {
                return false;
            }
            // SAFETY: `at` lies in this thread's current chunk (it is not its end), which the
            // consumer reads only below the published position.
            unsafe {
                (&raw mut (*at).start).write(start);
                (&raw mut (*at).len).write(len);
                (&raw mut (*at).tag).write(tag);
                let next = at.add(1);
                l.at.set(next);
                (*l.log.get()).published.store(next, Release);
            }
            true
        });
        if fast {
            None
        } else {
            self.push_cold(&[Record { start, len, tag }])
        }
    }

    /// Appends `words` (a record and its extension) to this thread's log, published at once.
    /// Returns what [`Buffers::push_one`] does.
    #[inline]
    pub(crate) fn push(&self, words: &[Record]) -> Option<usize> {
        let fast = LOCAL.with(|l| {
            let at = l.at.get();
            if !std::ptr::eq(l.owner.get(), self)
                || (l.end.get() as usize) - (at as usize) < std::mem::size_of_val(words)
            {
                return false;
            }
            // SAFETY: `at..at + words.len()` lies in this thread's current chunk (checked
            // against its end), which the consumer reads only below the published position.
            unsafe {
                std::ptr::copy_nonoverlapping(words.as_ptr(), at, words.len());
                let next = at.add(words.len());
                l.at.set(next);
                (*l.log.get()).published.store(next, Release);
            }
            true
        });
        if fast {
            None
        } else {
            self.push_cold(words)
        }
    }

    /// The first record of a thread (or of a thread new to these buffers), or a full chunk.
    #[cold]
    #[inline(never)]
    fn push_cold(&self, words: &[Record]) -> Option<usize> {
        // During thread exit `EXIT` is gone: the record is dropped.
        if EXIT.try_with(|_| ()).is_err() {
            self.exiting.fetch_add(1, Relaxed);
            return None;
        }
        let pushed = LOCAL.with(|l| {
            let mut held = None;
            let owner = std::ptr::eq(l.owner.get(), self);
            if owner && l.at.get().is_null() && self.full_up.load(Relaxed) {
                // No chunk here, and none left to take: dropped without the lock.
                return (false, None);
            }
            if !owner {
                self.register(l);
            } else {
                held = Some(self.hand_over(l));
            }
            let at = l.at.get();
            if at.is_null() || (l.end.get() as usize) - (at as usize) < std::mem::size_of_val(words)
            {
                return (false, held);
            }
            // SAFETY: as in `push`.
            unsafe {
                std::ptr::copy_nonoverlapping(words.as_ptr(), at, words.len());
                let next = at.add(words.len());
                l.at.set(next);
                (*l.log.get()).published.store(next, Release);
            }
            (true, held)
        });
        if !pushed.0 {
            self.dropped.fetch_add(1, Relaxed);
        }
        pushed.1
    }

    /// Gives this thread a log here (retiring the one it had in other buffers).
    fn register(&self, l: &Local) {
        retire(l.log.get());
        l.owner.set(self);
        l.log.set(std::ptr::null());
        l.at.set(std::ptr::null_mut());
        l.end.set(std::ptr::null_mut());
        let mut inner = lock(&self.inner);
        let Some(chunk) = self.take_chunk(&mut inner) else {
            return; // no room: this thread's records are dropped until a chunk frees up
        };
        let base = chunk.base();
        let at = match inner.slots.iter().position(|s| s.free) {
            Some(i) => i,
            None => {
                let index = inner.slots.len() as u32;
                inner.slots.push(Slot {
                    log: Box::new(Log {
                        published: AtomicPtr::new(base),
                        retired: AtomicBool::new(false),
                        index,
                    }),
                    chunk: None,
                    read: 0,
                    free: true,
                });
                index as usize
            }
        };
        let slot = &mut inner.slots[at];
        slot.free = false;
        slot.read = 0;
        slot.chunk = Some(chunk);
        slot.log.published.store(base, Release);
        slot.log.retired.store(false, Release);
        l.log.set(&*slot.log);
        l.at.set(base);
        // SAFETY: one past the end of the chunk's storage.
        l.end.set(unsafe { base.add(CHUNK) });
        // The log is retired when this thread exits.
        EXIT.with(|_| ());
    }

    /// This thread's chunk is full (or it has none): hand it over and take another. Returns how
    /// many full chunks now wait for the consumer.
    fn hand_over(&self, l: &Local) -> usize {
        // SAFETY: as in `retire`.
        let Some(log) = (unsafe { l.log.get().as_ref() }) else {
            // Registered when no chunk was free: try again.
            self.register(l);
            return self.held.load(Relaxed);
        };
        let mut inner = lock(&self.inner);
        let index = log.index;
        let slot = &mut inner.slots[index as usize];
        let from = std::mem::take(&mut slot.read);
        if let Some(chunk) = slot.chunk.take() {
            // A record and its extension never straddle chunks, so a chunk may end short.
            // SAFETY: `published` points into this chunk (it changes only under the lock).
            let to = unsafe { log.published.load(Relaxed).offset_from(chunk.base()) } as usize;
            inner.full.push((index, chunk, from, to));
        }
        let held = inner.full.len();
        self.held.store(held, Relaxed);
        let fresh = self.take_chunk(&mut inner);
        let slot = &mut inner.slots[index as usize];
        match fresh {
            Some(chunk) => {
                let base = chunk.base();
                slot.chunk = Some(chunk);
                log.published.store(base, Release);
                l.at.set(base);
                // SAFETY: one past the end of the chunk's storage.
                l.end.set(unsafe { base.add(CHUNK) });
            }
            None => {
                // No chunk within the bound until the consumer frees one.
                l.at.set(std::ptr::null_mut());
                l.end.set(std::ptr::null_mut());
            }
        }
        held
    }

    /// The index of this thread's log here (registering it first), for a record written on
    /// another thread to name where its run started. `None` when no chunk is left, or while the
    /// thread exits (`EXIT` is gone: registering would panic inside a thread-local's
    /// destructor, which aborts the program; the run's record is then dropped and counted
    /// where it is pushed).
    pub(crate) fn log_index(&self) -> Option<u32> {
        if EXIT.try_with(|_| ()).is_err() {
            return None;
        }
        LOCAL.with(|l| {
            if !std::ptr::eq(l.owner.get(), self) {
                self.register(l);
            }
            // SAFETY: as in `retire`.
            unsafe { l.log.get().as_ref() }.map(|log| log.index)
        })
    }

    /// Runs whose records could not be kept so far for want of room.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }

    /// Runs not recorded because their thread was exiting.
    pub(crate) fn exiting(&self) -> u64 {
        self.exiting.load(Relaxed)
    }

    /// Chunks allocated so far (for tests: memory stays bounded).
    pub(crate) fn chunks(&self) -> usize {
        lock(&self.inner).chunks
    }

    /// Hands every record written since the last drain to `visit`, log by log, each log's
    /// records in the order its thread wrote them (chunk by chunk), and frees what was read.
    /// The cold path; records written while it runs wait for the next drain. One drain at a
    /// time: the current chunks are read outside the lock, so a second drain could free one
    /// that the first still reads (every caller holds the session's cold-path lock).
    pub(crate) fn drain(&self, mut visit: impl FnMut(u32, &[Record])) {
        let (mut full, current) = {
            let mut inner = lock(&self.inner);
            let full = std::mem::take(&mut inner.full);
            self.held.store(0, Relaxed);
            let mut current = Vec::new();
            for slot in inner.slots.iter_mut().filter(|s| !s.free) {
                let Some(chunk) = &slot.chunk else { continue };
                // Retired first: its last records were published before.
                let retired = slot.log.retired.load(Acquire);
                let base = chunk.base();
                // SAFETY: `published` points into this chunk (it changes only under the lock).
                let end = unsafe { slot.log.published.load(Acquire).offset_from(base) } as usize;
                current.push((
                    slot.log.index,
                    base as *const Record,
                    slot.read,
                    end,
                    retired,
                ));
                slot.read = end;
            }
            (full, current)
        };
        // Each log's chunks in the order they were handed over, then its current one.
        full.sort_by_key(|&(log, ..)| log);
        let mut next_full = 0;
        for &(log, base, from, to, _) in &current {
            while next_full < full.len() && full[next_full].0 <= log {
                visit_full(&full[next_full], &mut visit);
                next_full += 1;
            }
            // SAFETY: records `from..to` were published by the thread before the load above,
            // and the chunk is freed only by a drain (this one, below, or a later one).
            visit(log, unsafe {
                std::slice::from_raw_parts(base.add(from), to - from)
            });
        }
        for entry in &full[next_full..] {
            visit_full(entry, &mut visit);
        }
        let mut inner = lock(&self.inner);
        inner
            .spare
            .extend(full.drain(..).map(|(_, chunk, ..)| chunk));
        if inner.full.is_empty() {
            // The list keeps its capacity, so that a hand-over does not allocate.
            inner.full = full;
        }
        for (log, _, _, to, retired) in current {
            let slot = &mut inner.slots[log as usize];
            if retired && slot.read == to {
                slot.free = true;
                if let Some(chunk) = slot.chunk.take() {
                    inner.spare.push(chunk);
                }
            }
        }
        // A thread that exited while it had no chunk (its last hand-over found none left) has
        // no records here any more: its full chunks were handed over before it retired.
        for slot in inner.slots.iter_mut() {
            if !slot.free && slot.chunk.is_none() && slot.log.retired.load(Acquire) {
                slot.free = true;
            }
        }
        if !inner.spare.is_empty() {
            self.full_up.store(false, Relaxed);
        }
    }
}

fn visit_full(entry: &(u32, Chunk, usize, usize), visit: &mut impl FnMut(u32, &[Record])) {
    let (log, chunk, from, to) = entry;
    // SAFETY: records below `to` were written before the chunk was handed over, and it is no
    // longer written.
    let records = unsafe { std::slice::from_raw_parts(chunk.base().add(*from), to - from) };
    visit(*log, records);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(start: u64) -> Record {
        Record {
            start,
            len: 1,
            tag: 7,
        }
    }

    fn drained(b: &Buffers) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        b.drain(|log, records| out.extend(records.iter().map(|r| (log, r.start))));
        out
    }

    /// Threads that each fill their one chunk, find no other left (a bound of one chunk) and
    /// exit: each one's slot is free again after the drain that reads its records, so that
    /// threads spawned per iteration do not grow the slots (before, such a slot was never
    /// freed: 50 threads, 50 slots).
    #[test]
    fn the_slot_of_a_thread_that_exited_without_a_chunk_is_reused() {
        let b: &'static Buffers = Box::leak(Box::new(Buffers::new(1)));
        for round in 0..50u64 {
            std::thread::spawn(move || {
                for i in 0..(CHUNK as u64 + 1) {
                    b.push_one(round * 10_000 + i, 1, 7);
                }
            })
            .join()
            .unwrap();
            assert_eq!(drained(b).len(), CHUNK);
        }
        let inner = lock(&b.inner);
        assert_eq!(inner.slots.len(), 1);
        assert!(inner.slots[0].free);
        assert_eq!(b.dropped(), 50);
    }

    /// Once the bound is reached, a thread without a chunk drops its runs without the lock:
    /// here the test holds the lock while another thread, whose chunk is full and with none
    /// left, records more runs; before, each of them took the lock and that thread waited for
    /// the test (for ever: the test fails at its 120 s wait, a bound no machine's load reaches
    /// for a hundred pushes). After a drain the thread records again.
    #[test]
    fn runs_past_the_bound_are_dropped_without_the_lock() {
        let b: &'static Buffers = Box::leak(Box::new(Buffers::new(1)));
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            // The one chunk fills, and the hand-over finds no other.
            for i in 0..(CHUNK as u64 + 1) {
                b.push_one(i, 1, 7);
            }
            done.send(()).unwrap();
            wait.recv().unwrap();
            for i in 0..100 {
                b.push_one(i, 1, 7);
                b.push(&[rec(i), rec(i)]);
            }
            done.send(()).unwrap();
            wait.recv().unwrap();
            b.push_one(5_000, 1, 7);
        });
        finished.recv().unwrap();
        {
            let _held = lock(&b.inner);
            go.send(()).unwrap();
            finished
                .recv_timeout(std::time::Duration::from_secs(120))
                .expect("the runs past the bound waited for the lock");
        }
        assert_eq!(b.dropped(), 1 + 200);
        assert_eq!(drained(b).len(), CHUNK);
        go.send(()).unwrap();
        worker.join().unwrap();
        assert_eq!(drained(b), vec![(0, 5_000)]);
    }

    #[test]
    fn records_cross_chunks_in_order_and_chunks_are_reused() {
        let b = Box::leak(Box::new(Buffers::new(4)));
        for i in 0..2500 {
            b.push(&[rec(i)]);
        }
        let got = drained(b);
        assert_eq!(got.len(), 2500);
        assert!(got.iter().enumerate().all(|(i, &(_, s))| s == i as u64));
        // Later records reuse the drained chunks: no new allocation.
        let before = b.chunks();
        for i in 0..2500 {
            b.push(&[rec(i)]);
        }
        assert_eq!(drained(b).len(), 2500);
        assert_eq!(b.chunks(), before);
        assert_eq!(b.dropped(), 0);
    }

    #[test]
    fn a_pair_never_straddles_chunks_and_the_bound_drops_records() {
        let b = Box::leak(Box::new(Buffers::new(2)));
        b.push(&[rec(0)]);
        for i in 1..2000 {
            b.push(&[rec(i), rec(i)]);
        }
        // Two chunks hold 2,048 words: the runs that did not fit were dropped, and counted
        // (a run each, its record a pair of words).
        let got = drained(b);
        assert_eq!(got.len() as u64 + 2 * b.dropped(), 1 + 2 * 1999);
        assert!(got.len() <= 2 * CHUNK);
    }

    #[test]
    fn threads_that_exit_give_their_log_back() {
        let b: &'static Buffers = Box::leak(Box::new(Buffers::new(64)));
        for round in 0..20 {
            // Joined (not scoped): the join waits for the threads' exit, destructors included.
            let threads: Vec<_> = (0..4)
                .map(|t| std::thread::spawn(move || b.push(&[rec(round * 10 + t)])))
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(drained(b).len(), 4);
        }
        // Four threads at a time: four logs and their chunks, however many rounds.
        assert!(b.chunks() <= 4, "{} chunks", b.chunks());
    }
}

/// What a record's `tag` says: the probe's registry index and flags. A record with [`EXT`] is
/// followed by an extension word: the stop mark whole (`start`), the run's lane (`len`) and,
/// for a run that may move, where it started (`tag`, [`origin`]).
pub(crate) mod tag {
    /// The bits of the probe's registry index (about four million probes).
    pub(crate) const ENTRY: u32 = (1 << 22) - 1;
    /// Where a learning run's nesting depth sits.
    pub(crate) const DEPTH_SHIFT: u32 = 22;
    /// The deepest nesting a record tells apart.
    pub(crate) const MAX_DEPTH: u32 = 63;
    /// A run that may end on another thread (an `async fn`): it has no place in its thread's
    /// nesting.
    pub(crate) const ASYNC: u32 = 1 << 28;
    /// A run whose guard was discarded: it counts as an occurrence but keeps no sample.
    pub(crate) const DISCARD: u32 = 1 << 29;
    /// An extension word follows.
    pub(crate) const EXT: u32 = 1 << 30;
    /// A run of a learning iteration.
    pub(crate) const LEARN: u32 = 1 << 31;
    /// The length of a record whose stop mark is in its extension word.
    pub(crate) const LONG: u32 = u32::MAX;

    /// Where a run that may move started: the log of its first thread and the depth open there
    /// (0 when the log's index does not fit).
    pub(crate) fn origin(log: u32, depth: u32) -> u32 {
        if log >= ENTRY {
            return 0;
        }
        (log + 1) | (depth.min(MAX_DEPTH) << DEPTH_SHIFT)
    }

    /// The log and depth of an origin.
    pub(crate) fn from_origin(origin: u32) -> Option<(u32, u32)> {
        let log = origin & ENTRY;
        (log != 0).then(|| (log - 1, (origin >> DEPTH_SHIFT) & MAX_DEPTH))
    }

    /// The nesting depth of a learning record.
    pub(crate) fn depth(tag: u32) -> u32 {
        (tag >> DEPTH_SHIFT) & MAX_DEPTH
    }
}

/// One run read back from records: its marks, its tag and, from an extension, its lane and
/// origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub start: u64,
    pub stop: u64,
    pub tag: u32,
    pub lane: u32,
    pub origin: u32,
}

/// The runs in `records`, each record joined with its extension word.
pub(crate) fn runs(records: &[Record]) -> impl Iterator<Item = Parsed> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let r = *records.get(i)?;
        i += 1;
        let mut run = Parsed {
            start: r.start,
            stop: r.start.wrapping_add(u64::from(r.len)),
            tag: r.tag,
            lane: 0,
            origin: 0,
        };
        if r.tag & tag::EXT != 0 {
            let ext = *records.get(i)?;
            i += 1;
            run.stop = ext.start;
            run.lane = ext.len;
            run.origin = ext.tag;
        }
        Some(run)
    })
}
