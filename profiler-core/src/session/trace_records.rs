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
//! The records of the learning iterations go to the learner instead (`warmup_records.rs`).

use std::collections::BinaryHeap;
use std::sync::atomic::Ordering::Relaxed;

use super::measured::Pending;
use crate::instrument::device::NO_MARK;
use crate::measure::Measuring;
use crate::store::buffer::{runs, tag};
use crate::store::samples::{iteration_of, Tally};

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
}

impl Traced {
    /// Measured iterations begin after iteration `last_learned`.
    pub(crate) fn start_after(&mut self, last_learned: u32) {
        self.done_through = last_learned;
    }
}

impl Traced {
    /// After warmup: drains the buffers into the events (`marks`: where each iteration began,
    /// from `base`); the samples stored are queued in `pending`. `settle`: the iteration being
    /// gathered is over (`step()`, or the end of the run): its occurrences are settled, its
    /// samples stored and queued for resolution.
    pub(crate) fn fold(
        &mut self,
        m: &Measuring,
        marks: (&[u64], u32),
        pending: &mut Pending,
        settle: bool,
    ) {
        if !m.schedule.records {
            return;
        }
        let routes = m.schedule.routes.len();
        if self.probes.len() < routes {
            self.probes.resize_with(routes, ProbeRuns::default);
        }
        self.pass += 1;
        let recorded = m.schedule.cur_iter.load(Relaxed);
        m.buffers.drain(|_, records| {
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
                self.add(m, (p.tag & tag::ENTRY) as usize, it, run, pending);
            }
        });
        if settle {
            self.settle(m, pending);
            for (entry, it, run) in std::mem::take(&mut self.carry) {
                self.add(m, entry, it, run, pending);
            }
        }
        self.commit(m);
    }
}

impl Traced {
    /// One run read from the buffers, of probe `entry`, in iteration `it`.
    #[inline]
    fn add(&mut self, m: &Measuring, entry: usize, it: u32, run: Run, pending: &mut Pending) {
        // Only the measured iterations count (a run may start just past the last one).
        let measured = it.checked_sub(m.schedule.warmup);
        if measured.is_none_or(|k| k >= m.schedule.repeat) {
            return;
        }
        let pass = self.pass;
        let Some(probe) = self.probes.get_mut(entry) else {
            return;
        };
        if probe.pass != pass {
            let route = m.schedule.route(entry);
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
            merge(m, probe, it, spilled);
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
                store(m, probe.first_event + occurrence, it, run, pending);
            } else {
                merge(m, probe, it, run);
            }
        } else {
            merge(m, probe, it, run);
        }
    }

    /// The iteration being gathered is over: each probe's earliest runs become its events'
    /// samples, in start order.
    fn settle(&mut self, m: &Measuring, pending: &mut Pending) {
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
                store(m, probe.first_event + occurrence as u32, it, run, pending);
            }
        }
        self.done_through = it;
    }

    /// This pass's merged runs into their events' totals.
    fn commit(&mut self, m: &Measuring) {
        for entry in self.in_pass.drain(..) {
            let probe = &mut self.probes[entry];
            if let (Some(tally), Some(ev)) = (probe.tally.take(), m.schedule.event(probe.merged)) {
                ev.store.commit(tally);
            }
        }
    }
}

/// A run into its probe's merged event, if it has one.
#[inline]
fn merge(m: &Measuring, probe: &mut ProbeRuns, it: u32, run: Run) {
    if run.discard {
        return;
    }
    let Some(ev) = m.schedule.event(probe.merged) else {
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
        .tally_run(tally, it, (run.start, run.stop), m.linear);
}

/// A run's sample into its event's slot for iteration `it`, queued for resolution.
fn store(m: &Measuring, event: u32, it: u32, run: Run, pending: &mut Pending) {
    if run.discard {
        return;
    }
    let Some(ev) = m.schedule.event(event) else {
        return;
    };
    let slot = it - m.schedule.warmup;
    ev.store.record(
        slot,
        it,
        (run.start, run.stop),
        (NO_MARK, NO_MARK),
        m.linear,
        None,
    );
    pending.push((event, slot, it));
}
