//! What the cold path has gathered of a run so far: the plan, where each iteration began, the
//! samples between their stores and the results, and what the device adds. Every mode and
//! service of the session (`warmup_records.rs`, `trace_records.rs`, `windows.rs`,
//! `on_demand.rs`, `results.rs`) acts on it; [`Measuring`] is its hot-path twin.
//!
//! Here too: the slots the armed iteration stored, queued for resolution, and their resolution
//! into samples.

use std::sync::atomic::Ordering::Relaxed;

use super::device::DeviceState;
use crate::measure::Measuring;
use crate::schedule::{Plan, POOL_ITERATIONS};
use crate::select::config::Config;
use crate::store::samples::{resolve_slot, IterationStarts, Outcome, Resolved};

/// Slots stored (or about to be) and not yet resolved: (event, slot, iteration).
pub(crate) type Pending = Vec<(u32, u32, u32)>;

/// What the cold path has gathered of a run.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    /// The schedule's cold-path state.
    pub plan: Plan,
    /// Where each iteration began.
    pub iterations: Iterations,
    /// The samples between their stores and the results.
    pub samples: Samples,
    /// What the device adds: stream marks, kernels, memory, the focused capture.
    pub device: DeviceState,
}

/// Where each iteration began.
#[derive(Debug, Default)]
pub(crate) struct Iterations {
    /// `marks[i]` is the mark at which iteration `base + i` began; one more than completed.
    pub marks: Vec<u64>,
    /// The iteration `marks[0]` began: 0, except in `continuous` mode, where marks older than
    /// the current window (and than any pending sample) are dropped.
    pub base: u32,
}

impl Iterations {
    /// The iterations completed.
    pub(crate) fn completed(&self) -> u32 {
        self.base + (self.marks.len() as u32).saturating_sub(1)
    }

    /// The marks of iterations `first..` (at most `len` of them, and the mark that ended the
    /// last); none if the mark of `first` was dropped (never a later iteration's in its place).
    pub(crate) fn span(&self, first: u32, len: usize) -> &[u64] {
        let Some(from) = first.checked_sub(self.base) else {
            return &[];
        };
        let from = from as usize;
        let to = (from + len + 1).min(self.marks.len());
        self.marks.get(from..to).unwrap_or_default()
    }
}

/// The samples between their stores and the results.
#[derive(Debug, Default)]
pub(crate) struct Samples {
    /// Slots written (or about to be) and not yet resolved.
    pub pending: Pending,
    /// Resolved samples, per event.
    pub resolved: Vec<Resolved>,
}

impl Samples {
    /// The oldest iteration a pending sample is of.
    pub(crate) fn oldest_pending(&self) -> Option<u32> {
        self.pending.iter().map(|&(_, _, i)| i).min()
    }
}

/// Iterations whose samples are kept apart from the others (a trace on demand's).
pub(crate) struct Apart<'a> {
    /// The first of them.
    pub first: u32,
    /// How many.
    pub len: u32,
    /// Their samples, per event.
    pub resolved: &'a mut [Resolved],
}

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

impl Measured {
    /// A run whose loop began at `origin` (the plan's origin is set), with `selected` probes.
    pub(crate) fn starting(origin: u64, selected: Vec<usize>, learning: bool) -> Measured {
        Measured {
            plan: Plan {
                late: if learning {
                    Vec::new()
                } else {
                    selected.clone()
                },
                selected,
                origin,
                ..Plan::default()
            },
            iterations: Iterations {
                marks: vec![origin],
                base: 0,
            },
            ..Measured::default()
        }
    }

    /// Warmup is over (or a program that never called `step()` ends): the events are planned,
    /// and everything the measured iterations need is reserved now.
    pub(crate) fn plan(&mut self, config: &Config, m: &Measuring) {
        m.schedule
            .plan_after_warmup(&mut self.plan, m.device.as_deref());
        let events = self.plan.order.len().max(1);
        let iterations = config.warmup as usize + events * config.repeat as usize + 2;
        self.iterations.marks.reserve(iterations);
        self.samples.pending.reserve(events * 2);
        self.device
            .stream_marks
            .reserve(2 * POOL_ITERATIONS * self.plan.streams.len());
        self.samples
            .resolved
            .resize(self.plan.allocated, Resolved::default());
    }

