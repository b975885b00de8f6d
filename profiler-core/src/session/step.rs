//! The end of each iteration (`step()`), one pipeline over the session's components (the stages
//! of the schedule themselves are in `schedule/`), and the end of the run: the last resolution
//! and the write.

use std::sync::atomic::Ordering::Relaxed;

use super::device::DeviceState;
use super::on_demand::Turn;
use super::{lock, on_demand, Control, Session};
use crate::instrument::clock::Reading;
use crate::register::descriptor::State;
use crate::schedule::{Plan, SessionMode};
use profiler_format::Profile;

/// The last iteration number a run counts to: iteration numbers are 32-bit (in `prof.json`'s
/// samples too), and one below the largest leaves room for the iteration under way.
pub(crate) const LAST_ITERATION: u32 = u32::MAX - 1;

impl Session {
    /// The end of an iteration.
    pub(crate) fn step(&'static self) {
        let (config, m) = (&self.config, &self.measuring);
        if let (Some(device), true) = (&m.device, config.sync >= 1) {
            // PROF_SYNC=1: the iteration ends when the device's work for it is done.
            device.synchronize();
        }
        let now = m.clock.mark();
        if let Some(delay) = &m.schedule.delay {
            delay.mark_step();
        }
        let mut guard = lock(&self.control);
        let c = &mut *guard;
        if c.end.over() {
            return;
        }
        let run = &mut c.measured;
        if run.iterations.completed() >= LAST_ITERATION {
            self.stop_counting(c);
            return;
        }
        // Never before the last mark: two threads calling step() at once could take their
        // marks in one order and the lock in the other, and iterations are found among the
        // marks by a binary search, which needs them sorted.
        let now = run
            .iterations
            .marks
            .last()
            .map_or(now, |&last| now.max(last));
        run.iterations.marks.push(now);
        let completed = run.iterations.completed();
        run.device
            .record_memory(m, &run.plan.streams, completed - 1);
        if m.schedule.learning.load(Relaxed) {
            self.learned(c, now, completed);
            return;
        }
        let armed = self.armed_iteration_ended(c);
        let run = &mut c.measured;
        run.device.gather_kernels(config, m, false);
        run.resolve(m, &armed, c.on_demand.apart(), false);
        run.discover_late(m);
        let continuous = m.schedule.mode == SessionMode::Continuous;
        let turn = if continuous {
            c.on_demand
                .step((config, m), run, completed, |taken| self.hand_trace(taken))
        } else {
            Turn::Sample
        };
        if turn == Turn::Trace {
            return; // a trace on demand armed this iteration; the sampling schedule waits
        }
        if self.schedule_complete(&run.plan) {
            if !continuous {
                self.finish(c);
                return;
            }
            let trace_from = c.on_demand.held_from();
            c.windows.close(
                (config, m),
                &self.writer,
                &mut c.measured,
                completed,
                trace_from,
            );
        }
        if turn == Turn::Sample {
            c.measured.arm(m, completed);
        }
    }

    /// The iteration that ended was armed (if any event was): its events, taken from the plan;
    /// `trace` mode's records are settled, and the iteration counts for the sampling schedule
    /// or for the trace on demand under way.
    fn armed_iteration_ended(&self, c: &mut Control) -> Vec<u32> {
        if c.measured.plan.armed.is_empty() {
            return Vec::new();
        }
        let m = &self.measuring;
        // Recorded events' samples come from the buffers, as their slots are stored.
        c.fold_records(m, true);
        let plan = &mut c.measured.plan;
        let armed = std::mem::take(&mut plan.armed);
        if c.on_demand.tracing() {
            c.on_demand.iteration_done(m, plan);
        } else {
            plan.armed_iterations += 1;
        }
        armed
    }

    /// A learning iteration ended (at mark `now`; `completed` iterations so far): its runs are
    /// learned, and after the last of them the measured iterations begin.
    fn learned(&'static self, c: &mut Control, now: u64, completed: u32) {
        let (config, m) = (&self.config, &self.measuring);
        c.warmup.fold(m, Some(now));
        m.schedule.end_first_iteration();
        lock(&m.schedule.learner).next_iteration();
        m.schedule.reset_calls(&c.measured.plan);
        if completed < config.warmup {
            return;
        }
        m.schedule.learning.store(false, Relaxed);
        self.end_learning(c, completed - 1);
        c.windows.first = completed;
        DeviceState::begin_measuring(config, m);
        if m.schedule.mode == SessionMode::Continuous {
            self.writer.start_watching(config);
        }
        if m.schedule.measure_first && self.schedule_complete(&c.measured.plan) {
            c.measured.resolve(m, &[], c.on_demand.apart(), false);
            self.finish(c);
            return;
        }
        c.measured.arm(m, completed);
    }

