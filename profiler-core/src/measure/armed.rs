//! The armed half of a run: a run of an armed (or hooked, or warmup) probe, from its start
//! marks to its sample's stores.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use super::{Armed, Measuring, Run, Sampled, CAPTURE, HOOKS_ONLY, LEARNING};
use crate::instrument::alloc::Figures;
use crate::instrument::device::{Device, Stream, NO_MARK};
use crate::register::descriptor::{Descriptor, State};
use crate::schedule::{Route, HOOK_DELAY, HOOK_KERNELS, HOOK_MEMORY, HOOK_NVTX, HOOK_SYNC, NONE};
use crate::store::samples::NO_BYTES;

impl Measuring {
    /// An armed run of `desc` starts in a plain session ([`Measuring::plain`]), entered
    /// without stream or keys: the occurrence count, the check that its event is the one
    /// armed, the iteration and slot, then the start mark. What [`Measuring::start_measure`]
    /// does for such a run, without the tests of what a plain session never has (hooks, a
    /// device, memory counting, work), so that the code around the clock reads stays short
    /// (issue 43: the general path's 115 instructions of entry and 86 of end against 31 and
    /// 68 for a recorded run). A run whose event is not armed measures nothing.
    #[inline(always)]
    pub(crate) fn start_sampled(&'static self, desc: &'static Descriptor) -> Run {
        let schedule = &self.schedule;
        let Some(probe) = schedule.routes.get(desc.index.load(Relaxed) as usize) else {
            return Run::None;
        };
        // Acquire: an occurrence of the restarted count comes with the iteration and slot
        // stored before the restart (`Schedule::arm`).
        let event = probe.event_for(probe.calls.fetch_add(1, Acquire));
        if event == NONE
            || (event != schedule.armed_event.load(Relaxed) && !schedule.every_event.load(Relaxed))
        {
            return Run::None;
        }
        let iter = schedule.cur_iter.load(Relaxed);
        let slot = schedule.cur_slot.load(Relaxed);
        Run::Sampled(Sampled {
            at: self,
            event,
            slot,
            iter,
            start: self.clock.mark(),
        })
    }

    /// A [`Sampled`] run ends: its stop mark, then its sample's stores (a merged event's
    /// totals and reservoir, as for any armed run).
    #[inline(never)]
    pub(crate) fn finish_sampled(&self, run: &Sampled) {
        let stop = self.clock.mark();
        if let Some(event) = self.schedule.event(run.event) {
            event.store.record(
                run.slot,
                run.iter,
                (run.start, stop),
                (NO_MARK, NO_MARK),
                self.linear,
                None,
            );
        }
    }

    /// A run of `desc` starts; returns the measurement if this run is measured or learned (or a
    /// guard that only closes hooks).
    #[inline]
    pub(crate) fn start_run(
        &'static self,
        desc: &'static Descriptor,
        state: State,
        nests: bool,
        stream: Option<Stream>,
        work: Option<&super::Work>,
    ) -> Run {
        let hooks = if self.schedule.hooks.any {
            self.schedule.hooks_of(desc, nests)
        } else {
            0
        };
        if let (Some(device), true) = (&self.device, hooks != 0) {
            if hooks & HOOK_SYNC != 0 {
                device.synchronize();
            }
            if hooks & HOOK_NVTX != 0 {
                device.range_push(desc.index.load(Relaxed));
            }
        }
        if state == State::Recorded && stream.is_none() {
            return self.start_recorded(desc);
        }
        if state == State::Learn && self.records_learning() {
            return match self.start_learning(desc, nests, stream, hooks) {
                Some(learning) => Run::Learning(learning),
                None => Run::Armed(Armed::bare(self, HOOKS_ONLY, hooks)),
            };
        }
        match self.start_measure(desc, state, nests, stream, hooks, work) {
            Some(armed) => Run::Armed(armed),
            None if hooks != 0 => {
                let mut bare = Armed::bare(self, HOOKS_ONLY, hooks);
                if hooks & HOOK_DELAY != 0 {
                    // A delay of a share of the run needs the run's length.
                    bare.start = self.clock.mark();
                }
                Run::Armed(bare)
            }
            None => Run::None,
        }
    }

