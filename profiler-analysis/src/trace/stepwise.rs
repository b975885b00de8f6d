//! The drawing of a `trace`-mode profile made one iteration at a time, for the Perfetto trace:
//! the slices `layout.rs` makes, with the same times, parents, depths and lanes, handed over in
//! the same order, but only those that start before the next step once its iteration is made.
//! So what is held is the iteration being drawn (and the samples of earlier ones drawn past
//! their step), not the whole trace: ten million samples in a thousand iterations are drawn
//! ten thousand slices at a time.
//!
//! It applies to profiles whose slices are all on the CPU track, without memory figures or the
//! devices' memory ([`applies`]); the others are drawn whole (they are small: GPU runs and runs
//! whose memory is counted are not recorded in `trace` mode's bulk path).
//!
//! Why it is the same drawing: a sample of iteration `k` starts at its step's start plus its
//! offset, so no slice of a later iteration starts before the next step's start; the slices of
//! the iterations made so far that start before it are therefore all the slices that do, and
//! sorted by `layout.rs`'s key (start, longest first, depth, index when made, each index the
//! one `layout.rs` gives) they come in its order, and take the lanes its sweep gives them
//! ([`Lanes`], shared). Parents are found as `layout.rs` finds them, among the same
//! iteration's samples; an incomplete step ends with its last child, and its `other` stretches
//! are computed from its children as `other.rs` does.

use std::cmp::Reverse;
use std::collections::HashMap;

use profiler_format::Profile;

use super::layout::{by_order, drawn_samples, measured_iterations, parents, Lanes, Timeline, NONE};
use super::other::{gaps_between, Gap};
use super::{gpu_key, TraceError};

/// Whether [`Stepwise`] draws `profile`: `trace` mode, every event on the CPU, no memory
/// figures and no devices' memory.
pub(super) fn applies(profile: &Profile) -> bool {
    profile.run.mode == "trace"
        && profile.iterations.device_memory.is_empty()
        && profile
            .events
            .iter()
            .all(|e| gpu_key(e).is_none() && e.memory.is_none())
}

/// What a slice shows.
#[derive(Clone, Copy, Debug)]
pub(super) enum Shows {
    /// The step of `iteration`, with its measured wall time.
    Step {
        iteration: u64,
        wall_ns: Option<u64>,
    },
    /// A sample of `event`.
    Sample { event: usize },
}

/// A slice, in nanoseconds from time 0, on the CPU track.
#[derive(Clone, Copy, Debug)]
pub(super) struct Item {
    pub(super) start: u64,
    pub(super) end: u64,
    /// Its index in `layout.rs`'s making (the last key of the order).
    made: u32,
    /// The `made` of its parent, or [`NONE`].
    parent: u32,
    depth: u32,
    /// The iteration it belongs to.
    iteration: u64,
    /// Its lane, once placed.
    pub(super) lane: u32,
    pub(super) shows: Shows,
}

/// How many steps' samples are read at a time ([`Stepwise::fill_block`]).
const BLOCK: usize = 16;

/// A sample read for a step of the block: its event's place in execution order (`idx`), its
/// index in the event's arrays, its offset and duration.
#[derive(Clone, Copy)]
struct Read {
    n: u32,
    j: u32,
    offset_ns: u64,
    dur_ns: u64,
}

/// An event's samples: iteration, offset and duration of each.
struct EventSamples<'a> {
    iters: &'a [u32],
    offsets: &'a [u64],
    durations: &'a [u64],
}

/// Where each event's samples are read, iteration by iteration.
struct Cursor {
    /// The sample indices in iteration order, when they are not in order already.
    order: Option<Vec<u32>>,
    next: usize,
}

/// The drawing, made one iteration at a time.
pub(super) struct Stepwise<'a> {
    /// Per event: its samples' iterations, offsets and durations (as far as they are all
    /// given), and whether it ran on another thread. Kept beside one another: an event is
    /// hundreds of bytes, and reading these through ten thousand of them, each iteration, is
    /// a cache miss each.
    samples: Vec<EventSamples<'a>>,
    concurrent: Vec<bool>,
    timeline: Timeline,
    wall: Box<dyn Fn(u64) -> Option<u64> + 'a>,
    /// The iterations drawn as steps, and the next one to make.
    iterations: Vec<u64>,
    next: usize,
    /// The events in execution order, each one's parent event, whether it is one.
    idx: Vec<usize>,
    parents: Vec<Option<usize>>,
    is_parent: Vec<bool>,
    /// Per event: the `made` of its sample 0.
    first_made: Vec<u32>,
    cursors: Vec<Cursor>,
    /// The samples of the steps from `block_start` on, read ahead ([`Self::fill_block`]),
    /// each step's in execution order.
    block: Vec<Vec<Read>>,
    block_start: usize,
    time_zero: u64,
    /// Slices made and not handed over yet (they start at or after the next step).
    pending: Vec<Item>,
    lanes: Lanes,
    /// The lanes of the slices that may be parents (steps, samples of parent events): `made`
    /// to (lane, iteration).
    lane_of: HashMap<u32, (u32, u64)>,
}

