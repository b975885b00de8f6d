//! The timer: the guard that measures one run, and the hot path in full.
//!
//! Cost, as the benchmark in `benches/hot_path.rs` measures it:
//! - unarmed probe (the case for every probe but one in `sample` mode): one relaxed atomic load
//!   of the descriptor's [`State`] and a branch on entry, and a branch on the guard's drop;
//! - recorded probe (`trace` mode, [`State::Recorded`]): the load of the running session, two
//!   clock reads, and a 16-byte record written into this thread's buffer (`buffer.rs`) with one
//!   release store of its position: no lock, allocation or shared read-modify-write. Which
//!   event a run is (its occurrence in the iteration) is worked out at `step()` from the start
//!   marks. The learning iterations of `trace` mode record the same way, with the run's
//!   nesting depth in the record;
//! - armed probe (`sample` mode; the second half of this file): the routing-table lookup and one
//!   `fetch_add` (the occurrence count), two clock reads, and three relaxed stores into sample
//!   storage reserved when the schedule was planned. No allocation, lock, hashing, string work
//!   or system call. With [`Alloc`](crate::Alloc) installed it adds a few thread-local writes
//!   before the start mark and after the stop mark (the run's memory figures); so do runs in
//!   `trace` mode then, which take this path. On a stream it adds two device marks (events
//!   from a pool reserved at the plan), two reads of the device's memory in use (before the
//!   start marks and after the stop marks, so that neither time includes them; for CUDA a
//!   driver call each, see [`Device::memory_used`](crate::instrument::device::Device::memory_used)) and,
//!   with hooks on, the NVTX push/pop and synchronizations asked for.
//!
//! A probe in learning state goes to `schedule/learn.rs` (`sample` mode) or records its runs
//! (`trace` mode); everything else (planning, arming at `step()`, resolution, output) is the cold
//! path.

use std::sync::atomic::Ordering::Relaxed;

use crate::instrument::alloc::Figures;
use crate::instrument::device::{AsStream, Device, Stream, NO_MARK};
use crate::register::descriptor::{Descriptor, State};
use crate::schedule::{Measure, Route, HOOK_KERNELS, HOOK_MEMORY, HOOK_NVTX, HOOK_SYNC, NONE};
use crate::session::{current, Session};
use crate::store::buffer::{self, tag, Record};
use crate::store::samples::NO_BYTES;

/// The event of a guard opened during warmup: it measures nothing, but its drop tells the
/// learner that the run ended (so that nested runs learn their parent).
pub(crate) const LEARNING: u32 = u32::MAX - 1;
/// The event of a guard that measures nothing and only closes its hooks.
pub(crate) const HOOKS_ONLY: u32 = u32::MAX - 2;
/// The `slot` of a learning run that is also timed (`trace` mode without warmup).
pub(crate) const CAPTURE: u32 = u32::MAX;

/// A measurement in progress, created only on the armed path.
#[derive(Debug)]
pub(crate) struct Armed {
    pub(crate) session: &'static Session,
    pub(crate) event: u32,
    /// Where the sample goes in the event's storage, fixed when the run started.
    pub(crate) slot: u32,
    /// The iteration the run started in.
    pub(crate) iter: u32,
    pub(crate) start: u64,
    /// The device mark at the start, or `NO_MARK` for a run timed on the CPU only.
    pub(crate) dstart: u64,
    /// The stream the run is timed on.
    pub(crate) stream: Stream,
    /// `HOOK_*` bits: what to undo when the run ends.
    pub(crate) hooks: u8,
}

impl Armed {
    /// A guard of `session` with no measurement.
    pub(crate) fn bare(session: &'static Session, event: u32, hooks: u8) -> Armed {
        Armed {
            session,
            event,
            slot: 0,
            iter: 0,
            start: 0,
            dstart: NO_MARK,
            stream: Stream::new(0, 0),
            hooks,
        }
    }
}

