//! Device memory at each `step()`: the bytes in use on every device in use (one a run was seen
//! on a stream of), per iteration, kept beside the iteration marks and listed in `prof.json`
//! aligned with `iterations.wall_ns`.
//!
//! Memory stays bounded as the marks' does: one value per device per iteration, for the
//! iterations the file lists (`continuous` mode drops those before the window shown).

use crate::instrument::device::Device;
use crate::store::samples::NO_BYTES;
use profiler_format::DeviceUsage;

/// The bytes in use on each device in use, at each step.
#[derive(Debug, Default)]
pub(crate) struct StepMemory {
    /// The devices in use, in the order they were first seen.
    devices: Vec<u32>,
    /// `used[d][k]`: the bytes in use on `devices[d]` at the step that ended iteration
    /// `base + k` ([`NO_BYTES`]: not read). Every list has the same length.
    used: Vec<Vec<u64>>,
    /// The iteration `used[_][0]` is of.
    base: u32,
    /// The devices in use, gathered at each step (kept to reuse its room).
    scratch: Vec<u32>,
}

impl StepMemory {
    /// How many iterations are recorded (from `base`).
    fn len(&self) -> usize {
        self.used.first().map_or(0, Vec::len)
    }

    /// Records the step that ended iteration `iter`: the memory in use on each of `devices`
    /// (a device seen for the first time gets [`NO_BYTES`] for the iterations before).
    fn record(&mut self, iter: u32, devices: &[u32], device: &dyn Device) {
        if self.devices.is_empty() {
            self.base = iter;
        }
        let len = self.len();
        for &d in devices {
            if !self.devices.contains(&d) {
                self.devices.push(d);
                self.used.push(vec![NO_BYTES; len]);
            }
        }
        // The step of every iteration is recorded once, in order; should one be missed, the
        // lists stay aligned with the iterations all the same.
        let at = (iter.saturating_sub(self.base) as usize).max(len);
        for (d, used) in self.devices.iter().zip(&mut self.used) {
            used.resize(at, NO_BYTES);
            let bytes = if devices.contains(d) {
                device.memory_used(*d).unwrap_or(NO_BYTES)
            } else {
                NO_BYTES
            };
            used.push(bytes);
        }
    }

    /// How many iterations are kept.
    pub(crate) fn kept(&self) -> usize {
        self.len()
    }

    /// Drops the iterations before `iter` (`continuous` mode: before the window shown).
    pub(crate) fn forget_before(&mut self, iter: u32) {
        let drop = (iter.saturating_sub(self.base) as usize).min(self.len());
        for used in &mut self.used {
            used.drain(..drop);
        }
        self.base += drop as u32;
    }

    /// The devices' series for the `count` iterations from `first`, as `iterations.device_memory`
    /// lists them: one per device with at least one reading there, by device ordinal.
    pub(crate) fn json(&self, first: u64, count: usize) -> Vec<DeviceUsage> {
        let mut out: Vec<DeviceUsage> = self
            .devices
            .iter()
            .zip(&self.used)
            .map(|(&device, used)| DeviceUsage {
                device,
                used_bytes: (0..count as u64)
                    .map(|k| {
                        let i = (first + k).checked_sub(u64::from(self.base))?;
                        let bytes = *used.get(usize::try_from(i).ok()?)?;
                        (bytes != NO_BYTES).then_some(bytes)
                    })
                    .collect(),
            })
            .filter(|u| u.used_bytes.iter().any(Option::is_some))
            .collect();
        out.sort_by_key(|u| u.device);
        out
    }
}

impl StepMemory {
    /// An empty list to gather the devices in use at a step into (its room kept from the last).
    pub(crate) fn devices_list(&mut self) -> Vec<u32> {
        let mut devices = std::mem::take(&mut self.scratch);
        devices.clear();
        devices
    }

    /// The step that ended iteration `iter`: the memory in use on each of `devices` (a list
    /// from [`StepMemory::devices_list`], in any order, repeats allowed).
    pub(crate) fn record_step(&mut self, iter: u32, mut devices: Vec<u32>, device: &dyn Device) {
        devices.sort_unstable();
        devices.dedup();
        if !devices.is_empty() {
            self.record(iter, &devices, device);
        }
        self.scratch = devices;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SimDevice;

    #[test]
    fn steps_stay_aligned_as_devices_join_and_old_iterations_go() {
        let sim = SimDevice::new();
        let mut m = StepMemory::default();
        sim.allocate(0, 100);
        m.record(3, &[0], &sim);
        sim.allocate(1, 7);
        m.record(4, &[0, 1], &sim);
        sim.free(0, 40);
        // Iteration 5's step was not recorded: the lists stay aligned.
        m.record(6, &[0, 1], &sim);
        let series = |m: &StepMemory, first, count| {
            m.json(first, count)
                .into_iter()
                .map(|u| (u.device, u.used_bytes))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            series(&m, 3, 4),
            vec![
                (0, vec![Some(100), Some(100), None, Some(60)]),
                (1, vec![None, Some(7), None, Some(7)]),
            ]
        );
        // Listed from before the first step recorded: nothing there.
        assert_eq!(series(&m, 2, 2)[0].1, vec![None, Some(100)]);
        m.forget_before(4);
        assert_eq!(series(&m, 3, 2)[0].1, vec![None, Some(100)]);
        assert_eq!(series(&m, 4, 3)[1].1, vec![Some(7), None, Some(7)]);
        // A device with no reading in the range is left out.
        assert_eq!(series(&m, 5, 1), Vec::new());
    }
}
