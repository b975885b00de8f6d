//! Turning what a session stored into a [`Profile`]: resolution of the last samples, statistics,
//! and the facts about the run.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

use super::{lock, Control, Session};
use crate::clock::Reading;
use crate::record::{resolve_slot, IterationStarts, Resolved, NO_BYTES, RESERVOIR};
use crate::registry::registry;
use crate::schedule::Event;
use crate::schedule::{Key, MERGED};
use profiler_format::{self as json, Profile, Stats};

impl Session {
    /// The results so far.
    pub(crate) fn snapshot(&self) -> Profile {
        let mut c = lock(&self.control);
        let complete = c.finished;
        self.profile(&mut c, complete, false)
    }

    /// The results as `prof.json` holds them; `last_chance`: the run is ending, so the armed
    /// iteration's samples count and the clocks are settled first.
    pub(super) fn profile(&self, c: &mut Control, complete: bool, last_chance: bool) -> Profile {
        if last_chance && !c.finished && !self.schedule.learning.load(Relaxed) {
            // The iteration under way counts: what its runs recorded so far is settled.
            self.fold_records(c, true);
        }
        if !c.plan.armed.is_empty() && last_chance {
            let armed = c.plan.armed.clone();
            self.queue_armed(c, &armed);
        }
        if last_chance {
            self.clock.settle();
            if let Some(device) = &self.device {
                device.settle();
            }
        }
        self.gather_kernels(c, last_chance);
        self.resolve(c, last_chance);
        // Learner key -> order, to name each event's parent.
        let order_of: HashMap<Key, u32> = c
            .plan
            .order
            .iter()
            .filter_map(|&e| self.schedule.events[e as usize].get())
            .map(|ev| ((ev.entry, ev.lane, ev.occurrence), ev.order))
            .collect();
        let mut events: Vec<json::Event> = c
            .plan
            .order
            .iter()
            .filter_map(|&e| self.event_json(c, e, &order_of))
            .collect();
        events.sort_by_key(|e| e.order);
        let iterations = self.iterations_json(c);
        Profile {
            schema: json::schema_for(&events, &iterations).to_owned(),
            // In continuous mode, what is shown is complete once a window has closed.
            complete: complete || c.windows_closed > 0,
            run: self.run_json(),
            iterations,
            events,
            windows: c.windows.iter().cloned().collect(),
        }
    }

    /// The iterations completed and the wall times listed: all of them, or in continuous mode
    /// the last closed window's (what `events` shows).
    fn iterations_json(&self, c: &Control) -> json::Iterations {
        let marks = &c.iter_marks;
        let count = u64::from(c.iter_base) + (marks.len() as u64).saturating_sub(1);
        let (first, wall_ns): (u64, Vec<u64>) = match (c.windows.back(), &c.shown) {
            (Some(window), Some(_)) => (window.first_iteration, window.wall_ns.clone()),
            _ => (
                u64::from(c.iter_base),
                marks
                    .windows(2)
                    .map(|w| match self.clock.elapsed(w[0], w[1]) {
                        Reading::Ready(ns) => ns,
                        _ => 0,
                    })
                    .collect(),
            ),
        };
        json::Iterations {
            count,
            first,
            device_memory: c.step_memory.json(first, wall_ns.len()),
            wall_ns,
        }
    }

    /// Event `e` as `prof.json` writes it, or `None` if it was never allocated.
    fn event_json(&self, c: &Control, e: u32, order_of: &HashMap<Key, u32>) -> Option<json::Event> {
        let ev = self.schedule.events[e as usize].get()?;
        let entry = registry().entry(ev.entry);
        let info = &entry.desc.info;
        let (resolved, stats) = match &ev.store.totals {
            None => {
                let shown = c.shown.as_ref().unwrap_or(&c.resolved);
                let mut r = shown.get(e as usize).cloned().unwrap_or_default();
                sort_by_iteration(&mut r);
                let stats = Stats::of(&r.durations);
                (r, stats)
            }
            Some(_) => self.merged_samples(ev, &c.iter_marks, c.iter_base),
        };
        let stream = crate::schedule::lane_stream(&c.plan.streams, ev.lane)
            .filter(|_| self.device.is_some());
        let kernels = c.kernels.of(e, &resolved.iters);
        let gpu = (ev.store.samples.has_device() || kernels.is_some()).then(|| json::Gpu {
            cpu_stats: (!resolved.cpu.is_empty()).then(|| Stats::of(&resolved.cpu)),
            cpu_samples_ns: resolved.cpu.clone(),
            lost: resolved.lost,
            kernels,
            memory: device_memory_json(&resolved.device_memory),
        });
        // A merged event holds the runs from the first one past the per-occurrence events.
        let occurrence = if ev.occurrence == MERGED {
            self.schedule.route(ev.entry).events.load(Relaxed)
        } else {
            ev.occurrence
        };
        Some(json::Event {
            id: entry.id.clone(),
            name: info.name.to_owned(),
            layer: info.layer.map(str::to_owned),
            phase: info.phase.map(str::to_owned),
            kind: info.kind.as_str().to_owned(),
            module: info.module.to_owned(),
            file: info.file.to_owned(),
            line: info.line,
            occurrence,
            order: ev.order,
            device: stream.map(|s| s.device()),
            stream: stream.and_then(|&s| Some(self.device.as_ref()?.stream_id(s).to_string())),
            merged: ev.occurrence == MERGED,
            parent: ev.parent.and_then(|key| order_of.get(&key).copied()),
            samples_ns: resolved.durations,
            offsets_ns: resolved.offsets,
            sample_iters: resolved.iters,
            stats,
            gpu,
            memory: ev
                .store
                .samples
                .has_memory()
                .then(|| memory_json(&resolved.memory)),
        })
    }

