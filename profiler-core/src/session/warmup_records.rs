//! The records of `trace` mode's learning iterations, to the learner: the cold half of a
//! learning run.
//!
//! The records of a learning iteration are kept until its `step()`, then fed to the learner in
//! start order, as `sample` mode's warmup feeds it run by run: the occurrence per probe and
//! lane, and the parent. A thread records a run after the runs inside it (its nesting depth is
//! in the record), so the parent of a run that nests is the next run its thread recorded one
//! level up, and the thread's runs in start order are the same tree read parent first: both come
//! out of one pass over each thread's records, and the threads' sequences are merged by start
//! mark. So the cost is linear in the runs (times the log of the number of threads), with no
//! sort. The parent of a run that may move (an `async fn`) is the run open one level up on the
//! thread where it started. With no warmup, the first iteration's runs become the events' first
//! samples.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::measure::Measuring;
use crate::schedule::{FirstRun, Plan, MERGED};
use crate::store::buffer::{runs, tag};
use crate::sync::lock;

/// No run (an index that means none).
const NO_RUN: u32 = u32::MAX;

/// The occurrence of a run the learner was not told of (its probe's index is past the table).
const NOT_LEARNED: u32 = MERGED - 1;

/// What `trace` mode's learning keeps between steps.
#[derive(Debug, Default)]
pub(crate) struct WarmupRecords {
    /// Learning runs that began after the step that drained them.
    carry: Vec<LearnRun>,
    /// The first iteration's runs, until the events they become samples of are planned.
    first: Option<First>,
}

/// A run of a learning iteration, as recorded: 32 bytes (what an `async fn`'s run adds is kept
/// aside, in [`Learned::origins`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LearnRun {
    start: u64,
    stop: u64,
    /// The record's tag: the probe, the nesting depth (for a run that may move: the depth
    /// where it started), `ASYNC`, `DISCARD`.
    tag: u32,
    lane: u32,
    /// The log of the thread that recorded it.
    log: u32,
    /// The index of the run that contained it, or `NO_RUN`.
    parent: u32,
}

/// Per run, whether its parent ran on another thread (set by [`find_cross_thread_parents`]).
type Across = Vec<bool>;

const _: () = assert!(std::mem::size_of::<LearnRun>() == 32);

impl LearnRun {
    fn entry(&self) -> u32 {
        self.tag & tag::ENTRY
    }

    fn depth(&self) -> u8 {
        tag::depth(self.tag) as u8
    }

    fn is_async(&self) -> bool {
        self.tag & tag::ASYNC != 0
    }

    fn discard(&self) -> bool {
        self.tag & tag::DISCARD != 0
    }

    /// The order of runs: by start; at one start mark, outer runs first, then by thread.
    fn key(&self, index: u32) -> (u64, u8, u32, u32) {
        (self.start, self.depth(), self.log, index)
    }
}

/// The first iteration's runs (`trace` mode without warmup), kept from the step that learned
/// them until the events are planned, in the same step.
#[derive(Debug, Default)]
pub(crate) struct First {
    runs: Vec<LearnRun>,
    order: Vec<u32>,
    occurrences: Vec<u32>,
}

/// The runs of one learning iteration and the order to feed them in.
#[derive(Default)]
struct Learned {
    runs: Vec<LearnRun>,
    /// Per run, the next in its thread's start order (`NO_RUN`: the last).
    next: Vec<u32>,
    /// The first run of each thread's start order.
    heads: Vec<u32>,
    /// Runs whose place no thread order gives: those that may move, those whose parent was not
    /// recorded, those carried from the last step.
    loose: Vec<u32>,
    /// Where the runs that may move started: (run, [`tag::origin`]).
    origins: Vec<(u32, u32)>,
}

