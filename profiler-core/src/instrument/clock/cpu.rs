//! The default clock: the CPU's time-stamp counter where it is trustworthy, else the OS's
//! monotonic clock.

use super::{Clock, Reading};

/// The CPU clock, through `quanta`.
///
/// `quanta` reads the time-stamp counter (about 10 ns a read here) when the processor reports an
/// invariant TSC, calibrating it against the monotonic clock at start-up, and falls back to the
/// monotonic clock (`clock_gettime`, about 25 ns) where it does not. Where `quanta` reads the
/// counter, on x86-64, this clock reads it itself with an inline `rdtsc`, the same value
/// without a call (a mark taken on the armed path costs the read and nothing around it).
#[derive(Clone, Debug)]
pub struct CpuClock {
    inner: quanta::Clock,
    /// `quanta` reads the time-stamp counter, so this clock reads it itself, inline (x86-64):
    /// `quanta::Clock::raw` is not inlined across crates, and a call to it makes each function
    /// that takes a mark save and restore registers around it.
    tsc: bool,
}

impl CpuClock {
    /// Calibrates the clock (a few milliseconds, once, at start-up).
    pub fn new() -> CpuClock {
        let inner = quanta::Clock::new();
        let tsc = reads_tsc(&inner);
        CpuClock { inner, tsc }
    }

    /// A raw reading, inlined into the armed path.
    #[inline(always)]
    pub fn raw(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.tsc {
            // SAFETY: every x86-64 processor has `rdtsc`.
            return unsafe { std::arch::x86_64::_rdtsc() };
        }
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

/// Whether `clock`'s raw readings are the time-stamp counter's: three readings each between two
/// reads of the counter (a monotonic clock's nanoseconds are not, its scale differs).
#[cfg(target_arch = "x86_64")]
fn reads_tsc(clock: &quanta::Clock) -> bool {
    (0..3).all(|_| {
        // SAFETY: every x86-64 processor has `rdtsc`.
        let before = unsafe { std::arch::x86_64::_rdtsc() };
        let raw = clock.raw();
        let after = unsafe { std::arch::x86_64::_rdtsc() };
        before <= raw && raw <= after
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn reads_tsc(_clock: &quanta::Clock) -> bool {
    false
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_reading_is_quantas() {
        let clock = CpuClock::new();
        assert_eq!(clock.tsc, reads_tsc(&clock.inner));
        for _ in 0..100 {
            let before = clock.inner.raw();
            let raw = clock.raw();
            let after = clock.inner.raw();
            assert!(
                before <= raw && raw <= after,
                "{before} <= {raw} <= {after} (inline TSC: {})",
                clock.tsc
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_clock_other_than_the_counter_is_not_taken_for_it() {
        // A clock whose readings are not the counter's (a mock here; the OS's monotonic
        // nanoseconds alike) is read through quanta.
        let (mock, handle) = quanta::Clock::mock();
        handle.increment(12_345);
        assert!(!reads_tsc(&mock));
    }
}
