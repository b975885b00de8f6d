//! `continuous` mode: the schedule of `sample` mode, run again and again. Each pass is a
//! window; closing one keeps its per-event statistics (at most `PROF_WINDOWS` windows, the
//! oldest dropped first), makes its samples what `events` shows, drops iteration marks nothing
//! needs any more (so memory stays bounded however long the run), and hands the results to a
//! background thread that rewrites `prof.json` (at most once a second; the training thread only
//! builds the profile).

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::time::{Duration, Instant};

use super::{lock, Control, Session};
use crate::clock::Reading;
use crate::record::Resolved;
use profiler_format::{Stats, Window, WindowEvent};

/// The least time between two background writes.
const WRITE_INTERVAL: Duration = Duration::from_secs(1);

impl Session {
    /// The pass of the schedule that began at `c.window_first_iter` is complete: iteration
    /// `completed` begins the next one.
    pub(super) fn close_window(&'static self, c: &mut Control, completed: u32) {
        let first = c.window_first_iter;
        let wall_ns: Vec<u64> = (first..completed)
            .map(|i| {
                let at = |i: u32| {
                    i.checked_sub(c.iter_base)
                        .and_then(|k| c.iter_marks.get(k as usize).copied())
                };
                match (at(i), at(i + 1)) {
                    (Some(a), Some(b)) => match self.clock.elapsed(a, b) {
                        Reading::Ready(ns) => ns,
                        _ => 0,
                    },
                    _ => 0,
                }
            })
            .collect();
        let fresh = vec![Resolved::default(); c.resolved.len()];
        let resolved = std::mem::replace(&mut c.resolved, fresh);
        let mut events: Vec<WindowEvent> = c
            .plan
            .order
            .iter()
            .filter_map(|&e| {
                let ev = self.schedule.events[e as usize].get()?;
                if ev.store.totals.is_some() {
                    return None; // merged: exact totals over the whole run, in `events`
                }
                let durations = &resolved[e as usize].durations;
                Some(WindowEvent {
                    order: ev.order,
                    samples_ns: durations.clone(),
                    stats: Stats::of(durations),
                })
            })
            .collect();
        events.sort_by_key(|e| e.order);
        c.windows.push_back(Window {
            index: c.windows_closed,
            first_iteration: u64::from(first),
            wall_ns,
            events,
        });
        c.windows_closed += 1;
        while c.windows.len() > self.config.windows as usize {
            c.windows.pop_front();
        }
        c.shown = Some(resolved);
        // The devices' memory is listed for the window shown, as its wall times are.
        c.step_memory.forget_before(first);
        c.window_first_iter = completed;
        c.plan.armed_iterations = 0;
        self.forget_before(c, completed);
        if c.windows_closed == 1 {
            eprintln!(
                "profiler-core: continuous mode: first window closed after {} iterations; {} is \
                 rewritten as windows close (at most once a second), keeping the last {}",
                completed - first,
                self.config.output_path().display(),
                self.config.windows
            );
        }
        self.write_in_background(c);
    }

    /// Drops what no sample will read again: iteration marks before `iter` (and before any
    /// pending sample), and the kernel records of runs before the window just closed.
    fn forget_before(&self, c: &mut Control, iter: u32) {
        let oldest = c
            .pending
            .iter()
            .map(|&(_, _, i)| i)
            .min()
            .unwrap_or(iter)
            .min(iter);
        let drop = oldest.saturating_sub(c.iter_base) as usize;
        let drop = drop.min(c.iter_marks.len().saturating_sub(1));
        c.iter_marks.drain(..drop);
        c.iter_base += drop as u32;
        if let Some(window) = c.windows.back() {
            c.kernels.forget_before(window.first_iteration as u32);
        }
    }

    /// Hands the results so far to a thread that writes them, unless one is still writing or
    /// the last write was less than [`WRITE_INTERVAL`] ago (the next window, or the end, will
    /// carry them).
    fn write_in_background(&'static self, c: &mut Control) {
        if c.last_background_write
            .is_some_and(|t| t.elapsed() < WRITE_INTERVAL)
            || self.background_writing.load(Acquire)
        {
            return;
        }
        c.last_background_write = Some(Instant::now());
        let generation = c.windows_closed;
        let profile = self.profile(c, true, false);
        self.background_writing.store(true, Release);
        let spawned = std::thread::Builder::new()
            .name("profiler-writer".into())
            .spawn(move || {
                self.write_generation(generation, &profile);
                self.background_writing.store(false, Release);
            });
        if spawned.is_err() {
            // No thread to be had: the end writes everything.
            self.background_writing.store(false, Release);
        }
    }

    /// Writes `profile` unless a newer generation is on disk already. Background failures are
    /// reported once; the end's write reports its own.
    fn write_generation(&self, generation: u64, profile: &profiler_format::Profile) {
        let mut last = lock(&self.written_generation);
        if generation <= *last {
            return;
        }
        let path = self.config.output_path();
        match crate::output::write_profile(profile, &path) {
            Ok(()) => *last = generation,
            Err(why) => {
                if !self.background_failed.swap(true, Relaxed) {
                    eprintln!(
                        "profiler-core: error: cannot write the results to {}: {why} (continuous \
                         mode goes on, and tries again as the next windows close)",
                        path.display()
                    );
                }
            }
        }
    }
}