impl WarmupRecords {
    /// A learning iteration of `trace` mode ends (`now`: the mark that ended it; `None` at the
    /// end of the run): its runs, in start order, are fed to the learner, and with no warmup
    /// kept as the first iteration's samples.
    pub(crate) fn fold(&mut self, m: &Measuring, now: Option<u64>) {
        if !m.schedule.records {
            return;
        }
        let mut learned = self.drain(m, now);
        find_async_parents(&mut learned.runs, &learned.origins);
        // At a step, the stepping thread is this one: runs with no parent on other threads
        // are inside its run open when they started, if any.
        let stepping_log = now.and_then(|_| m.buffers.log_index());
        let across = match stepping_log {
            Some(log) => find_cross_thread_parents(&mut learned.runs, log),
            None => Vec::new(),
        };
        let order = learned.start_order();
        learned.next = Vec::new();
        let occurrences = observe(m, &learned.runs, &order, (&across, stepping_log));
        if m.schedule.measure_first {
            self.first = Some(First {
                runs: learned.runs,
                order,
                occurrences,
            });
        }
    }

    /// `trace` mode without warmup, once the events are planned: the first iteration's runs
    /// become their first samples. Returns the slots to resolve.
    pub(crate) fn take_first(&mut self, m: &Measuring, plan: &mut Plan) -> Vec<(u32, u32, u32)> {
        let first = self.first.take().unwrap_or_default();
        let runs = (first.order.iter()).filter_map(|&i| {
            let r = &first.runs[i as usize];
            let occurrence = first.occurrences[i as usize];
            // Runs on a stream in the first iteration are learned, not timed.
            (!r.discard() && r.lane == 0 && occurrence != NOT_LEARNED).then_some(FirstRun {
                entry: r.entry(),
                occurrence,
                start: r.start,
                stop: r.stop,
            })
        });
        m.schedule.absorb_first_runs(plan, m.linear, runs)
    }

    /// Learning is over: runs carried for a next learning iteration will not be learned.
    pub(crate) fn end(&mut self) {
        self.carry = Vec::new();
    }

    /// The learning runs in the buffers, each thread's linked in start order with their parents.
    fn drain(&mut self, m: &Measuring, now: Option<u64>) -> Learned {
        let mut l = Learned::default();
        // Carried runs began after the last learning step: their parents are not known.
        for run in std::mem::take(&mut self.carry) {
            l.loose.push(l.runs.len() as u32);
            l.runs.push(run);
            l.next.push(NO_RUN);
        }
        let carried = &mut self.carry;
        // Per depth, this thread's subtrees (first and last run in start order) waiting for
        // the run one level up.
        let mut waiting: Vec<Vec<(u32, u32)>> = vec![Vec::new(); tag::MAX_DEPTH as usize + 2];
        let mut current = None;
        m.buffers.drain(|log, records| {
            if current != Some(log) {
                current = Some(log);
                l.end_thread(&mut waiting);
            }
            for p in runs(records) {
                if p.tag & tag::LEARN == 0 {
                    continue;
                }
                let run = LearnRun {
                    start: p.start,
                    stop: p.stop,
                    tag: p.tag,
                    lane: p.lane,
                    log,
                    parent: NO_RUN,
                };
                // At the very mark of the step, a run recorded by now ran before it.
                if now.is_some_and(|now| run.start > now) {
                    carried.push(run);
                } else {
                    if p.origin != 0 {
                        l.origins.push((l.runs.len() as u32, p.origin));
                    }
                    l.add(run, &mut waiting);
                }
            }
        });
        l.end_thread(&mut waiting);
        l
    }
}

impl Learned {
    /// One run, in its thread's recording order: it is the parent of the subtrees waiting one
    /// level below it, which follow it in start order.
    fn add(&mut self, run: LearnRun, waiting: &mut [Vec<(u32, u32)>]) {
        let index = self.runs.len() as u32;
        self.runs.push(run);
        self.next.push(NO_RUN);
        if run.is_async() {
            self.loose.push(index);
            return;
        }
        let depth = run.depth() as usize;
        let mut last = index;
        for (first, end) in waiting[depth + 1].drain(..) {
            self.runs[first as usize].parent = index;
            self.next[last as usize] = first;
            last = end;
        }
        waiting[depth].push((index, last));
    }

