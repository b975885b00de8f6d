//! Learning the events during warmup: which exist, in which order, inside which.
//!
//! During warmup every selected probe takes the slow path, which reports each run here as
//! (probe, occurrence within the iteration). Each distinct pair is one event. Events are ordered
//! by where they ran in the most recent iteration that ran them (so an event that appears only
//! after the first iterations still lands at its place in the loop), ties broken by first sight.
//! At most `max_events` distinct events are kept; later occurrences of a probe fold into one
//! merged event per probe.
//!
//! An event seen only in the first iteration (from start-up to the first `step()`), in none of
//! warmup's later ones, ran before the loop (a model's construction, a data set's loading): it
//! gets no place in the schedule (its iterations would measure nothing), and its first run is
//! timed instead ([`BeforeLoop`]). Telling it apart takes two warmup iterations or more.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

use crate::instrument::device::Stream;
use crate::register::descriptor::Descriptor;
use crate::sync::lock;

use super::Schedule;

/// The occurrence value of a probe's merged event.
pub(crate) const MERGED: u32 = u32::MAX;

/// An event's identity: (registry entry, lane, occurrence or `MERGED`). The lane is 0 for runs
/// that name no stream, else 1 + the stream's index in [`Learner::streams`]: occurrences are
/// counted per probe and stream.
pub(crate) type Key = (usize, u32, u32);

/// The run that contained another: its key, and whether the contained run ran on another
/// thread (work handed to a thread while the parent, on the thread that calls `step()`, was
/// open: it runs beside the parent's own code, not inside it on one stack).
pub(crate) type Parent = (Key, bool);

#[derive(Clone, Copy, Debug)]
struct Seen {
    first: (u32, u32),
    last: (u32, u32),
    /// The run that contained the most recent run of this event.
    parent: Option<Parent>,
    /// A parent found across threads differed from one sighting to another (a thread that runs
    /// on its own, beside whatever the stepping thread does): the event has none.
    parent_varies: bool,
    /// Some run of it ran on a thread other than the one that calls `step()`.
    off_thread: bool,
    /// Its first run timed in the first iteration: start and stop marks.
    timed: Option<(u64, u64)>,
}

/// An event that ran only before the loop: seen in the first iteration, in none of warmup's
/// later ones. It is not scheduled; its first run, timed, is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BeforeLoop {
    /// Index of the probe in the registry.
    pub entry: usize,
    /// 0, or 1 + the index of the event's stream.
    pub lane: u32,
    /// Occurrence within the first iteration; for runs past the bound on events, the first
    /// of them.
    pub occurrence: u32,
    /// Its runs past the bound on events, folded into one.
    pub merged: bool,
    /// Start and stop marks of its first run, when it was timed (not so for a run on a stream,
    /// nor for one that may move between threads, an `async fn`).
    pub run: Option<(u64, u64)>,
}

/// An event the schedule will measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Planned {
    /// Index of the probe in the registry.
    pub entry: usize,
    /// 0, or 1 + the index of the event's stream.
    pub lane: u32,
    /// Occurrence within the iteration, or `MERGED`.
    pub occurrence: u32,
    /// The key of the event that contained it, if any, and whether it ran on another thread.
    pub parent: Option<Parent>,
    /// It ran on a thread other than the one that calls `step()`: beside that thread's work.
    pub off_thread: bool,
}

/// What warmup has seen so far.
#[derive(Debug)]
pub(crate) struct Learner {
    max_events: usize,
    iteration: u32,
    seq: u32,
    distinct: usize,
    seen: HashMap<Key, Seen>,
    /// The streams seen, in order of first appearance (lane = index + 1).
    streams: Vec<Stream>,
    /// Runs per (entry, lane) in the current iteration, for runs on a stream.
    lane_calls: HashMap<(usize, u32), u32>,
    /// `trace` mode without warmup: the runs of iteration 0, timed while learning.
    pub first_runs: Vec<FirstRun>,
    /// The thread that calls `step()` (at first, the one that started the session).
    stepping: std::thread::ThreadId,
    /// The runs open on the stepping thread, innermost last (`sample` mode's warmup): the parent
    /// of a run that starts on another thread with none open on its own.
    stepping_open: Vec<Key>,
}

/// A run of iteration 0 timed while it was learned (`trace` mode without warmup; runs on a
/// stream are not timed then): its probe, its occurrence (or `MERGED`), its marks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FirstRun {
    pub entry: u32,
    pub occurrence: u32,
    pub start: u64,
    pub stop: u64,
}

impl Learner {
    pub fn new(max_events: u32) -> Learner {
        Learner {
            max_events: max_events as usize,
            iteration: 0,
            seq: 0,
            distinct: 0,
            seen: HashMap::new(),
            streams: Vec::new(),
            lane_calls: HashMap::new(),
            first_runs: Vec::new(),
            stepping: std::thread::current().id(),
            stepping_open: Vec::new(),
        }
    }

