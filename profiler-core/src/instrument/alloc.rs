//! Memory per event: an opt-in counting global allocator ([`Alloc`]).

use std::alloc::{GlobalAlloc, Layout, System};

/// A global allocator that counts the memory each armed event allocates. Install it with
/// `#[global_allocator]`.
///
/// ```no_run
/// #[global_allocator]
/// static ALLOC: profiler_core::Alloc = profiler_core::Alloc::system();
/// ```
///
/// It wraps another allocator (the system's, or any [`GlobalAlloc`], such as mimalloc's) and
/// counts, while an event is armed and only on the thread that armed it, the bytes allocated,
/// the bytes freed, the number of allocations and the peak of live bytes during the run (above
/// what was live when it started). Each sample of the event then carries those four figures
/// (`memory` in `prof.json`).
///
/// Cost: on every allocation and free, one thread-local load and a branch when nothing is armed
/// on the thread (the case for nearly every allocation of a training step); while an event is
/// armed, a few thread-local additions (`benches/hot_path.rs` measures both). Without it
/// installed, nothing changes: no memory figures are recorded and no column appears. In a build
/// without `enable` it forwards every call and counts nothing.
///
/// What is counted: every `alloc`, `alloc_zeroed` and `realloc` (a `realloc` counts as one
/// allocation of the new size and a free of the old) made by the thread between the start and
/// the end of an armed run, the runs of `async fn`s left out (a future may move between
/// threads). Memory freed by another thread is not seen, nor is memory that a custom arena
/// hands out without calling the global allocator.
#[derive(Debug, Default)]
pub struct Alloc<A = System> {
    inner: A,
}

impl Alloc<System> {
    /// The system allocator, counted.
    pub const fn system() -> Alloc<System> {
        Alloc { inner: System }
    }
}

impl<A> Alloc<A> {
    /// `inner`, counted.
    pub const fn new(inner: A) -> Alloc<A> {
        Alloc { inner }
    }
}

