//! A trace taken on demand in `continuous` mode: a running job is asked (SIGUSR2 from
//! `prof trigger PID`, or a line in the control file `PROF_CONTROL` names) for a `trace`-mode
//! window of its next N iterations, takes it, and goes back to sampling.
//!
//! - **Asking.** The signal handler only stores the count into [`SIGNALLED`]; `step()` takes it
//!   (one atomic swap per step). The control file is read by the writer thread (`writer.rs`),
//!   which looks at it every time it wakes (every 100 ms): a request names its iterations, and
//!   the iteration it starts at (`at=`), so that every rank of a job traces the same
//!   iterations. A request without `at=` is completed by rank 0 alone, which rewrites the file
//!   with `at=` a little ahead of its own iteration (half a second of iterations, at least two);
//!   the other ranks wait for that line.
//! - **Taking.** At the `step()` that begins the asked iteration (and once no sample of the
//!   window under way is still pending: the sampling schedule arms nothing while they land, as
//!   it arms nothing while the trace's last samples land), the sampling schedule pauses where
//!   it is and every
//!   event is armed, each iteration writing slot `k` of every event (the storage reserved for
//!   `PROF_REPEAT` samples per event, which bounds N). The samples are resolved as in any
//!   iteration, into the trace's own buffers. The sampling window then goes on where it paused;
//!   its wall times include the traced iterations.
//! - **Writing.** The training thread hands the trace (its samples and marks, moved, not
//!   copied) to the writer thread, which makes it a `trace`-mode [`Profile`] and writes it to
//!   `PROF_TRACE_OUT` (atomically, as every output): the training thread never serializes it.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::SystemTime;

use super::measured::{Apart, Iterations, Measured};
use super::results::{EventContext, Results};
use crate::instrument::clock::Reading;
use crate::measure::Measuring;
use crate::schedule::Plan;
use crate::select::config::Config;
use crate::store::samples::Resolved;
use crate::sync::lock;
use profiler_format::{self as json, Profile};

/// Iterations asked for by SIGUSR2 (the value `sigqueue` carried, 1 to `u32::MAX`;
/// [`DEFAULT_COUNT`] for a plain `kill`), 0 when none is waiting. Written by the signal
/// handler, taken by `step()`.
pub(crate) static SIGNALLED: AtomicU64 = AtomicU64::new(0);

/// [`SIGNALLED`]'s value for a request that names no count ("`PROF_REPEAT` iterations"): above
/// every count, so that any count from 1 to `u32::MAX` can be asked for.
pub(crate) const DEFAULT_COUNT: u64 = u64::MAX;

/// How many steps a finished trace waits for samples still pending (a run on another thread
/// not yet ended, a device behind) before it is written without them.
const DRAIN_STEPS: u32 = 4;

/// How many steps a trace that is due waits, the sampling schedule paused, for the samples of
/// the window under way still pending (a device an iteration or more behind) before the
/// request is given up.
const START_STEPS: u32 = 64;

/// What asked for a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    /// Iterations asked for (`None`: `PROF_REPEAT`); the trace takes at most `PROF_REPEAT`
    /// ([`profiler_format::control::iterations_taken`]).
    pub iterations: Option<u32>,
    /// The iteration to start at (`None`: the next).
    pub at: Option<u32>,
    /// `signal` or `control file`.
    pub source: &'static str,
    /// The request's `id=`.
    pub id: Option<String>,
}

/// A trace under way.
#[derive(Debug)]
pub(crate) struct TraceWindow {
    request: Request,
    /// Its first iteration.
    first: u32,
    /// Its iterations.
    len: u32,
    /// Iterations armed so far.
    armed: u32,
    /// Steps waited, once all its iterations ran, for pending samples.
    drained: u32,
    /// Its samples, per event (schedule index).
    resolved: Vec<Resolved>,
}

/// What the sampling schedule does in the iteration a `step()` begins, once the trace on
/// demand had its say ([`OnDemand::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    /// It goes on: its window closes if complete, and it arms the iteration.
    Sample,
    /// Its window closes if complete, and it arms nothing: samples still pending (of the
    /// window, before a trace begins; of the trace, once it ended) hold slots that a run it
    /// armed would write.
    Wait,
    /// The trace armed the iteration: nothing else.
    Trace,
}

/// The cold-path state of traces on demand.
#[derive(Debug, Default)]
pub(crate) struct OnDemand {
    /// A request not yet started.
    request: Option<Request>,
    /// The trace under way.
    window: Option<TraceWindow>,
    /// Steps the request due has waited for pending samples.
    waited: u32,
}

