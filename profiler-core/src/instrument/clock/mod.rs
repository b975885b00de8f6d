//! Clocks: where timestamps come from.
//!
//! A clock hands out opaque *marks* on the hot path and turns pairs of marks into nanoseconds on
//! the cold path. Turning marks into time is allowed to fail for now: a GPU timer's stop event is
//! only readable once the device has passed it, so a reading may be [`Reading::Pending`] and is
//! retried at the next `step()` or at the end, never waited for on the hot path.

mod cpu;
mod fake;

pub use cpu::CpuClock;
pub use fake::FakeClock;

/// The result of turning two marks into a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// The duration in nanoseconds.
    Ready(u64),
    /// Not available yet; ask again later.
    Pending,
    /// Will never be available (the timer was lost); the sample is dropped.
    Lost,
}

/// A source of timestamps for measurements.
///
/// `mark` runs on the hot path: it must not allocate, lock, block or make a system call the clock
/// does not need. Everything else runs on the cold path.
pub trait Clock: Send + Sync + 'static {
    /// The name written as `run.clock` in `prof.json` (`cpu`, `fake`, `cuda`, ...).
    fn name(&self) -> &'static str;

    /// A timestamp, in the clock's own units.
    fn mark(&self) -> u64;

    /// The time from `start` to `stop`, both returned by [`Clock::mark`] (or, for a device, both
    /// taken on one stream).
    fn elapsed(&self, start: u64, stop: u64) -> Reading;

    /// True when marks are points on one linear time line, so that `elapsed(a, b)` depends only
    /// on `b - a` and is always ready. Such clocks let merged events keep exact running totals.
    fn is_linear(&self) -> bool {
        true
    }

    /// Waits until every mark taken so far can be read. Called once, at the end, before the
    /// last resolution (never on the hot path); a GPU clock synchronizes its streams here.
    fn settle(&self) {}

    /// Called once a mark has been read for the last time, so that a clock holding resources
    /// per mark (an event pool) can reuse them.
    fn release(&self, _mark: u64) {}
}

/// The clock of a session: the CPU clock dispatched statically (it is the common case and
/// sits on the armed path), anything else through the [`Clock`] trait.
pub(crate) enum ActiveClock {
    Cpu(CpuClock),
    Custom(Box<dyn Clock>),
}

impl std::fmt::Debug for ActiveClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl ActiveClock {
    #[inline(always)]
    pub fn mark(&self) -> u64 {
        match self {
            ActiveClock::Cpu(clock) => clock.raw(),
            ActiveClock::Custom(clock) => clock.mark(),
        }
    }

    pub fn elapsed(&self, start: u64, stop: u64) -> Reading {
        match self {
            ActiveClock::Cpu(clock) => clock.elapsed(start, stop),
            ActiveClock::Custom(clock) => clock.elapsed(start, stop),
        }
    }

    pub fn settle(&self) {
        if let ActiveClock::Custom(clock) = self {
            clock.settle();
        }
    }

    pub fn release(&self, mark: u64) {
        if let ActiveClock::Custom(clock) = self {
            clock.release(mark);
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ActiveClock::Cpu(clock) => clock.name(),
            ActiveClock::Custom(clock) => clock.name(),
        }
    }

    pub fn is_linear(&self) -> bool {
        match self {
            ActiveClock::Cpu(_) => true,
            ActiveClock::Custom(clock) => clock.is_linear(),
        }
    }

    /// The median duration of an empty measurement (two marks back to back), measured once at
    /// start-up so that readers know the floor under every sample. Nothing is subtracted.
    pub fn empty_measurement_ns(&self) -> u64 {
        let mut samples: Vec<u64> = (0..201)
            .filter_map(|_| {
                let start = self.mark();
                let stop = self.mark();
                let reading = self.elapsed(start, stop);
                self.release(start);
                self.release(stop);
                match reading {
                    Reading::Ready(ns) => Some(ns),
                    _ => None,
                }
            })
            .collect();
        samples.sort_unstable();
        samples.get(samples.len() / 2).copied().unwrap_or(0)
    }
}