    /// Whether this thread is the one that calls `step()`.
    pub fn on_stepping_thread(&self) -> bool {
        std::thread::current().id() == self.stepping
    }

    /// The lane of `stream`, assigned on first sight.
    pub fn lane_of(&mut self, stream: Stream) -> u32 {
        match self.streams.iter().position(|&s| s == stream) {
            Some(i) => i as u32 + 1,
            None => {
                self.streams.push(stream);
                self.streams.len() as u32
            }
        }
    }

    /// The streams seen so far; lane `k` is `streams()[k - 1]`.
    pub fn streams(&self) -> &[Stream] {
        &self.streams
    }

    /// The occurrence of a run of `entry` on `lane` in this iteration.
    pub fn next_occurrence(&mut self, entry: usize, lane: u32) -> u32 {
        let n = self.lane_calls.entry((entry, lane)).or_insert(0);
        *n += 1;
        *n - 1
    }

    /// Occurrence `occ` of probe `entry` on `lane` started inside `parent` (a key this
    /// returned before). Returns the event's key: `(entry, lane, occ)`, or
    /// `(entry, lane, MERGED)` past the bound.
    /// `off_thread`: the run is on a thread other than the one that calls `step()`.
    pub fn observe(
        &mut self,
        (entry, lane, occ): Key,
        parent: Option<Parent>,
        off_thread: bool,
    ) -> Key {
        let now = (self.iteration, self.seq);
        self.seq += 1;
        let key = if self.seen.contains_key(&(entry, lane, occ)) || self.distinct < self.max_events
        {
            (entry, lane, occ)
        } else {
            (entry, lane, MERGED)
        };
        let distinct = &mut self.distinct;
        self.seen
            .entry(key)
            .and_modify(|s| {
                let new_iteration = s.last.0 != now.0;
                s.last = now;
                // A parent across threads is kept only while every sighting agrees on it.
                let across = |p: Option<Parent>| p.is_some_and(|(_, a)| a);
                if (across(parent) || across(s.parent)) && parent != s.parent {
                    s.parent_varies = true;
                }
                // A merged event's parent is that of its first run in the iteration: a later
                // run may start inside an earlier one of the same merged event (recursion past
                // the bound), and the event would be its own parent; the last iteration's first
                // run, as for any event (a first run before the loop may sit in an event that
                // is never scheduled).
                if key.2 != MERGED || new_iteration {
                    s.parent = parent;
                }
                s.off_thread |= off_thread;
            })
            .or_insert_with(|| {
                if key.2 != MERGED {
                    *distinct += 1;
                }
                Seen {
                    first: now,
                    last: now,
                    parent,
                    parent_varies: false,
                    off_thread,
                    timed: None,
                }
            });
        key
    }

    /// The iteration being learned (0: the first, from start-up to the first `step()`).
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// A run of event `key` (as [`Learner::observe`] returned it) in the first iteration was
    /// timed: the first such run is kept, in case the event ran only before the loop.
    pub fn time_first(&mut self, key: Key, marks: (u64, u64)) {
        if let Some(seen) = self.seen.get_mut(&key) {
            seen.timed.get_or_insert(marks);
        }
    }

    /// An iteration ended, on this thread's `step()`.
    pub fn next_iteration(&mut self) {
        self.iteration += 1;
        self.seq = 0;
        self.lane_calls.clear();
        self.stepping = std::thread::current().id();
        self.stepping_open.clear();
    }

    /// How many more distinct events the bound allows.
    pub fn budget_left(&self) -> usize {
        self.max_events.saturating_sub(self.distinct)
    }

    /// Uses `n` of the remaining budget (for probes first seen after warmup).
    pub fn spend(&mut self, n: usize) {
        self.distinct += n;
    }

