//! Planning, when warmup ends: the events the learner found are allocated in execution order
//! with their sample storage (the memory budget is checked here), each probe's routing table is
//! filled, the device's event pools are reserved; probes first seen after warmup are planned as
//! they appear.

use std::collections::HashMap;
use std::sync::atomic::Ordering::{Relaxed, Release};

use super::SessionMode;
use super::{
    lane_stream, Event, FirstRun, Key, Parent, Plan, Planned, Route, Routes, Schedule, MERGED, NONE,
};
use crate::instrument::device::{Device, Stream, NO_MARK};
use crate::register::descriptor::{WORK_BYTES, WORK_FLOPS, WORK_SHAPE};
use crate::store::samples::{
    Store, Tally, DEVICE_SAMPLE_BYTES, MEMORY_SAMPLE_BYTES, RESERVOIR, SAMPLE_BYTES,
    SHAPE_SAMPLE_BYTES, WORK_SAMPLE_BYTES,
};
use crate::sync::lock;

/// The events allocated for one (probe, lane).
struct Allocated {
    first: u32,
    count: u32,
    merged: Option<u32>,
}

/// How many iterations' worth of device marks a stream's pool holds: the device may lag the
/// CPU by this many iterations before samples are lost.
pub(crate) const POOL_ITERATIONS: usize = 16;

/// Where an event goes: its position in the plan, its parent, and whether it ran on a thread
/// other than the stepping one.
type Place = (u32, Option<Parent>, bool);

/// The learner's plan grouped by (probe, lane), in order of first appearance.
struct Groups {
    order: Vec<(usize, u32)>,
    /// Per (probe, lane): its occurrence count and whether it has a merged event.
    counts: HashMap<(usize, u32), (u32, bool)>,
    /// Each event's place in the plan, and its parent.
    place: HashMap<Key, Place>,
}

impl Groups {
    fn of(plan: &[Planned]) -> Groups {
        let mut groups = Groups {
            order: Vec::new(),
            counts: HashMap::new(),
            place: HashMap::new(),
        };
        for (i, p) in plan.iter().enumerate() {
            let counts = groups.counts.entry((p.entry, p.lane)).or_insert_with(|| {
                groups.order.push((p.entry, p.lane));
                (0, false)
            });
            if p.occurrence == MERGED {
                counts.1 = true;
            } else {
                counts.0 += 1;
            }
            groups.place.insert(
                (p.entry, p.lane, p.occurrence),
                (i as u32, p.parent, p.off_thread),
            );
        }
        groups
    }
}

impl Schedule {
    /// Warmup is over: turn what it saw into events in execution order (those that ran only
    /// before the loop are kept aside, unscheduled: their probes stay in learning state, so that
    /// one that runs again later is scheduled then, as a probe first seen late is).
    pub(crate) fn plan_after_warmup(&self, c: &mut Plan, device: Option<&dyn Device>) {
        let (plan, before_loop, streams): (Vec<Planned>, _, Vec<Stream>) = {
            let learner = lock(&self.learner);
            let (plan, before_loop) = learner.plan();
            (plan, before_loop, learner.streams().to_vec())
        };
        c.streams = streams;
        c.before_loop = before_loop;
        let groups = Groups::of(&plan);
        self.allocate_groups(c, &groups, device.is_some());
        let entries: Vec<usize> = {
            let mut seen = std::collections::HashSet::new();
            groups
                .order
                .iter()
                .map(|&(e, _)| e)
                .filter(|e| seen.insert(*e))
                .collect()
        };
        let mut order: Vec<u32> = (0..c.allocated as u32).collect();
        order.sort_by_key(|&e| {
            self.events[e as usize]
                .get()
                .map_or(u32::MAX, |ev| ev.order)
        });
        c.order = order;
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
        self.prepare_streams(c, device);
        if plan.is_empty() && c.before_loop.is_empty() {
            say!(
                "profiler-core: warning: none of the {} selected probes ran during the {} warmup \
                 iterations; events will be scheduled as they first appear",
                c.selected.len(),
                self.warmup
            );
        } else if plan.is_empty() {
            say!(
                "profiler-core: warning: the selected probes ran only before the loop (before \
                 the first step()), none in the {} warmup iterations after it; events will be \
                 scheduled as they first appear",
                self.warmup.saturating_sub(1)
            );
        }
        self.warn_over_budget(c);
    }

    /// Allocates the events of every (probe, lane) and points each probe's routing at them.
    fn allocate_groups(&self, c: &mut Plan, groups: &Groups, on_device: bool) {
        let mut routes: HashMap<usize, Vec<Route>> = HashMap::new();
        for &(entry, lane) in &groups.order {
            let (occurrences, merged) = groups.counts[&(entry, lane)];
            let mut at = |occ: u32| {
                let place = groups.place.get(&(entry, lane, occ));
                place.copied().unwrap_or((0, None, false))
            };
            let timed_on_device = lane > 0 && on_device;
            let a = self.add_probe_events(
                c,
                (entry, lane),
                occurrences,
                merged,
                timed_on_device,
                &mut at,
            );
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
            c.tables.push(table);
            self.route(entry).streams.store(ptr, Release);
        }
    }