impl OnDemand {
    /// A trace's iterations are armed now (its samples are not counted as the sampling
    /// schedule's).
    pub(crate) fn tracing(&self) -> bool {
        self.window.as_ref().is_some_and(|w| w.armed < w.len)
    }

    /// The first iteration of the trace held (under way, or waiting for its last samples):
    /// its marks are read when it is taken, so a window's close keeps them.
    pub(crate) fn held_from(&self) -> Option<u32> {
        self.window.as_ref().map(|w| w.first)
    }
}

/// A trace handed to the writer thread.
#[derive(Debug)]
pub(crate) struct Taken {
    window: TraceWindow,
    /// The marks at which its iterations began, and the one at which the last ended.
    marks: Vec<u64>,
    /// The plan's events in execution order, and its streams.
    order: Vec<u32>,
    streams: Vec<crate::instrument::device::Stream>,
    /// The run was ending: the trace may be cut short.
    complete: bool,
}

/// What the writer thread last saw of the control file, so that a request is acted on once.
#[derive(Debug, Default)]
pub(crate) struct ControlWatch {
    /// Modification time and text of the file when last read (`None`: not read yet).
    seen: Option<(Option<SystemTime>, String)>,
    /// A bad request was reported (its text), so that it is said once.
    reported: Option<String>,
    /// The file could not be taken as a control file (not a regular file, too big, not
    /// UTF-8: what [`profiler_format::control::read`] said), and this was reported; cleared
    /// once it reads again, so that each problem is said once while it lasts.
    unreadable: Option<String>,
}

impl ControlWatch {
    /// The control file as the session starts: a request it holds then was asked of an
    /// earlier run, and is not acted on. It is read as every later look reads it (without
    /// blocking, at most `MAX_CONTROL_BYTES`); one that cannot be read counts as empty, and
    /// its problem is reported at the writer's first look if it lasts.
    fn at_start(path: Option<&str>) -> ControlWatch {
        let seen = path.map(|p| match profiler_format::control::read(Path::new(p)) {
            Ok(c) => (c.modified, c.text),
            Err(_) => (None, String::new()),
        });
        ControlWatch {
            seen,
            reported: None,
            unreadable: None,
        }
    }
}

impl OnDemand {
    /// `step()` in `continuous` mode, once the iteration's samples are queued: starts, arms or
    /// ends a trace on demand (a trace that ends goes to `hand`), and says what the sampling
    /// schedule does in the iteration `completed` begins.
    pub(crate) fn step(
        &mut self,
        (config, m): (&Config, &Measuring),
        run: &mut Measured,
        completed: u32,
        hand: impl FnOnce(Taken),
    ) -> Turn {
        let signalled = SIGNALLED.swap(0, Relaxed);
        if signalled != 0 {
            self.request = Some(Request {
                iterations: u32::try_from(signalled).ok(),
                at: None,
                source: "signal",
                id: None,
            });
        }
        if let Some(window) = &mut self.window {
            if window.armed < window.len {
                run.arm_every(m, completed, window.armed);
                return Turn::Trace;
            }
            let last = window.first.saturating_add(window.len);
            let waiting = run.samples.pending.iter().any(|&(_, _, i)| i < last);
            if waiting && window.drained < DRAIN_STEPS {
                // The sampling schedule stays paused: a run it armed would write a slot that a
                // sample of the trace still holds.
                window.drained += 1;
                return Turn::Wait;
            }
            if let Some(taken) = self.take(m, run) {
                hand(taken);
            }
        }
        let due = match &self.request {
            Some(r) => r.at.is_none_or(|at| at <= completed),
            None => false,
        };
        if !due {
            return Turn::Sample;
        }
        // The slots a trace writes may still hold a pending sample of the window under way:
        // the sampling schedule pauses (nothing armed) while they land. A device an iteration
        // behind (PROF_SYNC=0) leaves a sample pending at every step, so sampling on, the
        // trace would never begin.
        if !run.samples.pending.is_empty() {
            if self.waited < START_STEPS {
                self.waited += 1;
                m.schedule.rest_every(&mut run.plan);
                return Turn::Wait;
            }
            self.waited = 0;
            if let Some(request) = self.request.take() {
                say!(
                    "profiler-core: trace on demand (asked by {}): samples of the iterations \
                     before it were still pending after {START_STEPS} steps (the device did \
                     not reach them); the request is given up, sampling goes on",
                    request.source
                );
            }
            return Turn::Sample;
        }
        self.waited = 0;
        let Some(request) = self.request.take() else {
            return Turn::Sample;
        };
        let repeat = config.repeat;
        let len = profiler_format::control::iterations_taken(request.iterations, repeat);
        if let Some(asked) = request.iterations.filter(|&n| n > len) {
            say!(
                "profiler-core: trace on demand: {asked} iterations asked, {len} taken (a trace \
                 holds at most PROF_REPEAT iterations: the room each event has; raise \
                 PROF_REPEAT for longer ones)"
            );
        }
        if let Some(at) = request.at.filter(|&at| at < completed) {
            say!(
                "profiler-core: trace on demand: asked for iteration {at}, seen at iteration \
                 {completed}: the trace begins there"
            );
        }
        self.window = Some(TraceWindow {
            request,
            first: completed,
            len,
            armed: 0,
            drained: 0,
            resolved: vec![Resolved::default(); run.plan.allocated],
        });
        // The sampling schedule pauses: its armed probe rests with the others after the trace.
        run.arm_every(m, completed, 0);
        Turn::Trace
    }