    /// How the run was made.
    fn run_json(&self) -> json::Run {
        json::Run {
            program: program_name(),
            pid: std::process::id(),
            host: host_name(),
            rank: crate::config::rank(),
            mode: self.config.mode.as_str().to_owned(),
            filter: self.config.filter.source().to_owned(),
            warmup: self.config.warmup,
            repeat: self.config.repeat,
            clock: match &self.device {
                Some(device) => device.name().to_owned(),
                None => self.clock.name().to_owned(),
            },
            max_events: self.config.max_events,
            timer_floor_ns: self.floor_ns,
            profiler_version: env!("CARGO_PKG_VERSION").to_owned(),
            windows: (self.config.mode == crate::config::Mode::Continuous)
                .then_some(self.config.windows),
        }
    }

    /// A merged event: exact totals, and the reservoir for median and p90.
    fn merged_samples(&self, ev: &Event, marks: &[u64], base: u32) -> (Resolved, Stats) {
        struct Cpu<'a>(&'a [u64], u32);
        impl IterationStarts for Cpu<'_> {
            fn cpu(&self, iter: u32) -> Option<u64> {
                self.0.get(iter.checked_sub(self.1)? as usize).copied()
            }
            fn device(&self, _: u32) -> Option<u64> {
                None
            }
            fn cpu_marks(&self) -> (&[u64], u32) {
                (self.0, self.1)
            }
        }
        let mut r = Resolved::default();
        for slot in 0..RESERVOIR {
            let _ = resolve_slot(
                &self.clock,
                None,
                &ev.store,
                slot,
                &Cpu(marks, base),
                false,
                &mut r,
            );
        }
        sort_by_iteration(&mut r);
        let mut stats = Stats::of(&r.durations);
        if let (Some(t), true) = (&ev.store.totals, self.linear) {
            let count = t.count.load(Relaxed);
            if count > 0 {
                // Linear clock: raw units scale to nanoseconds by one factor.
                let unit = 1u64 << 32;
                let scale = match self.clock.elapsed(0, unit) {
                    Reading::Ready(ns) => ns as f64 / unit as f64,
                    _ => 1.0,
                };
                let n = count as f64;
                let sum = t.sum.load(Relaxed) as f64;
                let sum_sq = f64::from_bits(t.sum_sq.load(Relaxed));
                let mean = sum / n;
                let var = if count > 1 {
                    ((sum_sq - n * mean * mean) / (n - 1.0)).max(0.0)
                } else {
                    0.0
                };
                stats.count = count;
                stats.mean_ns = (mean * scale).round() as u64;
                stats.min_ns = (t.min.load(Relaxed) as f64 * scale).round() as u64;
                stats.max_ns = (t.max.load(Relaxed) as f64 * scale).round() as u64;
                stats.stddev_ns = (var.sqrt() * scale).round() as u64;
            }
        }
        (r, stats)
    }
}
fn sort_by_iteration(r: &mut Resolved) {
    let mut idx: Vec<usize> = (0..r.iters.len()).collect();
    idx.sort_by_key(|&i| (r.iters[i], r.offsets[i]));
    r.durations = idx.iter().map(|&i| r.durations[i]).collect();
    r.offsets = idx.iter().map(|&i| r.offsets[i]).collect();
    r.iters = idx.iter().map(|&i| r.iters[i]).collect();
    if r.cpu.len() == idx.len() {
        r.cpu = idx.iter().map(|&i| r.cpu[i]).collect();
    }
    if r.memory.len() == idx.len() {
        r.memory = idx.iter().map(|&i| r.memory[i]).collect();
    }
    if r.device_memory.len() == idx.len() {
        r.device_memory = idx.iter().map(|&i| r.device_memory[i]).collect();
    }
}

/// Each sample's device memory as `prof.json` lists it (from the readings at the run's start
/// and end), or `None` when the device gave none.
fn device_memory_json(used: &[(u64, u64)]) -> Option<json::DeviceMemory> {
    let known = |b: u64| (b != NO_BYTES).then_some(b);
    if used.iter().all(|&(_, end)| known(end).is_none()) {
        return None;
    }
    Some(json::DeviceMemory {
        used_bytes: used.iter().map(|&(_, end)| known(end)).collect(),
        change_bytes: used
            .iter()
            .map(|&(start, end)| Some(signed(known(end)?) - signed(known(start)?)))
            .collect(),
    })
}

/// Bytes as a signed count (no device holds 2^63 bytes).
fn signed(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// Each sample's memory figures as `prof.json` lists them.
fn memory_json(figures: &[[u64; crate::record::MEMORY_FIGURES]]) -> json::Memory {
    let list = |k: usize| figures.iter().map(|f| f[k]).collect();
    json::Memory {
        alloc_bytes: list(0),
        freed_bytes: list(1),
        allocs: list(2),
        peak_bytes: list(3),
    }
}

fn program_name() -> String {
    std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "unknown".into())
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}
