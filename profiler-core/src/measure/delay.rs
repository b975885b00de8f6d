//! The delay `PROF_DELAY` injects after every run of the probes `PROF_DELAY_FILTER` selects, as
//! the hot path ends a delayed run: the spin and its counts are the schedule's
//! [`Delay`](crate::schedule::delay::Delay) (`schedule/delay.rs`), reached only through the
//! hook bit [`HOOK_DELAY`](crate::schedule::HOOK_DELAY).

impl super::Measuring {
    /// A delayed run ended (its hooks carry [`HOOK_DELAY`](crate::schedule::HOOK_DELAY)):
    /// `start` and `stop` are its marks, the stop mark taken before this is called, so that
    /// its sample, if it has one, does not include the delay.
    #[cold]
    #[inline(never)]
    pub(crate) fn delay_after(&self, start: u64, stop: u64) {
        if let Some(delay) = &self.schedule.delay {
            delay.after_run(&self.clock, start, stop);
        }
    }
}
