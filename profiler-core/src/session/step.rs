//! The cold path of a session: the end of each iteration (`step()`), turning warmup into events,
//! arming one event (or all, in `trace` mode), resolving samples, and the end of the run.

use std::collections::HashMap;
use std::sync::atomic::Ordering::{Relaxed, Release};

use super::{lane_stream, lock, Control, Event, Session};
use crate::config::Mode;
use crate::device::{Stream, NO_MARK};
use crate::probe::{Route, Routes, ARMED, NONE, OFF};
use crate::record::{
    resolve_slot, IterationStarts, Outcome, Resolved, Store, DEVICE_SAMPLE_BYTES, RESERVOIR,
    SAMPLE_BYTES,
};

use crate::schedule::{Key, Planned, MERGED};

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

/// The events allocated for one (probe, lane).
struct Allocated {
    first: u32,
    count: u32,
    merged: Option<u32>,
}

/// How many iterations' worth of device marks a stream's pool holds: the device may lag the
/// CPU by this many iterations before samples are lost.
const POOL_ITERATIONS: usize = 16;

impl Session {
    // ---- the cold path ----

    /// The end of an iteration.
    pub(crate) fn step(&'static self) {
        if self.config.mode == Mode::Off {
            return;
        }
        if let (Some(device), true) = (&self.device, self.config.sync >= 1) {
            // PROF_SYNC=1: the iteration ends when the device's work for it is done.
            device.synchronize();
        }
        let now = self.clock.mark();
        let mut c = lock(&self.control);
        if c.finished || c.written {
            return;
        }
        c.iter_marks.push(now);
        let completed = c.iter_base + (c.iter_marks.len() - 1) as u32;
        if self.learning.load(Relaxed) {
            lock(&self.learner).next_iteration();
            self.reset_calls(&c);
            if completed >= self.config.warmup {
                self.learning.store(false, Relaxed);
                self.plan_after_warmup(&mut c);
                c.window_first_iter = completed;
                self.begin_measuring();
                if self.measure_first {
                    self.absorb_first_runs(&mut c);
                    let total = self.total_armed_iterations(&c);
                    if total > 0 && c.armed_iterations >= total {
                        self.resolve(&mut c, false);
                        self.finish(&mut c);
                        return;
                    }
                }
                self.arm(&mut c, completed);
            }
            return;
        }
        if !c.armed.is_empty() {
            let slot = self.cur_slot.load(Relaxed);
            let iter = self.cur_iter.load(Relaxed);
            let armed = std::mem::take(&mut c.armed);
            c.pending.extend(armed.iter().map(|&e| (e, slot, iter)));
            c.armed_iterations += 1;
        }
        self.gather_kernels(&mut c, false);
        self.resolve(&mut c, false);
        self.discover_late(&mut c);
        let total = self.total_armed_iterations(&c);
        if total > 0 && c.armed_iterations >= total {
            if self.config.mode != Mode::Continuous {
                self.finish(&mut c);
                return;
            }
            self.close_window(&mut c, completed);
        }
        self.arm(&mut c, completed);
    }

    /// `trace` mode without warmup: the runs timed while iteration 0 was learned become the
    /// events' first samples (slot 0), and iteration 0 counts as the first active one.
    fn absorb_first_runs(&self, c: &mut Control) {
        let runs = std::mem::take(&mut lock(&self.learner).first_runs);
        let mut by_key: HashMap<Key, u32> = HashMap::new();
        for &e in &c.schedule {
            if let Some(ev) = self.events[e as usize].get() {
                by_key.insert((ev.entry, ev.lane, ev.occurrence), e);
            }
        }
        for ((entry, lane, occurrence), start, stop) in runs {
            let Some(&e) = by_key
                .get(&(entry, lane, occurrence))
                .or_else(|| by_key.get(&(entry, lane, MERGED)))
            else {
                continue;
            };
            let Some(ev) = self.events[e as usize].get() else {
                continue;
            };
            ev.store
                .record(0, 0, (start, stop), (NO_MARK, NO_MARK), self.linear);
            if ev.store.totals.is_none() {
                c.pending.push((e, 0, 0));
            }
        }
        c.armed_iterations = 1;
    }