    /// A trace's iteration completed.
    pub(crate) fn iteration_done(&mut self, m: &Measuring, plan: &mut Plan) {
        if let Some(window) = &mut self.window {
            window.armed += 1;
            if window.armed == window.len {
                m.schedule.rest_every(plan);
            }
        }
    }

    /// The iterations of the trace under way, whose samples are kept apart.
    pub(crate) fn apart(&mut self) -> Option<Apart<'_>> {
        let w = self.window.as_mut()?;
        Some(Apart {
            first: w.first,
            len: w.len,
            resolved: &mut w.resolved,
        })
    }

    /// Takes the trace out of the cold-path state, to be written (by the writer thread, or by
    /// the end of the run, which marks it incomplete if it was cut short).
    pub(crate) fn take(&mut self, m: &Measuring, run: &mut Measured) -> Option<Taken> {
        let window = self.window.take()?;
        if window.armed < window.len {
            m.schedule.rest_every(&mut run.plan);
        }
        let taken = Taken {
            marks: run
                .iterations
                .span(window.first, window.armed as usize)
                .to_vec(),
            order: run.plan.order.clone(),
            streams: run.plan.streams.clone(),
            complete: window.armed == window.len,
            window,
        };
        Some(taken)
    }

    /// A request read from the control file (by the writer thread): one that names its
    /// iteration waits for it; one that does not is completed by rank 0, which names an
    /// iteration a little ahead of its own and returns the line to write back.
    pub(crate) fn ask(
        &mut self,
        request: Request,
        m: &Measuring,
        iterations: &Iterations,
    ) -> Option<profiler_format::control::Request> {
        if request.at.is_some() {
            self.request = Some(request);
            return None;
        }
        if crate::output::rank() != 0 {
            return None; // rank 0 names the iteration: its line with `at=` comes next
        }
        let at = iterations
            .completed()
            .saturating_add(lead_iterations(m, &iterations.marks));
        Some(profiler_format::control::Request {
            iterations: request.iterations,
            at: Some(at),
            id: request.id,
        })
    }
}

/// `continuous` mode's traces on their way out: those taken and waiting for the writer
/// thread, and what the writer last saw of the control file (`PROF_CONTROL`).
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    /// Traces taken, waiting for the writer thread.
    queue: Mutex<VecDeque<Taken>>,
    /// Held while traces are written: the end of the run, which writes those still queued,
    /// waits for one the writer thread is writing (it is out of the queue, not yet on disk).
    writing: Mutex<()>,
    /// What the writer last saw of the control file.
    watch: Mutex<ControlWatch>,
}

impl Outbox {
    /// The outbox of a run whose control file (if any) is at `control`.
    pub(crate) fn at_start(control: Option<&str>) -> Outbox {
        Outbox {
            queue: Mutex::default(),
            writing: Mutex::default(),
            watch: Mutex::new(ControlWatch::at_start(control)),
        }
    }

    /// Hands a trace to the writer thread when one runs (`to_writer`), or writes it now.
    pub(crate) fn post(&self, taken: Taken, to_writer: bool, results: &Results<'_>) {
        if to_writer {
            lock(&self.queue).push_back(taken);
        } else {
            write_trace(results, taken);
        }
    }

