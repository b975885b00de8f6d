//! A bounded pool of reusable per-mark resources (CUDA events), taken on the hot path without
//! locks and given back on the cold path once a mark has been read.

use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicUsize,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};

/// How a mark names a pooled resource: the pool (one per stream) in the high half, the slot in
/// the low half. Never equal to [`NO_MARK`](super::NO_MARK) for pools below `u32::MAX`.
pub fn encode_mark(pool: u32, slot: u32) -> u64 {
    (u64::from(pool) << 32) | u64::from(slot)
}

/// The (pool, slot) of a mark made by [`encode_mark`], or `None` for
/// [`NO_MARK`](super::NO_MARK).
pub fn decode_mark(mark: u64) -> Option<(u32, u32)> {
    (mark != super::NO_MARK).then_some(((mark >> 32) as u32, mark as u32))
}

/// A fixed set of items, each either free or taken.
///
/// [`Pool::acquire`] scans from a rotating cursor for a free item with compare-and-swap: no
/// allocation, no lock, at most one pass over the pool. When every item is taken it fails (and
/// counts the failure) rather than grow: the measurement is lost, the training job is not slowed.
#[derive(Debug)]
pub struct Pool<T> {
    items: Box<[T]>,
    taken: Box<[AtomicBool]>,
    cursor: AtomicUsize,
    in_use: AtomicUsize,
    exhausted: AtomicU64,
}

impl<T> Pool<T> {
    /// A pool of these items, all free.
    pub fn new(items: Vec<T>) -> Pool<T> {
        let taken = items.iter().map(|_| AtomicBool::new(false)).collect();
        Pool {
            items: items.into_boxed_slice(),
            taken,
            cursor: AtomicUsize::new(0),
            in_use: AtomicUsize::new(0),
            exhausted: AtomicU64::new(0),
        }
    }

    /// Takes a free item; `None` when all are taken.
    #[inline]
    pub fn acquire(&self) -> Option<u32> {
        let n = self.items.len();
        if n == 0 {
            self.exhausted.fetch_add(1, Relaxed);
            return None;
        }
        let start = self.cursor.fetch_add(1, Relaxed);
        for k in 0..n {
            let i = (start + k) % n;
            if self.taken[i]
                .compare_exchange(false, true, AcqRel, Relaxed)
                .is_ok()
            {
                self.in_use.fetch_add(1, Relaxed);
                return Some(i as u32);
            }
        }
        self.exhausted.fetch_add(1, Relaxed);
        None
    }

    /// The item in `slot`.
    pub fn get(&self, slot: u32) -> Option<&T> {
        self.items.get(slot as usize)
    }

    /// The item in `slot`, to change it (the pool's owner, under its own exclusive access).
    pub fn get_mut(&mut self, slot: u32) -> Option<&mut T> {
        self.items.get_mut(slot as usize)
    }

    /// Gives `slot` back. Releasing a free slot does nothing.
    pub fn release(&self, slot: u32) {
        if let Some(flag) = self.taken.get(slot as usize) {
            if flag.swap(false, Release) {
                self.in_use.fetch_sub(1, Relaxed);
            }
        }
    }

    /// Whether `slot` is taken.
    pub fn is_taken(&self, slot: u32) -> bool {
        self.taken
            .get(slot as usize)
            .is_some_and(|f| f.load(Acquire))
    }

    /// How many items the pool holds.
    pub fn capacity(&self) -> usize {
        self.items.len()
    }

    /// How many items are taken now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Relaxed)
    }

    /// How many times [`Pool::acquire`] found no free item.
    pub fn exhausted(&self) -> u64 {
        self.exhausted.load(Relaxed)
    }

    /// All items, for tearing the pool down.
    pub fn items(&self) -> &[T] {
        &self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_reused_and_counts_exhaustion() {
        let pool = Pool::new(vec![10, 11, 12]);
        let a = pool.acquire().unwrap();
        let b = pool.acquire().unwrap();
        let c = pool.acquire().unwrap();
        assert_eq!(pool.in_use(), 3);
        assert_eq!(pool.acquire(), None);
        assert_eq!(pool.exhausted(), 1);
        pool.release(b);
        pool.release(b); // twice: no effect
        assert_eq!(pool.in_use(), 2);
        assert_eq!(pool.acquire(), Some(b));
        for s in [a, b, c] {
            pool.release(s);
        }
        assert_eq!(pool.in_use(), 0);
        let mut seen: Vec<u32> = (0..3).map(|_| pool.acquire().unwrap()).collect();
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2]);
    }

    #[test]
    fn marks_round_trip() {
        let m = encode_mark(3, 17);
        assert_eq!(decode_mark(m), Some((3, 17)));
        assert_eq!(decode_mark(super::super::NO_MARK), None);
    }

    #[test]
    fn concurrent_acquire_never_hands_one_slot_twice() {
        let pool = std::sync::Arc::new(Pool::new((0..64).collect::<Vec<u32>>()));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    (0..16).filter_map(|_| pool.acquire()).collect::<Vec<u32>>()
                })
            })
            .collect();
        let mut all: Vec<u32> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 64);
        assert_eq!(pool.acquire(), None);
    }
}
