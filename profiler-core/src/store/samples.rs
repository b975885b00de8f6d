//! Sample storage, reserved when an event is scheduled, and its resolution into nanoseconds.
//!
//! The hot path stores raw clock marks with relaxed atomic stores into slots fixed in advance,
//! so it never allocates or locks. Turning marks into durations happens on the cold path, at
//! `step()` or at the end; a clock may answer "pending" (a GPU that has not reached the stop
//! event yet), in which case the sample waits for a later attempt.

use std::sync::atomic::{
    AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use crate::instrument::alloc::Figures;
use crate::instrument::clock::ActiveClock;
use crate::instrument::clock::Reading;
use crate::instrument::device::{Device, NO_MARK};
use crate::store::shape::{Dims, MAX_DIMS};

/// How many runs of a merged event are kept for its median and p90.
pub(crate) const RESERVOIR: usize = 1024;

/// Bytes of storage per sample slot (start, stop, iteration).
pub(crate) const SAMPLE_BYTES: usize = 8 + 8 + 4;

/// Extra bytes per slot of an event timed on a device stream (its two device marks, and the
/// device memory in use at its start and its end).
pub(crate) const DEVICE_SAMPLE_BYTES: usize = 8 + 8 + 8 + 8;

/// Device memory that was not read (the device cannot say, or the run did not read it).
pub(crate) const NO_BYTES: u64 = u64::MAX;

/// What a run timed on a stream stored besides its CPU marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeviceRun {
    /// The device marks at its start and its end.
    pub marks: (u64, u64),
    /// The device memory in use before the start marks and after the stop marks, or
    /// [`NO_BYTES`].
    pub used: (u64, u64),
}

/// A slot's [`DeviceRun`]: device marks (start, stop), then memory in use (start, stop), side by
/// side so that a run's are written into one cache line.
type DeviceCell = [AtomicU64; 4];

/// Raw marks of one event's samples, one slot per measured iteration.
#[derive(Debug)]
pub(crate) struct SampleSlots {
    start: Box<[AtomicU64]>,
    stop: Box<[AtomicU64]>,
    /// The iteration index plus one; 0 while the slot is empty.
    iter: Box<[AtomicU32]>,
    /// Device marks and memory for an event timed on a stream.
    device: Option<Box<[DeviceCell]>>,
    /// What each run allocated ([`MEMORY_FIGURES`] values a slot), when the program installed
    /// [`Alloc`](crate::Alloc).
    mem: Option<Box<[AtomicU64]>>,
    /// Each run's work (flops, bytes; `NO_WORK` for a key not given), for an event whose probe
    /// has a `flops` or `bytes` key.
    work: Option<Box<[[AtomicU64; 2]]>>,
    /// Each run's shape ([`Dims`] packed), for an event whose probe has a `shape` key.
    shape: Option<Box<[ShapeCell]>>,
}

/// A slot's shape: [`Dims`] packed into words.
type ShapeCell = [AtomicU64; MAX_DIMS + 1];

/// Extra bytes per slot of an event whose probe has a `shape` key.
pub(crate) const SHAPE_SAMPLE_BYTES: usize = 8 * (MAX_DIMS + 1);

/// Extra bytes per slot of an event whose probe counts its work (`flops`, `bytes`).
pub(crate) const WORK_SAMPLE_BYTES: usize = 8 + 8;

/// Values a slot keeps of a run's memory figures: bytes allocated, bytes freed, allocations,
/// peak.
pub(crate) const MEMORY_FIGURES: usize = 4;

/// Extra bytes per slot of an event whose runs' memory is counted.
pub(crate) const MEMORY_SAMPLE_BYTES: usize = 8 * MEMORY_FIGURES;

fn atomics64(n: usize) -> Box<[AtomicU64]> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

impl SampleSlots {
    pub fn new(slots: usize, device: bool) -> SampleSlots {
        SampleSlots {
            start: atomics64(slots),
            stop: atomics64(slots),
            iter: (0..slots).map(|_| AtomicU32::new(0)).collect(),
            device: device.then(|| (0..slots).map(|_| Default::default()).collect()),
            mem: None,
            work: None,
            shape: None,
        }
    }

