//! `trace` mode's records, from the threads' buffers (`buffer.rs`) to the events: the cold half
//! of a recorded run.
//!
//! **Measured iterations.** A record is one run of a probe. Its iteration is the one its start
//! mark falls in, and within an iteration a probe's runs are its occurrences in the order they
//! started, across threads (as `sample` mode counts them). The records come in thread by
//! thread, each thread's in the order its runs ended, so the earliest `events` runs of each
//! probe (its events of their own) are kept in a bounded heap until the iteration is over;
//! every other run goes straight into the probe's merged event (exact totals, a reservoir).
//! Memory stays bounded by the events however many runs there are, and the buffers may be
//! drained at any time: at `step()`, at the end, or by a thread whose hand-over finds
//! [`FOLD_AT`] chunks waiting. A run still going when `step()` settles its iteration (a worker
//! thread's) counts after the runs of that iteration already settled.
//!
//! **Learning iterations.** Their records are kept until `step()`, then sorted by start and fed
//! to the learner as `sample` mode's warmup feeds it run by run: the occurrence per probe and
//! lane, and the parent. The parent of a run that nests is the next run its thread recorded one
//! level up (a thread records a run after the runs inside it); that of a run that may move (an
//! `async fn`) is the run open, one level up, on the thread where it started. With no warmup,
//! the first iteration's runs become the events' first samples.

use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::Ordering::Relaxed;

use super::{lock, Control, Session};
use crate::buffer::{runs, tag};
use crate::device::NO_MARK;
use crate::record::{iteration_of, Tally};
use crate::schedule::Key;

/// Full chunks waiting that make the thread handing one over drain them itself (after warmup):
/// 64 chunks, 65,536 records, 1 MiB.
pub(crate) const FOLD_AT: usize = 64;

/// A measured run on its way to an event. Ordered by start (ties, which only a coarse clock
/// makes, by stop, then discarded last), the order of occurrences.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Run {
    start: u64,
    stop: u64,
    discard: bool,
}

/// One probe's runs in the iteration being gathered.
#[derive(Debug, Default)]
struct ProbeRuns {
    /// Its earliest runs, at most `keep` (a max-heap on the start).
    first: BinaryHeap<Run>,
    /// Runs seen in the iteration being gathered.
    count: u32,
    /// Runs of the iteration settled last (for its runs that arrive late).
    settled: u32,
    /// The pass that read the fields below from the probe's route (0: none yet).
    pass: u64,
    /// How many events of its own the probe has, the first of them, its merged event.
    keep: u32,
    first_event: u32,
    merged: u32,
    /// The runs this pass added to its merged event.
    tally: Option<Tally>,
}

/// The cold state of `trace` mode's records.
#[derive(Debug, Default)]
pub(crate) struct Traced {
    /// By registry index.
    probes: Vec<ProbeRuns>,
    /// Probes with runs in the iteration being gathered.
    touched: Vec<usize>,
    /// Probes with runs in the iteration settled last.
    settled_touched: Vec<usize>,
    /// Probes seen in this pass (whose tallies to commit).
    in_pass: Vec<usize>,
    pass: u64,
    /// The last iteration whose occurrences are settled; the one after it is being gathered.
    done_through: u32,
    /// Runs of a later iteration than the one being gathered: (probe, iteration, run).
    carry: Vec<(usize, u32, Run)>,
    /// Learning runs that began after the step that drained them.
    learn_carry: Vec<LearnRun>,
}

impl Traced {
    /// Measured iterations begin after iteration `last_learned`.
    pub(crate) fn start_after(&mut self, last_learned: u32) {
        self.done_through = last_learned;
    }
}

impl Session {
    /// A thread handed a full chunk over and `held` wait: past [`FOLD_AT`] (and after warmup,
    /// whose records are kept whole until `step()`), it folds them into the events itself.
    #[cold]
    pub(crate) fn handed_over(&self, held: usize) {
        if held < FOLD_AT || self.schedule.learning.load(Relaxed) {
            return;
        }
        let mut c = lock(&self.control);
        if !(c.finished || c.written) {
            self.fold_records(&mut c, false);
        }
    }

