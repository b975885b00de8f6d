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
    /// Nanoseconds per tick as `numerator / denominator`; a denominator of 0 means one
    /// nanosecond a tick.
    tick: (AtomicU64, AtomicU64),
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

    /// A clock whose marks count ticks of `numerator / denominator` nanoseconds each, turned
    /// into nanoseconds as a time-stamp counter's are (the product truncated): a test then sees
    /// the rounding of a real clock, where a duration in nanoseconds is not a whole number of
    /// ticks. [`FakeClock::advance`] moves such a clock by ticks.
    pub fn ticking(numerator: u64, denominator: u64) -> FakeClock {
        assert!(denominator > 0, "a tick of {numerator}/0 ns");
        let clock = FakeClock::new();
        clock.state.tick.0.store(numerator, SeqCst);
        clock.state.tick.1.store(denominator, SeqCst);
        clock
    }

    /// Moves time forward by `ns` nanoseconds (ticks, for a [`FakeClock::ticking`] clock).
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
        let ticks = stop.saturating_sub(start);
        let den = self.state.tick.1.load(SeqCst);
        if den == 0 {
            return Reading::Ready(ticks);
        }
        let ns = u128::from(ticks) * u128::from(self.state.tick.0.load(SeqCst)) / u128::from(den);
        Reading::Ready(u64::try_from(ns).unwrap_or(u64::MAX))
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
