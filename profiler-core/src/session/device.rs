//! What the device adds to a run, on the cold path: the marks of each iteration's start on the
//! streams, the focused capture and the kernel records (switched on after warmup, off at the
//! end), kernel attribution (`kernels.rs`) and the devices' memory at each step
//! (`step_memory.rs`).

use std::sync::atomic::Ordering::Relaxed;

use super::kernels::Attribution;
use super::step_memory::StepMemory;
use crate::instrument::device::Stream;
use crate::measure::Measuring;
use crate::select::config::Config;

/// What the device adds.
#[derive(Debug, Default)]
pub(crate) struct DeviceState {
    /// Per-stream iteration starts on the device: (iteration, lane, mark), not yet released.
    pub stream_marks: Vec<(u32, u32, u64)>,
    /// Kernel attribution (`PROF_KERNELS`).
    pub kernels: Attribution,
    /// The memory in use on each device in use, at each step.
    pub step_memory: StepMemory,
    /// `cuProfilerStop` was called.
    capture_stopped: bool,
}

impl DeviceState {
    /// Warmup is over: the focused capture and the kernel records start.
    pub(crate) fn begin_measuring(config: &Config, m: &Measuring) {
        let Some(device) = &m.device else {
            return;
        };
        if config.capture {
            device.capture(true);
        }
        if config.kernels {
            let on = device.kernels_enable(true);
            m.kernels_on.store(on, Relaxed);
        }
    }

    /// The schedule is complete (or the program ends): the capture and the kernel records stop.
    /// `signal`: a signal ends the process, and the device is waited for only so long.
    pub(crate) fn end_measuring(&mut self, config: &Config, m: &Measuring, signal: bool) {
        let Some(device) = &m.device else {
            return;
        };
        if config.capture && !self.capture_stopped {
            self.capture_stopped = true;
            device.capture(false);
        }
        if m.kernels_on.swap(false, Relaxed) {
            // Turning the records off flushes them, and CUPTI's forced flush hands over the
            // records of kernels still running incomplete (dropped, or with no timestamps):
            // the last measured iteration's kernels are waited for first (once, here).
            if signal {
                device.settle_within(super::SIGNAL_SETTLE);
            } else {
                device.settle();
            }
            device.kernels_enable(false);
        }
    }

    /// Moves the device's activity records into the attribution (`PROF_KERNELS`). `last`: no
    /// more will come.
    pub(crate) fn gather_kernels(&mut self, config: &Config, m: &Measuring, last: bool) {
        let Some(device) = &m.device else {
            return;
        };
        if !config.kernels {
            return;
        }
        let mut kernels = Vec::new();
        let mut correlations = Vec::new();
        device.drain_kernels(&mut kernels, &mut correlations);
        self.kernels.absorb(kernels, correlations, last);
    }

    /// The step that ended iteration `iter`: the memory in use on every device in use, when a
    /// run was seen on a device's stream (the streams the warmup saw, then those planned:
    /// `planned`). Out of line: `step()`'s frame (which every call sets up) stays as it was.
    #[inline(never)]
    pub(crate) fn record_memory(&mut self, m: &Measuring, planned: &[Stream], iter: u32) {
        let Some(device) = m.device.as_deref() else {
            return;
        };
        let mut devices = self.step_memory.devices_list();
        if m.schedule.learning.load(Relaxed) {
            let learner = crate::sync::lock(&m.schedule.learner);
            devices.extend(learner.streams().iter().map(|s| s.device()));
        } else {
            devices.extend(planned.iter().map(|s| s.device()));
        }
        self.step_memory.record_step(iter, devices, device);
    }
}
