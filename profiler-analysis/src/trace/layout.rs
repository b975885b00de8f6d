//! Where every span of the drawing goes: the slices (one per step, per sample in `trace` mode,
//! per event in `sample` mode), their times, parents and tracks, then their lanes, in the
//! drawing's order. See the [module documentation](super) for the rules.
//!
//! A trace-mode profile of ten million samples is ten million slices, so a slice is kept small
//! (40 bytes: times, its index when made, its event, parent, track, depth and lane) and says
//! what it shows only through its indices: steps are made first, then each event's samples in
//! turn (`trace` mode: sample `made - first made of its event`) or each drawn event (`sample`
//! mode). Slices are sorted in place into drawing order once their parents are known, and
//! parents are then renumbered to positions.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use profiler_format::{Event, Iterations, Profile};
use profiler_tables::breakdown::{scaled_offset, Breakdown};

use super::{duration_stats, median, Streams, TraceError, Track};

/// No slice (a slice without parent).
pub(super) const NONE: u32 = u32::MAX;

/// One span to draw, in nanoseconds from the trace's time 0.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slice {
    pub(super) start: u64,
    pub(super) end: u64,
    /// Its index when it was made, which says what it shows ([`Drawing::what`]).
    pub(super) made: u32,
    /// The event it shows, or [`NONE`] for a step.
    pub(super) event: u32,
    /// The slice it ran inside (preferred lane), or [`NONE`]: its index when made until the
    /// slices are sorted, its position after.
    pub(super) parent: u32,
    /// Index in [`Drawing::tracks`].
    pub(super) track: u32,
    pub(super) depth: u32,
    /// Lane within the track (0: `main`, or the stream itself).
    pub(super) lane: u32,
}

/// A `ProfilerStep#` span.
#[derive(Clone, Copy, Debug)]
pub(super) struct Step {
    pub(super) iteration: u64,
    /// The measured wall time (`None` for an iteration that did not complete, or for the
    /// average one).
    pub(super) wall_ns: Option<u64>,
}

/// What a slice shows.
#[derive(Clone, Copy, Debug)]
pub(super) enum What {
    /// A step.
    Step(Step),
    /// Sample `sample` of event `event` (`trace` mode).
    Sample { event: usize, sample: usize },
    /// An event's average (`sample` mode), drawn at its median offset.
    Average { event: usize, median_offset: u64 },
}

/// The drawing of a profile, ready to be written.
pub(super) struct Drawing {
    /// The slices, in drawing order: by track, start, longest first, depth, then as made.
    pub(super) slices: Vec<Slice>,
    /// The steps, as made (slice `made` < `steps.len()` is step `made`).
    pub(super) steps: Vec<Step>,
    /// The position of each step's slice in `slices`.
    pub(super) step_at: Vec<u32>,
    /// `trace` mode: the first slice made of each event's samples (`None` in `sample` mode).
    first_sample: Option<Vec<u32>>,
    /// `sample` mode: the median offset of each drawn event, as made after the step.
    median_offsets: Vec<u64>,
    /// The tracks in their order (the CPU first), and the number of lanes each uses.
    pub(super) tracks: Vec<(Track, u32)>,
    /// The track index of each event.
    pub(super) event_track: Vec<u32>,
    /// Whether each event ran on a thread other than the stepping one (`concurrent`): its
    /// slices never take a track's first lane, which the stepping thread's work keeps.
    pub(super) event_concurrent: Vec<bool>,
    /// Where time 0 is, from the start of the first listed iteration (ns).
    pub(super) time_zero: u64,
}

impl Drawing {
    /// A drawing of `profile` with its tracks (each with no lane yet) and no slice: what the
    /// Perfetto trace drawn one iteration at a time (`stepwise.rs`) needs of one.
    pub(super) fn skeleton(profile: &Profile, streams: &Streams) -> Drawing {
        let tracks = track_table(streams);
        let event_track = profile
            .events
            .iter()
            .map(|e| {
                let t = streams.track(e);
                tracks.binary_search(&t).map_or(0, |i| i as u32)
            })
            .collect();
        Drawing {
            slices: Vec::new(),
            steps: Vec::new(),
            step_at: Vec::new(),
            first_sample: None,
            median_offsets: Vec::new(),
            tracks: tracks.into_iter().map(|t| (t, 0)).collect(),
            event_track,
            event_concurrent: profile.events.iter().map(|e| e.concurrent).collect(),
            time_zero: 0,
        }
    }