    /// A thread's runs are all read: its top-level subtrees, in order, are its start order;
    /// deeper ones (whose parent was still going, or deeper than a record tells) are loose.
    fn end_thread(&mut self, waiting: &mut [Vec<(u32, u32)>]) {
        let mut head = NO_RUN;
        let mut last = NO_RUN;
        for (first, end) in waiting[0].drain(..) {
            if head == NO_RUN {
                head = first;
            } else {
                self.next[last as usize] = first;
            }
            last = end;
        }
        if head != NO_RUN {
            self.heads.push(head);
        }
        for level in waiting[1..].iter_mut() {
            for (first, _) in level.drain(..) {
                let mut at = first;
                while at != NO_RUN {
                    self.loose.push(at);
                    at = std::mem::replace(&mut self.next[at as usize], NO_RUN);
                }
            }
        }
    }

    /// Every run's index in start order: the threads' sequences and the loose runs (sorted),
    /// merged by start mark.
    fn start_order(&mut self) -> Vec<u32> {
        let runs = &self.runs;
        let mut loose = std::mem::take(&mut self.loose);
        loose.sort_unstable_by_key(|&i| runs[i as usize].key(i));
        // A thread's own order stands (at one start mark too); a clock that went back on one
        // thread would break it: its runs become loose.
        let mut heads = Vec::new();
        for &head in &self.heads {
            let (mut at, mut sorted) = (head, true);
            while self.next[at as usize] != NO_RUN {
                let next = self.next[at as usize];
                sorted &= runs[at as usize].start <= runs[next as usize].start;
                at = next;
            }
            if sorted {
                heads.push(head);
            } else {
                let mut at = head;
                while at != NO_RUN {
                    loose.push(at);
                    at = self.next[at as usize];
                }
                loose.sort_unstable_by_key(|&i| runs[i as usize].key(i));
            }
        }
        // The loose runs as one more sequence.
        for pair in loose.windows(2) {
            self.next[pair[0] as usize] = pair[1];
        }
        if let Some(&last) = loose.last() {
            self.next[last as usize] = NO_RUN;
            heads.push(loose[0]);
        }
        let mut order = Vec::with_capacity(runs.len());
        let mut heap: BinaryHeap<Reverse<(u64, u8, u32, u32)>> = heads
            .iter()
            .map(|&h| Reverse(runs[h as usize].key(h)))
            .collect();
        while let Some(Reverse(key)) = heap.pop() {
            let at = key.3;
            order.push(at);
            let next = self.next[at as usize];
            if next != NO_RUN {
                heap.push(Reverse(runs[next as usize].key(next)));
            }
        }
        order
    }
}

/// Feeds the learner the runs in `order`: returns each run's occurrence (`MERGED` for one
/// that folds into its probe's merged event; `NOT_LEARNED` for one not learned). Once a probe's
/// runs fold into its merged event, they all do for the rest of the iteration (the bound
/// never loosens within one), so only the last of them is reported: it places the merged
/// event and names its parent, as it would have, run by run.
/// `across`: per run, whether its parent is on another thread; `stepping_log`: the log of
/// the thread that calls `step()`, if known.
fn observe(
    m: &Measuring,
    runs: &[LearnRun],
    order: &[u32],
    (across, stepping_log): (&Across, Option<u32>),
) -> Vec<u32> {
    let mut keys: Vec<u32> = vec![NOT_LEARNED; runs.len()];
    let mut plain: Vec<Occurrences> = Vec::new();
    plain.resize_with(m.schedule.routes.len(), Occurrences::default);
    let mut on_lanes: HashMap<(u32, u32), Occurrences> = HashMap::new();
    for (at, &i) in order.iter().enumerate() {
        if let Some(o) = occurrences(&mut plain, &mut on_lanes, &runs[i as usize]) {
            o.last = at as u32;
        }
    }
    let mut learner = lock(&m.schedule.learner);
    // The first iteration's runs time the events that may have run only before the loop.
    let first = learner.iteration() == 0;
    for (at, &i) in order.iter().enumerate() {
        let r = &runs[i as usize];
        let Some(o) = occurrences(&mut plain, &mut on_lanes, r) else {
            continue;
        };
        let occurrence = o.count;
        o.count += 1;
        if o.merged && o.last != at as u32 {
            keys[i as usize] = MERGED;
            continue;
        }
        let parent = runs.get(r.parent as usize).and_then(|p| {
            let occurrence = keys[r.parent as usize];
            let cross = across.get(i as usize).copied().unwrap_or(false);
            (occurrence != NOT_LEARNED).then_some(((p.entry() as usize, p.lane, occurrence), cross))
        });
        let off_thread = stepping_log.is_some_and(|log| r.log != log);
        let key = learner.observe((r.entry() as usize, r.lane, occurrence), parent, off_thread);
        if first && r.lane == 0 && !r.discard() {
            learner.time_first(key, (r.start, r.stop));
        }
        o.merged = key.2 == MERGED;
        keys[i as usize] = key.2;
    }
    keys
}

