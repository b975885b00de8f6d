//! The end of each iteration (`step()`): handing over from warmup to the plan, keeping what the
//! armed iteration measured, resolving samples, arming the next (the stages themselves are in
//! `schedule/`); and the end of the run: the last resolution and the write.

use std::sync::atomic::Ordering::Relaxed;

use super::{lock, Control, Session};
use crate::register::descriptor::State;
use crate::schedule::SessionMode;
use crate::schedule::POOL_ITERATIONS;
use crate::store::samples::{resolve_slot, IterationStarts, Outcome, Resolved};

/// Where each iteration began, for one event's offsets.
struct Starts<'a> {
    /// `cpu[k]` is the start of iteration `base + k`.
    cpu: &'a [u64],
    base: u32,
    stream_marks: &'a [(u32, u32, u64)],
    lane: u32,
}

impl IterationStarts for Starts<'_> {
    fn cpu(&self, iter: u32) -> Option<u64> {
        let k = iter.checked_sub(self.base)?;
        self.cpu.get(k as usize).copied()
    }

    fn cpu_marks(&self) -> (&[u64], u32) {
        (self.cpu, self.base)
    }

    fn device(&self, iter: u32) -> Option<u64> {
        self.stream_marks
            .iter()
            .find(|&&(i, lane, _)| i == iter && lane == self.lane)
            .map(|&(_, _, mark)| mark)
    }
}

impl Session {
    // ---- the cold path ----

    /// The end of an iteration.
    pub(crate) fn step(&'static self) {
        if let (Some(device), true) = (&self.measuring.device, self.config.sync >= 1) {
            // PROF_SYNC=1: the iteration ends when the device's work for it is done.
            device.synchronize();
        }
        let now = self.measuring.clock.mark();
        let mut c = lock(&self.control);
        if c.end.finished || c.end.written {
            return;
        }
        c.iterations.marks.push(now);
        let completed = c.iterations.base + (c.iterations.marks.len() - 1) as u32;
        self.record_device_memory(&mut c, completed - 1);
        if self.measuring.schedule.learning.load(Relaxed) {
            self.fold_learning(&mut c, Some(now));
            self.measuring.schedule.end_first_iteration();
            lock(&self.measuring.schedule.learner).next_iteration();
            self.measuring.schedule.reset_calls(&c.plan);
            if completed >= self.config.warmup {
                self.measuring.schedule.learning.store(false, Relaxed);
                self.plan(&mut c);
                self.end_learning_records(&mut c);
                c.trace.records.start_after(completed - 1);
                c.iterations.window_first = completed;
                self.begin_measuring();
                if self.measuring.schedule.mode == SessionMode::Continuous {
                    self.start_watching();
                }
                if self.measuring.schedule.measure_first {
                    let first = self.absorb_first_iteration(&mut c);
                    c.samples.pending.extend(first);
                    let total = self.measuring.schedule.total_armed_iterations(&c.plan);
                    if total > 0 && c.plan.armed_iterations >= total {
                        self.resolve(&mut c, false);
                        self.finish(&mut c);
                        return;
                    }
                }
                self.arm(&mut c, completed);
            }
            return;
        }
        if !c.plan.armed.is_empty() {
            // Recorded events' samples come from the buffers, as their slots are stored.
            self.fold_records(&mut c, true);
            let armed = std::mem::take(&mut c.plan.armed);
            self.queue_armed(&mut c, &armed);
            if c.on_demand.tracing() {
                self.on_demand_iteration(&mut c);
            } else {
                c.plan.armed_iterations += 1;
            }
        }
        self.gather_kernels(&mut c, false);
        self.resolve(&mut c, false);
        self.discover_late(&mut c);
        if self.measuring.schedule.mode == SessionMode::Continuous
            && self.on_demand_step(&mut c, completed)
        {
            return; // a trace on demand armed this iteration; the sampling schedule waits
        }
        let total = self.measuring.schedule.total_armed_iterations(&c.plan);
        if total > 0 && c.plan.armed_iterations >= total {
            if self.measuring.schedule.mode != SessionMode::Continuous {
                self.finish(&mut c);
                return;
            }
            self.close_window(&mut c, completed);
        }
        self.arm(&mut c, completed);
    }

    /// The slots the armed iteration's runs stored (or will store: a run may still be going on
    /// another thread), for resolution; recorded events queue theirs as they store them.
    pub(super) fn queue_armed(&self, c: &mut Control, armed: &[u32]) {
        let slot = self.measuring.schedule.cur_slot.load(Relaxed);
        let iter = self.measuring.schedule.cur_iter.load(Relaxed);
        let stored_directly = |e: &u32| {
            !self
                .measuring
                .schedule
                .event(*e)
                .is_some_and(|ev| ev.recorded)
        };
        c.samples.pending.extend(
            armed
                .iter()
                .filter(|e| stored_directly(e))
                .map(|&e| (e, slot, iter)),
        );
    }