    fn total_armed_iterations(&self, c: &Control) -> u64 {
        let repeat = u64::from(self.config.repeat);
        match self.config.mode {
            Mode::Sample | Mode::Continuous => c.schedule.len() as u64 * repeat,
            Mode::Trace if c.schedule.is_empty() => 0,
            Mode::Trace => repeat,
            Mode::Off => 0,
        }
    }

    fn reset_calls(&self, c: &Control) {
        for &entry in &c.selected {
            let desc = self.desc(entry);
            desc.calls.store(0, Relaxed);
            if let Some(routes) = desc_routes(desc) {
                for route in routes.0.iter() {
                    route.calls.store(0, Relaxed);
                }
            }
        }
    }

    /// Warmup is over: the focused capture and the kernel records start.
    fn begin_measuring(&self) {
        let Some(device) = &self.device else {
            return;
        };
        if self.config.capture {
            device.capture(true);
        }
        if self.config.kernels {
            let on = device.kernels_enable(true);
            self.kernels_on.store(on, Relaxed);
        }
    }

    /// The schedule is complete (or the program ends): the capture and the kernel records stop.
    fn end_measuring(&self, c: &mut Control) {
        let Some(device) = &self.device else {
            return;
        };
        if self.config.capture && !c.capture_stopped {
            c.capture_stopped = true;
            device.capture(false);
        }
        if self.kernels_on.swap(false, Relaxed) {
            device.kernels_enable(false);
        }
    }

    /// Moves the device's activity records into the attribution (`PROF_KERNELS`).
    pub(super) fn gather_kernels(&self, c: &mut Control, last: bool) {
        let Some(device) = &self.device else {
            return;
        };
        if !self.config.kernels {
            return;
        }
        let mut kernels = Vec::new();
        let mut correlations = Vec::new();
        device.drain_kernels(&mut kernels, &mut correlations);
        c.kernels.absorb(kernels, correlations, last);
    }

    /// Allocates the events of one probe on one lane (occurrences `0..occurrences`, plus a
    /// merged event).
    fn add_probe_events(
        &self,
        c: &mut Control,
        entry: usize,
        lane: u32,
        occurrences: u32,
        merged: bool,
        place: &mut dyn FnMut(u32) -> (u32, Option<Key>),
    ) -> Allocated {
        let first = c.allocated as u32;
        let repeat = self.config.repeat as usize;
        let timed_on_device = lane > 0 && self.device.is_some();
        let mut make = |c: &mut Control, occurrence: u32| {
            let index = c.allocated;
            let is_merged = occurrence == MERGED;
            let per_slot = if timed_on_device && !is_merged {
                SAMPLE_BYTES + DEVICE_SAMPLE_BYTES
            } else {
                SAMPLE_BYTES
            };
            let bytes = per_slot * if is_merged { RESERVOIR } else { repeat };
            if c.sample_bytes + bytes > self.config().sample_budget_bytes {
                c.events_over_budget += 1;
                return None;
            }
            c.sample_bytes += bytes;
            let (order, parent) = place(occurrence);
            let event = Event {
                entry,
                lane,
                occurrence,
                order,
                parent,
                store: Store::new(repeat, is_merged, timed_on_device),
            };
            // Capacity is max_events plus one merged event per selected probe and lane, which
            // the learner's bound guarantees.
            let stored = self
                .events
                .get(index)
                .is_some_and(|slot| slot.set(event).is_ok());
            if stored {
                c.allocated += 1;
                c.resolved.push(Resolved::default());
                Some(index as u32)
            } else {
                None
            }
        };
        let mut count = 0;
        for occ in 0..occurrences {
            if make(c, occ).is_some() {
                count += 1;
            }
        }
        let merged = if merged { make(c, MERGED) } else { None };
        Allocated {
            first,
            count,
            merged,
        }
    }