    /// These samples keep each run's work (`counts`), its shape (`shape`), or both.
    fn with_work(mut self, counts: bool, shape: bool) -> SampleSlots {
        let n = self.iter.len();
        if counts {
            self.work = Some((0..n).map(|_| Default::default()).collect());
        }
        if shape {
            self.shape = Some((0..n).map(|_| Default::default()).collect());
        }
        self
    }

    /// Stores a run's work and shape in `slot`: written by the run itself before its start
    /// mark, before the slot is published by its end.
    #[inline]
    pub fn write_work(&self, slot: usize, (flops, bytes): (u64, u64), shape: &Dims) {
        if let Some(cell) = self.work.as_ref().and_then(|w| w.get(slot)) {
            cell[0].store(flops, Relaxed);
            cell[1].store(bytes, Relaxed);
        }
        if let Some(cell) = self.shape.as_ref().and_then(|s| s.get(slot)) {
            for (cell, word) in cell.iter().zip(shape.pack()) {
                cell.store(word, Relaxed);
            }
        }
    }

    /// Whether these samples keep each run's work or shape (storage for them was reserved).
    pub fn keeps_work(&self) -> bool {
        self.work.is_some() || self.shape.is_some()
    }

    /// The shape of a filled slot.
    pub fn read_shape(&self, slot: usize) -> Option<Dims> {
        let cell = self.shape.as_ref()?.get(slot)?;
        Some(Dims::unpack(&cell.each_ref().map(|w| w.load(Relaxed))))
    }

    /// The work (flops, bytes) of a filled slot.
    pub fn read_work(&self, slot: usize) -> Option<(u64, u64)> {
        let cell = self.work.as_ref()?.get(slot)?;
        Some((cell[0].load(Relaxed), cell[1].load(Relaxed)))
    }

    /// These samples keep each run's memory figures too.
    fn with_memory(mut self) -> SampleSlots {
        self.mem = Some(atomics64(self.iter.len() * MEMORY_FIGURES));
        self
    }

    /// Whether runs' memory figures are kept.
    pub fn has_memory(&self) -> bool {
        self.mem.is_some()
    }

    /// Stores a run's memory figures in `slot` (before the slot is published by its iteration).
    #[inline]
    fn write_memory(&self, slot: usize, figures: &Figures) {
        if let Some(mem) = &self.mem {
            if let Some(cells) = mem.get(slot * MEMORY_FIGURES..(slot + 1) * MEMORY_FIGURES) {
                cells[0].store(figures.alloc_bytes, Relaxed);
                cells[1].store(figures.freed_bytes, Relaxed);
                cells[2].store(figures.allocs, Relaxed);
                cells[3].store(figures.peak_bytes, Relaxed);
            }
        }
    }

    /// The memory figures of a filled slot.
    pub fn read_memory(&self, slot: usize) -> Option<[u64; MEMORY_FIGURES]> {
        let cells = self
            .mem
            .as_ref()?
            .get(slot * MEMORY_FIGURES..(slot + 1) * MEMORY_FIGURES)?;
        Some([0, 1, 2, 3].map(|i| cells[i].load(Relaxed)))
    }

    /// Whether this event is timed on a device stream.
    #[inline]
    pub fn has_device(&self) -> bool {
        self.device.is_some()
    }

    #[inline]
    pub fn write(&self, slot: usize, start: u64, stop: u64, iter: u32) {
        self.write_all(slot, (start, stop), (NO_MARK, NO_MARK), iter);
    }

    #[inline]
    pub fn write_all(&self, slot: usize, cpu: (u64, u64), device: (u64, u64), iter: u32) {
        if slot < self.iter.len() {
            self.start[slot].store(cpu.0, Relaxed);
            self.stop[slot].store(cpu.1, Relaxed);
            if let Some(cell) = self.device.as_ref().and_then(|d| d.get(slot)) {
                cell[0].store(device.0, Relaxed);
                cell[1].store(device.1, Relaxed);
            }
            self.iter[slot].store(iter + 1, Release);
        }
    }