    /// Warmup is over (or a program that never called `step()` ends): the events are planned,
    /// and everything the measured iterations need is reserved now.
    fn plan(&self, c: &mut Control) {
        self.measuring
            .schedule
            .plan_after_warmup(&mut c.plan, self.measuring.device.as_deref());
        let events = c.plan.order.len().max(1);
        let iterations = self.config.warmup as usize + events * self.config.repeat as usize + 2;
        c.iterations.marks.reserve(iterations);
        c.samples.pending.reserve(events * 2);
        c.device
            .stream_marks
            .reserve(2 * POOL_ITERATIONS * c.plan.streams.len());
        c.samples
            .resolved
            .resize(c.plan.allocated, Resolved::default());
    }

    /// Probes first seen after warmup are planned, after the others.
    fn discover_late(&self, c: &mut Control) {
        self.measuring.schedule.discover_late(&mut c.plan);
        c.samples
            .resolved
            .resize(c.plan.allocated, Resolved::default());
    }

    /// Arms what iteration `iter` measures.
    fn arm(&self, c: &mut Control, iter: u32) {
        let Control { plan, device, .. } = c;
        self.measuring.schedule.arm(
            plan,
            iter,
            self.measuring.device.as_deref(),
            &mut device.stream_marks,
        );
    }

    /// Warmup is over: the focused capture and the kernel records start.
    fn begin_measuring(&self) {
        let Some(device) = &self.measuring.device else {
            return;
        };
        if self.config.capture {
            device.capture(true);
        }
        if self.config.kernels {
            let on = device.kernels_enable(true);
            self.measuring.kernels_on.store(on, Relaxed);
        }
    }

    /// The schedule is complete (or the program ends): the capture and the kernel records stop.
    fn end_measuring(&self, c: &mut Control) {
        let Some(device) = &self.measuring.device else {
            return;
        };
        if self.config.capture && !c.device.capture_stopped {
            c.device.capture_stopped = true;
            device.capture(false);
        }
        if self.measuring.kernels_on.swap(false, Relaxed) {
            device.kernels_enable(false);
        }
    }

    /// Moves the device's activity records into the attribution (`PROF_KERNELS`).
    pub(super) fn gather_kernels(&self, c: &mut Control, last: bool) {
        let Some(device) = &self.measuring.device else {
            return;
        };
        if !self.config.kernels {
            return;
        }
        let mut kernels = Vec::new();
        let mut correlations = Vec::new();
        device.drain_kernels(&mut kernels, &mut correlations);
        c.device.kernels.absorb(kernels, correlations, last);
    }

    /// Turns stored marks into samples where the clocks can already tell.
    pub(super) fn resolve(&self, c: &mut Control, last_chance: bool) {
        let pending = std::mem::take(&mut c.samples.pending);
        let marks = std::mem::take(&mut c.iterations.marks);
        let stream_marks = std::mem::take(&mut c.device.stream_marks);
        let mut kept = Vec::with_capacity(pending.len());
        let current = self.measuring.schedule.cur_iter.load(Relaxed);
        for (event, slot, iter) in pending {
            let Some(ev) = self.measuring.schedule.events[event as usize].get() else {
                continue;
            };
            if ev.store.totals.is_some() {
                continue; // merged events are read whole at the end
            }
            let starts = Starts {
                cpu: &marks,
                base: c.iterations.base,
                stream_marks: &stream_marks,
                lane: ev.lane,
            };
            // A trace on demand keeps its iterations' samples apart from the window's.
            let into = match &mut c.on_demand.window {
                Some(w) if w.covers(iter) => w.resolved_mut(event as usize),
                _ => c.samples.resolved.get_mut(event as usize),
            };
            let Some(into) = into else {
                continue;
            };
            let outcome = resolve_slot(
                &self.measuring.clock,
                self.measuring.device.as_deref(),
                &ev.store,
                slot as usize,
                &starts,
                true,
                into,
            );
            let keep = match outcome {
                Outcome::Done => false,
                // Empty: the event did not run, or a thread still inside the run has not
                // written yet: one more chance at the next step, then it did not run (so that
                // an event skipped in its iteration holds nothing back).
                Outcome::Empty => !last_chance && iter >= current,
                Outcome::Pending => !last_chance,
            };
            if keep {
                kept.push((event, slot, iter));
            }
        }
        c.iterations.marks = marks;
        c.samples.pending = kept;
        // An iteration's marks on the streams are read by that iteration's samples only: give
        // them back once none is pending (and the iteration is over).
        let oldest_pending = c.samples.pending.iter().map(|&(_, _, i)| i).min();
        let (done, live): (Vec<_>, Vec<_>) = stream_marks.into_iter().partition(|&(i, _, _)| {
            last_chance || (i < current && oldest_pending.is_none_or(|p| i < p))
        });
        c.device.stream_marks = live;
        if let Some(device) = &self.measuring.device {
            for (_, _, mark) in done {
                device.release(mark);
            }
        }
    }