    /// Whether a learning run records itself (`trace` mode on a linear clock, in warmup).
    #[inline]
    pub(crate) fn records_learning(&self) -> bool {
        self.schedule.records && self.schedule.learning.load(Relaxed)
    }

    /// After warmup: drains the buffers into the events. `settle`: the iteration being gathered
    /// is over (`step()`, or the end of the run): its occurrences are settled, its samples
    /// stored and queued for resolution.
    pub(super) fn fold_records(&self, c: &mut Control, settle: bool) {
        if !self.schedule.records {
            return;
        }
        let Control {
            traced,
            iter_marks,
            iter_base,
            pending,
            ..
        } = c;
        let marks = (&iter_marks[..], *iter_base);
        let routes = self.schedule.routes.len();
        if traced.probes.len() < routes {
            traced.probes.resize_with(routes, ProbeRuns::default);
        }
        traced.pass += 1;
        let recorded = self.schedule.cur_iter.load(Relaxed);
        self.buffers.drain(|_, records| {
            for p in runs(records) {
                if p.tag & tag::LEARN != 0 {
                    continue; // began during warmup, ended after it
                }
                let run = Run {
                    start: p.start,
                    stop: p.stop,
                    discard: p.tag & tag::DISCARD != 0,
                };
                let it = iteration_of(marks, p.start, recorded);
                traced.add(self, (p.tag & tag::ENTRY) as usize, it, run, pending);
            }
        });
        if settle {
            traced.settle(self, pending);
            for (entry, it, run) in std::mem::take(&mut traced.carry) {
                traced.add(self, entry, it, run, pending);
            }
        }
        traced.commit(self);
    }
}

impl Traced {
    /// One run read from the buffers, of probe `entry`, in iteration `it`.
    #[inline]
    fn add(&mut self, s: &Session, entry: usize, it: u32, run: Run, pending: &mut Pending) {
        // Only the measured iterations count (a run may start just past the last one).
        let measured = it.checked_sub(s.schedule.warmup);
        if measured.is_none_or(|k| k >= s.schedule.repeat) {
            return;
        }
        let pass = self.pass;
        let Some(probe) = self.probes.get_mut(entry) else {
            return;
        };
        if probe.pass != pass {
            let route = s.schedule.route(entry);
            probe.pass = pass;
            probe.keep = route.events.load(Relaxed);
            probe.first_event = route.first_event.load(Relaxed);
            probe.merged = route.merged_event.load(Relaxed);
            self.in_pass.push(entry);
        }
        let gathering = self.done_through + 1;
        if it == gathering {
            if probe.count == 0 {
                self.touched.push(entry);
            }
            probe.count += 1;
            if probe.first.len() < probe.keep as usize {
                probe.first.push(run);
                return;
            }
            let spilled = match probe.first.peek_mut() {
                Some(mut latest) if run < *latest => std::mem::replace(&mut *latest, run),
                _ => run,
            };
            merge(s, probe, it, spilled);
        } else if it > gathering {
            self.carry.push((entry, it, run));
        } else if it == self.done_through {
            // Still going when its iteration was settled: it counts after that iteration's runs.
            if probe.settled == 0 {
                self.settled_touched.push(entry);
            }
            let occurrence = probe.settled;
            probe.settled += 1;
            if occurrence < probe.keep {
                store(s, probe.first_event + occurrence, it, run, pending);
            } else {
                merge(s, probe, it, run);
            }
        } else {
            merge(s, probe, it, run);
        }
    }