    /// The writer thread (or the end of the run): writes the traces handed over. The end's
    /// call returns once every trace handed over is on disk, the one the writer thread was
    /// writing included.
    pub(crate) fn write_queued(&self, results: &Results<'_>) {
        let _writing = lock(&self.writing);
        loop {
            let Some(taken) = lock(&self.queue).pop_front() else {
                return;
            };
            write_trace(results, taken);
        }
    }

    /// The writer thread: looks at the control file; a new request in it is returned.
    pub(crate) fn look(&self, config: &Config) -> Option<Request> {
        let path = Path::new(config.control.as_deref()?);
        let mut watch = lock(&self.watch);
        // Read at every look (a line, every 100 ms, off the training thread): the modification
        // time alone can miss a write, since a file created and then written within one tick of
        // the file system's clock keeps the time it had when the look found it empty. Read
        // without blocking and at most MAX_CONTROL_BYTES: a FIFO or a device put in the file's
        // place is passed over (said once), and the writer goes on rewriting the results.
        let (modified, text) = match profiler_format::control::read(path) {
            Ok(c) => {
                watch.unreadable = None;
                (c.modified, c.text)
            }
            Err(why) => {
                if watch.unreadable.as_deref() != Some(&why) {
                    say!(
                        "profiler-core: warning: PROF_CONTROL={}: {why}; it is passed over \
                         until it holds a request again (write `trace iterations=N`, or use \
                         `prof trigger --control`)",
                        path.display()
                    );
                    watch.unreadable = Some(why);
                }
                return None;
            }
        };
        // A new text is a new request; so is the same one written again.
        let changed = watch
            .seen
            .as_ref()
            .is_none_or(|(m, t)| *t != text || (*m != modified && !text.trim().is_empty()));
        watch.seen = Some((modified, text.clone()));
        if !changed {
            return None;
        }
        match profiler_format::control::parse(&text) {
            Ok(Some(asked)) => Some(Request {
                iterations: asked.iterations,
                at: asked.at,
                source: "control file",
                id: asked.id,
            }),
            Ok(None) => None,
            Err(why) => {
                if watch.reported.as_deref() != Some(&text) {
                    watch.reported = Some(text);
                    say!(
                        "profiler-core: warning: PROF_CONTROL={}: {why}; the request is ignored \
                         (write `trace iterations=N`, or use `prof trigger --control`)",
                        path.display()
                    );
                }
                None
            }
        }
    }
}

/// Rank 0 names the iteration a request starts at: `line` replaces the control file, and is
/// read at the next look, by every rank alike. Only while the file still holds the request
/// `line` completes: a request written since (another `prof trigger`) is left for the next look,
/// not overwritten (the window is the read and the rename, microseconds, where it was the
/// writer's whole turn).
pub(crate) fn name_start(config: &Config, line: &profiler_format::control::Request) {
    let Some(path) = config.control.as_deref().map(Path::new) else {
        return;
    };
    let held = profiler_format::control::read(path)
        .ok()
        .and_then(|c| profiler_format::control::parse(&c.text).ok().flatten());
    let same = held.is_some_and(|now| {
        now.at.is_none() && now.iterations == line.iterations && now.id == line.id
    });
    if !same {
        return;
    }
    if let Err(why) = profiler_format::write_atomic(path, line.line().as_bytes()) {
        say!(
            "profiler-core: warning: PROF_CONTROL={}: cannot name the iteration the trace \
             starts at ({why}); the request is ignored",
            path.display()
        );
    }
}