    /// Learning is over after iteration `last_learned`: the events are planned, and without
    /// warmup the first iteration's runs become their first samples.
    fn end_learning(&self, c: &mut Control, last_learned: u32) {
        let m = &self.measuring;
        c.measured.plan(&self.config, m);
        c.warmup.end();
        c.traced.start_after(last_learned);
        if m.schedule.measure_first {
            let first = c.warmup.take_first(m, &mut c.measured.plan);
            c.measured.samples.pending.extend(first);
        }
    }

    /// Every armed iteration the schedule asks for was measured.
    fn schedule_complete(&self, plan: &Plan) -> bool {
        let total = self.measuring.schedule.total_armed_iterations(plan);
        total > 0 && plan.armed_iterations >= total
    }

    /// A trace on demand is complete: to the writer thread (written here if there is none).
    fn hand_trace(&'static self, taken: on_demand::Taken) {
        let to_writer = self.writer.running(&self.config);
        self.traces.post(taken, to_writer, &self.results());
    }

    /// No selected probe is measured (nor any probe delayed) any more.
    fn switch_off(&self, plan: &Plan) {
        let schedule = &self.measuring.schedule;
        for &entry in &plan.selected {
            schedule.desc(entry).state.store(State::Off, Relaxed);
        }
        if let Some(delay) = &schedule.delay {
            for entry in delay.entries() {
                schedule.desc(entry).state.store(State::Off, Relaxed);
            }
        }
    }

    /// The iteration count reached [`LAST_ITERATION`] (a `continuous` run of 2^32 steps: 12
    /// hours at 10 µs a step): measuring stops, as when a schedule is complete, but the program
    /// is told nothing (`finished()` stays false, `PROF_EXIT` does not end it). The windows
    /// written so far stay; the end of the run writes them once more.
    #[cold]
    fn stop_counting(&self, c: &mut Control) {
        c.end.finished = true;
        self.switch_off(&c.measured.plan);
        c.measured.plan.armed.clear();
        say!(
            "profiler-core: {LAST_ITERATION} iterations, the most a run counts (iteration numbers \
             are 32-bit): measuring stops here; the results so far are written at the end"
        );
    }

    fn finish(&self, c: &mut Control) {
        c.end.finished = true;
        self.done.store(true, Relaxed);
        c.measured
            .device
            .end_measuring(&self.config, &self.measuring, false);
        self.switch_off(&c.measured.plan);
        c.measured.plan.armed.clear();
        // Spans are judged again: none is selected any more, so they cost nothing from now on.
        #[cfg(feature = "tracing")]
        tracing_core::callsite::rebuild_interest_cache();
        let written = self.write(c, true);
        if self.config.exit {
            if written {
                say!("profiler-core: PROF_EXIT=1: the schedule is complete, exiting");
                std::process::exit(0);
            }
            say!(
                "profiler-core: PROF_EXIT=1: the schedule is complete but its results could not \
                 be written; exiting with status 1"
            );
            std::process::exit(1);
        }
    }

    /// The results so far.
    pub(crate) fn snapshot(&self) -> Profile {
        let mut c = lock(&self.control);
        let complete = c.end.finished;
        self.profile(&mut c, complete, false)
    }

    /// The results as `prof.json` holds them; `last_chance`: the run is ending, so the armed
    /// iteration's samples count and the clocks are settled first. In `continuous` mode, once a
    /// window has closed, what the writer keeps: the last closed window's samples and the
    /// windows kept.
    fn profile(&self, c: &mut Control, complete: bool, last_chance: bool) -> Profile {
        let (config, m) = (&self.config, &self.measuring);
        if last_chance && !c.end.finished && !m.schedule.learning.load(Relaxed) {
            // The iteration under way counts: what its runs recorded so far is settled.
            c.fold_records(m, true);
        }
        let run = &mut c.measured;
        let armed = if last_chance {
            run.plan.armed.clone()
        } else {
            Vec::new()
        };
        if last_chance {
            m.clock.settle();
            if let Some(device) = &m.device {
                if c.end.signal {
                    device.settle_within(super::SIGNAL_SETTLE);
                } else {
                    device.settle();
                }
            }
        }
        run.device.gather_kernels(config, m, last_chance);
        run.resolve(m, &armed, c.on_demand.apart(), last_chance);
        let results = self.results();
        let archive = self.writer.archive_now(config, m);
        if let Some(shown) = &archive.shown {
            let live = results.live(run, shown);
            return results.assemble(&archive, live, complete);
        }
        drop(archive);
        results.stored(run, complete)
    }