    /// The iteration being gathered is over: each probe's earliest runs become its events'
    /// samples, in start order.
    fn settle(&mut self, s: &Session, pending: &mut Pending) {
        let it = self.done_through + 1;
        for entry in self.settled_touched.drain(..) {
            self.probes[entry].settled = 0;
        }
        let mut order = Vec::new();
        for entry in std::mem::take(&mut self.touched) {
            let probe = &mut self.probes[entry];
            order.clear();
            order.extend(probe.first.drain());
            order.sort_unstable();
            probe.settled = std::mem::take(&mut probe.count);
            self.settled_touched.push(entry);
            for (occurrence, &run) in order.iter().enumerate() {
                store(s, probe.first_event + occurrence as u32, it, run, pending);
            }
        }
        self.done_through = it;
    }

    /// This pass's merged runs into their events' totals.
    fn commit(&mut self, s: &Session) {
        for entry in self.in_pass.drain(..) {
            let probe = &mut self.probes[entry];
            if let (Some(tally), Some(ev)) = (probe.tally.take(), s.schedule.event(probe.merged)) {
                ev.store.commit(tally);
            }
        }
    }
}

/// A run into its probe's merged event, if it has one.
#[inline]
fn merge(s: &Session, probe: &mut ProbeRuns, it: u32, run: Run) {
    if run.discard {
        return;
    }
    let Some(ev) = s.schedule.event(probe.merged) else {
        return; // no merged event (NONE)
    };
    let tally = match &mut probe.tally {
        Some(tally) => tally,
        none => match ev.store.tally() {
            Some(tally) => none.insert(tally),
            None => return,
        },
    };
    ev.store
        .tally_run(tally, it, (run.start, run.stop), s.linear);
}

/// Slots stored and not resolved yet: (event, slot, iteration).
type Pending = Vec<(u32, u32, u32)>;

/// A run's sample into its event's slot for iteration `it`, queued for resolution.
fn store(s: &Session, event: u32, it: u32, run: Run, pending: &mut Pending) {
    if run.discard {
        return;
    }
    let Some(ev) = s.schedule.event(event) else {
        return;
    };
    let slot = it - s.schedule.warmup;
    ev.store.record(
        slot,
        it,
        (run.start, run.stop),
        (NO_MARK, NO_MARK),
        s.linear,
        None,
    );
    pending.push((event, slot, it));
}

// ---- learning iterations ----

/// A run of a learning iteration, as recorded.
#[derive(Clone, Copy, Debug)]
struct LearnRun {
    start: u64,
    stop: u64,
    entry: u32,
    lane: u32,
    /// The log of the thread that recorded it.
    log: u32,
    /// Its nesting depth (for a run that may move: the depth where it started).
    depth: u32,
    /// Where a run that may move started ([`tag::origin`]); 0 for a run that nests.
    origin: u32,
    is_async: bool,
    discard: bool,
    /// The index of the run that contained it.
    parent: Option<u32>,
}

impl Session {
    /// A learning iteration of `trace` mode ends (`now`: the mark that ended it; `None` at the
    /// end of the run): its runs, in start order, are fed to the learner, and with no warmup
    /// kept as the first iteration's samples.
    pub(super) fn fold_learning(&self, c: &mut Control, now: Option<u64>) {
        if !self.schedule.records {
            return;
        }
        let mut runs = self.drain_learning(&mut c.traced, now);
        find_async_parents(&mut runs);
        let mut order: Vec<u32> = (0..runs.len() as u32).collect();
        order.sort_unstable_by_key(|&i| {
            let r = &runs[i as usize];
            (r.start, r.depth, r.log, i)
        });
        let keys = self.observe(&runs, &order);
        if self.schedule.measure_first {
            let mut learner = lock(&self.schedule.learner);
            for &i in &order {
                let r = &runs[i as usize];
                // Runs on a stream in the first iteration are learned, not timed.
                if let (false, 0, Some(key)) = (r.discard, r.lane, keys[i as usize]) {
                    learner.first_runs.push((key, r.start, r.stop));
                }
            }
        }
    }