    /// Stores the device memory in use at the start (`end` false) or the end of the run that
    /// fills `slot` of an event timed on a stream: written by the run itself, before the slot
    /// is published, so that the armed path of a run on the CPU does not carry it.
    #[inline]
    pub fn write_used(&self, slot: usize, end: bool, bytes: u64) {
        if let Some(cell) = self.device.as_ref().and_then(|d| d.get(slot)) {
            cell[2 + usize::from(end)].store(bytes, Relaxed);
        }
    }

    /// The device marks and memory of a filled slot of an event timed on a stream.
    pub fn read_device(&self, slot: usize) -> Option<DeviceRun> {
        let cell = self.device.as_ref()?.get(slot)?;
        let [a, b, c, d] = cell.each_ref().map(|v| v.load(Relaxed));
        Some(DeviceRun {
            marks: (a, b),
            used: (c, d),
        })
    }

    /// `(start, stop, iteration)` of a filled slot.
    pub fn read(&self, slot: usize) -> Option<(u64, u64, u32)> {
        let iter = self.iter.get(slot)?.load(Acquire);
        (iter != 0).then(|| {
            (
                self.start[slot].load(Relaxed),
                self.stop[slot].load(Relaxed),
                iter - 1,
            )
        })
    }

    /// Empties a slot once it has been resolved.
    pub fn clear(&self, slot: usize) {
        if let Some(iter) = self.iter.get(slot) {
            iter.store(0, Relaxed);
        }
    }
}

/// Exact running totals of a merged event, in raw clock units, kept without locks.
#[derive(Debug)]
pub(crate) struct Totals {
    pub count: AtomicU64,
    pub sum: AtomicU64,
    pub min: AtomicU64,
    pub max: AtomicU64,
    /// Sum of squares, as `f64` bits.
    pub sum_sq: AtomicU64,
}