/// A run recorded into its thread's buffer (`trace` mode, after warmup).
#[derive(Debug)]
pub(crate) struct Recorded {
    session: &'static Session,
    start: u64,
    /// The probe's registry index ([`tag`]).
    tag: u32,
}

/// A run of a learning iteration of `trace` mode, recorded too: the cold path learns the events
/// from these records, and times the first iteration with them when there is no warmup.
#[derive(Debug)]
pub(crate) struct Learning {
    session: &'static Session,
    start: u64,
    /// The probe's index, `LEARN`, and the nesting depth (`ASYNC` for a run that may move
    /// between threads).
    tag: u32,
    /// The run's stream (lane), 0 for none.
    lane: u32,
    /// A run that may move: where it started ([`tag::origin`]), 0 for nowhere known.
    origin: u32,
    /// The depth this run raised this thread's to (`None`: it does not nest).
    depth: Option<u32>,
    hooks: u8,
}

/// What a guard is doing.
#[derive(Debug)]
enum Run {
    None,
    Recorded(Recorded),
    Learning(Learning),
    Armed(Armed),
}

/// Measures from its creation until it is dropped (see [`probe!`](crate::probe)).
///
/// In a build without `enable` this is a zero-sized type with the same methods and auto traits.
#[must_use = "a probe measures until its guard is dropped; bind it with `let _p = probe!(..)`"]
#[derive(Debug)]
pub struct ProbeGuard {
    run: Run,
}

impl ProbeGuard {
    /// A guard that measures nothing.
    #[inline(always)]
    pub const fn inert() -> ProbeGuard {
        ProbeGuard { run: Run::None }
    }

    const fn of(run: Run) -> ProbeGuard {
        ProbeGuard { run }
    }

    /// True when this guard is taking a sample.
    #[inline(always)]
    pub fn is_recording(&self) -> bool {
        !matches!(self.run, Run::None)
    }

    /// Ends the measurement now (the same as dropping the guard).
    #[inline(always)]
    pub fn stop(self) {}

    /// Ends the measurement without keeping a sample.
    #[inline(always)]
    pub fn discard(mut self) {
        match std::mem::replace(&mut self.run, Run::None) {
            Run::None => {}
            // The run still counts as an occurrence, so that the runs after it keep theirs.
            Run::Recorded(r) => r.session.end_recorded(&r, tag::DISCARD),
            // Learning still needs to know that the run ended, for nesting.
            Run::Learning(l) => l.session.end_learning(&l, tag::DISCARD),
            // Warmup still needs to know that the run ended, for nesting; hooks close, and a
            // device mark goes back to its pool.
            Run::Armed(armed) => armed.session.discard_run(&armed),
        }
    }
}

impl ProbeGuard {
    /// The measuring half of the drop, kept out of line so that the unarmed drop inlines to one
    /// test of a value already in a register. Each kind of run ends in a function of its own,
    /// called last, so that this one needs no stack frame and the recorded run's end only the
    /// registers it uses.
    #[inline(never)]
    fn finish(&self) {
        match &self.run {
            Run::None => {}
            Run::Recorded(r) => r.session.end_recorded(r, 0),
            Run::Learning(l) => l.session.end_learning(l, 0),
            Run::Armed(armed) => armed.session.finish_armed(armed),
        }
    }
}

impl Drop for ProbeGuard {
    #[inline(always)]
    fn drop(&mut self) {
        if !matches!(self.run, Run::None) {
            self.finish();
        }
    }
}

/// Starts a measurement of `desc`. The whole unarmed cost is this load and branch; past it, a
/// recorded run (`trace` mode) goes straight to the small function that takes its start mark,
/// the others to the one that sorts them out (whose stack frame is larger).
#[inline(always)]
pub fn enter(desc: &'static Descriptor) -> ProbeGuard {
    let raw = desc.state.raw(Relaxed);
    if raw == State::Off as u32 {
        return ProbeGuard::inert();
    }
    if raw == State::Recorded as u32 {
        return enter_recorded(desc);
    }
    enter_slow(desc, raw, true, None)
}