    /// The learning runs in the buffers, with the parents of those that nest.
    fn drain_learning(&self, traced: &mut Traced, now: Option<u64>) -> Vec<LearnRun> {
        // Carried runs began after the last learning step: their parents are not known.
        let mut learned = std::mem::take(&mut traced.learn_carry);
        let carried = &mut traced.learn_carry;
        // Per depth, this log's runs waiting for the run one level up.
        let mut waiting: Vec<Vec<u32>> = vec![Vec::new(); tag::MAX_DEPTH as usize + 2];
        let mut current_log = None;
        self.buffers.drain(|log, records| {
            if current_log != Some(log) {
                current_log = Some(log);
                waiting.iter_mut().for_each(Vec::clear);
            }
            for p in runs(records) {
                if p.tag & tag::LEARN == 0 {
                    continue;
                }
                let run = LearnRun {
                    start: p.start,
                    stop: p.stop,
                    entry: p.tag & tag::ENTRY,
                    lane: p.lane,
                    log,
                    depth: tag::depth(p.tag),
                    origin: p.origin,
                    is_async: p.tag & tag::ASYNC != 0,
                    discard: p.tag & tag::DISCARD != 0,
                    parent: None,
                };
                if now.is_some_and(|now| run.start >= now) {
                    carried.push(run);
                    continue;
                }
                let index = learned.len() as u32;
                if !run.is_async {
                    let depth = run.depth as usize;
                    for child in waiting[depth + 1].drain(..) {
                        learned[child as usize].parent = Some(index);
                    }
                    waiting[depth].push(index);
                }
                learned.push(run);
            }
        });
        learned
    }

    /// Learning is over: runs carried for a next learning iteration will not be learned.
    pub(super) fn end_learning_records(&self, c: &mut Control) {
        c.traced.learn_carry = Vec::new();
    }

    /// Feeds the learner the runs in `order`: returns each run's event key.
    fn observe(&self, runs: &[LearnRun], order: &[u32]) -> Vec<Option<Key>> {
        let mut keys: Vec<Option<Key>> = vec![None; runs.len()];
        let mut plain: Vec<u32> = vec![0; self.schedule.routes.len()];
        let mut on_lanes: HashMap<(u32, u32), u32> = HashMap::new();
        let mut learner = lock(&self.schedule.learner);
        for &i in order {
            let r = &runs[i as usize];
            let entry = r.entry as usize;
            let count = match r.lane {
                0 => plain.get_mut(entry),
                lane => Some(on_lanes.entry((r.entry, lane)).or_insert(0)),
            };
            let Some(count) = count else { continue };
            let occurrence = *count;
            *count += 1;
            let parent = r.parent.and_then(|p| keys[p as usize]);
            keys[i as usize] = Some(learner.observe(entry, r.lane, occurrence, parent));
        }
        keys
    }
}

/// The parent of each run that may move: the run open one level up on the thread where it
/// started, when it started (the latest to start at or before it, among those still open).
fn find_async_parents(runs: &mut [LearnRun]) {
    if !runs.iter().any(|r| r.is_async && r.origin != 0) {
        return;
    }
    let mut by_place: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
    for (i, r) in runs.iter().enumerate() {
        if !r.is_async {
            by_place.entry((r.log, r.depth)).or_default().push(i as u32);
        }
    }
    for list in by_place.values_mut() {
        list.sort_unstable_by_key(|&i| runs[i as usize].start);
    }
    for i in 0..runs.len() {
        let r = runs[i];
        let Some((log, depth)) = tag::from_origin(r.origin).filter(|_| r.is_async) else {
            continue;
        };
        let Some(list) = depth.checked_sub(1).and_then(|up| by_place.get(&(log, up))) else {
            continue;
        };
        let before = list.partition_point(|&j| runs[j as usize].start <= r.start);
        runs[i].parent = list[..before]
            .iter()
            .rev()
            .find(|&&j| runs[j as usize].stop >= r.start)
            .copied();
    }
}
