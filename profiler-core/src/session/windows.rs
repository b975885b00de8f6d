//! `continuous` mode: the schedule of `sample` mode, run again and again. Each pass is a
//! window. Closing one, on the training thread, only hands its samples and iteration marks to
//! the writer thread (`writer.rs`), which keeps each window's per-event statistics (the run's
//! first `PROF_BASELINE_WINDOWS` windows for the whole run, and the last `PROF_WINDOWS` after
//! them), makes the last window's samples what `events` shows, and rewrites `prof.json`; the
//! close then drops the iteration marks nothing needs any more, so memory stays bounded however
//! long the run.

use super::measured::Measured;
use super::on_demand::PACE_MARKS;
use super::writer::{Handed, Writer};
use crate::measure::Measuring;
use crate::select::config::Config;

/// `continuous` mode's windows.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    /// Windows closed so far (handed to the writer).
    pub closed: u64,
    /// The first iteration of the window now running.
    pub first: u32,
}

impl Windows {
    /// The pass of the schedule that began at `self.first` is complete: iteration `completed`
    /// begins the next one. The window goes to `writer`. `trace_from` is the first iteration of
    /// a trace on demand not yet taken (one waiting for its last samples), whose marks are kept.
    pub(crate) fn close(
        &mut self,
        (config, m): (&Config, &Measuring),
        writer: &'static Writer,
        run: &mut Measured,
        completed: u32,
        trace_from: Option<u32>,
    ) {
        let first = self.first;
        let kernels_from = kernels_needed_from(config, run, first);
        writer.hand_over(
            (config, m),
            Handed {
                index: self.closed,
                iterations: (first, completed),
                marks: (&run.iterations.marks, run.iterations.base),
                plan: (&run.plan.order, &run.plan.streams),
            },
            &mut run.samples.resolved,
        );
        self.closed += 1;
        // The devices' memory is listed for the window shown, as its wall times are.
        run.device.step_memory.forget_before(first);
        self.first = completed;
        run.plan.armed_iterations = 0;
        forget_before(
            run,
            completed.min(trace_from.unwrap_or(completed)),
            kernels_from,
        );
        if self.closed == 1 {
            say!(
                "profiler-core: continuous mode: first window closed after {} iterations; {} is \
                 rewritten as windows close (at most once a second), keeping the first {} and \
                 the last {}",
                completed - first,
                config.output_path().display(),
                config.baseline_windows,
                config.windows
            );
        }
    }
}

/// The oldest iteration whose kernel records a profile may still read once the window that
/// began at `first` closes: that of the oldest sample it holds (a device sample pending at the
/// previous close was resolved into it) or that is still pending (it will be shown with the
/// next window). Only with `PROF_KERNELS`; else `first`.
fn kernels_needed_from(config: &Config, run: &Measured, first: u32) -> u32 {
    if !config.kernels {
        return first;
    }
    let held = run
        .samples
        .resolved
        .iter()
        .flat_map(|r| r.iters.iter().copied());
    let pending = run.samples.pending.iter().map(|&(_, _, i)| i);
    held.chain(pending).fold(first, u32::min)
}

/// Drops what no sample will read again: iteration marks before `iter` (and before any pending
/// sample), but never the last [`PACE_MARKS`], which tell the recent pace a trace on demand is
/// named from; and the kernel records of runs before `kernels_from`.
fn forget_before(run: &mut Measured, iter: u32, kernels_from: u32) {
    let oldest = run.samples.oldest_pending().unwrap_or(iter).min(iter);
    let marks = &mut run.iterations;
    let drop = oldest.saturating_sub(marks.base) as usize;
    let drop = drop.min(marks.marks.len().saturating_sub(PACE_MARKS));
    marks.marks.drain(..drop);
    marks.base += drop as u32;
    run.device.kernels.forget_before(kernels_from);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_keeps_the_marks_that_tell_the_pace() {
        let mut run = Measured::default();
        run.iterations.marks = (0..30).map(|i| 1_000 * i).collect();
        // The window that closes now began at the iteration just completed: every older mark
        // could go, but the last ones tell a trace on demand how far ahead to start.
        forget_before(&mut run, 29, 0);
        assert_eq!(run.iterations.marks.len(), PACE_MARKS);
        assert_eq!(run.iterations.base, 21);
        assert_eq!(run.iterations.completed(), 29);
        assert_eq!(run.iterations.span(25, 2), [25_000, 26_000, 27_000]);
        // Older marks than those are dropped as before.
        run.iterations.marks.extend((30..60).map(|i| 1_000 * i));
        forget_before(&mut run, 40, 0);
        assert_eq!(run.iterations.base, 40);
        assert_eq!(run.iterations.marks.len(), 20);
    }
}
