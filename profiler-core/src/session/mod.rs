//! One profiling run: its configuration, clock, events and schedule state.
//!
//! The hot path (`probe.rs`) reaches a session only through [`Session::start_run`] and
//! [`Session::finish_run`], and only for probes the schedule has armed or is learning. The cold
//! path lives beside this file: `step.rs` (warmup, arming at `step()`, resolution, the end) and
//! `results.rs` (turning what was stored into a [`Profile`](crate::Profile)).

mod results;
mod step;

use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub(crate) use crate::clock::ActiveClock;
use crate::config::{Config, Mode};
use crate::probe::{Armed, Descriptor, ARMED, LEARN, LEARNING, NONE};
use crate::record::{Resolved, Store};
use crate::registry::registry;
use crate::schedule::Learner;

/// A scheduled event and its storage.
#[derive(Debug)]
pub(crate) struct Event {
    entry: usize,
    occurrence: u32,
    order: u32,
    /// The learner key of the run that contained this one, if any.
    parent: Option<(usize, u32)>,
    store: Store,
}

/// Cold-path state, behind one lock.
#[derive(Debug, Default)]
struct Control {
    /// `iter_marks[i]` is the mark at which iteration `i` began; one more than completed.
    iter_marks: Vec<u64>,
    /// Iterations in which something was armed, after warmup.
    armed_iterations: u64,
    /// Event indices in execution order.
    schedule: Vec<u32>,
    /// Events allocated in `Session::events`.
    allocated: usize,
    /// Events armed in the iteration now running.
    armed: Vec<u32>,
    /// The probe armed in `sample` mode.
    armed_entry: Option<usize>,
    /// Slots written (or about to be) and not yet resolved.
    pending: Vec<(u32, u32)>,
    /// Resolved samples, per event.
    resolved: Vec<Resolved>,
    /// Selected probes not seen yet; they stay in learning state.
    late: Vec<usize>,
    finished: bool,
    written: bool,
    /// Bytes reserved for samples so far.
    sample_bytes: usize,
    /// Events left out because their storage would pass the budget.
    events_over_budget: usize,
    warned_budget: bool,
}

/// One profiling run.
#[derive(Debug)]
pub struct Session {
    config: Config,
    clock: ActiveClock,
    linear: bool,
    selected: Vec<usize>,
    events: Box<[OnceLock<Event>]>,
    armed_event: AtomicU32,
    cur_slot: AtomicU32,
    cur_iter: AtomicU32,
    learning: AtomicBool,
    done: AtomicBool,
    /// Median of an empty measurement: what every sample includes besides the code measured.
    floor_ns: u64,
    control: Mutex<Control>,
    learner: Mutex<Learner>,
}

/// Locks, shrugging off poisoning: a panic elsewhere must not take the profiler down with it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

thread_local! {
    /// The runs open on this thread during warmup, innermost last, as learner keys.
    static OPEN: std::cell::RefCell<Vec<(usize, u32)>> = const { std::cell::RefCell::new(Vec::new()) };
}

static CURRENT: AtomicPtr<Session> = AtomicPtr::new(std::ptr::null_mut());

/// The running session, if any.
#[inline(always)]
pub(crate) fn current() -> Option<&'static Session> {
    let ptr = CURRENT.load(Acquire);
    // SAFETY: a non-null pointer in CURRENT always comes from `Box::leak` in `install`, and
    // sessions are never freed, so the reference is valid for 'static.
    unsafe { ptr.as_ref() }
}

/// Makes `session` the running one. The previous session (tests start several) is disarmed
/// and left allocated: guards still in flight may point to it.
pub(crate) fn install(session: Session) -> &'static Session {
    let leaked: &'static Session = Box::leak(Box::new(session));
    let old = CURRENT.swap(leaked as *const Session as *mut Session, AcqRel);
    // SAFETY: as in `current`.
    if let Some(old) = unsafe { old.as_ref() } {
        old.done.store(true, Relaxed);
    }
    leaked.arm_initial();
    leaked
}

impl Session {
    /// A session over the registered probes that `config.filter` selects.
    pub(crate) fn new(config: Config, clock: ActiveClock) -> Session {
        let reg = registry();
        for entry in &reg.entries {
            entry.desc.reset();
        }
        let selected: Vec<usize> = if config.mode == Mode::Off {
            Vec::new()
        } else {
            (0..reg.entries.len())
                .filter(|&i| reg.entries[i].selected_by(&config.filter))
                .collect()
        };
        let capacity = config.max_events as usize + selected.len();
        let learning = config.mode != Mode::Off && config.warmup > 0;
        let control = Control {
            iter_marks: vec![clock.mark()],
            late: if learning {
                Vec::new()
            } else {
                selected.clone()
            },
            ..Control::default()
        };
        Session {
            floor_ns: clock.empty_measurement_ns(),
            linear: clock.is_linear(),
            learner: Mutex::new(Learner::new(config.max_events)),
            config,
            clock,
            selected,
            events: (0..capacity).map(|_| OnceLock::new()).collect(),
            armed_event: AtomicU32::new(NONE),
            cur_slot: AtomicU32::new(0),
            cur_iter: AtomicU32::new(0),
            learning: AtomicBool::new(learning),
            done: AtomicBool::new(false),
            control: Mutex::new(control),
        }
    }

    /// The configuration this session runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How many registered probes the filter selected.
    pub fn selected_count(&self) -> usize {
        self.selected.len()
    }

    fn desc(&self, entry: usize) -> &'static Descriptor {
        registry().entries[entry].desc
    }

    /// Puts every selected probe in learning state.
    fn arm_initial(&self) {
        for &entry in &self.selected {
            self.desc(entry).state.store(LEARN, Release);
        }
    }

    /// True once the schedule is complete.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Relaxed)
    }

    // ---- the slow path of a probe (called from probe.rs) ----

    /// A run of `desc` starts; returns the measurement if this run is the armed event.
    #[inline]
    pub(crate) fn start_run(
        &'static self,
        desc: &'static Descriptor,
        state: u32,
        nests: bool,
    ) -> Option<Armed> {
        let occ = desc.calls.fetch_add(1, Relaxed);
        if state != ARMED {
            // Learning. During warmup the cold path notes the run and its parent; after warmup
            // a probe not seen yet is only counted, lock-free, and picked up at `step()`.
            if !self.learning.load(Relaxed) {
                return None;
            }
            let entry = registry().position(desc)?;
            let parent = OPEN.with(|open| open.borrow().last().copied());
            let key = lock(&self.learner).observe(entry, occ, parent);
            if !nests {
                return None;
            }
            OPEN.with(|open| open.borrow_mut().push(key));
            return Some(Armed {
                session: self,
                event: LEARNING,
                slot: 0,
                iter: 0,
                start: 0,
            });
        }
        let event = desc.event_for(occ);
        if event == NONE
            || (self.config.mode == Mode::Sample && event != self.armed_event.load(Relaxed))
        {
            return None;
        }
        Some(Armed {
            session: self,
            event,
            slot: self.cur_slot.load(Relaxed),
            iter: self.cur_iter.load(Relaxed),
            start: self.clock.mark(),
        })
    }

    /// A measured run ends: store its marks.
    #[inline]
    pub(crate) fn finish_run(&self, armed: &Armed) {
        if armed.event == LEARNING {
            OPEN.with(|open| {
                open.borrow_mut().pop();
            });
            return;
        }
        let stop = self.clock.mark();
        if let Some(event) = self
            .events
            .get(armed.event as usize)
            .and_then(OnceLock::get)
        {
            event
                .store
                .record(armed.slot, armed.iter, armed.start, stop, self.linear);
        }
    }
}