/// The raw state of `desc` when it takes part (anything but off): the unarmed cost of a probe that
/// names a stream is this load and branch, and its stream expression is evaluated only past it.
#[inline(always)]
pub fn active(desc: &'static Descriptor) -> Option<u32> {
    let raw = desc.state.raw(Relaxed);
    if raw == State::Off as u32 {
        None
    } else {
        Some(raw)
    }
}

/// Starts a measurement of `desc`, in state `state` (from [`active`]), whose work runs on
/// `stream`.
#[inline(never)]
pub fn enter_on<S: AsStream + ?Sized>(
    desc: &'static Descriptor,
    state: u32,
    stream: &S,
) -> ProbeGuard {
    enter_slow(desc, state, true, Some(stream.as_stream()))
}

/// `raw`: the descriptor's state as loaded, made a [`State`] only here, past the unarmed test
/// (converting it before the test costs the unarmed path two instructions). `nests`: whether
/// the run ends on the thread it started on, so that the learner may take it as the parent of
/// runs that start inside it (not so for an `async fn`, which may move).
#[inline(never)]
fn enter_slow(
    desc: &'static Descriptor,
    raw: u32,
    nests: bool,
    stream: Option<Stream>,
) -> ProbeGuard {
    // A recorded run of an `async fn` (`enter` sends its own there directly).
    if raw == State::Recorded as u32 && stream.is_none() {
        return enter_recorded(desc);
    }
    let state = State::from_raw(raw);
    match current() {
        Some(session) => {
            let stream = stream.filter(|_| session.has_device());
            ProbeGuard::of(session.start_run(desc, state, nests, stream))
        }
        None => ProbeGuard::inert(),
    }
}

/// A recorded run starts: the start mark is all it takes.
#[inline(never)]
fn enter_recorded(desc: &'static Descriptor) -> ProbeGuard {
    match current() {
        Some(session) => ProbeGuard::of(session.start_recorded(desc)),
        None => ProbeGuard::inert(),
    }
}

/// The guard of an `async fn`: keeps a sample only when the future completes.
#[derive(Debug)]
pub struct AsyncGuard {
    inner: ProbeGuard,
}

impl AsyncGuard {
    /// A guard that measures nothing.
    #[inline(always)]
    pub fn inert() -> AsyncGuard {
        AsyncGuard {
            inner: ProbeGuard::inert(),
        }
    }

    /// The future completed: keep the sample.
    #[inline(always)]
    pub fn complete(mut self) {
        let inner = std::mem::replace(&mut self.inner, ProbeGuard::inert());
        drop(inner);
    }
}

impl Drop for AsyncGuard {
    #[inline(always)]
    fn drop(&mut self) {
        // Dropped before completion (cancelled, or a panic inside a poll): no sample, but the
        // hooks still close and a device mark goes back to its pool.
        let inner = std::mem::replace(&mut self.inner, ProbeGuard::inert());
        if inner.is_recording() {
            inner.discard();
        }
    }
}

/// Starts the measurement of an `async fn` at its first poll.
#[inline(always)]
pub fn enter_async(desc: &'static Descriptor) -> AsyncGuard {
    let raw = desc.state.raw(Relaxed);
    let inner = if raw == State::Off as u32 {
        ProbeGuard::inert()
    } else {
        enter_slow(desc, raw, false, None)
    };
    AsyncGuard { inner }
}

/// [`enter_async`] for an `async fn` whose work runs on `stream`, in state `state` (from
/// [`active`]).
#[inline(never)]
pub fn enter_async_on<S: AsStream + ?Sized>(
    desc: &'static Descriptor,
    state: u32,
    stream: &S,
) -> AsyncGuard {
    AsyncGuard {
        inner: enter_slow(desc, state, false, Some(stream.as_stream())),
    }
}

// ---- the armed half: a run of an armed (or hooked) probe ----