    fn finish(&self, c: &mut Control) {
        c.end.finished = true;
        self.done.store(true, Relaxed);
        self.end_measuring(c);
        for &entry in &c.plan.selected {
            self.measuring
                .schedule
                .desc(entry)
                .state
                .store(State::Off, Relaxed);
        }
        c.plan.armed.clear();
        // Spans are judged again: none is selected any more, so they cost nothing from now on.
        #[cfg(feature = "tracing")]
        tracing_core::callsite::rebuild_interest_cache();
        let written = self.write(c, true);
        if self.config.exit {
            if written {
                eprintln!("profiler-core: PROF_EXIT=1: the schedule is complete, exiting");
                std::process::exit(0);
            }
            eprintln!(
                "profiler-core: PROF_EXIT=1: the schedule is complete but its results could not \
                 be written; exiting with status 1"
            );
            std::process::exit(1);
        }
    }

    /// Writes the results once; `false` when they are not on disk. A failed write keeps them
    /// for one more try at the end of the program.
    fn write(&self, c: &mut Control, complete: bool) -> bool {
        if c.end.written {
            return true;
        }
        let path = self.config.output_path();
        // The final write: no background write may land after it.
        let mut generation = lock(&self.written_generation);
        *generation = u64::MAX;
        if let Some(profile) = c.end.unwritten.take() {
            // The earlier write failed: the same results, once more, without the table.
            return match crate::output::write_profile(&profile, &path) {
                Ok(()) => {
                    c.end.written = true;
                    eprintln!(
                        "profiler-core: results in {} (written at the end, after the earlier \
                         failure)",
                        path.display()
                    );
                    true
                }
                Err(why) => {
                    eprintln!(
                        "profiler-core: error: the results could not be written to {} ({why}); \
                         nothing was saved",
                        path.display()
                    );
                    false
                }
            };
        }
        let profile = self.profile(c, complete, true);
        // The writer thread, if any, has nothing left to do; traces on demand it has not
        // written yet, and one under way, are written here.
        self.writer.stop();
        self.write_queued_traces();
        if let Some(taken) = self.take_trace(c) {
            self.write_trace(taken);
        }
        let dropped = self.measuring.buffers.dropped();
        if dropped > 0 {
            eprintln!(
                "profiler-core: warning: {dropped} runs were not recorded: the records waiting \
                 in the threads' buffers reached a quarter of the sample budget ({} MiB; in a \
                 learning iteration of trace mode every run waits for step()); lower the runs \
                 per iteration, or narrow PROF_FILTER",
                self.config.sample_budget_bytes >> 22
            );
        }
        let exiting =
            self.measuring.buffers.exiting() + self.measuring.schedule.exiting.load(Relaxed);
        if exiting > 0 {
            eprintln!(
                "profiler-core: warning: {exiting} runs were not measured: they ran while their \
                 thread was exiting (a probe in a thread-local's destructor, after the \
                 profiler's own per-thread state was gone); the rest of the profile is complete"
            );
        }
        c.end.written = crate::output::emit(&profile, &path, self.config.summary);
        if !c.end.written {
            c.end.unwritten = Some(Box::new(profile));
        }
        c.end.written
    }

    /// The program is ending: write what there is, marked incomplete if the schedule is not
    /// done. `false` when the results are not on disk.
    pub(crate) fn end(&self) -> bool {
        self.end_as(true)
    }

    /// A signal ends the process: as [`Session::end`], but `finished()` stays as it was, so
    /// that the program does not take the signal for the end of the schedule and exit cleanly
    /// first.
    pub(crate) fn end_on_signal(&self) -> bool {
        self.end_as(false)
    }

    fn end_as(&self, mark_done: bool) -> bool {
        let mut c = lock(&self.control);
        if mark_done {
            self.done.store(true, Relaxed);
        }
        for &entry in &c.plan.selected {
            self.measuring
                .schedule
                .desc(entry)
                .state
                .store(State::Off, Relaxed);
        }
        if self.measuring.schedule.measure_first
            && self.measuring.schedule.learning.swap(false, Relaxed)
        {
            // A program that never called step(): what its one iteration ran is measured.
            self.fold_learning(&mut c, None);
            lock(&self.measuring.schedule.learner).next_iteration();
            self.plan(&mut c);
            self.end_learning_records(&mut c);
            c.trace.records.start_after(0);
            let first = self.absorb_first_iteration(&mut c);
            c.samples.pending.extend(first);
        }
        // In continuous mode, the run is complete when the program ends by itself after a window
        // closed; a signal cuts it short.
        let complete = if self.measuring.schedule.mode == SessionMode::Continuous {
            mark_done && c.iterations.windows_closed > 0
        } else {
            c.end.finished
        };
        self.end_measuring(&mut c);
        self.write(&mut c, complete)
    }
}