    /// Points probe `entry`'s descriptor at its stream-less events.
    fn route_plain(&self, entry: usize, a: &Allocated) {
        let desc = self.desc(entry);
        desc.first_event.store(a.first, Relaxed);
        desc.events.store(a.count, Relaxed);
        desc.merged_event.store(a.merged.unwrap_or(NONE), Relaxed);
    }

    /// Warmup is over: turn what it saw into events in execution order.
    fn plan_after_warmup(&self, c: &mut Control) {
        let (plan, streams): (Vec<Planned>, Vec<Stream>) = {
            let learner = lock(&self.learner);
            (learner.plan(), learner.streams().to_vec())
        };
        c.streams = streams;
        // Per (probe, lane), in order of first appearance: its occurrence count and whether it
        // has a merged event; and each event's place in the plan.
        let mut groups: Vec<(usize, u32)> = Vec::new();
        let mut per_group: HashMap<(usize, u32), (u32, bool)> = HashMap::new();
        let mut place: HashMap<Key, (u32, Option<Key>)> = HashMap::new();
        for (i, p) in plan.iter().enumerate() {
            let counts = per_group.entry((p.entry, p.lane)).or_insert_with(|| {
                groups.push((p.entry, p.lane));
                (0, false)
            });
            if p.occurrence == MERGED {
                counts.1 = true;
            } else {
                counts.0 += 1;
            }
            place.insert((p.entry, p.lane, p.occurrence), (i as u32, p.parent));
        }
        let mut routes: HashMap<usize, Vec<Route>> = HashMap::new();
        for &(entry, lane) in &groups {
            let (occurrences, merged) = per_group[&(entry, lane)];
            let mut at = |occ: u32| place.get(&(entry, lane, occ)).copied().unwrap_or((0, None));
            let a = self.add_probe_events(c, entry, lane, occurrences, merged, &mut at);
            match lane_stream(&c.streams, lane) {
                None => self.route_plain(entry, &a),
                Some(&stream) => routes.entry(entry).or_default().push(Route {
                    stream,
                    calls: Default::default(),
                    first_event: a.first,
                    events: a.count,
                    merged_event: a.merged.unwrap_or(NONE),
                }),
            }
        }
        for (entry, list) in routes {
            let table = Box::new(Routes(list.into_boxed_slice()));
            let ptr = &*table as *const Routes as *mut Routes;
            c.routes.push(table);
            self.desc(entry).routes.store(ptr, Release);
        }
        let entries: Vec<usize> = {
            let mut seen = std::collections::HashSet::new();
            groups
                .iter()
                .map(|&(e, _)| e)
                .filter(|e| seen.insert(*e))
                .collect()
        };
        let mut schedule: Vec<u32> = (0..c.allocated as u32).collect();
        schedule.sort_by_key(|&e| {
            self.events[e as usize]
                .get()
                .map_or(u32::MAX, |ev| ev.order)
        });
        c.schedule = schedule;
        c.late = c
            .selected
            .iter()
            .copied()
            .filter(|e| !entries.contains(e))
            .collect();
        for &entry in &entries {
            self.desc(entry)
                .state
                .store(self.idle_state(entry), Relaxed);
        }
        self.prepare_streams(c);
        if plan.is_empty() {
            eprintln!(
                "profiler-core: warning: none of the {} selected probes ran during the {} warmup \
                 iterations; events will be scheduled as they first appear",
                c.selected.len(),
                self.config.warmup
            );
        }
        self.warn_over_budget(c);
        // Everything the measured iterations need is reserved now.
        let iterations =
            self.config.warmup as usize + c.schedule.len().max(1) * self.config.repeat as usize + 2;
        c.iter_marks.reserve(iterations);
        c.pending.reserve(c.schedule.len().max(1) * 2);
    }

