//! The schedule: which events exist, in which order, learned during warmup.
//!
//! During warmup every selected probe takes the slow path, which reports each run here as
//! (probe, occurrence within the iteration). Each distinct pair is one event. Events are ordered
//! by where they ran in the most recent iteration that ran them (so an event that appears only
//! after the first iterations still lands at its place in the loop), ties broken by first sight.
//! At most `max_events` distinct events are kept; later occurrences of a probe fold into one
//! merged event per probe.

use std::collections::HashMap;

/// The occurrence value of a probe's merged event.
pub(crate) const MERGED: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Seen {
    first: (u32, u32),
    last: (u32, u32),
    /// The run that contained the most recent run of this event.
    parent: Option<(usize, u32)>,
}

/// An event the schedule will measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Planned {
    /// Index of the probe in the registry.
    pub entry: usize,
    /// Occurrence within the iteration, or `MERGED`.
    pub occurrence: u32,
    /// The (entry, occurrence) of the event that contained it, if any.
    pub parent: Option<(usize, u32)>,
}

/// What warmup has seen so far.
#[derive(Debug)]
pub(crate) struct Learner {
    max_events: usize,
    iteration: u32,
    seq: u32,
    distinct: usize,
    seen: HashMap<(usize, u32), Seen>,
}

impl Learner {
    pub fn new(max_events: u32) -> Learner {
        Learner {
            max_events: max_events as usize,
            iteration: 0,
            seq: 0,
            distinct: 0,
            seen: HashMap::new(),
        }
    }

    /// Occurrence `occ` of probe `entry` started inside `parent` (a key this returned before).
    /// Returns the event's key: `(entry, occ)`, or `(entry, MERGED)` past the bound.
    pub fn observe(
        &mut self,
        entry: usize,
        occ: u32,
        parent: Option<(usize, u32)>,
    ) -> (usize, u32) {
        let now = (self.iteration, self.seq);
        self.seq += 1;
        let key = if self.seen.contains_key(&(entry, occ)) || self.distinct < self.max_events {
            (entry, occ)
        } else {
            (entry, MERGED)
        };
        let distinct = &mut self.distinct;
        self.seen
            .entry(key)
            .and_modify(|s| {
                s.last = now;
                s.parent = parent;
            })
            .or_insert_with(|| {
                if key.1 != MERGED {
                    *distinct += 1;
                }
                Seen {
                    first: now,
                    last: now,
                    parent,
                }
            });
        key
    }

    /// An iteration ended.
    pub fn next_iteration(&mut self) {
        self.iteration += 1;
        self.seq = 0;
    }

    /// How many more distinct events the bound allows.
    pub fn budget_left(&self) -> usize {
        self.max_events.saturating_sub(self.distinct)
    }

    /// Uses `n` of the remaining budget (for probes first seen after warmup).
    pub fn spend(&mut self, n: usize) {
        self.distinct += n;
    }

    /// The events in execution order.
    pub fn plan(&self) -> Vec<Planned> {
        let mut events: Vec<(&(usize, u32), &Seen)> = self.seen.iter().collect();
        events.sort_by_key(|(key, seen)| (seen.last.1, seen.first, key.0, key.1));
        events
            .into_iter()
            .map(|(&(entry, occurrence), seen)| Planned {
                entry,
                occurrence,
                parent: seen.parent,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(l: &mut Learner, iteration: &[usize]) {
        let mut counts: HashMap<usize, u32> = HashMap::new();
        for &p in iteration {
            let c = counts.entry(p).or_default();
            l.observe(p, *c, None);
            *c += 1;
        }
        l.next_iteration();
    }

    fn plan(l: &Learner) -> Vec<(usize, u32)> {
        l.plan().iter().map(|p| (p.entry, p.occurrence)).collect()
    }

    #[test]
    fn occurrences_become_events_in_execution_order() {
        let mut l = Learner::new(100);
        for _ in 0..3 {
            run(&mut l, &[0, 1, 0, 2]);
        }
        assert_eq!(plan(&l), vec![(0, 0), (1, 0), (0, 1), (2, 0)]);
    }

    #[test]
    fn event_first_seen_later_takes_its_place_in_the_loop() {
        let mut l = Learner::new(100);
        run(&mut l, &[0, 1]);
        run(&mut l, &[0, 3, 1]);
        run(&mut l, &[0, 3, 1]);
        assert_eq!(plan(&l), vec![(0, 0), (3, 0), (1, 0)]);
    }

    #[test]
    fn bound_folds_later_occurrences_into_one_merged_event() {
        let mut l = Learner::new(3);
        run(&mut l, &[0, 0, 0, 0, 0, 1, 1]);
        assert_eq!(
            plan(&l),
            vec![(0, 0), (0, 1), (0, 2), (0, MERGED), (1, MERGED)]
        );
        assert_eq!(l.budget_left(), 0);
    }
}