impl Session {
    /// A run of `desc` starts; returns the measurement if this run is measured or learned (or a
    /// guard that only closes hooks).
    #[inline]
    fn start_run(
        &'static self,
        desc: &'static Descriptor,
        state: State,
        nests: bool,
        stream: Option<Stream>,
    ) -> Run {
        let hooks = if self.schedule.hooks.any {
            self.schedule.hooks.of(desc, nests)
        } else {
            0
        };
        if let (Some(device), true) = (&self.device, hooks != 0) {
            if hooks & HOOK_SYNC != 0 {
                device.synchronize();
            }
            if hooks & HOOK_NVTX != 0 {
                device.range_push(desc.index.load(Relaxed));
            }
        }
        if state == State::Recorded && stream.is_none() {
            return self.start_recorded(desc);
        }
        if state == State::Learn && self.records_learning() {
            return match self.start_learning(desc, nests, stream, hooks) {
                Some(learning) => Run::Learning(learning),
                None => Run::Armed(Armed::bare(self, HOOKS_ONLY, hooks)),
            };
        }
        match self.start_measure(desc, state, nests, stream, hooks) {
            Some(armed) => Run::Armed(armed),
            None if hooks != 0 => Run::Armed(Armed::bare(self, HOOKS_ONLY, hooks)),
            None => Run::None,
        }
    }

    #[inline]
    fn start_measure(
        &'static self,
        desc: &'static Descriptor,
        state: State,
        nests: bool,
        stream: Option<Stream>,
        hooks: u8,
    ) -> Option<Armed> {
        if state == State::Hook {
            return None;
        }
        if state == State::Learn {
            let lane = self.schedule.learn_run(desc, nests, stream)?;
            let mut armed = Armed::bare(self, LEARNING, hooks);
            if self.schedule.measure_first && lane == 0 {
                // Timed, after the learning work, as an armed run would be.
                armed.slot = CAPTURE;
                armed.start = self.clock.mark();
            }
            return Some(armed);
        }
        let probe = self
            .schedule
            .routes
            .get(desc.index.load(Relaxed) as usize)?;
        let route = stream.and_then(|s| probe.on(s));
        let event = match route {
            Some(route) => route.next_event(),
            None => probe.event_for(probe.calls.fetch_add(1, Relaxed)),
        };
        if event == NONE
            || (self.schedule.mode != Measure::Trace
                && event != self.schedule.armed_event.load(Relaxed))
        {
            return None;
        }
        let iter = self.schedule.cur_iter.load(Relaxed);
        let mut hooks = hooks;
        // Counting starts before the start mark, so that its own cost is not measured.
        if self.schedule.memory && nests && crate::instrument::alloc::begin() {
            hooks |= HOOK_MEMORY;
        }
        let (start, dstart, at) = match self.device.as_deref() {
            // The CPU-only path: nothing more than before streams existed.
            None => (self.clock.mark(), NO_MARK, Stream::new(0, 0)),
            Some(device) => self.start_on_device(device, (event, iter), route, nests, &mut hooks),
        };
        Some(Armed {
            session: self,
            event,
            slot: self.schedule.cur_slot.load(Relaxed),
            iter,
            start,
            dstart,
            stream: at,
            hooks,
        })
    }

    /// The start of a measured run in a session with a device: its kernel tag, and for an
    /// event timed on a stream, the device's memory in use (read before the start marks, so
    /// that neither time includes the call, into the slot the run fills) and the device mark.
    /// Out of line, so that the CPU path stays as it was. Returns the CPU mark, the device
    /// mark and the stream.
    #[inline(never)]
    fn start_on_device(
        &self,
        device: &dyn Device,
        (event, iter): (u32, u32),
        route: Option<&Route>,
        nests: bool,
        hooks: &mut u8,
    ) -> (u64, u64, Stream) {
        // Tags are a per-thread stack: an `async fn` may end on another thread.
        if nests && self.kernels_on.load(Relaxed) {
            device.kernels_push(crate::session::kernels::tag(event, iter));
            *hooks |= HOOK_KERNELS;
        }
        let timed = route.and_then(|route| {
            let ev = self.schedule.event(event)?;
            ev.store.samples.has_device().then_some((route, ev))
        });
        match timed {
            Some((route, ev)) => {
                // An event timed on a stream is never merged: the slot is the run's own.
                let slot = self.schedule.cur_slot.load(Relaxed) as usize;
                let used = used_on(device, route.stream);
                ev.store.samples.write_used(slot, false, used);
                let start = self.clock.mark();
                (start, device.mark_on(route.stream), route.stream)
            }
            None => (self.clock.mark(), NO_MARK, Stream::new(0, 0)),
        }
    }

