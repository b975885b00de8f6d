//! The open events: while CPU sampling is on (`PROF_CPU_SAMPLE`), every run of a probe on a
//! thread that it starts and ends on publishes itself on that thread's stack of open events, so
//! that the `SIGPROF` handler (`sample/cpu.rs`) tags each sample with the innermost one, and so
//! that [`open_event`] can say which event the calling code runs in.
//!
//! With publication off nothing here runs: an unarmed probe stays one load and a branch
//! (`probes/timer.rs`). With it on, every probe's stored state carries
//! [`PUBLISHED`](crate::register::descriptor::PUBLISHED), so that its runs leave the fast
//! paths for the general entry, which [`push`]es the run and makes a guard whose drop
//! [`pop`]s it: a few thread-local stores, no allocation, lock or system call. A probe that
//! takes no part does only that.
//!
//! The stack is a thread-local, const-initialized, fixed-size array (no allocation, no
//! destructor, so a signal handler may read it at any time, thread exit included). A push
//! marks its slot [`PENDING`], then raises the depth, then writes the entry, with a compiler
//! fence between each: the handler runs on the same thread, so it always sees a consistent
//! prefix (a pending top is read as the run below it), and a probe inside a signal handler
//! that interrupts a push or a pop takes the next slot up instead of overwriting the
//! interrupted one (`push_and_pop_survive_an_interruption_at_every_step`). Runs nested deeper
//! than [`CAPACITY`] are counted (the depth goes on) but not stored: their samples are tagged
//! with the deepest stored run, and marked truncated.
//!
//! Each push and pop also stores the thread's new innermost run in a process-wide cell
//! (`LAST`): the samples of a thread that opens no event (a pool's worker) inherit it
//! ([`innermost_or_inherited`]).
//!
//! The depth is reset when a thread first pushes in a new publication period ([`GENERATION`]),
//! so that a run left open when sampling stopped cannot mis-tag the next session's samples.

use std::cell::Cell;
use std::sync::atomic::{
    compiler_fence, AtomicBool, AtomicU32,
    Ordering::{Relaxed, SeqCst},
};

use crate::register::descriptor::Descriptor;
use crate::register::registry::registry;

/// Runs stored per thread; deeper ones are counted, not stored.
pub(crate) const CAPACITY: usize = 128;

/// A slot whose push has raised the depth but not yet written the entry.
const PENDING: u32 = u32::MAX;

/// Registry index + 1 of the innermost event open on the thread that last opened or closed
/// one (0: none): the tag inherited by the samples of threads that run no annotated code (a
/// pool's workers doing a layer's work; see [`innermost_or_inherited`]).
static LAST: AtomicU32 = AtomicU32::new(0);

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

/// Whether the program asked for the open events without sampling
/// ([`publish_open_events`](crate::publish_open_events)(crate::publish_open_events)).
static WANTED: AtomicBool = AtomicBool::new(false);

/// Whether the program asked for the open events
/// ([`publish_open_events`](crate::publish_open_events)(crate::publish_open_events)): each session publishes them from its
/// start.
pub(crate) fn wanted() -> bool {
    WANTED.load(Relaxed)
}

/// The program asks for the open events from now on.
pub(crate) fn want() {
    WANTED.store(true, SeqCst);
}

/// Starts publication, unless it is on: the states stored from now on carry
/// [`PUBLISHED`](crate::register::descriptor::PUBLISHED), and those stored before get it.
pub(crate) fn start_publishing() {
    if crate::register::descriptor::set_tagging(true) {
        return;
    }
    GENERATION.fetch_add(1, SeqCst);
    LAST.store(0, SeqCst);
    for entry in registry().iter() {
        entry.desc.state.tag();
    }
}

/// Ends publication: every probe's state loses [`PUBLISHED`](crate::register::descriptor::PUBLISHED).
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
        interrupt(0);
        let slot = open.entries.get(depth as usize);
        if let Some(slot) = slot {
            // A handler that reads the slot before the entry is written sees it pending, not
            // a stale entry from an earlier run.
            slot.store(PENDING, Relaxed);
        }
        compiler_fence(SeqCst);
        interrupt(1);
        // The depth is raised before the entry is written: a handler's push that interrupts
        // this one from here on takes the slot above, and one that came before has already
        // popped back to `depth` (its writes to this slot are overwritten below).
        open.depth.store(depth.saturating_add(1), Relaxed);
        compiler_fence(SeqCst);
        interrupt(2);
        if let Some(slot) = slot {
            slot.store(index, Relaxed);
        }
        compiler_fence(SeqCst);
        interrupt(3);
        LAST.store(index + 1, Relaxed);
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
        interrupt(4);
        if depth > 0 && open.generation.get() == GENERATION.load(Relaxed) {
            open.depth.store(depth - 1, Relaxed);
            // The run below is this thread's innermost now.
            let below = (depth as usize - 1)
                .checked_sub(1)
                .map(|i| open.entries[i.min(CAPACITY - 1)].load(Relaxed))
                .filter(|&entry| entry != PENDING)
                .map_or(0, |entry| entry + 1);
            LAST.store(below, Relaxed);
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
    // Pending entries (pushes interrupted before they wrote theirs) are not open yet: the run
    // below is the innermost.
    for slot in open.entries[..stored].iter().rev() {
        let entry = slot.load(Relaxed);
        if entry != PENDING {
            return (entry + 1, depth > CAPACITY);
        }
    }
    (0, false)
}

