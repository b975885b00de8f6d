//! Arming, at each `step()`: the next event of the schedule (every event, in `trace` mode) is
//! armed for the iteration about to run, the probe armed before is put back to rest, and the
//! iteration's start is marked on each stream an armed event is timed on.

use std::sync::atomic::Ordering::{Relaxed, Release};

use super::SessionMode;
use super::{lane_stream, Plan, Schedule};
use crate::instrument::device::Device;
use crate::register::descriptor::State;

impl Schedule {
    /// Arms what iteration `iter` measures; on a device, the iteration's start is marked on
    /// the armed events' streams, into `stream_marks` as (iteration, lane, mark).
    pub(crate) fn arm(
        &self,
        c: &mut Plan,
        iter: u32,
        device: Option<&dyn Device>,
        stream_marks: &mut Vec<(u32, u32, u64)>,
    ) {
        c.armed.clear();
        if c.order.is_empty() {
            self.reset_calls(c);
            return;
        }
        let k = c.armed_iterations;
        let repeat = u64::from(self.repeat);
        self.cur_iter.store(iter, Relaxed);
        match self.mode {
            SessionMode::Sample | SessionMode::Continuous => {
                let event = c.order[(k / repeat) as usize];
                let entry = self.events[event as usize].get().map(|e| e.entry);
                if let (Some(old), true) = (c.armed_entry, c.armed_entry != entry) {
                    self.desc(old).state.store(self.idle_state(old), Relaxed);
                }
                self.cur_slot.store((k % repeat) as u32, Relaxed);
                self.armed_event.store(event, Relaxed);
                // The counts restart only now: a run on another thread that takes an
                // occurrence of the restarted count reads this iteration and slot. Restarted
                // first, such a run could read the previous ones and write the slot this
                // step() had just read and cleared: its sample lost (a worker thread's event
                // kept 250 to 298 of 300 samples).
                self.reset_calls(c);
                if let Some(entry) = entry {
                    self.desc(entry).state.store(State::Armed, Release);
                }
                c.armed_entry = entry;
                c.armed.push(event);
            }
            SessionMode::Trace => {
                self.cur_slot.store(k as u32, Relaxed);
                self.reset_calls(c);
                for &event in &c.order {
                    if let Some(e) = self.events[event as usize].get() {
                        // Measured on the armed path without its keys' expressions:
                        // `trace` mode keeps no work.
                        let state = if e.recorded {
                            State::Recorded
                        } else {
                            State::Traced
                        };
                        self.desc(e.entry).state.store(state, Release);
                    }
                }
                c.armed.extend_from_slice(&c.order);
            }
        }
        if let Some(device) = device {
            self.mark_iteration_on_streams(c, iter, device, stream_marks);
        }
    }

    /// A trace on demand (`continuous` mode): every event is armed for iteration `iter`, its
    /// runs writing slot `slot` (the trace's `slot`th iteration). The sampling schedule's
    /// place (`armed_iterations`) is left as it is.
    pub(crate) fn arm_every(
        &self,
        c: &mut Plan,
        iter: u32,
        slot: u32,
        device: Option<&dyn Device>,
        stream_marks: &mut Vec<(u32, u32, u64)>,
    ) {
        c.armed.clear();
        self.cur_iter.store(iter, Relaxed);
        self.cur_slot.store(slot, Relaxed);
        self.every_event.store(true, Relaxed);
        // After the iteration and slot, as in `arm`.
        self.reset_calls(c);
        for &event in &c.order {
            if let Some(e) = self.events[event as usize].get() {
                self.desc(e.entry).state.store(State::Armed, Release);
            }
        }
        c.armed.extend_from_slice(&c.order);
        if let Some(device) = device {
            self.mark_iteration_on_streams(c, iter, device, stream_marks);
        }
    }

    /// The trace on demand is over: every probe rests until the sampling schedule arms its
    /// next event.
    pub(crate) fn rest_every(&self, c: &mut Plan) {
        self.every_event.store(false, Relaxed);
        // The probes with events only: one not seen yet stays in learning state.
        for &event in &c.order {
            if let Some(e) = self.events[event as usize].get() {
                self.desc(e.entry)
                    .state
                    .store(self.idle_state(e.entry), Relaxed);
            }
        }
        c.armed.clear();
        c.armed_entry = None;
    }

    /// Like HugeCTR, records the start of iteration `iter` on each stream an armed event is
    /// timed on, so that samples get their offset on the device's time line.
    fn mark_iteration_on_streams(
        &self,
        c: &Plan,
        iter: u32,
        device: &dyn Device,
        stream_marks: &mut Vec<(u32, u32, u64)>,
    ) {
        let mut lanes: Vec<u32> = c
            .armed
            .iter()
            .filter_map(|&e| self.events[e as usize].get())
            .filter(|ev| ev.store.samples.has_device())
            .map(|ev| ev.lane)
            .collect();
        lanes.sort_unstable();
        lanes.dedup();
        for lane in lanes {
            if let Some(&stream) = lane_stream(&c.streams, lane) {
                let mark = device.mark_on(stream);
                stream_marks.push((iter, lane, mark));
            }
        }
    }

    /// How many armed iterations complete the schedule (0: nothing to measure).
    pub(crate) fn total_armed_iterations(&self, c: &Plan) -> u64 {
        let repeat = u64::from(self.repeat);
        match self.mode {
            SessionMode::Sample | SessionMode::Continuous => c.order.len() as u64 * repeat,
            SessionMode::Trace if c.order.is_empty() => 0,
            SessionMode::Trace => repeat,
        }
    }

    /// A new iteration: no run of a selected probe counted yet.
    pub(crate) fn reset_calls(&self, c: &Plan) {
        #[cfg(test)]
        tests::at_reset(self);
        for &entry in &c.selected {
            self.route(entry).reset_calls();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::RefCell;
    use std::sync::atomic::Ordering::Relaxed;

    use super::Schedule;

    thread_local! {
        /// The iteration and slot stored when the occurrence counts restart, while recording.
        static AT_RESET: RefCell<Option<Vec<(u32, u32)>>> = const { RefCell::new(None) };
    }

    /// Records, on this thread, the iteration and slot each restart of the counts finds
    /// (`Some`), until [`reset_seen`] takes them.
    pub(crate) fn record_resets() {
        AT_RESET.with(|seen| *seen.borrow_mut() = Some(Vec::new()));
    }

    /// What the restarts found since [`record_resets`].
    pub(crate) fn reset_seen() -> Vec<(u32, u32)> {
        AT_RESET.with(|seen| seen.borrow_mut().take().unwrap_or_default())
    }

    pub(super) fn at_reset(schedule: &Schedule) {
        AT_RESET.with(|seen| {
            if let Some(seen) = seen.borrow_mut().as_mut() {
                seen.push((
                    schedule.cur_iter.load(Relaxed),
                    schedule.cur_slot.load(Relaxed),
                ));
            }
        });
    }
}