    /// The events to schedule, in execution order, and those that ran only before the loop,
    /// in the order they first ran. An event ran only before the loop when it was seen in the
    /// first iteration and in none of the later ones, at least one of which has ended (so a
    /// warmup of one iteration schedules every event it saw).
    pub fn plan(&self) -> (Vec<Planned>, Vec<BeforeLoop>) {
        let before_loop = |seen: &Seen| self.iteration >= 2 && seen.last.0 == 0;
        type Sighting<'a> = (&'a Key, &'a Seen);
        let (mut events, mut before): (Vec<Sighting>, Vec<Sighting>) =
            self.seen.iter().partition(|(_, seen)| !before_loop(seen));
        events.sort_by_key(|(key, seen)| (seen.last.1, seen.first, **key));
        before.sort_by_key(|(key, seen)| (seen.first, **key));
        let planned = events
            .into_iter()
            .map(|(&(entry, lane, occurrence), seen)| Planned {
                entry,
                lane,
                occurrence,
                parent: seen.parent.filter(|_| !seen.parent_varies),
                off_thread: seen.off_thread,
            })
            .collect();
        // A merged event holds the runs from the first past its probe's own events.
        let own = |entry: usize, lane: u32| {
            let keys = self.seen.keys();
            keys.filter(|&&(e, l, o)| (e, l) == (entry, lane) && o != MERGED)
                .count() as u32
        };
        let before = before
            .into_iter()
            .map(|(&(entry, lane, occurrence), seen)| BeforeLoop {
                entry,
                lane,
                occurrence: if occurrence == MERGED {
                    own(entry, lane)
                } else {
                    occurrence
                },
                merged: occurrence == MERGED,
                run: seen.timed,
            })
            .collect();
        (planned, before)
    }
}

impl Schedule {
    /// A run of `desc` in learning state. During warmup the learner notes the run and its
    /// parent; after warmup a probe not seen yet is only counted, lock-free, and planned at
    /// `step()`. Returns the run's lane when its end must be reported back
    /// ([`Schedule::end_learning_run`]): a run that nests, during warmup.
    // Out of line: a warmup path, which inlined into `enter_slow` would cost every armed run
    // its registers (entry 108 -> 129 instructions when the work keys' callers were added).
    #[inline(never)]
    pub(crate) fn learn_run(
        &self,
        desc: &'static Descriptor,
        nests: bool,
        stream: Option<Stream>,
    ) -> Option<u32> {
        let entry = desc.index.load(Relaxed) as usize;
        let calls = &self.routes.get(entry)?.calls;
        if !self.learning.load(Relaxed) {
            calls.fetch_add(1, Relaxed);
            return None;
        }
        // A run in a thread-local's destructor may come after this thread's `OPEN` is gone:
        // skipped and counted (reported at the end), never a panic, which there would abort.
        let Ok(here) = OPEN.try_with(|open| open.borrow().last().copied()) else {
            self.exiting.fetch_add(1, Relaxed);
            return None;
        };
        let mut learner = lock(&self.learner);
        let stepping = learner.on_stepping_thread();
        // A run with none open on its own thread, on a thread other than the stepping one, is
        // inside the run open on the stepping thread, if any (work handed to a worker).
        let parent = match here {
            Some(p) => Some((p, false)),
            None if !stepping => learner.stepping_open.last().map(|&p| (p, true)),
            None => None,
        };
        let (lane, occ) = match stream {
            Some(stream) => {
                let lane = learner.lane_of(stream);
                (lane, learner.next_occurrence(entry, lane))
            }
            None => (0, calls.fetch_add(1, Relaxed)),
        };
        let key = learner.observe((entry, lane, occ), parent, !stepping);
        if nests && stepping {
            learner.stepping_open.push(key);
        }
        drop(learner);
        if !nests {
            return None;
        }
        // `OPEN` was there a moment ago, on this same thread.
        OPEN.try_with(|open| open.borrow_mut().push(key)).ok()?;
        Some(lane)
    }

    /// The lane of `stream` (a learning run of `trace` mode, which records the rest).
    pub(crate) fn lane_of(&self, stream: Stream) -> u32 {
        lock(&self.learner).lane_of(stream)
    }

    /// Whether a learning run on `lane` that starts now is timed: every run of the first
    /// iteration not timed on a stream, while it may matter (the first iteration's runs are
    /// the events' first samples in `trace` mode without warmup, and an event that ran only
    /// before the loop is reported with its first run's time).
    #[inline]
    pub(crate) fn times_learning_run(&self, lane: u32) -> bool {
        // The load first: with `lane == 0` first, `start_measure`'s armed path (which this
        // learning branch shares a function with) took 116 instructions instead of 115
        // (`scripts/hot_path_instructions.py`).
        self.first_iteration.load(Relaxed) && lane == 0
    }

    /// The first iteration has ended: learning runs are no longer timed.
    pub(crate) fn end_first_iteration(&self) {
        self.first_iteration.store(false, Relaxed);
    }

    /// A learning run ends: its parent is popped; `timed` (start and stop marks, a run of the
    /// first iteration) is kept as the run's sample for iteration 0 (`trace` mode without
    /// warmup), else as its event's first run, in case it ran only before the loop.
    pub(crate) fn end_learning_run(&self, timed: Option<(u64, u64)>) {
        let key = OPEN.try_with(|open| open.borrow_mut().pop()).ok().flatten();
        let mut learner = lock(&self.learner);
        if key.is_some() && learner.on_stepping_thread() {
            learner.stepping_open.pop();
        }
        match (timed, key) {
            (Some((start, stop)), Some((entry, _, occurrence))) if self.measure_first => {
                learner.first_runs.push(FirstRun {
                    entry: entry as u32,
                    occurrence,
                    start,
                    stop,
                });
            }
            (Some(marks), Some(key)) => learner.time_first(key, marks),
            _ => {}
        }
    }
}