    /// Lays out `profile` (see the module documentation).
    pub(super) fn of(profile: &Profile, streams: &Streams) -> Result<Drawing, TraceError> {
        if profile.run.mode == "trace" {
            return Drawing::laid_out(profile, streams, None);
        }
        let rows = profiler_tables::rows::profile_rows(profile, f64::INFINITY, f64::INFINITY);
        let breakdown = profiler_tables::breakdown::breakdown(profile, &rows);
        Drawing::average(profile, streams, breakdown.as_ref())
    }

    /// Lays out `profile`'s average iteration, as `sample` mode draws it, whatever its mode,
    /// where `breakdown` (the profile's, as its caller computed it) places the stepping
    /// thread's top-level events.
    pub(super) fn average(
        profile: &Profile,
        streams: &Streams,
        breakdown: Option<&Breakdown>,
    ) -> Result<Drawing, TraceError> {
        Drawing::laid_out(profile, streams, Some(breakdown))
    }

    /// Lays out the real iterations (`average` `None`) or the average one, from the
    /// profile's breakdown.
    fn laid_out(
        profile: &Profile,
        streams: &Streams,
        average: Option<Option<&Breakdown>>,
    ) -> Result<Drawing, TraceError> {
        let mut d = Drawing::skeleton(profile, streams);
        match average {
            None => d.trace_slices(profile)?,
            Some(breakdown) => d.average_slices(profile, breakdown)?,
        }
        // Time 0: the first step (so readers that shift times to their first event shift by 0).
        d.time_zero = d.slices.iter().map(|s| s.start).min().unwrap_or(0);
        for s in &mut d.slices {
            s.start -= d.time_zero;
            s.end -= d.time_zero;
        }
        d.sort();
        d.assign_lanes();
        Ok(d)
    }

    /// Whether this is the drawing of a `sample`-mode profile: one average iteration.
    pub(super) fn is_average(&self) -> bool {
        self.first_sample.is_none() && !self.steps.is_empty()
    }

    /// What a slice shows.
    pub(super) fn what(&self, s: &Slice) -> What {
        if s.event == NONE {
            return What::Step(self.steps[s.made as usize]);
        }
        let event = s.event as usize;
        match &self.first_sample {
            Some(first) => What::Sample {
                event,
                sample: (s.made - first[event]) as usize,
            },
            None => What::Average {
                event,
                median_offset: self.median_offsets[s.made as usize - self.steps.len()],
            },
        }
    }

    /// A new slice, made now; its index.
    fn push(&mut self, event: u32, span: (u64, u64), track: u32, parent: u32, depth: u32) -> u32 {
        let made = self.slices.len() as u32;
        let (start, end) = span;
        self.slices.push(Slice {
            start,
            end,
            made,
            event,
            parent,
            track,
            depth,
            lane: 0,
        });
        made
    }

    /// `trace` mode: one step per measured iteration and one slice per sample.
    fn trace_slices(&mut self, profile: &Profile) -> Result<(), TraceError> {
        let samples: usize = profile.events.iter().map(drawn_samples).sum();
        let iterations = measured_iterations(profile);
        let total = samples.saturating_add(iterations.len());
        if total >= NONE as usize || profile.events.len() >= NONE as usize {
            return Err(TraceError::TooLarge(total));
        }
        self.slices.reserve_exact(total);
        let timeline = Timeline::of(&profile.iterations);
        for &k in &iterations {
            let start = timeline.start(k);
            let wall = profile.iterations.wall_of(k);
            self.steps.push(Step {
                iteration: k,
                wall_ns: wall,
            });
            let end = start.saturating_add(wall.unwrap_or(0));
            self.push(NONE, (start, end), 0, NONE, 0);
        }
        self.push_samples(profile, &timeline);
        // An iteration that did not complete ends with its last sample.
        let steps = self.steps.len() as u32;
        for i in steps as usize..self.slices.len() {
            let (parent, end) = (self.slices[i].parent, self.slices[i].end);
            if parent < steps && self.steps[parent as usize].wall_ns.is_none() {
                let step = &mut self.slices[parent as usize];
                step.end = step.end.max(end);
            }
        }
        Ok(())
    }