    /// A measured run ends: store its marks, and close its hooks.
    #[inline(never)]
    fn finish_armed(&self, armed: &Armed) {
        if armed.event == LEARNING || armed.event == HOOKS_ONLY {
            self.discard_run(armed);
            return;
        }
        let device = self.device.as_deref();
        if let (Some(device), true) = (device, armed.dstart != NO_MARK) {
            self.finish_on_device(armed, device);
            return;
        }
        if let (Some(device), true) = (device, armed.hooks & HOOK_SYNC != 0) {
            device.synchronize();
        }
        let stop = self.clock.mark();
        let memory = (armed.hooks & HOOK_MEMORY != 0).then(crate::instrument::alloc::end);
        self.store_run(armed, stop, NO_MARK, memory.as_ref());
    }

    /// A measured run timed on a stream ends: its stop marks, then the device's memory (read
    /// after them, as the start's was read before the start marks). Out of line, so that the
    /// CPU path stays as it was.
    #[inline(never)]
    fn finish_on_device(&self, armed: &Armed, device: &dyn Device) {
        let dstop = device.mark_on(armed.stream);
        if armed.hooks & HOOK_SYNC != 0 {
            device.synchronize();
        }
        let stop = self.clock.mark();
        let memory = (armed.hooks & HOOK_MEMORY != 0).then(crate::instrument::alloc::end);
        let used = used_on(device, armed.stream);
        if let Some(event) = self.schedule.event(armed.event) {
            event
                .store
                .samples
                .write_used(armed.slot as usize, true, used);
        }
        self.store_run(armed, stop, dstop, memory.as_ref());
    }

    /// Stores a measured run's sample (`dstop`: its device stop mark, or `NO_MARK`), and
    /// closes its hooks.
    #[inline(always)]
    fn store_run(&self, armed: &Armed, stop: u64, dstop: u64, memory: Option<&Figures>) {
        if let Some(event) = self.schedule.event(armed.event) {
            event.store.record(
                armed.slot,
                armed.iter,
                (armed.start, stop),
                (armed.dstart, dstop),
                self.linear,
                memory,
            );
        }
        self.close_hooks(armed.hooks & !HOOK_SYNC);
    }

    /// A run ends without a sample: warmup's nesting, a discarded guard, or hooks only.
    fn discard_run(&self, armed: &Armed) {
        if armed.hooks & HOOK_MEMORY != 0 {
            crate::instrument::alloc::end();
        }
        if armed.event == LEARNING {
            let timed = (armed.slot == CAPTURE).then(|| (armed.start, self.clock.mark()));
            self.schedule.end_learning_run(timed);
        }
        if let (Some(device), true) = (&self.device, armed.dstart != NO_MARK) {
            device.release(armed.dstart);
        }
        self.close_hooks(armed.hooks);
    }

    fn close_hooks(&self, hooks: u8) {
        let Some(device) = self.device.as_deref() else {
            return;
        };
        if hooks & HOOK_KERNELS != 0 {
            device.kernels_pop();
        }
        if hooks & HOOK_SYNC != 0 {
            device.synchronize();
        }
        if hooks & HOOK_NVTX != 0 {
            device.range_pop();
        }
    }
}

/// The memory in use on `stream`'s device, or `NO_BYTES` when the device cannot say.
#[inline]
fn used_on(device: &dyn Device, stream: Stream) -> u64 {
    device.memory_used(stream.device()).unwrap_or(NO_BYTES)
}