thread_local! {
    /// The runs open on this thread during warmup, innermost last, as learner keys.
    static OPEN: std::cell::RefCell<Vec<Key>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(l: &mut Learner, iteration: &[usize]) {
        let mut counts: HashMap<usize, u32> = HashMap::new();
        for &p in iteration {
            let c = counts.entry(p).or_default();
            l.observe((p, 0, *c), None, false);
            *c += 1;
        }
        l.next_iteration();
    }

    fn plan(l: &Learner) -> Vec<(usize, u32)> {
        l.plan().0.iter().map(|p| (p.entry, p.occurrence)).collect()
    }

    #[test]
    fn occurrences_are_counted_per_stream() {
        let mut l = Learner::new(100);
        let (a, b) = (Stream::new(1, 0), Stream::new(2, 0));
        let (la, lb) = (l.lane_of(a), l.lane_of(b));
        assert_eq!((la, lb, l.lane_of(a)), (1, 2, 1));
        for _ in 0..2 {
            for lane in [la, lb, la] {
                let occ = l.next_occurrence(7, lane);
                l.observe((7, lane, occ), None, false);
            }
            l.next_iteration();
        }
        let keys: Vec<(u32, u32)> = l.plan().0.iter().map(|p| (p.lane, p.occurrence)).collect();
        assert_eq!(keys, vec![(1, 0), (2, 0), (1, 1)]);
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
    fn events_seen_only_in_the_first_iteration_ran_before_the_loop() {
        let mut l = Learner::new(100);
        // Probe 5 builds the model (with probe 6 inside it, twice), probe 0 runs once before
        // the loop and once in it: its second occurrence ran before the loop too.
        l.observe((5, 0, 0), None, false);
        l.observe((6, 0, 0), Some(((5, 0, 0), false)), false);
        l.time_first((6, 0, 0), (10, 20));
        l.time_first((6, 0, 0), (30, 40)); // the first run is kept
        l.observe((6, 0, 1), Some(((5, 0, 0), false)), false);
        l.observe((0, 0, 0), None, false);
        l.observe((0, 0, 1), None, false);
        l.observe((1, 0, 0), None, false);
        l.next_iteration();
        // One iteration: nothing tells the loop apart yet.
        assert_eq!(l.plan().1, []);
        run(&mut l, &[0, 1]);
        assert_eq!(plan(&l), vec![(0, 0), (1, 0)]);
        let before = l.plan().1;
        let keys: Vec<(usize, u32)> = before.iter().map(|b| (b.entry, b.occurrence)).collect();
        assert_eq!(keys, vec![(5, 0), (6, 0), (6, 1), (0, 1)]);
        let runs: Vec<_> = before.iter().map(|b| b.run).collect();
        assert_eq!(runs, vec![None, Some((10, 20)), None, None]);
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

    /// Recursion past the bound: occurrence 3 of a probe starts inside occurrence 2 and
    /// occurrence 4 inside 3, both folded into the merged event. Its parent is its first run's
    /// (occurrence 2); before, the last sighting's made it its own parent.
    #[test]
    fn a_merged_events_parent_is_that_of_its_first_run() {
        let mut l = Learner::new(3);
        let mut parent = None;
        for occ in 0..5 {
            let key = l.observe((0, 0, occ), parent, false);
            parent = Some((key, false));
        }
        l.next_iteration();
        let merged = l
            .plan()
            .0
            .into_iter()
            .find(|p| p.occurrence == MERGED)
            .expect("a merged event");
        assert_eq!(merged.parent, Some(((0, 0, 2), false)));
        // Inside another event before the loop, inside probe 1 in the loop: the loop's.
        let mut l = Learner::new(1);
        l.observe((5, 0, 0), None, false);
        let build = Some(((5, 0, 0), false));
        l.observe((0, 0, 0), build, false);
        l.observe((0, 0, 1), build, false);
        l.next_iteration();
        for _ in 0..2 {
            let outer = Some((l.observe((1, 0, 0), None, false), false));
            l.observe((0, 0, 0), outer, false);
            l.observe((0, 0, 1), outer, false);
            l.next_iteration();
        }
        let merged = l
            .plan()
            .0
            .into_iter()
            .find(|p| p.entry == 0 && p.occurrence == MERGED);
        assert_eq!(
            merged.map(|m| m.parent),
            Some(Some(((1, 0, MERGED), false)))
        );
    }
}