    /// Writes the results once; `false` when they are not on disk. A failed write keeps them
    /// for one more try at the end of the program.
    fn write(&self, c: &mut Control, complete: bool) -> bool {
        if c.end.written {
            return true;
        }
        if std::process::id() != self.pid {
            // A copy of the session in a process forked after it started (a data-loading
            // worker that returns through `main`): the results are the parent's to write, and
            // this copy's would replace them with its own. Nothing is written, and the guard
            // does not take it for a failure.
            c.end.written = true;
            return true;
        }
        let path = self.config.output_path();
        // The final write: no background write may land after it.
        let _last = self.writer.last_write();
        if let Some(profile) = c.end.unwritten.take() {
            // The earlier write failed: the same results, once more, without the table.
            return match crate::output::write_profile(&profile, &path) {
                Ok(()) => {
                    c.end.written = true;
                    say!(
                        "profiler-core: results in {} (written at the end, after the earlier \
                         failure)",
                        path.display()
                    );
                    true
                }
                Err(why) => {
                    say!(
                        "profiler-core: error: the results could not be written to {} ({why}); \
                         nothing was saved",
                        path.display()
                    );
                    false
                }
            };
        }
        let mut profile = self.profile(c, complete, true);
        let (marks, base) = (&c.measured.iterations.marks, c.measured.iterations.base);
        // A sample's iteration: the last whose start mark is at or before it, among those
        // completed (`marks` holds one more mark than iterations completed).
        let place = |time: u64| -> Option<(u32, u64)> {
            let k = marks.partition_point(|&m| m <= time).checked_sub(1)?;
            if k + 1 >= marks.len() {
                return None;
            }
            match self.measuring.clock.elapsed(marks[k], time) {
                Reading::Ready(ns) => Some((base + k as u32, ns)),
                _ => None,
            }
        };
        crate::sample::finish_into(&mut profile, &place);
        self.publish_metrics(&profile, true);
        // The writer thread, if any, has nothing left to do; traces on demand it has not
        // written yet, and one under way, are written here.
        self.writer.stop();
        let results = self.results();
        self.traces.write_queued(&results);
        if let Some(taken) = c.on_demand.take(&self.measuring, &mut c.measured) {
            on_demand::write_trace(&results, taken);
        }
        self.warn_unmeasured();
        c.end.written = crate::output::emit(&profile, &path, self.config.summary);
        if !c.end.written {
            c.end.unwritten = Some(Box::new(profile));
        }
        c.end.written
    }

    /// Says how many runs the buffers could not keep, and how many ran while their thread was
    /// exiting.
    fn warn_unmeasured(&self) {
        let dropped = self.measuring.buffers.dropped();
        if dropped > 0 {
            say!(
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
            say!(
                "profiler-core: warning: {exiting} runs were not measured: they ran while their \
                 thread was exiting (a probe in a thread-local's destructor, after the \
                 profiler's own per-thread state was gone); the rest of the profile is complete"
            );
        }
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
        if super::forked() {
            // A forked copy (see `forked_child`): nothing to write, and its locks may be held
            // for ever. Not a failure.
            return true;
        }
        let m = &self.measuring;
        let mut guard = lock(&self.control);
        let c = &mut *guard;
        if mark_done {
            self.done.store(true, Relaxed);
        }
        self.switch_off(&c.measured.plan);
        if m.schedule.measure_first && m.schedule.learning.swap(false, Relaxed) {
            // A program that never called step(): what its one iteration ran is measured.
            c.warmup.fold(m, None);
            lock(&m.schedule.learner).next_iteration();
            self.end_learning(c, 0);
        }
        // In continuous mode, the run is complete when the program ends by itself after a window
        // closed; a signal cuts it short.
        let complete = if m.schedule.mode == SessionMode::Continuous {
            mark_done && c.windows.closed > 0
        } else {
            c.end.finished
        };
        c.end.signal = !mark_done;
        c.measured
            .device
            .end_measuring(&self.config, m, c.end.signal);
        self.write(c, complete)
    }
}