    /// Adds one slice per sample of every event, in execution order: inside the slice of its
    /// parent's sample in the same iteration that encloses it on the same track, else (on the
    /// CPU) inside its iteration's step.
    fn push_samples(&mut self, profile: &Profile, timeline: &Timeline) {
        let events = &profile.events;
        let (idx, of_order) = by_order(events);
        let (parents, is_parent) = parents(events, &of_order);
        // For each event that is a parent: its first slice, and its samples by iteration.
        let mut drawn: HashMap<usize, (u32, Vec<(u32, u32)>)> = HashMap::new();
        let mut first_sample = vec![0; events.len()];
        for &i in &idx {
            let e = &events[i];
            let track = self.event_track[i];
            let first = self.slices.len() as u32;
            first_sample[i] = first;
            let n = drawn_samples(e);
            let parent = parents[i].and_then(|p| drawn.get(&p));
            for j in 0..n {
                let k = e.sample_iters[j];
                let start = timeline.start(u64::from(k)).saturating_add(e.offsets_ns[j]);
                let end = start.saturating_add(e.samples_ns[j]);
                let enclosing = parent
                    .and_then(|(base, by_iter)| {
                        let from = by_iter.partition_point(|&(it, _)| it < k);
                        by_iter[from..]
                            .iter()
                            .take_while(|&&(it, _)| it == k)
                            .map(|&(_, j)| base + j)
                            .find(|&c| {
                                let s = &self.slices[c as usize];
                                s.track == track && s.start <= start && end <= s.end
                            })
                    })
                    .or_else(|| {
                        (track == 0)
                            .then(|| self.step_index(u64::from(k)))
                            .flatten()
                    });
                let (parent_slice, depth) = match enclosing {
                    Some(p) => (p, self.slices[p as usize].depth + 1),
                    None => (NONE, 0),
                };
                self.push(i as u32, (start, end), track, parent_slice, depth);
            }
            if is_parent[i] {
                let mut by_iter: Vec<(u32, u32)> =
                    (0..n).map(|j| (e.sample_iters[j], j as u32)).collect();
                by_iter.sort_unstable();
                drawn.insert(i, (first, by_iter));
            }
        }
        self.first_sample = Some(first_sample);
    }

    /// The index of the step of iteration `k` (steps are made in increasing iteration).
    fn step_index(&self, k: u64) -> Option<u32> {
        self.steps
            .binary_search_by_key(&k, |s| s.iteration)
            .ok()
            .map(|i| i as u32)
    }

