//! The cold path of a session: the end of each iteration (`step()`), turning warmup into events,
//! arming one event (or all, in `trace` mode), resolving samples, and the end of the run.

use std::collections::HashMap;
use std::sync::atomic::Ordering::{Relaxed, Release};

use super::{lock, Control, Event, Session};
use crate::config::Mode;
use crate::probe::{ARMED, NONE, OFF};
use crate::record::{resolve_slot, Outcome, Resolved, Store, RESERVOIR, SAMPLE_BYTES};

use crate::schedule::{Planned, MERGED};

/// A learner key: (registry entry, occurrence or `MERGED`).
type Key = (usize, u32);

impl Session {
    // ---- the cold path ----

    /// The end of an iteration.
    pub(crate) fn step(&'static self) {
        if self.config.mode == Mode::Off {
            return;
        }
        let now = self.clock.mark();
        let mut c = lock(&self.control);
        if c.finished {
            return;
        }
        c.iter_marks.push(now);
        let completed = (c.iter_marks.len() - 1) as u32;
        if self.learning.load(Relaxed) {
            lock(&self.learner).next_iteration();
            self.reset_calls();
            if completed >= self.config.warmup {
                self.learning.store(false, Relaxed);
                self.plan_after_warmup(&mut c);
                self.arm(&mut c, completed);
            }
            return;
        }
        if !c.armed.is_empty() {
            let slot = self.cur_slot.load(Relaxed);
            let armed = std::mem::take(&mut c.armed);
            c.pending.extend(armed.iter().map(|&e| (e, slot)));
            c.armed_iterations += 1;
        }
        self.resolve(&mut c, false);
        self.discover_late(&mut c);
        let total = self.total_armed_iterations(&c);
        if total > 0 && c.armed_iterations >= total {
            self.finish(&mut c);
            return;
        }
        self.arm(&mut c, completed);
    }

    fn total_armed_iterations(&self, c: &Control) -> u64 {
        let repeat = u64::from(self.config.repeat);
        match self.config.mode {
            Mode::Sample => c.schedule.len() as u64 * repeat,
            Mode::Trace if c.schedule.is_empty() => 0,
            Mode::Trace => repeat,
            Mode::Off => 0,
        }
    }

    fn reset_calls(&self) {
        for &entry in &self.selected {
            self.desc(entry).calls.store(0, Relaxed);
        }
    }

