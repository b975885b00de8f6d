//! The default clock: the CPU's time-stamp counter where it is trustworthy, else the OS's
//! monotonic clock.

use super::{Clock, Reading};

/// The CPU clock, through `quanta`.
///
/// `quanta` reads the time-stamp counter (about 10 ns a read here) when the processor reports an
/// invariant TSC, calibrating it against the monotonic clock at start-up, and falls back to the
/// monotonic clock (`clock_gettime`, about 25 ns) where it does not.
#[derive(Clone, Debug)]
pub struct CpuClock {
    inner: quanta::Clock,
}

impl CpuClock {
    /// Calibrates the clock (a few milliseconds, once, at start-up).
    pub fn new() -> CpuClock {
        CpuClock {
            inner: quanta::Clock::new(),
        }
    }

    /// A raw reading, inlined into the armed path.
    #[inline(always)]
    pub fn raw(&self) -> u64 {
        self.inner.raw()
    }

    /// Nanoseconds between two raw readings.
    pub fn delta_ns(&self, start: u64, stop: u64) -> u64 {
        if stop <= start {
            return 0;
        }
        self.inner.delta_as_nanos(start, stop)
    }
}

impl Default for CpuClock {
    fn default() -> Self {
        CpuClock::new()
    }
}

impl Clock for CpuClock {
    fn name(&self) -> &'static str {
        "cpu"
    }

    #[inline(always)]
    fn mark(&self) -> u64 {
        self.raw()
    }

    fn elapsed(&self, start: u64, stop: u64) -> Reading {
        Reading::Ready(self.delta_ns(start, stop))
    }
}
