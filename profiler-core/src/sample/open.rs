//! The open events: while CPU sampling is on (`PROF_CPU_SAMPLE`), every run of a probe on a
//! thread that it starts and ends on publishes itself on that thread's stack of open events, so
//! that the `SIGPROF` handler (`sample/cpu.rs`) tags each sample with the innermost one, and so
//! that [`open_event`] can say which event the calling code runs in.
//!
//! With publication off nothing here runs: an unarmed probe stays one load and a branch
//! (`probes/timer.rs`). With it on, a probe that would be [`State::Off`](crate::register::descriptor::State)
//! is [`State::Tagged`](crate::register::descriptor::State) instead and leaves the fast path
//! for [`push`] and, at its drop, [`pop`]: a few thread-local stores, no allocation, lock or
//! system call. Armed and recorded runs push and pop too.
//!
//! The stack is a thread-local, const-initialized, fixed-size array (no allocation, no
//! destructor, so a signal handler may read it at any time, thread exit included). An entry is
//! written before the depth that makes it visible, with a compiler fence between them: the
//! handler runs on the same thread, so it always sees a consistent prefix. Runs nested deeper
//! than [`CAPACITY`] are counted (the depth goes on) but not stored: their samples are tagged
//! with the deepest stored run, and marked truncated.
//!
//! The depth is reset when a thread first pushes in a new publication period ([`GENERATION`]),
//! so that a run left open when sampling stopped cannot mis-tag the next session's samples.

use std::cell::Cell;
use std::sync::atomic::{
    compiler_fence, AtomicU32,
    Ordering::{Relaxed, SeqCst},
};

use crate::register::descriptor::Descriptor;
use crate::register::registry::registry;

/// Runs stored per thread; deeper ones are counted, not stored.
pub(crate) const CAPACITY: usize = 128;

/// The publication period: a thread whose stack belongs to an older one starts it empty.
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// One thread's open runs.
pub(crate) struct OpenStack {
    /// The publication period this stack belongs to.
    generation: Cell<u32>,
    /// Open runs (may exceed [`CAPACITY`]); written after the entry it makes visible.
    depth: AtomicU32,
    /// Registry index of each open run, outermost first.
    entries: [AtomicU32; CAPACITY],
    /// The publication period in which this thread's sampler registration was tried
    /// (`sample/cpu.rs`).
    pub(crate) registered: Cell<u32>,
}

thread_local! {
    /// This thread's open runs (const-initialized and without a destructor: safe to read from a
    /// signal handler).
    pub(crate) static OPEN: OpenStack = const {
        OpenStack {
            generation: Cell::new(0),
            depth: AtomicU32::new(0),
            entries: [const { AtomicU32::new(0) }; CAPACITY],
            registered: Cell::new(0),
        }
    };
}

/// Whether runs publish themselves.
#[inline(always)]
pub(crate) fn publishing() -> bool {
    crate::register::descriptor::tagging()
}

/// Starts publication (before the session stores its probes' states, so that the probes that
/// take no part become `Tagged`).
#[cfg_attr(
    not(all(feature = "cpu-sample", target_os = "linux")),
    allow(dead_code)
)]
pub(crate) fn start_publishing() {
    GENERATION.fetch_add(1, SeqCst);
    crate::register::descriptor::set_tagging(true);
}

/// Ends publication: every `Tagged` probe goes back to `Off`.
#[cfg_attr(
    not(all(feature = "cpu-sample", target_os = "linux")),
    allow(dead_code)
)]
pub(crate) fn stop_publishing() {
    crate::register::descriptor::set_tagging(false);
    for entry in registry().iter() {
        entry.desc.state.untag();
    }
}

/// The current publication period.
pub(crate) fn generation() -> u32 {
    GENERATION.load(Relaxed)
}

/// `desc` opens on this thread (called only while publishing).
#[inline]
pub(crate) fn push(desc: &'static Descriptor) {
    let index = desc.index.load(Relaxed);
    let _ = OPEN.try_with(|open| {
        let generation = GENERATION.load(Relaxed);
        if open.generation.get() != generation {
            open.generation.set(generation);
            open.depth.store(0, Relaxed);
            compiler_fence(SeqCst);
        }
        let depth = open.depth.load(Relaxed);
        if let Some(slot) = open.entries.get(depth as usize) {
            slot.store(index, Relaxed);
        }
        // The entry is in place before the depth that shows it.
        compiler_fence(SeqCst);
        open.depth.store(depth.saturating_add(1), Relaxed);
        if open.registered.get() != generation {
            crate::sample::register_thread(open);
        }
    });
}

/// The innermost run open on this thread closes.
#[inline]
pub(crate) fn pop() {
    let _ = OPEN.try_with(|open| {
        let depth = open.depth.load(Relaxed);
        if depth > 0 && open.generation.get() == GENERATION.load(Relaxed) {
            open.depth.store(depth - 1, Relaxed);
        }
    });
}

/// The innermost open run of this thread's stack, as the signal handler reads it: `(registry
/// index + 1, truncated)`, 0 for none.
#[inline(always)]
pub(crate) fn innermost(open: &OpenStack) -> (u32, bool) {
    let depth = open.depth.load(Relaxed) as usize;
    compiler_fence(SeqCst);
    if depth == 0 || open.generation.get() != GENERATION.load(Relaxed) {
        return (0, false);
    }
    let stored = depth.min(CAPACITY);
    (open.entries[stored - 1].load(Relaxed) + 1, depth > CAPACITY)
}

/// The innermost annotated event open on the calling thread (cold path).
///
/// Known only while the open events are published, that is while CPU sampling is on
/// (`PROF_CPU_SAMPLE`); `None` otherwise, and outside every annotated run. A run of an
/// `async fn` is not published (its future may move between threads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenEvent {
    /// The probe's unique id (as in `prof.json` and `--list-probes`).
    pub id: String,
    /// The probe's name.
    pub name: &'static str,
    /// The `layer` key, if given.
    pub layer: Option<&'static str>,
    /// The `phase` key, if given.
    pub phase: Option<&'static str>,
}

/// The innermost annotated event open on the calling thread, if the open events are published
/// (CPU sampling on) and one is open. See [`OpenEvent`].
pub fn open_event() -> Option<OpenEvent> {
    if !publishing() {
        return None;
    }
    let (tag, _) = OPEN.try_with(innermost).ok()?;
    let index = tag.checked_sub(1)? as usize;
    let reg = registry();
    (index < reg.len()).then(|| {
        let entry = reg.entry(index);
        OpenEvent {
            id: entry.id.clone(),
            name: entry.desc.info.name,
            layer: entry.desc.info.layer,
            phase: entry.desc.info.phase,
        }
    })
}