/// Makes a taken trace a `trace`-mode profile and writes it.
pub(crate) fn write_trace(results: &Results<'_>, taken: Taken) {
    let Taken {
        mut window,
        marks,
        order,
        streams,
        complete,
    } = taken;
    let m = results.measuring;
    let wall_ns: Vec<u64> = marks
        .windows(2)
        .map(|w| match m.clock.elapsed(w[0], w[1]) {
            Reading::Ready(ns) => ns,
            _ => 0,
        })
        .collect();
    let order_of = results.order_of(&order);
    let context = EventContext {
        order_of: &order_of,
        streams: &streams,
        kernels: None,
    };
    let mut events: Vec<json::Event> = order
        .iter()
        .filter_map(|&e| {
            let ev = m.schedule.event(e)?;
            if ev.store.totals.is_some() {
                return None; // merged: its runs went to the run's exact totals
            }
            let resolved = std::mem::take(window.resolved.get_mut(e as usize)?);
            Some(results.event_json(e, resolved, None, &context))
        })
        .collect();
    events.sort_by_key(|e| e.order);
    let first = u64::from(window.first);
    let iterations = json::Iterations {
        count: first + wall_ns.len() as u64,
        first,
        device_memory: Vec::new(),
        wall_ns,
    };
    let mut run = results.run_json();
    run.mode = "trace".into();
    run.repeat = window.len;
    run.windows = None;
    run.on_demand = Some(json::OnDemand {
        source: window.request.source.to_owned(),
        asked_iterations: window.request.iterations.unwrap_or(results.config.repeat),
        asked_at: window.request.at.map(u64::from),
        id: window.request.id.clone(),
    });
    let profile = Profile {
        schema: json::schema_for(&events, &iterations).to_owned(),
        complete,
        run,
        iterations,
        events,
        windows: Vec::new(),
        before_loop: Vec::new(),
        cpu_samples: None,
    };
    let path = results.config.trace_output_path(window.first);
    let last = window.first.saturating_add(window.armed);
    match crate::output::write_profile(&profile, &path) {
        Ok(()) => say!(
            "profiler-core: trace on demand ({}): iterations {}..{last}{} in {}",
            window.request.source,
            window.first,
            if complete {
                ""
            } else {
                " (cut short: the run ended)"
            },
            path.display()
        ),
        Err(why) => say!(
            "profiler-core: error: the trace on demand of iterations {}..{last} could not be \
             written to {} ({why})",
            window.first,
            path.display()
        ),
    }
}

/// How many of the last iteration marks tell the recent pace (8 iterations): the iteration
/// marks a `continuous` window's close drops never include them.
pub(crate) const PACE_MARKS: usize = 9;

/// How far ahead rank 0 sets a request's start when no iteration has been timed yet (the
/// first iterations of the run).
const UNPACED_LEAD: u32 = 10;

/// Iterations in half a second at the recent pace (at least two): how far ahead rank 0 sets a
/// request's start, so that every rank sees the request before it.
fn lead_iterations(m: &Measuring, marks: &[u64]) -> u32 {
    let recent = &marks[marks.len().saturating_sub(PACE_MARKS)..];
    let ns: Vec<u64> = recent
        .windows(2)
        .filter_map(|w| match m.clock.elapsed(w[0], w[1]) {
            Reading::Ready(ns) => Some(ns),
            _ => None,
        })
        .collect();
    lead_at_pace(ns)
}

/// [`lead_iterations`] from the recent iterations' times: half a second at their median, plus
/// two; [`UNPACED_LEAD`] when none is known (never the most a lead may be, which at an unknown
/// pace could be hours of training).
fn lead_at_pace(mut ns: Vec<u64>) -> u32 {
    ns.sort_unstable();
    let Some(&median) = ns.get(ns.len() / 2) else {
        return UNPACED_LEAD;
    };
    let lead = 500_000_000u64.div_ceil(median.max(1)) + 2;
    lead.min(1_000_000) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_is_half_a_second_at_the_recent_pace() {
        assert_eq!(lead_at_pace(vec![1_000_000; 8]), 502);
        // The median, not the mean: one slow iteration does not shorten it.
        assert_eq!(lead_at_pace(vec![1_000_000, 1_000_000, 400_000_000]), 502);
        assert_eq!(lead_at_pace(vec![2_000_000_000]), 3);
        // The fastest loops are capped.
        assert_eq!(lead_at_pace(vec![0, 0, 1]), 1_000_000);
    }

    /// Rank 0 completes the request the file holds; one written since is not overwritten
    /// (before, a second `prof trigger` between rank 0's read and its rewrite was lost).
    #[test]
    fn naming_the_start_never_overwrites_a_newer_request() {
        let dir = std::env::temp_dir().join(format!("prof-name-start-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ctl");
        let config = Config {
            control: Some(path.display().to_string()),
            ..Config::default()
        };
        let asked = |id: &str| profiler_format::control::Request {
            iterations: Some(5),
            at: None,
            id: Some(id.to_owned()),
        };
        let named = |id: &str| profiler_format::control::Request {
            at: Some(40),
            ..asked(id)
        };
        std::fs::write(&path, asked("a").line()).unwrap();
        name_start(&config, &named("a"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            named("a").line(),
            "the request it completes is rewritten"
        );
        std::fs::write(&path, asked("b").line()).unwrap();
        name_start(&config, &named("a"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, asked("b").line(), "the newer request was overwritten");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unknown_pace_gives_a_short_lead_never_the_cap() {
        // A request seen as a continuous window began, before the fix, named an iteration a
        // million ahead: the trace came after minutes of training, or never.
        assert_eq!(lead_at_pace(Vec::new()), UNPACED_LEAD);
    }
}