    /// Probes first seen after warmup: each is scheduled after the others.
    fn discover_late(&self, c: &mut Control) {
        if c.late.is_empty() {
            return;
        }
        let late = std::mem::take(&mut c.late);
        let mut still_unseen = Vec::new();
        for entry in late {
            let desc = self.desc(entry);
            let calls = desc.calls.swap(0, Relaxed);
            if calls == 0 {
                still_unseen.push(entry);
                continue;
            }
            let mut learner = lock(&self.learner);
            let occurrences = calls.min(learner.budget_left() as u32);
            learner.spend(occurrences as usize);
            drop(learner);
            let base = c.schedule.len() as u32;
            let before = c.allocated as u32;
            let mut at = |occ: u32| (base + if occ == MERGED { occurrences } else { occ }, None);
            // A probe first seen after warmup is timed without its stream (on the CPU).
            let a = self.add_probe_events(c, entry, 0, occurrences, calls > occurrences, &mut at);
            self.route_plain(entry, &a);
            c.schedule.extend(before..c.allocated as u32);
            desc.state.store(self.idle_state(entry), Relaxed);
        }
        c.late = still_unseen;
        self.warn_over_budget(c);
    }

    fn warn_over_budget(&self, c: &mut Control) {
        if c.events_over_budget > 0 && !c.warned_budget {
            c.warned_budget = true;
            eprintln!(
                "profiler-core: warning: {} events are left out: their samples would need more \
                 than {} MiB (PROF_REPEAT={} slots each); lower PROF_REPEAT or narrow PROF_FILTER",
                c.events_over_budget,
                self.config().sample_budget_bytes >> 20,
                self.config().repeat
            );
        }
    }

    /// Arms what iteration `iter` measures.
    fn arm(&self, c: &mut Control, iter: u32) {
        self.reset_calls(c);
        c.armed.clear();
        if c.schedule.is_empty() {
            return;
        }
        let k = c.armed_iterations;
        let repeat = u64::from(self.config.repeat);
        self.cur_iter.store(iter, Relaxed);
        match self.config.mode {
            Mode::Sample | Mode::Continuous => {
                let event = c.schedule[(k / repeat) as usize];
                let entry = self.events[event as usize].get().map(|e| e.entry);
                if let (Some(old), true) = (c.armed_entry, c.armed_entry != entry) {
                    self.desc(old).state.store(self.idle_state(old), Relaxed);
                }
                self.cur_slot.store((k % repeat) as u32, Relaxed);
                self.armed_event.store(event, Relaxed);
                if let Some(entry) = entry {
                    self.desc(entry).state.store(ARMED, Release);
                }
                c.armed_entry = entry;
                c.armed.push(event);
            }
            Mode::Trace => {
                self.cur_slot.store(k as u32, Relaxed);
                for &event in &c.schedule {
                    if let Some(e) = self.events[event as usize].get() {
                        self.desc(e.entry).state.store(ARMED, Release);
                    }
                }
                c.armed.extend_from_slice(&c.schedule);
            }
            Mode::Off => {}
        }
        self.mark_iteration_on_streams(c, iter);
    }