    #[inline]
    pub(super) fn start_measure(
        &'static self,
        desc: &'static Descriptor,
        state: State,
        nests: bool,
        stream: Option<Stream>,
        hooks: u8,
        work: Option<&super::Work>,
    ) -> Option<Armed> {
        if state == State::Hook {
            return None;
        }
        if state == State::Learn {
            let lane = self.schedule.learn_run(desc, nests, stream)?;
            let mut armed = Armed::bare(self, LEARNING, hooks);
            if self.schedule.times_learning_run(lane) {
                // Timed, after the learning work, as an armed run would be.
                armed.slot = CAPTURE;
                armed.start = self.clock.mark();
            } else if hooks & HOOK_DELAY != 0 {
                armed.start = self.clock.mark();
            }
            return Some(armed);
        }
        let probe = self
            .schedule
            .routes
            .get(desc.index.load(Relaxed) as usize)?;
        let route = stream.and_then(|s| probe.on(s));
        let event = match route {
            Some(route) => route.next_event(),
            None => probe.event_for(probe.calls.fetch_add(1, Acquire)),
        };
        if event == NONE
            || (event != self.schedule.armed_event.load(Relaxed)
                && !self.schedule.every_event.load(Relaxed))
        {
            return None;
        }
        let iter = self.schedule.cur_iter.load(Relaxed);
        if let Some(work) = work {
            self.store_work(event, self.schedule.cur_slot.load(Relaxed), work);
        }
        let mut hooks = hooks;
        // Counting starts before the start mark, so that its own cost is not measured.
        if self.schedule.memory && nests && crate::instrument::alloc::begin() {
            hooks |= HOOK_MEMORY;
        }
        let (start, dstart, at) = match self.device.as_deref() {
            // The CPU-only path: nothing more than before streams existed.
            None => (self.clock.mark(), NO_MARK, Stream::new(0, 0)),
            Some(device) => self.start_on_device(device, (event, iter), route, nests, &mut hooks),
        };
        Some(Armed {
            at: self,
            event,
            slot: self.schedule.cur_slot.load(Relaxed),
            iter,
            start,
            dstart,
            stream: at,
            hooks,
        })
    }

    /// The start of a measured run in a session with a device: its kernel tag, and for an
    /// event timed on a stream, the device's memory in use (read before the start marks, so
    /// that neither time includes the call, into the slot the run fills) and the device mark.
    /// Out of line, so that the CPU path stays as it was. Returns the CPU mark, the device
    /// mark and the stream.
    #[inline(never)]
    fn start_on_device(
        &self,
        device: &dyn Device,
        (event, iter): (u32, u32),
        route: Option<&Route>,
        nests: bool,
        hooks: &mut u8,
    ) -> (u64, u64, Stream) {
        // Tags are a per-thread stack: an `async fn` may end on another thread.
        if nests && self.kernels_on.load(Relaxed) {
            device.kernels_push(super::kernel_tag(event, iter));
            *hooks |= HOOK_KERNELS;
        }
        let timed = route.and_then(|route| {
            let ev = self.schedule.event(event)?;
            ev.store.samples.has_device().then_some((route, ev))
        });
        match timed {
            Some((route, ev)) => {
                // An event timed on a stream is never merged: the slot is the run's own.
                let slot = self.schedule.cur_slot.load(Relaxed) as usize;
                let used = used_on(device, route.stream);
                ev.store.samples.write_used(slot, false, used);
                let start = self.clock.mark();
                (start, device.mark_on(route.stream), route.stream)
            }
            None => (self.clock.mark(), NO_MARK, Stream::new(0, 0)),
        }
    }

    /// A measured run ends: store its marks, and close its hooks.
    #[inline(never)]
    pub(crate) fn finish_armed(&self, armed: &Armed) {
        // The common run: measured on the CPU, no hooks (a probe with keys, or any armed run of
        // a session that is not plain). Its stop mark and its sample, and nothing else tested.
        if armed.hooks == 0
            && armed.dstart == NO_MARK
            && armed.event != LEARNING
            && armed.event != HOOKS_ONLY
        {
            let stop = self.clock.mark();
            self.store_run(armed, stop, NO_MARK, None);
            return;
        }
        self.finish_hooked(armed);
    }