// ---- recorded runs: `trace` mode, into this thread's buffer ----

impl Session {
    /// A recorded run of `desc` starts.
    #[inline(always)]
    fn start_recorded(&'static self, desc: &'static Descriptor) -> Run {
        Run::Recorded(Recorded {
            session: self,
            tag: desc.index.load(Relaxed),
            start: self.clock.mark(),
        })
    }

    /// A recorded run ends: one record into this thread's buffer (`flags`: [`tag::DISCARD`]
    /// for a run whose sample is not kept, which still counts as an occurrence).
    #[inline(never)]
    fn end_recorded(&'static self, r: &Recorded, flags: u32) {
        let stop = self.clock.mark();
        let len = stop.wrapping_sub(r.start);
        let handed_over = if len < u64::from(tag::LONG) {
            self.buffers.push_one(r.start, len as u32, r.tag | flags)
        } else {
            self.push_long(r.start, stop, r.tag | flags)
        };
        if let Some(held) = handed_over {
            self.handed_over(held);
        }
    }

    /// A run too long for a 32-bit length (about 4 s of the clock's units), or whose stop mark
    /// is before its start (clocks of two cores that disagree): its stop mark follows whole.
    #[cold]
    #[inline(never)]
    fn push_long(&self, start: u64, stop: u64, tag: u32) -> Option<usize> {
        self.buffers.push(&[
            Record {
                start,
                len: tag::LONG,
                tag: tag | tag::EXT,
            },
            Record {
                start: stop,
                len: 0,
                tag: 0,
            },
        ])
    }

    /// A run of a learning iteration of `trace` mode starts: its stream gets its lane (under
    /// the learner's lock, as in `sample` mode), a run that nests raises this thread's depth,
    /// and one that may move notes where it started. `None` for a probe whose index does not
    /// fit a record (never so below four million probes).
    fn start_learning(
        &'static self,
        desc: &'static Descriptor,
        nests: bool,
        stream: Option<Stream>,
        hooks: u8,
    ) -> Option<Learning> {
        let entry = desc.index.load(Relaxed);
        if entry > tag::ENTRY {
            return None;
        }
        let lane = stream.map_or(0, |s| self.schedule.lane_of(s));
        let (depth, origin) = if nests {
            let depth = buffer::enter_depth();
            (Some(depth), 0)
        } else {
            let at = buffer::depth();
            let origin = match self.buffers.log_index() {
                Some(log) if at > 0 => tag::origin(log, at),
                _ => 0,
            };
            (None, origin)
        };
        let level = depth.unwrap_or_else(buffer::depth);
        let mut flags = tag::LEARN | (level.min(tag::MAX_DEPTH) << tag::DEPTH_SHIFT);
        if !nests {
            flags |= tag::ASYNC;
        }
        Some(Learning {
            session: self,
            tag: entry | flags,
            lane,
            origin,
            depth,
            hooks,
            start: self.clock.mark(),
        })
    }

    /// A run of a learning iteration ends: its record (with an extension word for a stream, a
    /// run that may move, or a long run), its depth given back, its hooks closed.
    fn end_learning(&'static self, l: &Learning, flags: u32) {
        let stop = self.clock.mark();
        let len = stop.wrapping_sub(l.start);
        let ext = l.lane != 0 || l.origin != 0 || len >= u64::from(tag::LONG);
        let first = Record {
            start: l.start,
            len: if ext { tag::LONG } else { len as u32 },
            tag: l.tag | flags | if ext { tag::EXT } else { 0 },
        };
        let handed_over = if ext {
            let second = Record {
                start: stop,
                len: l.lane,
                tag: l.origin,
            };
            self.buffers.push(&[first, second])
        } else {
            self.buffers.push_one(first.start, first.len, first.tag)
        };
        if let Some(depth) = l.depth {
            buffer::leave_depth(depth);
        }
        if let Some(held) = handed_over {
            self.handed_over(held);
        }
        self.close_hooks(l.hooks);
    }
}
