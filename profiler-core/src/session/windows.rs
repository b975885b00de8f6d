//! `continuous` mode: the schedule of `sample` mode, run again and again. Each pass is a
//! window. Closing one, on the training thread, only hands its samples and iteration marks to
//! the writer thread (`writer.rs`), which keeps each window's per-event statistics (the run's
//! first `PROF_BASELINE_WINDOWS` windows for the whole run, and the last `PROF_WINDOWS` after
//! them), makes the last window's samples what `events` shows, and rewrites `prof.json`; the
//! close then drops the iteration marks nothing needs any more, so memory stays bounded however
//! long the run.

use super::{Control, Session};

impl Session {
    /// The pass of the schedule that began at `c.iterations.window_first` is complete: iteration
    /// `completed` begins the next one.
    pub(super) fn close_window(&'static self, c: &mut Control, completed: u32) {
        let first = c.iterations.window_first;
        let kernels_from = self.kernels_needed_from(c, first);
        let Control {
            iterations,
            plan,
            samples,
            ..
        } = c;
        self.hand_over(
            iterations.windows_closed,
            (first, completed),
            (&iterations.marks, iterations.base),
            (&plan.order, &plan.streams),
            &mut samples.resolved,
        );
        c.iterations.windows_closed += 1;
        // The devices' memory is listed for the window shown, as its wall times are.
        c.device.step_memory.forget_before(first);
        c.iterations.window_first = completed;
        c.plan.armed_iterations = 0;
        self.forget_before(c, completed, kernels_from);
        if c.iterations.windows_closed == 1 {
            eprintln!(
                "profiler-core: continuous mode: first window closed after {} iterations; {} is \
                 rewritten as windows close (at most once a second), keeping the first {} and \
                 the last {}",
                completed - first,
                self.config.output_path().display(),
                self.config.baseline_windows,
                self.config.windows
            );
        }
    }

    /// The oldest iteration whose kernel records a profile may still read once the window that
    /// began at `first` closes: that of the oldest sample it holds (a device sample pending at
    /// the previous close was resolved into it) or that is still pending (it will be shown with
    /// the next window). Only with `PROF_KERNELS`; else `first`.
    fn kernels_needed_from(&self, c: &Control, first: u32) -> u32 {
        if !self.config.kernels {
            return first;
        }
        let held = c
            .samples
            .resolved
            .iter()
            .flat_map(|r| r.iters.iter().copied());
        let pending = c.samples.pending.iter().map(|&(_, _, i)| i);
        held.chain(pending).fold(first, u32::min)
    }

    /// Drops what no sample will read again: iteration marks before `iter` (and before any
    /// pending sample), and the kernel records of runs before `kernels_from`.
    fn forget_before(&self, c: &mut Control, iter: u32, kernels_from: u32) {
        let oldest = c
            .samples
            .pending
            .iter()
            .map(|&(_, _, i)| i)
            .min()
            .unwrap_or(iter)
            .min(iter);
        let drop = oldest.saturating_sub(c.iterations.base) as usize;
        let drop = drop.min(c.iterations.marks.len().saturating_sub(1));
        c.iterations.marks.drain(..drop);
        c.iterations.base += drop as u32;
        c.device.kernels.forget_before(kernels_from);
    }
}