/// The occurrences of `r`'s probe on its lane.
fn occurrences<'a>(
    plain: &'a mut [Occurrences],
    on_lanes: &'a mut HashMap<(u32, u32), Occurrences>,
    r: &LearnRun,
) -> Option<&'a mut Occurrences> {
    match r.lane {
        0 => plain.get_mut(r.entry() as usize),
        lane => Some(on_lanes.entry((r.entry(), lane)).or_default()),
    }
}

/// A probe's runs on one lane in a learning iteration, as they are fed to the learner.
#[derive(Debug, Default)]
struct Occurrences {
    count: u32,
    /// Where its last run is in start order.
    last: u32,
    /// Its runs fold into its merged event from here on.
    merged: bool,
}

/// The parent of each run that may move: the run open one level up on the thread where it
/// started, when it started (the latest to start at or before it, among those still open).
fn find_async_parents(runs: &mut [LearnRun], origins: &[(u32, u32)]) {
    if origins.is_empty() {
        return;
    }
    let mut by_place: HashMap<(u32, u8), Vec<u32>> = HashMap::new();
    for (i, r) in runs.iter().enumerate() {
        if !r.is_async() {
            by_place
                .entry((r.log, r.depth()))
                .or_default()
                .push(i as u32);
        }
    }
    for list in by_place.values_mut() {
        list.sort_unstable_by_key(|&i| runs[i as usize].start);
    }
    for &(i, origin) in origins {
        let r = runs[i as usize];
        let Some((log, depth)) = tag::from_origin(origin).filter(|_| r.is_async()) else {
            continue;
        };
        let Some(list) = (depth.checked_sub(1)).and_then(|up| by_place.get(&(log, up as u8)))
        else {
            continue;
        };
        let before = list.partition_point(|&j| runs[j as usize].start <= r.start);
        runs[i as usize].parent = list[..before]
            .iter()
            .rev()
            .find(|&&j| runs[j as usize].stop >= r.start)
            .copied()
            .unwrap_or(NO_RUN);
    }
}

/// The parent of each run that started with none open on its own thread, on a thread other than
/// the stepping one (`stepping_log`): the innermost run of the stepping thread open when it
/// started (work handed to a worker inside a layer). Returns, per run, whether its parent was
/// found so, across threads.
fn find_cross_thread_parents(runs: &mut [LearnRun], stepping_log: u32) -> Across {
    let mut across = vec![false; runs.len()];
    // The stepping thread's runs by depth, in start order.
    let mut by_depth: Vec<Vec<u32>> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        if r.log == stepping_log && !r.is_async() {
            let d = r.depth() as usize;
            if by_depth.len() <= d {
                by_depth.resize_with(d + 1, Vec::new);
            }
            by_depth[d].push(i as u32);
        }
    }
    if by_depth.is_empty() {
        return across;
    }
    for list in &mut by_depth {
        list.sort_unstable_by_key(|&i| runs[i as usize].start);
    }
    for i in 0..runs.len() {
        let r = runs[i];
        if r.log == stepping_log || r.parent != NO_RUN || r.depth() != 0 || r.is_async() {
            continue;
        }
        // The deepest run of the stepping thread that contains this one's start.
        let found = by_depth.iter().rev().find_map(|list| {
            let before = list.partition_point(|&j| runs[j as usize].start <= r.start);
            list[..before]
                .last()
                .copied()
                .filter(|&j| runs[j as usize].stop >= r.start)
        });
        if let Some(j) = found {
            runs[i].parent = j;
            across[i] = true;
        }
    }
    across
}