    /// `sample` mode: one average iteration (see the module documentation). The top-level
    /// events of the stepping thread are where the step-time breakdown places them
    /// ([`Breakdown::placed`](profiler_tables::breakdown::Breakdown::placed)), so that the
    /// stretches they leave uncovered (the `other` slices) are the breakdown's gaps; every other
    /// event at its scaled median offset ([`scaled_offset`]), a nested one at its distance
    /// from its parent's, then made consistent with the events already placed.
    fn average_slices(
        &mut self,
        profile: &Profile,
        breakdown: Option<&Breakdown>,
    ) -> Result<(), TraceError> {
        let events = &profile.events;
        if events.len() >= NONE as usize - 1 {
            return Err(TraceError::TooLarge(events.len() + 1));
        }
        let (step_len, iteration) = match breakdown {
            Some(b) => (b.median_iteration_ns.round() as u64, b.median_iteration_ns),
            None => {
                let median = median(profiler_tables::rows::measured_walls(profile));
                (median, median as f64)
            }
        };
        // Where the breakdown placed each top-level event of the stepping thread.
        let placed: HashMap<usize, (u64, u64)> = breakdown
            .iter()
            .flat_map(|b| &b.placed)
            .map(|p| (p.index, (p.start.round() as u64, p.end.round() as u64)))
            .collect();
        let offset_of = |i: usize| scaled_offset(profile, i, iteration).round() as u64;
        self.steps.push(Step {
            iteration: 0,
            wall_ns: None,
        });
        self.push(NONE, (0, step_len), 0, NONE, 0);
        let (idx, of_order) = by_order(events);
        let mut slice_of: HashMap<usize, u32> = HashMap::new();
        // (track, parent slice) to the end of the last child placed there.
        let mut last_end: HashMap<(u32, u32), u64> = HashMap::new();
        for &i in &idx {
            let e = &events[i];
            if e.samples_ns.is_empty() {
                continue;
            }
            let track = self.event_track[i];
            let parent_index = parent_event(events, &of_order, i);
            let parent = parent_index
                .and_then(|p| slice_of.get(&p).copied())
                .filter(|&p| self.slices[p as usize].track == track);
            let key = (track, parent.unwrap_or(NONE));
            let (start, end) = match (placed.get(&i), parent) {
                (Some(&span), None) if track == 0 => span,
                _ => {
                    let dur = duration_stats(e).median_ns;
                    let (lo, hi, offset) = match (parent, parent_index) {
                        (Some(p), Some(pi)) => {
                            let s = &self.slices[p as usize];
                            // Its distance from its parent's start, as each was measured.
                            let distance = offset_of(i).saturating_sub(offset_of(pi));
                            (s.start, s.end, s.start.saturating_add(distance))
                        }
                        _ => (0, u64::MAX, offset_of(i)),
                    };
                    // An event of another thread runs beside the stepping thread's: at its own
                    // offset, not after the events before it (it gets a lane of its own where
                    // they overlap).
                    let lo = if e.concurrent {
                        lo
                    } else {
                        lo.max(last_end.get(&key).copied().unwrap_or(0))
                    };
                    let start = offset.min(hi.saturating_sub(dur)).max(lo).min(hi);
                    (start, start.saturating_add(dur).min(hi))
                }
            };
            if !e.concurrent {
                last_end.insert(key, end);
            }
            let (parent, depth) = match parent {
                Some(p) => (p, self.slices[p as usize].depth + 1),
                None if track == 0 => (0, 1),
                None => (NONE, 0),
            };
            self.median_offsets.push(median(&e.offsets_ns));
            let made = self.push(i as u32, (start, end), track, parent, depth);
            slice_of.insert(i, made);
        }
        // The step holds the stepping thread's runs: another thread's (`concurrent`) may end
        // past the median iteration without making the iteration longer (it made the `other`
        // stretch at the end longer than the breakdown's gap).
        let last = self
            .slices
            .iter()
            .filter(|s| s.track == 0)
            .filter(|s| s.event == NONE || !events[s.event as usize].concurrent)
            .map(|s| s.end)
            .max()
            .unwrap_or(0);
        self.slices[0].end = self.slices[0].end.max(last);
        Ok(())
    }

    /// Sorts the slices into drawing order and renumbers their parents to positions.
    fn sort(&mut self) {
        self.slices
            .sort_unstable_by_key(|s| (s.track, s.start, Reverse(s.end), s.depth, s.made));
        let mut at = vec![0u32; self.slices.len()];
        for (pos, s) in self.slices.iter().enumerate() {
            at[s.made as usize] = pos as u32;
        }
        for s in &mut self.slices {
            if s.parent != NONE {
                s.parent = at[s.parent as usize];
            }
        }
        self.step_at = at[..self.steps.len()].to_vec();
    }

