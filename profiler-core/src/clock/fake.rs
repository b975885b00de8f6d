//! A clock that tests drive by hand, so that durations are exact and tests never sleep.
//!
//! It can also play a device whose results arrive late: with [`FakeClock::deferred`], a duration
//! whose stop mark is later than the last [`FakeClock::complete`] is [`Reading::Pending`], which
//! is how the pending-sample logic is tested without a GPU.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use super::{Clock, Reading};

#[derive(Debug, Default)]
struct State {
    now: AtomicU64,
    deferred: AtomicBool,
    completed: AtomicU64,
    released: AtomicU64,
    marks: AtomicU64,
}

/// A manually advanced clock; clones share one time line.
#[derive(Clone, Debug, Default)]
pub struct FakeClock {
    state: Arc<State>,
}

impl FakeClock {
    /// A clock at time 0 whose readings are ready at once.
    pub fn new() -> FakeClock {
        FakeClock::default()
    }

    /// A clock whose readings stay pending until [`FakeClock::complete`] passes their stop mark.
    pub fn deferred() -> FakeClock {
        let clock = FakeClock::new();
        clock.state.deferred.store(true, SeqCst);
        clock
    }

    /// Moves time forward by `ns` nanoseconds.
    pub fn advance(&self, ns: u64) {
        self.state.now.fetch_add(ns, SeqCst);
    }

    /// The current time in nanoseconds.
    pub fn now(&self) -> u64 {
        self.state.now.load(SeqCst)
    }

    /// Makes every reading up to the current time available (the device caught up).
    pub fn complete(&self) {
        self.state.completed.store(self.now(), SeqCst);
    }

    /// How many marks have been taken: two per measured run, one per `step()`, so a test can
    /// check how much was measured, not only what.
    pub fn marks_taken(&self) -> u64 {
        self.state.marks.load(SeqCst)
    }

    /// How many marks have been released after being read.
    pub fn released(&self) -> u64 {
        self.state.released.load(SeqCst)
    }
}

impl Clock for FakeClock {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn mark(&self) -> u64 {
        self.state.marks.fetch_add(1, SeqCst);
        self.now()
    }

    fn elapsed(&self, start: u64, stop: u64) -> Reading {
        if self.state.deferred.load(SeqCst) && stop > self.state.completed.load(SeqCst) {
            return Reading::Pending;
        }
        Reading::Ready(stop.saturating_sub(start))
    }

    fn is_linear(&self) -> bool {
        !self.state.deferred.load(SeqCst)
    }

    fn settle(&self) {
        self.complete();
    }

    fn release(&self, _mark: u64) {
        self.state.released.fetch_add(1, SeqCst);
    }
}