impl Totals {
    fn new() -> Totals {
        Totals {
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            sum_sq: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Adds one run; returns how many runs came before it.
    #[inline]
    fn add(&self, delta: Option<u64>) -> u64 {
        let n = self.count.fetch_add(1, Relaxed);
        if let Some(d) = delta {
            self.sum.fetch_add(d, Relaxed);
            self.min.fetch_min(d, Relaxed);
            self.max.fetch_max(d, Relaxed);
            let sq = (d as f64) * (d as f64);
            let _ = self.sum_sq.fetch_update(Relaxed, Relaxed, |bits| {
                Some((f64::from_bits(bits) + sq).to_bits())
            });
        }
        n
    }
}

/// One event's storage.
#[derive(Debug)]
pub(crate) struct Store {
    pub samples: SampleSlots,
    /// Present for a merged event, whose samples are a bounded reservoir.
    pub totals: Option<Totals>,
}

impl Store {
    /// `device`: the event is timed on a stream (never so for a merged event, whose reservoir
    /// overwrites slots and so could not give device marks back to their pool).
    /// `memory`: each run's memory figures are kept too. `work`: the probe's `WORK_*` keys,
    /// whose values each run keeps too (never for a merged event: its reservoir slot is drawn
    /// when the run ends, after the run stored its work).
    pub fn new(slots: usize, merged: bool, device: bool, memory: bool, work: u8) -> Store {
        use crate::register::descriptor::{WORK_BYTES, WORK_FLOPS, WORK_SHAPE};
        let samples = SampleSlots::new(if merged { RESERVOIR } else { slots }, device && !merged);
        let samples = if memory {
            samples.with_memory()
        } else {
            samples
        };
        Store {
            samples: if work != 0 && !merged {
                samples.with_work(
                    work & (WORK_FLOPS | WORK_BYTES) != 0,
                    work & WORK_SHAPE != 0,
                )
            } else {
                samples
            },
            totals: merged.then(Totals::new),
        }
    }

    /// Stores one run: its CPU marks and, for an event timed on a stream, its device marks
    /// (its device memory is stored by the run, [`SampleSlots::write_used`]), and what it allocated
    /// when that was counted. `linear` says whether raw CPU deltas can be summed. Always
    /// inlined: the armed path's two callers (runs on the CPU and on a stream) would otherwise
    /// share it out of line, a call on the path of every armed run.
    #[inline(always)]
    pub fn record(
        &self,
        slot: u32,
        iter: u32,
        cpu: (u64, u64),
        device: (u64, u64),
        linear: bool,
        memory: Option<&Figures>,
    ) {
        let (start, stop) = cpu;
        let index = match &self.totals {
            None => slot as usize,
            Some(totals) => {
                let n = totals.add(linear.then(|| stop.saturating_sub(start)));
                reservoir_index(n)
            }
        };
        if let Some(figures) = memory {
            self.samples.write_memory(index, figures);
        }
        match &self.totals {
            None => self.samples.write_all(index, cpu, device, iter),
            Some(_) if index < RESERVOIR => self.samples.write(index, start, stop, iter),
            Some(_) => {}
        }
    }
}

/// Where the run numbered `n` (0 first) of a merged event goes in its reservoir: reservoir
/// sampling (algorithm R) with a hash of `n` as the random draw, scaled into `0..=n` by a
/// multiplication rather than a division (which cost about 10 ns a run).
#[inline]
fn reservoir_index(n: u64) -> usize {
    if (n as usize) < RESERVOIR {
        n as usize
    } else {
        ((u128::from(mix(n)) * (u128::from(n) + 1)) >> 64) as usize
    }
}

/// Runs of a merged event added by one pass of the cold path (`trace` mode's records): the
/// totals are summed here and added to the event's with one atomic operation each, rather than
/// five per run.
#[derive(Debug)]
pub(crate) struct Tally {
    /// Runs counted before this pass.
    before: u64,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
    sum_sq: f64,
}

impl Store {
    /// A tally for this merged event (`None` for an event of its own).
    pub fn tally(&self) -> Option<Tally> {
        let totals = self.totals.as_ref()?;
        Some(Tally {
            before: totals.count.load(Relaxed),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            sum_sq: 0.0,
        })
    }

    /// Adds one run to `tally`, and to the reservoir when the draw keeps it.
    pub fn tally_run(&self, tally: &mut Tally, iter: u32, (start, stop): (u64, u64), linear: bool) {
        let n = tally.before + tally.count;
        tally.count += 1;
        if linear {
            let d = stop.saturating_sub(start);
            tally.sum += d;
            tally.min = tally.min.min(d);
            tally.max = tally.max.max(d);
            tally.sum_sq += (d as f64) * (d as f64);
        }
        let index = reservoir_index(n);
        if index < RESERVOIR {
            self.samples.write(index, start, stop, iter);
        }
    }

    /// Adds a pass's runs to the event's totals.
    pub fn commit(&self, tally: Tally) {
        let Some(totals) = &self.totals else { return };
        if tally.count == 0 {
            return;
        }
        totals.count.fetch_add(tally.count, Relaxed);
        totals.sum.fetch_add(tally.sum, Relaxed);
        totals.min.fetch_min(tally.min, Relaxed);
        totals.max.fetch_max(tally.max, Relaxed);
        let _ = totals.sum_sq.fetch_update(Relaxed, Relaxed, |bits| {
            Some((f64::from_bits(bits) + tally.sum_sq).to_bits())
        });
    }
}

/// splitmix64's finaliser: a cheap, well-spread hash.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Resolved samples of one event.
#[derive(Clone, Debug, Default)]
pub(crate) struct Resolved {
    /// Durations: device time for an event timed on a stream, else CPU time.
    pub durations: Vec<u64>,
    /// Offsets from the start of the iteration, on the same time line as `durations`.
    pub offsets: Vec<u64>,
    pub iters: Vec<u32>,
    /// CPU time of each sample of an event timed on a stream (empty otherwise).
    pub cpu: Vec<u64>,
    /// Samples dropped because a device mark could not be taken or read.
    pub lost: u64,
    /// Each sample's memory figures, for an event whose runs' memory is counted (empty
    /// otherwise).
    pub memory: Vec<[u64; MEMORY_FIGURES]>,
    /// Device memory in use at the start and end of each sample of an event timed on a stream
    /// ([`NO_BYTES`] where not read; empty for other events).
    pub device_memory: Vec<(u64, u64)>,
    /// Each sample's work (flops, bytes), for an event whose probe counts it (empty otherwise).
    pub work: Vec<(u64, u64)>,
    /// Each sample's shape, for an event whose probe has a `shape` key (empty otherwise).
    pub shapes: Vec<Dims>,
}

impl Resolved {
    /// Empties every list, keeping the buffers (a window's buffers are reused). Written as a
    /// destructuring so that a new field cannot be forgotten here: left uncleared, a reused
    /// buffer would carry an earlier window's figures into the next one.
    pub(crate) fn clear(&mut self) {
        let Resolved {
            durations,
            offsets,
            iters,
            cpu,
            lost,
            memory,
            device_memory,
            work,
            shapes,
        } = self;
        durations.clear();
        offsets.clear();
        iters.clear();
        cpu.clear();
        *lost = 0;
        memory.clear();
        device_memory.clear();
        work.clear();
        shapes.clear();
    }

    /// Puts the samples in the order of their iterations (then offsets).
    pub(crate) fn sort_by_iteration(&mut self) {
        let mut idx: Vec<usize> = (0..self.iters.len()).collect();
        idx.sort_by_key(|&i| (self.iters[i], self.offsets[i]));
        self.durations = idx.iter().map(|&i| self.durations[i]).collect();
        self.offsets = idx.iter().map(|&i| self.offsets[i]).collect();
        self.iters = idx.iter().map(|&i| self.iters[i]).collect();
        if self.cpu.len() == idx.len() {
            self.cpu = idx.iter().map(|&i| self.cpu[i]).collect();
        }
        if self.memory.len() == idx.len() {
            self.memory = idx.iter().map(|&i| self.memory[i]).collect();
        }
        if self.device_memory.len() == idx.len() {
            self.device_memory = idx.iter().map(|&i| self.device_memory[i]).collect();
        }
        if self.work.len() == idx.len() {
            self.work = idx.iter().map(|&i| self.work[i]).collect();
        }
        if self.shapes.len() == idx.len() {
            self.shapes = idx.iter().map(|&i| self.shapes[i]).collect();
        }
    }
}

/// The outcome of trying to resolve one slot.
pub(crate) enum Outcome {
    Done,
    Empty,
    Pending,
}

/// Where an iteration began, for offsets: on the CPU, and on each stream's device time line.
pub(crate) trait IterationStarts {
    /// The CPU mark at which iteration `iter` began.
    fn cpu(&self, iter: u32) -> Option<u64>;
    /// The device mark recorded on the event's stream when iteration `iter` began.
    fn device(&self, iter: u32) -> Option<u64>;
    /// The CPU start marks of iterations `base, base + 1, ...` (for a linear clock: points on
    /// one time line), and `base`.
    fn cpu_marks(&self) -> (&[u64], u32);
}

/// The iteration in which a run that began at CPU mark `start` (on a linear clock) ran: the last
/// one that began at or before it. A run on another thread may read the iteration index just
/// before `step()` publishes the next one, so the index it recorded can be one behind; its start
/// mark cannot. A start mark equal to the mark that began the next iteration (a clock too coarse
/// to tell them apart, such as a test's) leaves the run in the iteration it was recorded in.
pub(crate) fn iteration_of((marks, base): (&[u64], u32), start: u64, recorded: u32) -> u32 {
    // Nearly every run is of the last iteration or the one before (the cold path asks for each
    // of `trace` mode's records): two comparisons before a search of every iteration so far.
    let begun = match marks {
        [.., last] if start >= *last => marks.len(),
        [.., before, _] if start >= *before => marks.len() - 1,
        _ => marks.partition_point(|&m| m <= start),
    };
    match begun {
        0 => recorded,
        n => {
            let it = base + (n - 1) as u32;
            if marks[n - 1] == start && recorded.wrapping_add(1) == it {
                recorded
            } else {
                it
            }
        }
    }
}

/// Tries to turn one slot into a sample. `consume` empties the slot and releases its marks once
/// read. `expected`: the iteration the slot was armed for, when it was (a run that starts as
/// the next iteration begins may belong to that one).
#[allow(clippy::too_many_arguments)]
pub(crate) fn resolve_slot(
    clock: &ActiveClock,
    device: Option<&dyn Device>,
    store: &Store,
    slot: usize,
    starts: &dyn IterationStarts,
    consume: bool,
    expected: Option<u32>,
    out: &mut Resolved,
) -> Outcome {
    let Some((start, stop, iter)) = store.samples.read(slot) else {
        return Outcome::Empty;
    };
    let device_run = store.samples.read_device(slot);
    let device_marks = device_run.map(|d| d.marks);
    let release = || {
        store.samples.clear(slot);
        clock.release(start);
        clock.release(stop);
        if let (Some((dstart, dstop)), Some(device)) = (device_marks, device) {
            device.release(dstart);
            device.release(dstop);
        }
    };
    // A run timed on the CPU belongs to the iteration its start mark falls in. (A run timed on
    // a stream keeps its recorded iteration: its offset is on that iteration's device marks.)
    let iter = if device_marks.is_none() && clock.is_linear() {
        iteration_of(starts.cpu_marks(), start, iter)
    } else {
        iter
    };
    if let Some(armed) = expected {
        if iter < armed {
            // A run of an earlier arming of this slot, longer than the step() after it (its
            // slot given up on), wrote it late: a sample of another window or trace, not of
            // `armed`. Dropped and counted; the run of `armed` may still come.
            if consume {
                release();
            }
            out.lost += 1;
            return Outcome::Empty;
        }
        if iter > armed.wrapping_add(1) {
            // A later arming's run holds the slot (this entry waited on a device that runs
            // behind): that sample is its own entry's, left in place.
            return Outcome::Empty;
        }
    }
    let cpu = clock.elapsed(start, stop);
    let (duration, offset) = match (device_marks, device) {
        (Some((dstart, dstop)), Some(device)) => (
            device.elapsed(dstart, dstop),
            match starts.device(iter) {
                Some(base) => device.elapsed(base, dstart),
                None => Reading::Lost,
            },
        ),
        (Some(_), None) => (Reading::Lost, Reading::Lost),
        (None, _) => (
            cpu,
            match starts.cpu(iter) {
                Some(base) => clock.elapsed(base, start),
                None => Reading::Ready(0),
            },
        ),
    };
    if [duration, offset, cpu].contains(&Reading::Pending) {
        return Outcome::Pending;
    }
    match (duration, offset, cpu) {
        (Reading::Ready(d), Reading::Ready(o), Reading::Ready(c)) => {
            out.durations.push(d);
            out.offsets.push(o);
            out.iters.push(iter);
            if let Some(run) = device_run {
                out.cpu.push(c);
                out.device_memory.push(run.used);
            }
            if let Some(figures) = store.samples.read_memory(slot) {
                out.memory.push(figures);
            }
            if let Some(work) = store.samples.read_work(slot) {
                out.work.push(work);
            }
            if let Some(shape) = store.samples.read_shape(slot) {
                out.shapes.push(shape);
            }
        }
        // Lost readings are dropped, and counted.
        _ => out.lost += 1,
    }
    if consume {
        release();
    }
    Outcome::Done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_belongs_to_the_iteration_its_start_falls_in() {
        let marks = (&[100, 200, 300][..], 0);
        assert_eq!(iteration_of(marks, 150, 0), 0);
        // Recorded as iteration 0 (the index was read just before step() published 1).
        assert_eq!(iteration_of(marks, 250, 0), 1);
        // At the very mark that began iteration 1: as recorded.
        assert_eq!(iteration_of(marks, 200, 0), 0);
        assert_eq!(iteration_of(marks, 200, 1), 1);
        assert_eq!(iteration_of(marks, 300, 1), 1);
        assert_eq!(iteration_of(marks, 300, 2), 2);
        assert_eq!(iteration_of(marks, 999, 1), 2);
        // Before the first mark (cannot happen on a monotonic clock): as recorded.
        assert_eq!(iteration_of(marks, 50, 0), 0);
        assert_eq!(iteration_of((&[], 0), 50, 4), 4);
        // Marks kept from iteration 40 on (continuous mode drops older ones).
        assert_eq!(iteration_of((&[100, 200, 300], 40), 250, 40), 41);
    }

    /// Iteration `i` began at `i * 1000`.
    struct Thousands(Vec<u64>);

    impl IterationStarts for Thousands {
        fn cpu(&self, iter: u32) -> Option<u64> {
            self.0.get(iter as usize).copied()
        }
        fn device(&self, _: u32) -> Option<u64> {
            None
        }
        fn cpu_marks(&self) -> (&[u64], u32) {
            (&self.0, 0)
        }
    }

    /// A slot armed for iteration 10 that holds a run of iteration 3 (an earlier arming of
    /// the slot, in an earlier window, whose run outlasted the step() after it and wrote late)
    /// is not taken for iteration 10's sample: dropped and counted, the slot cleared for the
    /// run of 10. Before, the old sample was shown in the new window with its old iteration.
    #[test]
    fn a_late_sample_of_an_earlier_arming_is_not_taken_for_the_slots_own() {
        let clock = ActiveClock::Custom(Box::new(crate::instrument::clock::FakeClock::new()));
        let store = Store::new(4, false, false, false, 0);
        let starts = Thousands((0..14).map(|i| i * 1000).collect());
        let resolve = |out: &mut Resolved| {
            resolve_slot(&clock, None, &store, 2, &starts, true, Some(10), out)
        };
        let mut out = Resolved::default();
        store.record(2, 3, (3_100, 3_600), (NO_MARK, NO_MARK), true, None);
        assert!(matches!(resolve(&mut out), Outcome::Empty));
        assert_eq!((out.durations.len(), out.lost), (0, 1));
        assert_eq!(store.samples.read(2), None, "cleared for the run of 10");
        store.record(2, 10, (10_100, 10_400), (NO_MARK, NO_MARK), true, None);
        assert!(matches!(resolve(&mut out), Outcome::Done));
        // A run that took the slot as iteration 11 began: of 11, and kept.
        store.record(2, 10, (11_050, 11_100), (NO_MARK, NO_MARK), true, None);
        assert!(matches!(resolve(&mut out), Outcome::Done));
        assert_eq!(
            (&out.durations, &out.iters, out.lost),
            (&vec![300, 50], &vec![10, 11], 1)
        );
        // A later arming's sample (iteration 12, an entry of 10 still waiting on a device that
        // runs behind) is left for its own entry, not dropped: it is resolved as 12's.
        store.record(2, 12, (12_100, 12_300), (NO_MARK, NO_MARK), true, None);
        assert!(matches!(resolve(&mut out), Outcome::Empty));
        assert!(store.samples.read(2).is_some(), "left in place");
        let twelve = resolve_slot(&clock, None, &store, 2, &starts, true, Some(12), &mut out);
        assert!(matches!(twelve, Outcome::Done));
        assert_eq!((out.iters.last(), out.lost), (Some(&12), 1));
    }

    #[test]
    fn slots_fill_and_clear() {
        let s = SampleSlots::new(2, false);
        assert_eq!(s.read(0), None);
        s.write(1, 10, 25, 7);
        s.write(5, 1, 2, 3); // out of range: ignored, never a panic
        assert_eq!(s.read(1), Some((10, 25, 7)));
        s.clear(1);
        assert_eq!(s.read(1), None);
    }

    #[test]
    fn merged_totals_are_exact_and_reservoir_bounded() {
        let store = Store::new(4, true, false, false, 0);
        for i in 0..5000u64 {
            store.record(0, 0, (100, 100 + i), (NO_MARK, NO_MARK), true, None);
        }
        let t = store.totals.as_ref().unwrap();
        assert_eq!(t.count.load(Relaxed), 5000);
        assert_eq!(t.sum.load(Relaxed), (0..5000).sum::<u64>());
        assert_eq!(t.min.load(Relaxed), 0);
        assert_eq!(t.max.load(Relaxed), 4999);
        let filled = (0..RESERVOIR)
            .filter(|&i| store.samples.read(i).is_some())
            .count();
        assert_eq!(filled, RESERVOIR);
        // The reservoir holds runs from the whole range, not just the first 1024.
        let late = (0..RESERVOIR)
            .filter_map(|i| store.samples.read(i))
            .filter(|(start, stop, _)| stop - start >= 2500)
            .count();
        assert!(late > 200, "reservoir kept only early runs: {late}");
    }
}