impl<'a> Stepwise<'a> {
    /// The drawing of `profile` (for which [`applies`] holds).
    pub(super) fn new(profile: &'a Profile) -> Result<Self, TraceError> {
        let events = &profile.events;
        let iterations = measured_iterations(profile);
        let samples: usize = events.iter().map(drawn_samples).sum();
        let total = samples.saturating_add(iterations.len());
        if total >= NONE as usize || events.len() >= NONE as usize {
            return Err(TraceError::TooLarge(total));
        }
        let (idx, of_order) = by_order(events);
        let (parents, is_parent) = parents(events, &of_order);
        let mut first_made = vec![0; events.len()];
        let mut made = iterations.len() as u32;
        for &i in &idx {
            first_made[i] = made;
            made += drawn_samples(&events[i]) as u32;
        }
        let cursors = events
            .iter()
            .map(|e| {
                let iters = &e.sample_iters[..drawn_samples(e)];
                let sorted = iters.windows(2).all(|w| w[0] <= w[1]);
                let order = (!sorted).then(|| {
                    let mut order: Vec<u32> = (0..iters.len() as u32).collect();
                    order.sort_by_key(|&j| (iters[j as usize], j));
                    order
                });
                Cursor { order, next: 0 }
            })
            .collect();
        let timeline = Timeline::of(&profile.iterations);
        let time_zero = iterations.first().map_or(0, |&k| timeline.start(k));
        Ok(Stepwise {
            samples: events
                .iter()
                .map(|e| {
                    let n = drawn_samples(e);
                    EventSamples {
                        iters: &e.sample_iters[..n],
                        offsets: &e.offsets_ns[..n],
                        durations: &e.samples_ns[..n],
                    }
                })
                .collect(),
            concurrent: events.iter().map(|e| e.concurrent).collect(),
            timeline,
            wall: Box::new(|k| profile.iterations.wall_of(k)),
            iterations,
            next: 0,
            idx,
            parents,
            is_parent,
            first_made,
            cursors,
            block: Vec::new(),
            block_start: 0,
            time_zero,
            pending: Vec::new(),
            lanes: Lanes::default(),
            lane_of: HashMap::new(),
        })
    }

    /// The next slices in drawing order, with their lanes, into `ready`, and the `other`
    /// stretches of the steps made for them into `gaps` (both emptied first); false once every
    /// slice was handed over. (The buffers are the caller's, so that they are reused: a
    /// window of ten thousand slices allocated anew each time costs the kernel more than the
    /// drawing.)
    pub(super) fn next_window(&mut self, ready: &mut Vec<Item>, gaps: &mut Vec<Gap>) -> bool {
        ready.clear();
        gaps.clear();
        if self.next > self.iterations.len() {
            return false;
        }
        let boundary = if self.next < self.iterations.len() {
            gaps.extend(self.make(self.next));
            self.next += 1;
            match self.iterations.get(self.next) {
                Some(&k) => self.timeline.start(k) - self.time_zero,
                None => u64::MAX,
            }
        } else {
            u64::MAX
        };
        if boundary == u64::MAX {
            self.next = self.iterations.len() + 1;
        }
        self.pending.retain(|s| {
            let due = s.start < boundary || boundary == u64::MAX;
            if due {
                ready.push(*s);
            }
            !due
        });
        ready.sort_unstable_by_key(|s| (s.start, Reverse(s.end), s.depth, s.made));
        for s in ready.iter_mut() {
            let preferred = (s.parent != NONE)
                .then(|| self.lane_of.get(&s.parent).map(|&(l, _)| l as usize))
                .flatten();
            let beside = match s.shows {
                Shows::Sample { event } => self.concurrent[event],
                Shows::Step { .. } => false,
            };
            s.lane = self.lanes.place(s.start, s.end, preferred, beside) as u32;
            let may_parent = match s.shows {
                Shows::Sample { event } => self.is_parent[event],
                Shows::Step { .. } => true,
            };
            if may_parent {
                self.lane_of.insert(s.made, (s.lane, s.iteration));
            }
        }
        // A parent is its child's iteration's: none of an iteration before every slice still
        // pending and the next one to make is needed again.
        let oldest = (self.pending.iter().map(|s| s.iteration))
            .chain(self.iterations.get(self.next).copied())
            .min();
        match oldest {
            Some(oldest) => self.lane_of.retain(|_, &mut (_, k)| k >= oldest),
            None => self.lane_of.clear(),
        }
        true
    }