    /// Probes first seen after warmup are planned, after the others.
    pub(crate) fn discover_late(&mut self, m: &Measuring) {
        m.schedule.discover_late(&mut self.plan);
        self.samples
            .resolved
            .resize(self.plan.allocated, Resolved::default());
    }

    /// Arms what iteration `iter` measures.
    pub(crate) fn arm(&mut self, m: &Measuring, iter: u32) {
        m.schedule.arm(
            &mut self.plan,
            iter,
            m.device.as_deref(),
            &mut self.device.stream_marks,
        );
    }

    /// Arms every event for iteration `iter`, slot `slot` (a trace on demand).
    pub(crate) fn arm_every(&mut self, m: &Measuring, iter: u32, slot: u32) {
        m.schedule.arm_every(
            &mut self.plan,
            iter,
            slot,
            m.device.as_deref(),
            &mut self.device.stream_marks,
        );
    }

    /// The slots the armed iteration's runs stored (or will store: a run may still be going on
    /// another thread), for resolution; recorded events queue theirs as they store them.
    fn queue_armed(&mut self, m: &Measuring, armed: &[u32]) {
        let slot = m.schedule.cur_slot.load(Relaxed);
        let iter = m.schedule.cur_iter.load(Relaxed);
        let stored_directly = |e: &u32| !m.schedule.event(*e).is_some_and(|ev| ev.recorded);
        self.samples.pending.extend(
            armed
                .iter()
                .filter(|e| stored_directly(e))
                .map(|&e| (e, slot, iter)),
        );
    }

    /// Queues the slots of the events `armed` in the iteration that ended, then turns stored
    /// marks into samples where the clocks can already tell; the samples of the iterations kept
    /// `apart` (a trace on demand's) go there.
    pub(crate) fn resolve(
        &mut self,
        m: &Measuring,
        armed: &[u32],
        mut apart: Option<Apart<'_>>,
        last_chance: bool,
    ) {
        self.queue_armed(m, armed);
        let pending = std::mem::take(&mut self.samples.pending);
        let stream_marks = std::mem::take(&mut self.device.stream_marks);
        let mut kept = Vec::with_capacity(pending.len());
        let current = m.schedule.cur_iter.load(Relaxed);
        for (event, slot, iter) in pending {
            let Some(ev) = m.schedule.events[event as usize].get() else {
                continue;
            };
            if ev.store.totals.is_some() {
                continue; // merged events are read whole at the end
            }
            let starts = Starts {
                cpu: &self.iterations.marks,
                base: self.iterations.base,
                stream_marks: &stream_marks,
                lane: ev.lane,
            };
            // A trace on demand keeps its iterations' samples apart from the window's.
            let into = match &mut apart {
                Some(a) if iter >= a.first && iter - a.first < a.len => {
                    a.resolved.get_mut(event as usize)
                }
                _ => self.samples.resolved.get_mut(event as usize),
            };
            let Some(into) = into else {
                continue;
            };
            let outcome = resolve_slot(
                &m.clock,
                m.device.as_deref(),
                &ev.store,
                slot as usize,
                &starts,
                true,
                Some(iter),
                into,
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
        self.samples.pending = kept;
        // An iteration's marks on the streams are read by that iteration's samples only: give
        // them back once none is pending (and the iteration is over).
        let oldest_pending = self.samples.oldest_pending();
        let (done, live): (Vec<_>, Vec<_>) = stream_marks.into_iter().partition(|&(i, _, _)| {
            last_chance || (i < current && oldest_pending.is_none_or(|p| i < p))
        });
        self.device.stream_marks = live;
        if let Some(device) = &m.device {
            for (_, _, mark) in done {
                device.release(mark);
            }
        }
    }
}