// SAFETY: every call is forwarded unchanged to `inner`, which upholds `GlobalAlloc`'s contract;
// the counting touches only this thread's counters and never allocates.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Alloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc(layout);
        if !p.is_null() {
            counting::allocated(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc_zeroed(layout);
        if !p.is_null() {
            counting::allocated(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.inner.dealloc(ptr, layout);
        counting::freed(layout.size());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = self.inner.realloc(ptr, layout, new_size);
        if !p.is_null() {
            counting::freed(layout.size());
            counting::allocated(new_size);
        }
        p
    }
}

#[cfg(not(feature = "enable"))]
mod counting {
    #[inline(always)]
    pub fn allocated(_: usize) {}
    #[inline(always)]
    pub fn freed(_: usize) {}
}

#[cfg(feature = "enable")]
pub(crate) use counting::{begin, end, installed, Figures};

#[cfg(feature = "enable")]
mod counting {
    use std::cell::Cell;

    /// How deeply armed runs may nest on one thread and still be counted (as the filter's
    /// nesting limit).
    const DEPTH: usize = 64;

    /// What one run allocated: bytes, bytes freed, allocations, peak of live bytes above the
    /// start.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) struct Figures {
        pub alloc_bytes: u64,
        pub freed_bytes: u64,
        pub allocs: u64,
        pub peak_bytes: u64,
    }

    /// The counters at the start of a run, and the peak they replaced.
    #[derive(Clone, Copy)]
    struct Mark {
        bytes: u64,
        freed: u64,
        count: u64,
        live: i64,
        peak: i64,
    }

    const ZERO: Mark = Mark {
        bytes: 0,
        freed: 0,
        count: 0,
        live: 0,
        peak: 0,
    };

    /// This thread's counters. Constant-initialised and without a destructor, so that reading
    /// them is a plain thread-local access that is safe from inside the allocator, even while
    /// the thread exits.
    struct Counters {
        /// Armed runs open on this thread: counting happens while it is above 0.
        depth: Cell<usize>,
        bytes: Cell<u64>,
        freed: Cell<u64>,
        count: Cell<u64>,
        live: Cell<i64>,
        peak: Cell<i64>,
        marks: [Cell<Mark>; DEPTH],
    }

    thread_local! {
        static THREAD: Counters = const {
            Counters {
                depth: Cell::new(0),
                bytes: Cell::new(0),
                freed: Cell::new(0),
                count: Cell::new(0),
                live: Cell::new(0),
                peak: Cell::new(0),
                marks: [const { Cell::new(ZERO) }; DEPTH],
            }
        };
    }

    /// An allocation of `size` bytes: counted when a run is armed on this thread.
    #[inline(always)]
    pub fn allocated(size: usize) {
        THREAD.with(|t| {
            if t.depth.get() != 0 {
                t.bytes.set(t.bytes.get().wrapping_add(size as u64));
                t.count.set(t.count.get().wrapping_add(1));
                let live = t.live.get().wrapping_add(size as i64);
                t.live.set(live);
                if live > t.peak.get() {
                    t.peak.set(live);
                }
            }
        });
    }

    /// A free of `size` bytes: counted when a run is armed on this thread.
    #[inline(always)]
    pub fn freed(size: usize) {
        THREAD.with(|t| {
            if t.depth.get() != 0 {
                t.freed.set(t.freed.get().wrapping_add(size as u64));
                t.live.set(t.live.get().wrapping_sub(size as i64));
            }
        });
    }

    /// An armed run starts on this thread: returns whether it is counted (false past
    /// [`DEPTH`] nested runs).
    #[inline]
    pub(crate) fn begin() -> bool {
        THREAD.with(|t| {
            let depth = t.depth.get();
            if depth >= DEPTH {
                return false;
            }
            let live = t.live.get();
            t.marks[depth].set(Mark {
                bytes: t.bytes.get(),
                freed: t.freed.get(),
                count: t.count.get(),
                live,
                peak: t.peak.get(),
            });
            t.peak.set(live);
            t.depth.set(depth + 1);
            true
        })
    }

    /// The counted run that [`begin`] started last on this thread ends: what it allocated.
    #[inline]
    pub(crate) fn end() -> Figures {
        THREAD.with(|t| {
            let Some(depth) = t.depth.get().checked_sub(1) else {
                return Figures::default();
            };
            let m = t.marks[depth].get();
            let peak = t.peak.get();
            t.depth.set(depth);
            // The enclosing run's peak includes this one's.
            t.peak.set(peak.max(m.peak));
            Figures {
                alloc_bytes: t.bytes.get().wrapping_sub(m.bytes),
                freed_bytes: t.freed.get().wrapping_sub(m.freed),
                allocs: t.count.get().wrapping_sub(m.count),
                peak_bytes: peak.saturating_sub(m.live).max(0) as u64,
            }
        })
    }

    /// Whether [`Alloc`](crate::Alloc) is this program's global allocator: a run counted around
    /// one allocation sees it. (Cold path: called once, when a session starts.)
    pub(crate) fn installed() -> bool {
        if !begin() {
            return false;
        }
        let probe = std::hint::black_box(Box::new(0u64));
        drop(probe);
        end().allocs > 0
    }
}

#[cfg(all(test, feature = "enable"))]
mod tests {
    use super::counting::*;

    // The test binary's global allocator is the system's: drive the counters directly.
    #[test]
    fn nested_runs_count_their_own_and_the_outer_run_includes_the_inner() {
        assert!(!installed());
        assert!(begin());
        allocated(100);
        assert!(begin());
        allocated(1000);
        freed(1000);
        allocated(10);
        let inner = end();
        assert_eq!(
            inner,
            Figures {
                alloc_bytes: 1010,
                freed_bytes: 1000,
                allocs: 2,
                peak_bytes: 1000
            }
        );
        freed(100);
        let outer = end();
        assert_eq!(
            outer,
            Figures {
                alloc_bytes: 1110,
                freed_bytes: 1100,
                allocs: 3,
                peak_bytes: 1100
            }
        );
        // Nothing is counted outside a run.
        allocated(5);
        assert!(begin());
        assert_eq!(end(), Figures::default());
    }
}