    /// Reads the samples of the [`BLOCK`] steps from `t` on into [`block`](Self::block), each
    /// step's in execution order: each event's samples of those iterations are consecutive in
    /// its arrays, so they are read in one go, a few cache lines each, rather than one value
    /// of each of ten thousand events' arrays per iteration (a cache miss each).
    fn fill_block(&mut self, t: usize) {
        let end = (t + BLOCK).min(self.iterations.len());
        let steps = &self.iterations[t..end];
        let last = steps.last().copied().unwrap_or(0);
        self.block.resize_with(steps.len(), Vec::new);
        self.block.truncate(steps.len());
        self.block_start = t;
        for (n, &i) in self.idx.iter().enumerate() {
            let e = &self.samples[i];
            let count = e.iters.len();
            let cursor = &mut self.cursors[i];
            while cursor.next < count {
                let j = match &cursor.order {
                    Some(order) => order[cursor.next] as usize,
                    None => cursor.next,
                };
                let it = u64::from(e.iters[j]);
                if it > last {
                    break;
                }
                cursor.next += 1;
                // A sample of an iteration not drawn is not (as `layout.rs` finds none).
                if let Ok(slot) = steps.binary_search(&it) {
                    self.block[slot].push(Read {
                        n: n as u32,
                        j: j as u32,
                        offset_ns: e.offsets[j],
                        dur_ns: e.durations[j],
                    });
                }
            }
        }
    }

    /// Makes the slices of step `t` (its step and its samples) into `pending`; its `other`
    /// stretches.
    fn make(&mut self, t: usize) -> Vec<Gap> {
        let k = self.iterations[t];
        let zero = self.time_zero;
        let step_start = self.timeline.start(k) - zero;
        let wall_ns = (self.wall)(k);
        let mut step_end = step_start.saturating_add(wall_ns.unwrap_or(0));
        let step_made = t as u32;
        let base = self.timeline.start(k);
        let mut children: Vec<(u64, u64)> = Vec::new();
        // The samples of this iteration of each parent event: (made, start, end, depth).
        let mut drawn: HashMap<usize, Vec<(u32, u64, u64, u32)>> = HashMap::new();
        // The step, in front of its samples (the order of `pending` does not matter), its end
        // set once they are made.
        let step_item = self.pending.len();
        self.pending.push(Item {
            start: step_start,
            end: step_end,
            made: step_made,
            parent: NONE,
            depth: 0,
            iteration: k,
            lane: 0,
            shows: Shows::Step {
                iteration: k,
                wall_ns,
            },
        });
        if t >= self.block_start + self.block.len() {
            self.fill_block(t);
        }
        let samples = std::mem::take(&mut self.block[t - self.block_start]);
        for read in &samples {
            let i = self.idx[read.n as usize];
            let start = base.saturating_add(read.offset_ns);
            let end = start.saturating_add(read.dur_ns);
            let (start, end) = (start - zero, end - zero);
            let enclosing = self.parents[i]
                .and_then(|p| drawn.get(&p))
                .and_then(|list| {
                    list.iter()
                        .find(|&&(_, s, e, _)| s <= start && end <= e)
                        .map(|&(made, _, _, depth)| (made, depth + 1))
                });
            let (parent, depth) = match enclosing {
                Some(found) => found,
                None => {
                    children.push((start, end));
                    if wall_ns.is_none() {
                        step_end = step_end.max(end);
                    }
                    (step_made, 1)
                }
            };
            let made = self.first_made[i] + read.j;
            if self.is_parent[i] {
                drawn.entry(i).or_default().push((made, start, end, depth));
            }
            self.pending.push(Item {
                start,
                end,
                made,
                parent,
                depth,
                iteration: k,
                lane: 0,
                shows: Shows::Sample { event: i },
            });
        }
        self.pending[step_item].end = step_end;
        // Its buffer back, emptied, for a later block.
        self.block[t - self.block_start] = samples;
        self.block[t - self.block_start].clear();
        gaps_between(k, (step_start, step_end), children.into_iter())
    }
}