/// [`innermost`], or, for a thread that has opened no event in this publication period (a
/// pool's worker doing a layer's work, a thread of the framework), the innermost event of the
/// thread that last opened or closed one, marked inherited: `(registry index + 1, truncated,
/// inherited)`. What a handler reads.
#[cfg_attr(
    not(all(feature = "cpu-sample", target_os = "linux")),
    allow(dead_code)
)]
#[inline(always)]
pub(crate) fn innermost_or_inherited(open: &OpenStack) -> (u32, bool, bool) {
    if open.generation.get() != GENERATION.load(Relaxed) {
        let last = LAST.load(Relaxed);
        return (last, false, last != 0);
    }
    let (tag, deep) = innermost(open);
    (tag, deep, false)
}

/// Test hook: runs the installed interruption at step `step` of a push (0 to 3) or a pop (4),
/// as a signal handler could.
#[cfg(test)]
fn interrupt(step: u8) {
    if let Some(handler) = tests::INTERRUPT.with(|i| i.take()) {
        handler(step);
    }
}

/// Without tests, there is nothing to run.
#[cfg(not(test))]
#[inline(always)]
fn interrupt(_: u8) {}

/// The innermost open event of the calling thread that has a `layer` key (see [`open_layer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenLayer {
    /// The event's probe, numbered as in this session's registry (stable for the process's
    /// life: a cache may key on it).
    pub index: u32,
    /// The probe's name.
    pub name: &'static str,
    /// The `layer` key.
    pub layer: &'static str,
    /// The `phase` key, if given.
    pub phase: Option<&'static str>,
}

/// The innermost event open on the calling thread that has a `layer` key (an event without
/// one, such as a `probe!` inside a layer, is looked through), if the open events are
/// published ([`publish_open_events`](crate::publish_open_events), or CPU sampling on). No allocation or lock: a few
/// thread-local loads and the registry's entries.
pub fn open_layer() -> Option<OpenLayer> {
    if !publishing() {
        return None;
    }
    OPEN.try_with(|open| {
        let depth = open.depth.load(Relaxed) as usize;
        compiler_fence(SeqCst);
        if depth == 0 || open.generation.get() != GENERATION.load(Relaxed) {
            return None;
        }
        let reg = registry();
        open.entries[..depth.min(CAPACITY)]
            .iter()
            .rev()
            .map(|slot| slot.load(Relaxed))
            .filter(|&index| index != PENDING && (index as usize) < reg.len())
            .find_map(|index| {
                let info = &reg.entry(index as usize).desc.info;
                info.layer.map(|layer| OpenLayer {
                    index,
                    name: info.name,
                    layer,
                    phase: info.phase,
                })
            })
    })
    .ok()
    .flatten()
}

/// The innermost annotated event open on the calling thread (cold path).
///
/// Known only while the open events are published, that is while CPU sampling is on
/// (`PROF_CPU_SAMPLE`) or after [`publish_open_events`](crate::publish_open_events); `None` otherwise, and outside every annotated run. A run of an
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
/// (CPU sampling on, or [`publish_open_events`](crate::publish_open_events)) and one is open. See [`OpenEvent`].
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::descriptor::{Kind, StaticInfo};

    thread_local! {
        /// The interruption the next push or pop runs (once) at its step.
        pub(super) static INTERRUPT: Cell<Option<fn(u8)>> = const { Cell::new(None) };
        /// The step at which the installed interruption acts.
        static AT: Cell<u8> = const { Cell::new(0) };
    }

    fn anchor() -> &'static str {
        "anchor"
    }

    /// A descriptor with registry index `index`, as a session would number it.
    fn descriptor(index: u32) -> &'static Descriptor {
        let desc = Box::leak(Box::new(Descriptor::new(StaticInfo {
            name: "probe",
            layer: None,
            phase: None,
            kind: Kind::Probe,
            module: "m",
            file: "f",
            line: 1,
            work: 0,
            anchor,
        })));
        desc.index.store(index, Relaxed);
        desc
    }

    fn top() -> u32 {
        OPEN.with(innermost).0
    }

    /// What a signal handler with a probe does: push, check that its run is the innermost,
    /// pop. Only at step `AT`: the hook fires at each step, once.
    fn handler(step: u8) {
        if step != AT.with(Cell::get) {
            // Not this step: put the hook back for the next one.
            INTERRUPT.with(|i| i.set(Some(handler)));
            return;
        }
        static HANDLER: std::sync::OnceLock<&'static Descriptor> = std::sync::OnceLock::new();
        let desc = *HANDLER.get_or_init(|| descriptor(99));
        push(desc);
        assert_eq!(top(), 100, "the handler's run is the innermost inside it");
        pop();
    }

    #[test]
    fn push_and_pop_survive_an_interruption_at_every_step() {
        std::thread::spawn(|| {
            let outer = descriptor(1);
            let inner = descriptor(7);
            for step in 0..=4u8 {
                push(outer);
                AT.with(|a| a.set(step));
                INTERRUPT.with(|i| i.set(Some(handler)));
                push(inner);
                assert_eq!(top(), 8, "after a push interrupted at step {step}");
                pop();
                assert_eq!(top(), 2, "after a pop interrupted at step {step}");
                INTERRUPT.with(|i| i.set(None));
                pop();
                assert_eq!(top(), 0, "step {step}");
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_pending_top_reads_as_the_run_below() {
        std::thread::spawn(|| {
            push(descriptor(3));
            OPEN.with(|open| {
                let depth = open.depth.load(Relaxed);
                open.entries[depth as usize].store(PENDING, Relaxed);
                open.depth.store(depth + 1, Relaxed);
                assert_eq!(innermost(open), (4, false));
                open.depth.store(depth, Relaxed);
            });
            pop();
            OPEN.with(|open| {
                open.entries[0].store(PENDING, Relaxed);
                open.depth.store(1, Relaxed);
                assert_eq!(innermost(open), (0, false));
                open.depth.store(0, Relaxed);
            });
        })
        .join()
        .unwrap();
    }
}
