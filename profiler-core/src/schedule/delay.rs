//! The delay `PROF_DELAY` injects after every run of the probes `PROF_DELAY_FILTER` selects
//! (what `prof whatif` measures with): a calibrated spin, taken after the run's stop mark so
//! that the run's own sample does not include it.
//!
//! A delayed probe leaves the fast path as a hooked one does: between its measured runs it
//! rests in [`State::Hook`](crate::register::descriptor::State::Hook), and its runs carry the
//! hook bit [`HOOK_DELAY`](crate::schedule::HOOK_DELAY); a session with a delay is never
//! `plain`, so that its armed runs take the general path, which ends hooks. Probes that are not
//! delayed keep their one load and branch. What it costs and where: `docs/overhead.md`.
//!
//! The spin reads the CPU clock (the time-stamp counter where `quanta` trusts it), calibrated
//! once when the session starts, until the amount has passed: the delay is wall time, whatever
//! the processor's frequency, and every delay is counted (`run.delay`): the runs delayed, the
//! amount asked for, and the time the spins took.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use crate::instrument::clock::{ActiveClock, CpuClock, Reading};
use crate::register::registry::registry;
use crate::select::config::DelayAmount;
use profiler_format::filter::Filter;

/// A session's delay: which probes, how much, and what was injected so far.
#[derive(Debug)]
pub(crate) struct Delay {
    /// `PROF_DELAY_FILTER`.
    pub(crate) filter: Filter,
    /// `PROF_DELAY`.
    pub(crate) amount: DelayAmount,
    /// Whether each probe is delayed, by registry index (room for the probes registered later,
    /// as the schedule's routes have).
    selected: Box<[AtomicBool]>,
    /// The clock the spins read.
    spin: CpuClock,
    /// Ticks of `spin` per nanosecond, from its calibration.
    ticks_per_ns: f64,
    /// Runs delayed.
    calls: AtomicU64,
    /// Nanoseconds asked for.
    requested_ns: AtomicU64,
    /// Nanoseconds the spins took.
    injected_ns: AtomicU64,
    /// What was injected by the last `step()`, as [`Delay::injected`] gives it: what
    /// `run.delay` writes, so that runs after the loop (a final evaluation, the checkpoint)
    /// count as little as those before it.
    at_step: std::sync::Mutex<Injected>,
    /// The loop has begun (a `step()` was called): runs before it are not delayed, since
    /// `prof whatif` divides the delay by the iterations, which a run before them (the model's
    /// construction) does not lengthen.
    looping: AtomicBool,
}

/// What a session's delay did, for `run.delay`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Injected {
    /// Runs delayed.
    pub calls: u64,
    /// Nanoseconds asked for.
    pub requested_ns: u64,
    /// Nanoseconds the spins took.
    pub injected_ns: u64,
}

impl Delay {
    /// The delay of a session (cold path): the probes registered so far that `filter` selects,
    /// with room for `room` entries in all; the spin's clock calibrated.
    pub(crate) fn new(filter: Filter, amount: DelayAmount, room: usize) -> Delay {
        let reg = registry();
        let selected: Box<[AtomicBool]> = (0..room.max(reg.len()))
            .map(|i| AtomicBool::new(i < reg.len() && reg.entry(i).selected_by(&filter)))
            .collect();
        let spin = CpuClock::new();
        // Nanoseconds of 2^32 ticks, by the clock's own calibration.
        let span = 1u64 << 32;
        let ns = spin.delta_ns(0, span).max(1);
        Delay {
            filter,
            amount,
            selected,
            ticks_per_ns: span as f64 / ns as f64,
            spin,
            calls: AtomicU64::new(0),
            requested_ns: AtomicU64::new(0),
            injected_ns: AtomicU64::new(0),
            at_step: std::sync::Mutex::new(Injected::default()),
            looping: AtomicBool::new(false),
        }
    }

    /// Whether probe `entry` is delayed.
    #[inline]
    pub(crate) fn selects(&self, entry: usize) -> bool {
        self.selected.get(entry).is_some_and(|s| s.load(Relaxed))
    }

    /// A probe registered at run time joins the delay when the filter selects it.
    pub(crate) fn adopt(&self, entry: usize) -> bool {
        let Some(cell) = self.selected.get(entry) else {
            return false;
        };
        let on = registry().entry(entry).selected_by(&self.filter);
        cell.store(on, Relaxed);
        on
    }

    /// The probes the filter selects.
    pub(crate) fn entries(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.selected.len()).filter(|&i| self.selects(i))
    }

    /// A delayed run ended: `start` and `stop` are its marks on `clock` (the session's). Spins
    /// for the amount (a share of `stop - start` in nanoseconds, or the fixed duration) and
    /// counts it.
    #[inline(never)]
    pub(crate) fn after_run(&self, clock: &ActiveClock, start: u64, stop: u64) {
        if !self.looping.load(Relaxed) {
            return;
        }
        let ns = match self.amount {
            DelayAmount::Fixed(ns) => ns,
            DelayAmount::Share(share) => match clock.elapsed(start, stop) {
                Reading::Ready(own) => (own as f64 * share) as u64,
                _ => 0,
            },
        };
        let spun = if ns == 0 { 0 } else { self.spin_for(ns) };
        self.calls.fetch_add(1, Relaxed);
        self.requested_ns.fetch_add(ns, Relaxed);
        self.injected_ns.fetch_add(spun, Relaxed);
    }

    /// Spins until `ns` nanoseconds have passed on the CPU clock; returns how long it took.
    fn spin_for(&self, ns: u64) -> u64 {
        let ticks = (ns as f64 * self.ticks_per_ns).ceil() as u64;
        let start = self.spin.raw();
        let until = start.saturating_add(ticks);
        let mut now = start;
        while now < until {
            std::hint::spin_loop();
            now = self.spin.raw();
        }
        self.spin.delta_ns(start, now)
    }

    /// What was injected so far.
    pub(crate) fn injected(&self) -> Injected {
        Injected {
            calls: self.calls.load(Relaxed),
            requested_ns: self.requested_ns.load(Relaxed),
            injected_ns: self.injected_ns.load(Relaxed),
        }
    }

    /// A `step()` ends an iteration: what was injected by now is what the iterations so far
    /// had (cold path: once an iteration).
    pub(crate) fn mark_step(&self) {
        self.looping.store(true, Relaxed);
        *crate::sync::lock(&self.at_step) = self.injected();
    }

    /// What was injected by the last `step()`: the delay of the iterations after the first.
    pub(crate) fn through_last_step(&self) -> Injected {
        *crate::sync::lock(&self.at_step)
    }
}