    /// Allocates the events of one probe (occurrences `0..occurrences`, plus a merged event)
    /// and points its descriptor at them.
    fn add_probe_events(
        &self,
        c: &mut Control,
        entry: usize,
        occurrences: u32,
        merged: bool,
        place: &mut dyn FnMut(u32) -> (u32, Option<(usize, u32)>),
    ) {
        let first = c.allocated as u32;
        let repeat = self.config.repeat as usize;
        let mut make = |c: &mut Control, occurrence: u32| {
            let index = c.allocated;
            let bytes = SAMPLE_BYTES
                * if occurrence == MERGED {
                    RESERVOIR
                } else {
                    repeat
                };
            if c.sample_bytes + bytes > self.config().sample_budget_bytes {
                c.events_over_budget += 1;
                return None;
            }
            c.sample_bytes += bytes;
            let (order, parent) = place(occurrence);
            let event = Event {
                entry,
                occurrence,
                order,
                parent,
                store: Store::new(repeat, occurrence == MERGED),
            };
            // Capacity is max_events plus one merged event per selected probe, which the
            // learner's bound guarantees.
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
        let merged_index = if merged { make(c, MERGED) } else { None };
        let desc = self.desc(entry);
        desc.first_event.store(first, Relaxed);
        desc.events.store(count, Relaxed);
        desc.merged_event
            .store(merged_index.unwrap_or(NONE), Relaxed);
    }

    /// Warmup is over: turn what it saw into events in execution order.
    fn plan_after_warmup(&self, c: &mut Control) {
        let plan: Vec<Planned> = lock(&self.learner).plan();
        // Per probe, in order of first appearance: its occurrence count and whether it has a
        // merged event; and each event's place in the plan.
        let mut entries: Vec<usize> = Vec::new();
        let mut per_entry: HashMap<usize, (u32, bool)> = HashMap::new();
        let mut place: HashMap<Key, (u32, Option<Key>)> = HashMap::new();
        for (i, p) in plan.iter().enumerate() {
            let counts = per_entry.entry(p.entry).or_insert_with(|| {
                entries.push(p.entry);
                (0, false)
            });
            if p.occurrence == MERGED {
                counts.1 = true;
            } else {
                counts.0 += 1;
            }
            place.insert((p.entry, p.occurrence), (i as u32, p.parent));
        }
        for &entry in &entries {
            let (occurrences, merged) = per_entry[&entry];
            let mut at = |occ: u32| place.get(&(entry, occ)).copied().unwrap_or((0, None));
            self.add_probe_events(c, entry, occurrences, merged, &mut at);
        }
        let mut schedule: Vec<u32> = (0..c.allocated as u32).collect();
        schedule.sort_by_key(|&e| {
            self.events[e as usize]
                .get()
                .map_or(u32::MAX, |ev| ev.order)
        });
        c.schedule = schedule;
        c.late = self
            .selected
            .iter()
            .copied()
            .filter(|e| !per_entry.contains_key(e))
            .collect();
        for &entry in &entries {
            self.desc(entry).state.store(OFF, Relaxed);
        }
        if plan.is_empty() {
            eprintln!(
                "profiler-core: warning: none of the {} selected probes ran during the {} warmup \
                 iterations; events will be scheduled as they first appear",
                self.selected.len(),
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
            self.add_probe_events(c, entry, occurrences, calls > occurrences, &mut at);
            c.schedule.extend(before..c.allocated as u32);
            desc.state.store(OFF, Relaxed);
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
        self.reset_calls();
        c.armed.clear();
        if c.schedule.is_empty() {
            return;
        }
        let k = c.armed_iterations;
        let repeat = u64::from(self.config.repeat);
        self.cur_iter.store(iter, Relaxed);
        match self.config.mode {
            Mode::Sample => {
                let event = c.schedule[(k / repeat) as usize];
                let entry = self.events[event as usize].get().map(|e| e.entry);
                if let (Some(old), true) = (c.armed_entry, c.armed_entry != entry) {
                    self.desc(old).state.store(OFF, Relaxed);
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
    }

    /// Turns stored marks into samples where the clock can already tell.
    pub(super) fn resolve(&self, c: &mut Control, last_chance: bool) {
        let pending = std::mem::take(&mut c.pending);
        let marks = std::mem::take(&mut c.iter_marks);
        let mut kept = Vec::with_capacity(pending.len());
        for (event, slot) in pending {
            let Some(ev) = self.events[event as usize].get() else {
                continue;
            };
            if ev.store.totals.is_some() {
                continue; // merged events are read whole at the end
            }
            let outcome = resolve_slot(
                &self.clock,
                &ev.store,
                slot as usize,
                |iter| marks.get(iter as usize).copied(),
                true,
                &mut c.resolved[event as usize],
            );
            let keep = match outcome {
                Outcome::Done => false,
                // Empty: the event did not run (or a late thread has not written yet).
                Outcome::Empty | Outcome::Pending => !last_chance,
            };
            if keep {
                kept.push((event, slot));
            }
        }
        c.iter_marks = marks;
        c.pending = kept;
    }

    fn finish(&self, c: &mut Control) {
        c.finished = true;
        self.done.store(true, Relaxed);
        for &entry in &self.selected {
            self.desc(entry).state.store(OFF, Relaxed);
        }
        c.armed.clear();
        self.write(c, true);
        if self.config.exit {
            eprintln!("profiler-core: PROF_EXIT=1: the schedule is complete, exiting");
            std::process::exit(0);
        }
    }

    fn write(&self, c: &mut Control, complete: bool) {
        if c.written || self.config.mode == Mode::Off {
            return;
        }
        c.written = true;
        let profile = self.profile(c, complete, true);
        crate::output::emit(&profile, &self.config.output_path(), self.config.summary);
    }

    /// The program is ending: write what there is, marked incomplete if the schedule is not
    /// done.
    pub(crate) fn end(&self) {
        let mut c = lock(&self.control);
        self.done.store(true, Relaxed);
        for &entry in &self.selected {
            self.desc(entry).state.store(OFF, Relaxed);
        }
        let complete = c.finished;
        self.write(&mut c, complete);
    }
}