    /// Puts every slice on a lane of its track where it nests properly, preferring its
    /// parent's lane; counts the lanes of each track.
    fn assign_lanes(&mut self) {
        let mut lanes = Lanes::default();
        let mut current: Option<u32> = None;
        for i in 0..self.slices.len() {
            let Slice {
                start,
                end,
                track,
                parent,
                event,
                ..
            } = self.slices[i];
            let beside = self
                .event_concurrent
                .get(event as usize)
                .copied()
                .unwrap_or(false);
            if current != Some(track) {
                current = Some(track);
                lanes = Lanes::default();
            }
            let preferred = (parent != NONE && self.slices[parent as usize].track == track)
                .then(|| self.slices[parent as usize].lane as usize);
            let lane = lanes.place(start, end, preferred, beside);
            self.slices[i].lane = lane as u32;
            let used = &mut self.tracks[track as usize].1;
            *used = (*used).max(lane as u32 + 1);
        }
    }
}

/// The lanes of one track while its slices are placed in drawing order: per lane, the ends of
/// the slices still open on it, innermost last.
#[derive(Default)]
pub(super) struct Lanes {
    open: Vec<Vec<u64>>,
}

impl Lanes {
    /// The lane of the slice `[start, end]`, the next in drawing order: the `preferred` one
    /// (its parent's) if it nests there, else the first where it does (never the first lane for
    /// a slice `beside` the stepping thread's work), else a new one.
    pub(super) fn place(
        &mut self,
        start: u64,
        end: u64,
        preferred: Option<usize>,
        beside: bool,
    ) -> usize {
        let lanes = &mut self.open;
        let mut chosen = None;
        let first = usize::from(beside);
        let opened = lanes.len();
        // The parent's lane may not be open yet: a parent drawn after its child (a run longer
        // than the iteration or run around it, which a worker thread's can be, is drawn
        // first) has no lane before it.
        for lane in preferred
            .filter(|&l| l < opened)
            .into_iter()
            .chain(0..opened)
            .filter(|&l| l >= first)
        {
            let stack = &mut lanes[lane];
            while let Some(&top) = stack.last() {
                if top <= start {
                    stack.pop();
                } else {
                    break;
                }
            }
            if stack.last().is_none_or(|&top| top >= end) {
                chosen = Some(lane);
                break;
            }
        }
        let lane = chosen.unwrap_or_else(|| {
            lanes.push(Vec::new());
            lanes.len().max(first + 1) - 1
        });
        if lanes.len() <= lane {
            lanes.resize_with(lane + 1, Vec::new);
        }
        lanes[lane].push(end);
        lane
    }
}

/// The tracks a drawing may use, in their order: the CPU, then every stream of every device.
fn track_table(streams: &Streams) -> Vec<Track> {
    let gpu: BTreeSet<Track> = streams
        .tids
        .iter()
        .map(|(&(device, _), &stream)| Track::Gpu { device, stream })
        .collect();
    std::iter::once(Track::Cpu).chain(gpu).collect()
}

/// How many samples of `e` are drawn: those with a duration, an offset and an iteration.
pub(super) fn drawn_samples(e: &Event) -> usize {
    e.samples_ns
        .len()
        .min(e.offsets_ns.len())
        .min(e.sample_iters.len())
}

/// Event indices in execution order, and `order` to event index.
pub(super) fn by_order(events: &[Event]) -> (Vec<usize>, HashMap<u32, usize>) {
    let mut idx: Vec<usize> = (0..events.len()).collect();
    idx.sort_by_key(|&i| (events[i].order, i));
    let mut of_order = HashMap::new();
    for &i in &idx {
        of_order.entry(events[i].order).or_insert(i);
    }
    (idx, of_order)
}

/// The event's parent event, when it comes earlier in execution order (so no cycle).
pub(super) fn parent_event(
    events: &[Event],
    of_order: &HashMap<u32, usize>,
    i: usize,
) -> Option<usize> {
    let p = *of_order.get(&events[i].parent?)?;
    (events[p].order < events[i].order).then_some(p)
}

/// Each event's parent event ([`parent_event`]), and whether it is some event's parent.
pub(super) fn parents(
    events: &[Event],
    of_order: &HashMap<u32, usize>,
) -> (Vec<Option<usize>>, Vec<bool>) {
    let parents: Vec<Option<usize>> = (0..events.len())
        .map(|i| parent_event(events, of_order, i))
        .collect();
    let mut is_parent = vec![false; events.len()];
    for p in parents.iter().flatten() {
        is_parent[*p] = true;
    }
    (parents, is_parent)
}