    /// [`finish_armed`](Self::finish_armed) for the other runs: learning or hooks only, timed
    /// on a stream, or with hooks (synchronization, memory, the delay, NVTX, kernels).
    #[inline(never)]
    fn finish_hooked(&self, armed: &Armed) {
        if armed.event == LEARNING || armed.event == HOOKS_ONLY {
            self.discard_run(armed);
            return;
        }
        let device = self.device.as_deref();
        if let (Some(device), true) = (device, armed.dstart != NO_MARK) {
            self.finish_on_device(armed, device);
            return;
        }
        if let (Some(device), true) = (device, armed.hooks & HOOK_SYNC != 0) {
            device.synchronize();
        }
        let stop = self.clock.mark();
        let memory = (armed.hooks & HOOK_MEMORY != 0).then(crate::instrument::alloc::end);
        self.store_run(armed, stop, NO_MARK, memory.as_ref());
        if armed.hooks & HOOK_DELAY != 0 {
            self.delay_after(armed.start, stop);
        }
    }

    /// A measured run timed on a stream ends: its stop marks, then the device's memory (read
    /// after them, as the start's was read before the start marks). Out of line, so that the
    /// CPU path stays as it was.
    #[inline(never)]
    fn finish_on_device(&self, armed: &Armed, device: &dyn Device) {
        let dstop = device.mark_on(armed.stream);
        if armed.hooks & HOOK_SYNC != 0 {
            device.synchronize();
        }
        let stop = self.clock.mark();
        let memory = (armed.hooks & HOOK_MEMORY != 0).then(crate::instrument::alloc::end);
        let used = used_on(device, armed.stream);
        if let Some(event) = self.schedule.event(armed.event) {
            event
                .store
                .samples
                .write_used(armed.slot as usize, true, used);
        }
        self.store_run(armed, stop, dstop, memory.as_ref());
        if armed.hooks & HOOK_DELAY != 0 {
            self.delay_after(armed.start, stop);
        }
    }

    /// Stores a measured run's sample (`dstop`: its device stop mark, or `NO_MARK`), and
    /// closes its hooks.
    #[inline(always)]
    fn store_run(&self, armed: &Armed, stop: u64, dstop: u64, memory: Option<&Figures>) {
        if let Some(event) = self.schedule.event(armed.event) {
            event.store.record(
                armed.slot,
                armed.iter,
                (armed.start, stop),
                (armed.dstart, dstop),
                self.linear,
                memory,
            );
        }
        self.close_hooks(armed.hooks & !HOOK_SYNC);
    }

    /// Stores the work of a measured run of `event` about to start (before its start mark) into
    /// `slot`, where its sample will go, before the sample is published (as
    /// [`SampleSlots::write_used`](crate::store::samples::SampleSlots::write_used) does). Nothing for a
    /// merged event (whose reservoir slot is drawn at the run's end), nor for an event with no
    /// work storage. Out of line: only probes with keys call it.
    #[inline(never)]
    fn store_work(&self, event: u32, slot: u32, work: &super::Work) {
        if let Some(event) = self.schedule.event(event) {
            if event.store.totals.is_none() {
                event.store.samples.write_work(
                    slot as usize,
                    (work.flops, work.bytes),
                    &work.shape,
                );
            }
        }
    }

    /// A run ends without a sample: warmup's nesting, a discarded guard, or hooks only.
    pub(crate) fn discard_run(&self, armed: &Armed) {
        if armed.hooks & HOOK_MEMORY != 0 {
            crate::instrument::alloc::end();
        }
        let stop = (armed.hooks & HOOK_DELAY != 0).then(|| self.clock.mark());
        if armed.event == LEARNING {
            let timed = (armed.slot == CAPTURE).then(|| (armed.start, self.clock.mark()));
            self.schedule.end_learning_run(timed);
        }
        if let (Some(device), true) = (&self.device, armed.dstart != NO_MARK) {
            device.release(armed.dstart);
        }
        self.close_hooks(armed.hooks);
        if let Some(stop) = stop {
            self.delay_after(armed.start, stop);
        }
    }

    pub(super) fn close_hooks(&self, hooks: u8) {
        let Some(device) = self.device.as_deref() else {
            return;
        };
        if hooks & HOOK_KERNELS != 0 {
            device.kernels_pop();
        }
        if hooks & HOOK_SYNC != 0 {
            device.synchronize();
        }
        if hooks & HOOK_NVTX != 0 {
            device.range_pop();
        }
    }
}

/// The memory in use on `stream`'s device, or `NO_BYTES` when the device cannot say.
#[inline]
fn used_on(device: &dyn Device, stream: Stream) -> u64 {
    device.memory_used(stream.device()).unwrap_or(NO_BYTES)
}