    /// Allocates the events of one probe on one lane (occurrences `0..occurrences`, plus a
    /// merged event).
    fn add_probe_events(
        &self,
        c: &mut Plan,
        (entry, lane): (usize, u32),
        occurrences: u32,
        merged: bool,
        timed_on_device: bool,
        place: &mut dyn FnMut(u32) -> Place,
    ) -> Allocated {
        let first = c.allocated as u32;
        let repeat = self.repeat as usize;
        let work = if self.keeps_work() {
            self.desc(entry).info.work
        } else {
            0
        };
        let work_bytes = if work & (WORK_FLOPS | WORK_BYTES) != 0 {
            WORK_SAMPLE_BYTES
        } else {
            0
        } + if work & WORK_SHAPE != 0 {
            SHAPE_SAMPLE_BYTES
        } else {
            0
        };
        let mut make = |c: &mut Plan, occurrence: u32| {
            let index = c.allocated;
            let is_merged = occurrence == MERGED;
            let per_slot = if timed_on_device && !is_merged {
                SAMPLE_BYTES + DEVICE_SAMPLE_BYTES
            } else {
                SAMPLE_BYTES
            } + if self.memory { MEMORY_SAMPLE_BYTES } else { 0 }
                + if is_merged { 0 } else { work_bytes };
            let bytes = per_slot * if is_merged { RESERVOIR } else { repeat };
            if c.sample_bytes + bytes > self.sample_budget_bytes {
                c.events_over_budget += 1;
                c.over_budget_on_device |= timed_on_device && !is_merged;
                return None;
            }
            c.sample_bytes += bytes;
            let (order, parent, off_thread) = place(occurrence);
            let event = Event {
                entry,
                lane,
                occurrence,
                order,
                parent,
                off_thread,
                recorded: self.recorded(entry, lane),
                store: Store::new(repeat, is_merged, timed_on_device, self.memory, work),
            };
            // Capacity is max_events plus one merged event per selected probe and lane, which
            // the learner's bound guarantees.
            let stored = self
                .events
                .get(index)
                .is_some_and(|slot| slot.set(event).is_ok());
            if stored {
                c.allocated += 1;
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

    /// Points probe `entry`'s routing at its stream-less events.
    fn route_plain(&self, entry: usize, a: &Allocated) {
        let route = self.route(entry);
        route.first_event.store(a.first, Relaxed);
        route.events.store(a.count, Relaxed);
        route.merged_event.store(a.merged.unwrap_or(NONE), Relaxed);
    }

    /// Probes first seen after warmup: each is scheduled after the others.
    pub(crate) fn discover_late(&self, c: &mut Plan) {
        if c.late.is_empty() {
            return;
        }
        let late = std::mem::take(&mut c.late);
        let mut still_unseen = Vec::new();
        for entry in late {
            let calls = self.route(entry).calls.swap(0, Relaxed);
            if calls == 0 {
                still_unseen.push(entry);
                continue;
            }
            let mut learner = lock(&self.learner);
            let occurrences = calls.min(learner.budget_left() as u32);
            learner.spend(occurrences as usize);
            drop(learner);
            let base = c.order.len() as u32;
            let before = c.allocated as u32;
            let mut at = |occ: u32| {
                (
                    base + if occ == MERGED { occurrences } else { occ },
                    None,
                    false,
                )
            };
            // A probe first seen after warmup is timed without its stream (on the CPU).
            let merged = calls > occurrences;
            let a = self.add_probe_events(c, (entry, 0), occurrences, merged, false, &mut at);
            self.route_plain(entry, &a);
            c.order.extend(before..c.allocated as u32);
            self.desc(entry)
                .state
                .store(self.idle_state(entry), Relaxed);
        }
        c.late = still_unseen;
        self.warn_over_budget(c);
    }

    fn warn_over_budget(&self, c: &mut Plan) {
        if c.events_over_budget > 0 && !c.warned_budget {
            c.warned_budget = true;
            say!(
                "{}",
                budget_warning(
                    c.events_over_budget,
                    self.sample_budget_bytes,
                    self.repeat,
                    self.memory,
                    c.over_budget_on_device
                )
            );
        }
    }

    /// Reserves each stream's event pool: enough marks for the events that may be armed on it
    /// in one iteration, for `POOL_ITERATIONS` iterations.
    fn prepare_streams(&self, c: &mut Plan, device: Option<&dyn Device>) {
        let Some(device) = device else {
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
                // `continuous` mode may arm every event too, in a trace taken on demand.
                let armed = match self.mode {
                    SessionMode::Trace | SessionMode::Continuous => events,
                    _ => 1,
                };
                Some((stream, (2 * armed + 1) * POOL_ITERATIONS))
            })
            .collect();
        if !streams.is_empty() {
            device.prepare(&streams);
        }
    }

    /// `trace` mode without warmup: the runs timed while iteration 0 was learned become the
    /// events' first samples (slot 0), and iteration 0 counts as the first active one. Returns
    /// the slots to resolve: (event, slot, iteration). `linear`: the clock's deltas add up.
    /// Each run goes where an armed run of its probe would (its occurrence's event, else the
    /// merged one); the merged events' runs are summed and committed once each.
    /// `recorded`: the runs the cold path learned from records (`trace` mode on a linear
    /// clock), beside those the learner kept.
    pub(crate) fn absorb_first_runs(
        &self,
        c: &mut Plan,
        linear: bool,
        recorded: impl IntoIterator<Item = FirstRun>,
    ) -> Vec<(u32, u32, u32)> {
        let mut pending = Vec::new();
        let kept = std::mem::take(&mut lock(&self.learner).first_runs);
        let mut tallies: Vec<Option<Tally>> = Vec::new();
        tallies.resize_with(c.allocated, || None);
        for run in kept.into_iter().chain(recorded) {
            let Some(route) = self.routes.get(run.entry as usize) else {
                continue;
            };
            let (start, stop) = (run.start, run.stop);
            let e = match run.occurrence {
                MERGED => route.merged_event.load(Relaxed),
                occ => route.event_for(occ),
            };
            let Some(ev) = self.event(e) else {
                continue;
            };
            match tallies.get_mut(e as usize) {
                Some(tally) if ev.store.totals.is_some() => {
                    if tally.is_none() {
                        *tally = ev.store.tally();
                    }
                    if let Some(tally) = tally {
                        ev.store.tally_run(tally, 0, (start, stop), linear);
                    }
                }
                _ => {
                    ev.store
                        .record(0, 0, (start, stop), (NO_MARK, NO_MARK), linear, None);
                    pending.push((e, 0, 0));
                }
            }
        }
        for (e, tally) in tallies.into_iter().enumerate() {
            if let (Some(tally), Some(ev)) = (tally, self.event(e as u32)) {
                ev.store.commit(tally);
            }
        }
        c.armed_iterations = 1;
        pending
    }
}

/// The warning for events left out of the sample budget, with the slot size of this
/// configuration: 20 bytes (start, stop, iteration), 32 more with each run's memory counted
/// (`Alloc` installed), 32 more for an event timed on a stream.
fn budget_warning(events: usize, budget: usize, repeat: u32, memory: bool, device: bool) -> String {
    let slot = SAMPLE_BYTES + if memory { MEMORY_SAMPLE_BYTES } else { 0 };
    let mut size = format!("{slot} bytes a slot");
    if memory {
        size.push_str(&format!(
            " ({SAMPLE_BYTES}, and {MEMORY_SAMPLE_BYTES} for each run's memory: \
             profiler_core::Alloc is installed)"
        ));
    }
    if device {
        size.push_str(&format!(
            ", {} for an event timed on a stream",
            slot + DEVICE_SAMPLE_BYTES
        ));
    }
    format!(
        "profiler-core: warning: {events} events are left out: their samples would need more \
         than {} MiB ({repeat} slots per event (PROF_REPEAT), {RESERVOIR} per merged event, \
         {size}); lower PROF_REPEAT, PROF_MAX_EVENTS or PROF_MAX_PROBES, or narrow PROF_FILTER",
        budget >> 20
    )
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    /// The slot size the warning gives is the one the plan charges: 30 events of 10^6 slots
    /// pass a 1 GiB budget only with the allocator's figures (52 bytes a slot, 1,488 MB), not
    /// at 20 bytes (572 MiB), which the warning once said.
    #[test]
    fn the_warning_gives_the_slot_size_of_the_configuration() {
        let plain = budget_warning(10, 1 << 30, 1_000_000, false, false);
        assert!(plain.contains("20 bytes a slot)"), "{plain}");
        let counted = budget_warning(10, 1 << 30, 1_000_000, true, false);
        assert!(
            counted.contains("52 bytes a slot (20, and 32 for each run's memory"),
            "{counted}"
        );
        let device = budget_warning(1, 1 << 30, 1_000_000, false, true);
        assert!(
            device.contains("20 bytes a slot, 52 for an event timed on a stream"),
            "{device}"
        );
        let both = budget_warning(1, 1 << 30, 1_000_000, true, true);
        assert!(
            both.contains(", 84 for an event timed on a stream"),
            "{both}"
        );
    }
}