/// Where the iterations lie on the trace's time line (`trace` mode): each listed one starts
/// where the previous ended.
pub(super) struct Timeline {
    /// Start of each listed iteration, the first at 0.
    starts: Vec<u64>,
    /// The first listed iteration (`iterations.first`).
    first: u64,
    /// End of the last listed iteration.
    end: u64,
}

impl Timeline {
    pub(super) fn of(iterations: &Iterations) -> Timeline {
        let mut starts = Vec::with_capacity(iterations.wall_ns.len() + 1);
        let mut t = 0u64;
        for w in &iterations.wall_ns {
            starts.push(t);
            t = t.saturating_add(*w);
        }
        Timeline {
            starts,
            first: iterations.first,
            end: t,
        }
    }

    /// Start of iteration `k`: `wall_ns[k - first]`'s for a listed one; 0 for one before them,
    /// the end of the last for one after them (the iteration still running).
    pub(super) fn start(&self, k: u64) -> u64 {
        k.checked_sub(self.first)
            .and_then(|i| self.starts.get(usize::try_from(i).ok()?).copied())
            .unwrap_or(if k < self.first { 0 } else { self.end })
    }
}

/// The iterations drawn as steps, in increasing order: the active window (from the warmup on,
/// `repeat` of them, as far as they are listed), and any iteration holding a sample.
pub(super) fn measured_iterations(profile: &Profile) -> Vec<u64> {
    // `wall_ns[k]` is iteration `first + k` (`first` is 0 but for a `continuous`-mode file).
    let first = profile.iterations.first;
    let listed_end = first.saturating_add(profile.iterations.wall_ns.len() as u64);
    let warmup = (profile.run.warmup as u64).max(first);
    let window_end = warmup
        .saturating_add(profile.run.repeat as u64)
        .min(listed_end);
    let mut iterations: Vec<u64> = (warmup..window_end).collect();
    let events = &profile.events;
    let samples: usize = events.iter().map(|e| e.sample_iters.len()).sum();
    match events
        .iter()
        .filter_map(|e| e.sample_iters.iter().max())
        .max()
    {
        None => {}
        // Millions of samples in a few thousand iterations: each iteration marked in a bitmap
        // no bigger than the samples (one bit per iteration up to the last).
        Some(&max) if max as usize / 8 <= samples => {
            let mut seen = vec![0u64; max as usize / 64 + 1];
            for &k in events.iter().flat_map(|e| &e.sample_iters) {
                seen[k as usize / 64] |= 1 << (k % 64);
            }
            for (word, &bits) in seen.iter().enumerate() {
                let word = word as u64 * 64;
                iterations.extend((0..64).filter(|b| bits >> b & 1 == 1).map(|b| word + b));
            }
        }
        Some(_) => iterations.extend(
            events
                .iter()
                .flat_map(|e| &e.sample_iters)
                .map(|&k| u64::from(k)),
        ),
    }
    iterations.sort_unstable();
    iterations.dedup();
    iterations
}

/// The `tid` of every lane of every track in use. CPU lanes are 1, 2, ...; a stream's first
/// lane is the stream's number, its extra lanes take numbers after every stream of the device.
pub(super) fn lane_tids(tracks: &[(Track, u32)], streams: &Streams) -> Vec<Vec<u32>> {
    let mut next_free: BTreeMap<u32, u32> = BTreeMap::new();
    for (&(device, _), &tid) in &streams.tids {
        let n = next_free.entry(device).or_insert(1);
        *n = (*n).max(tid + 1);
    }
    tracks
        .iter()
        .map(|&(track, lanes)| {
            (0..lanes)
                .map(|lane| match track {
                    Track::Cpu => lane + 1,
                    Track::Gpu { stream, .. } if lane == 0 => stream,
                    Track::Gpu { device, .. } => {
                        let n = next_free.entry(device).or_insert(1);
                        *n += 1;
                        *n - 1
                    }
                })
                .collect()
        })
        .collect()
}