    /// Like HugeCTR, records the start of iteration `iter` on each stream an armed event is
    /// timed on, so that samples get their offset on the device's time line.
    fn mark_iteration_on_streams(&self, c: &mut Control, iter: u32) {
        let Some(device) = &self.device else {
            return;
        };
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
                c.stream_marks.push((iter, lane, mark));
            }
        }
    }

    /// Reserves each stream's event pool: enough marks for the events that may be armed on it
    /// in one iteration, for `POOL_ITERATIONS` iterations.
    fn prepare_streams(&self, c: &mut Control) {
        let Some(device) = &self.device else {
            return;
        };
        let mut per_lane: HashMap<u32, usize> = HashMap::new();
        for e in 0..c.allocated {
            if let Some(ev) = self.events[e].get() {
                if ev.store.samples.has_device() {
                    *per_lane.entry(ev.lane).or_default() += 1;
                }
            }
        }
        let streams: Vec<(Stream, usize)> = per_lane
            .into_iter()
            .filter_map(|(lane, events)| {
                let stream = *lane_stream(&c.streams, lane)?;
                let armed = match self.config.mode {
                    Mode::Trace => events,
                    _ => 1,
                };
                Some((stream, (2 * armed + 1) * POOL_ITERATIONS))
            })
            .collect();
        if !streams.is_empty() {
            device.prepare(&streams);
        }
        c.stream_marks.reserve(2 * POOL_ITERATIONS * streams.len());
    }

    /// Turns stored marks into samples where the clocks can already tell.
    pub(super) fn resolve(&self, c: &mut Control, last_chance: bool) {
        let pending = std::mem::take(&mut c.pending);
        let marks = std::mem::take(&mut c.iter_marks);
        let stream_marks = std::mem::take(&mut c.stream_marks);
        let mut kept = Vec::with_capacity(pending.len());
        let current = self.cur_iter.load(Relaxed);
        for (event, slot, iter) in pending {
            let Some(ev) = self.events[event as usize].get() else {
                continue;
            };
            if ev.store.totals.is_some() {
                continue; // merged events are read whole at the end
            }
            let starts = Starts {
                cpu: &marks,
                base: c.iter_base,
                stream_marks: &stream_marks,
                lane: ev.lane,
            };
            let outcome = resolve_slot(
                &self.clock,
                self.device.as_deref(),
                &ev.store,
                slot as usize,
                &starts,
                true,
                &mut c.resolved[event as usize],
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
        c.iter_marks = marks;
        c.pending = kept;
        // An iteration's marks on the streams are read by that iteration's samples only: give
        // them back once none is pending (and the iteration is over).
        let oldest_pending = c.pending.iter().map(|&(_, _, i)| i).min();
        let (done, live): (Vec<_>, Vec<_>) = stream_marks.into_iter().partition(|&(i, _, _)| {
            last_chance || (i < current && oldest_pending.is_none_or(|p| i < p))
        });
        c.stream_marks = live;
        if let Some(device) = &self.device {
            for (_, _, mark) in done {
                device.release(mark);
            }
        }
    }

    fn finish(&self, c: &mut Control) {
        c.finished = true;
        self.done.store(true, Relaxed);
        self.end_measuring(c);
        for &entry in &c.selected {
            self.desc(entry).state.store(OFF, Relaxed);
        }
        c.armed.clear();
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
        if c.written || self.config.mode == Mode::Off {
            return true;
        }
        let path = self.config.output_path();
        // The final write: no background write may land after it.
        let mut generation = lock(&self.written_generation);
        *generation = u64::MAX;
        if let Some(profile) = c.unwritten.take() {
            // The earlier write failed: the same results, once more, without the table.
            return match crate::output::write_profile(&profile, &path) {
                Ok(()) => {
                    c.written = true;
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
        c.written = crate::output::emit(&profile, &path, self.config.summary);
        if !c.written {
            c.unwritten = Some(Box::new(profile));
        }
        c.written
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
        for &entry in &c.selected {
            self.desc(entry).state.store(OFF, Relaxed);
        }
        if self.measure_first && self.learning.swap(false, Relaxed) {
            // A program that never called step(): what its one iteration ran is measured.
            lock(&self.learner).next_iteration();
            self.plan_after_warmup(&mut c);
            self.absorb_first_runs(&mut c);
        }
        let complete = c.finished;
        self.end_measuring(&mut c);
        self.write(&mut c, complete)
    }
}

fn desc_routes(desc: &crate::probe::Descriptor) -> Option<&Routes> {
    // SAFETY: as in `Descriptor::route`: the table is owned by a session, never freed.
    unsafe {
        desc.routes
            .load(std::sync::atomic::Ordering::Acquire)
            .as_ref()
    }
}
