//! Turning what a session stored into a [`Profile`]: resolution of the last samples, statistics,
//! and the facts about the run.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

use super::measured::Measured;
use super::writer::{Archive, Shown};
use crate::instrument::clock::Reading;
use crate::instrument::device::Stream;
use crate::measure::Measuring;
use crate::register::registry::registry;
use crate::schedule::Event;
use crate::schedule::{Key, MERGED};
use crate::select::config::Config;
use crate::store::samples::{resolve_slot, IterationStarts, Resolved, NO_BYTES, RESERVOIR};
use profiler_format::{self as json, Profile, Stats};

/// What a profile is made with: the configuration, what the run measured with, and the timer's
/// floor.
pub(crate) struct Results<'a> {
    /// The run's configuration.
    pub config: &'a Config,
    /// The schedule, clock and device the run measured with.
    pub measuring: &'a Measuring,
    /// Median of an empty measurement.
    pub floor_ns: u64,
}

/// What an event's JSON is made with besides its samples.
pub(crate) struct EventContext<'a> {
    /// Learner key -> order, to name each event's parent.
    pub order_of: &'a HashMap<Key, u32>,
    /// The plan's streams, to name each event's stream.
    pub streams: &'a [Stream],
    /// Where its kernels are read (`None`: added later, see [`Results::live`]).
    pub kernels: Option<&'a super::kernels::Attribution>,
}

/// What a `continuous`-mode profile takes from the cold-path state ([`Results::live`]).
pub(crate) struct Live {
    /// Iterations completed.
    count: u64,
    /// The merged events, whole.
    merged: Vec<json::Event>,
    /// The kernels of the shown events: (schedule index, kernels).
    kernels: Vec<(u32, json::Kernels)>,
    /// The devices' memory at the shown window's steps.
    device_memory: Vec<json::DeviceUsage>,
    /// The events that ran only before the loop.
    before_loop: Vec<json::BeforeLoop>,
}

impl Results<'_> {
    /// The results as `prof.json` holds them before any window closed (or not in `continuous`
    /// mode): the samples stored so far.
    pub(crate) fn stored(&self, c: &Measured, complete: bool) -> Profile {
        let order_of = self.order_of(&c.plan.order);
        let mut events: Vec<json::Event> = c
            .plan
            .order
            .iter()
            .filter_map(|&e| {
                let ev = self.measuring.schedule.events[e as usize].get()?;
                let (resolved, stats) = match &ev.store.totals {
                    None => (
                        c.samples
                            .resolved
                            .get(e as usize)
                            .cloned()
                            .unwrap_or_default(),
                        None,
                    ),
                    Some(_) => {
                        let (r, stats) =
                            self.merged_samples(ev, &c.iterations.marks, c.iterations.base);
                        (r, Some(stats))
                    }
                };
                let context = EventContext {
                    order_of: &order_of,
                    streams: &c.plan.streams,
                    kernels: Some(&c.device.kernels),
                };
                Some(self.event_json(e, resolved, stats, &context))
            })
            .collect();
        events.sort_by_key(|e| e.order);
        let iterations = self.iterations_json(c);
        Profile {
            schema: json::schema_for(&events, &iterations).to_owned(),
            complete,
            run: self.run_json(),
            iterations,
            events,
            windows: Vec::new(),
            before_loop: self.before_loop_json(c),
            cpu_samples: None,
        }
    }

    /// The events that ran only before the loop, each with its first run's duration and start
    /// (from start-up), when it was timed and the clock can say.
    fn before_loop_json(&self, c: &Measured) -> Vec<json::BeforeLoop> {
        let ns = |start: u64, stop: u64| match self.measuring.clock.elapsed(start, stop) {
            Reading::Ready(ns) => Some(ns),
            _ => None,
        };
        c.plan
            .before_loop
            .iter()
            .map(|b| {
                let entry = registry().entry(b.entry);
                let info = &entry.desc.info;
                let stream = crate::schedule::lane_stream(&c.plan.streams, b.lane)
                    .filter(|_| self.measuring.device.is_some());
                let (duration_ns, offset_ns) = match b.run {
                    Some((start, stop)) => (ns(start, stop), ns(c.plan.origin, start)),
                    None => (None, None),
                };
                json::BeforeLoop {
                    id: entry.id.clone(),
                    name: info.name.to_owned(),
                    layer: info.layer.map(str::to_owned),
                    phase: info.phase.map(str::to_owned),
                    kind: info.kind.as_str().to_owned(),
                    module: info.module.to_owned(),
                    file: info.file.to_owned(),
                    line: info.line,
                    occurrence: b.occurrence,
                    merged: b.merged,
                    device: stream.map(|s| s.device()),
                    stream: stream.and_then(|&s| {
                        Some(self.measuring.device.as_ref()?.stream_id(s).to_string())
                    }),
                    duration_ns,
                    offset_ns,
                }
            })
            .collect()
    }

    /// Learner key -> order of the events of `order`, to name each event's parent.
    pub(crate) fn order_of(&self, order: &[u32]) -> HashMap<Key, u32> {
        order
            .iter()
            .filter_map(|&e| self.measuring.schedule.events[e as usize].get())
            .map(|ev| ((ev.entry, ev.lane, ev.occurrence), ev.order))
            .collect()
    }

    /// What a `continuous`-mode profile needs from the cold-path state (taken under its lock,
    /// kept short): the iterations completed, the merged events (exact totals over the whole
    /// run), and the kernels attributed to the samples `shown`.
    pub(crate) fn live(&self, c: &Measured, shown: &Shown) -> Live {
        let count =
            u64::from(c.iterations.base) + (c.iterations.marks.len() as u64).saturating_sub(1);
        let order_of = self.order_of(&c.plan.order);
        let merged = c
            .plan
            .order
            .iter()
            .filter_map(|&e| {
                let ev = self.measuring.schedule.events[e as usize].get()?;
                ev.store.totals.as_ref()?;
                let (r, stats) = self.merged_samples(ev, &c.iterations.marks, c.iterations.base);
                let context = EventContext {
                    order_of: &order_of,
                    streams: &c.plan.streams,
                    kernels: Some(&c.device.kernels),
                };
                Some(self.event_json(e, r, Some(stats), &context))
            })
            .collect();
        let kernels = if self.config.kernels {
            shown
                .order()
                .iter()
                .filter_map(|&e| Some((e, c.device.kernels.of(e, &shown.resolved(e)?.iters)?)))
                .collect()
        } else {
            Vec::new()
        };
        Live {
            count,
            merged,
            kernels,
            device_memory: c
                .device
                .step_memory
                .json(shown.first_iteration(), shown.wall_ns.len()),
            before_loop: self.before_loop_json(c),
        }
    }

    /// A `continuous`-mode profile: the last closed window's events (with `live`'s kernels and
    /// merged events), its iterations, and every window kept.
    pub(crate) fn assemble(&self, archive: &Archive, live: Live, complete: bool) -> Profile {
        let mut events = Vec::new();
        let (mut first, mut wall_ns) = (0, Vec::new());
        if let Some(shown) = &archive.shown {
            (first, wall_ns) = (shown.first_iteration(), shown.wall_ns.clone());
            let order_of = self.order_of(shown.order());
            let context = EventContext {
                order_of: &order_of,
                streams: shown.streams(),
                kernels: None,
            };
            for &e in shown.order() {
                let Some(ev) = self.measuring.schedule.events[e as usize].get() else {
                    continue;
                };
                if ev.store.totals.is_some() {
                    continue; // merged: in `live`
                }
                let resolved = shown.resolved(e).cloned().unwrap_or_default();
                let mut event = self.event_json(e, resolved, None, &context);
                if let Some((_, k)) = live.kernels.iter().find(|(k, _)| *k == e) {
                    event.gpu.get_or_insert_with(json::Gpu::default).kernels = Some(k.clone());
                }
                events.push(event);
            }
        }
        events.extend(live.merged);
        events.sort_by_key(|e| e.order);
        let iterations = json::Iterations {
            count: live.count,
            first,
            device_memory: live.device_memory,
            wall_ns,
        };
        Profile {
            schema: json::schema_for(&events, &iterations).to_owned(),
            complete,
            run: self.run_json(),
            iterations,
            events,
            windows: archive.windows(),
            before_loop: live.before_loop,
            cpu_samples: archive.shown.as_ref().and_then(|s| s.cpu_samples.clone()),
        }
    }

    /// The iterations completed and the wall times of all of them (those since `iter_base`).
    fn iterations_json(&self, c: &Measured) -> json::Iterations {
        let marks = &c.iterations.marks;
        let count = u64::from(c.iterations.base) + (marks.len() as u64).saturating_sub(1);
        let wall_ns: Vec<u64> = marks
            .windows(2)
            .map(|w| match self.measuring.clock.elapsed(w[0], w[1]) {
                Reading::Ready(ns) => ns,
                _ => 0,
            })
            .collect();
        let (first, wall_len) = (u64::from(c.iterations.base), wall_ns.len());
        json::Iterations {
            count,
            first,
            device_memory: c.device.step_memory.json(first, wall_len),
            wall_ns,
        }
    }

    /// Event `e` as `prof.json` writes it, with `resolved` as its samples (sorted here by
    /// iteration) and `stats` (computed from them when `None`, as for every event but a merged
    /// one).
    pub(crate) fn event_json(
        &self,
        e: u32,
        mut resolved: Resolved,
        stats: Option<Stats>,
        context: &EventContext<'_>,
    ) -> json::Event {
        let ev = self.measuring.schedule.events[e as usize]
            .get()
            .expect("an event of the plan is allocated");
        let entry = registry().entry(ev.entry);
        let info = &entry.desc.info;
        // The keys whose values the samples kept: none in `trace` mode, nor for a merged event.
        let keys = if ev.store.samples.keeps_work() {
            info.work
        } else {
            0
        };
        resolved.sort_by_iteration();
        let stats = stats.unwrap_or_else(|| Stats::of(&resolved.durations));
        let stream = crate::schedule::lane_stream(context.streams, ev.lane)
            .filter(|_| self.measuring.device.is_some());
        let kernels = context.kernels.and_then(|k| k.of(e, &resolved.iters));
        let gpu = (ev.store.samples.has_device() || kernels.is_some()).then(|| json::Gpu {
            cpu_stats: (!resolved.cpu.is_empty()).then(|| Stats::of(&resolved.cpu)),
            cpu_samples_ns: resolved.cpu.clone(),
            lost: resolved.lost,
            kernels,
            memory: device_memory_json(&resolved.device_memory),
        });
        // A merged event holds the runs from the first one past the per-occurrence events.
        let occurrence = if ev.occurrence == MERGED {
            self.measuring.schedule.route(ev.entry).events.load(Relaxed)
        } else {
            ev.occurrence
        };
        json::Event {
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
            stream: stream
                .and_then(|&s| Some(self.measuring.device.as_ref()?.stream_id(s).to_string())),
            merged: ev.occurrence == MERGED,
            parent: ev
                .parent
                .and_then(|(key, _)| context.order_of.get(&key).copied()),
            concurrent: ev.off_thread,
            memory: ev
                .store
                .samples
                .has_memory()
                .then(|| memory_json(&resolved.memory)),
            work: work_json(keys, &resolved.work, resolved.durations.len()),
            shapes: shapes_json(
                keys,
                &resolved.shapes,
                resolved.durations.len(),
                self.config.max_shapes,
            )
            .inspect(|shapes| warn_shapes(&entry.id, shapes, self.config.max_shapes)),
            samples_ns: resolved.durations,
            offsets_ns: resolved.offsets,
            sample_iters: resolved.iters,
            stats,
            gpu,
        }
    }

    /// How the run was made.
    pub(crate) fn run_json(&self) -> json::Run {
        json::Run {
            program: program_name(),
            pid: std::process::id(),
            host: profiler_format::json::host_name(),
            rank: crate::output::rank(),
            mode: self.measuring.schedule.mode.as_str().to_owned(),
            filter: self.config.filter.source().to_owned(),
            warmup: self.config.warmup,
            repeat: self.config.repeat,
            clock: match &self.measuring.device {
                Some(device) => device.name().to_owned(),
                None => self.measuring.clock.name().to_owned(),
            },
            max_events: self.config.max_events,
            timer_floor_ns: self.floor_ns,
            profiler_version: env!("CARGO_PKG_VERSION").to_owned(),
            windows: (self.measuring.schedule.mode == crate::schedule::SessionMode::Continuous)
                .then_some(self.config.windows),
            on_demand: None,
            peak: self.config.peak(),
            delay: self.measuring.schedule.delay.as_ref().map(|d| {
                let done = d.through_last_step();
                json::Delay {
                    filter: d.filter.source().to_owned(),
                    amount: d.amount.to_string(),
                    calls: done.calls,
                    requested_ns: done.requested_ns,
                    injected_ns: done.injected_ns,
                }
            }),
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
                &self.measuring.clock,
                None,
                &ev.store,
                slot,
                &Cpu(marks, base),
                false,
                None,
                &mut r,
            );
        }
        r.sort_by_iteration();
        let mut stats = Stats::of(&r.durations);
        if let (Some(t), true) = (&ev.store.totals, self.measuring.linear) {
            let count = t.count.load(Relaxed);
            if count > 0 {
                // Linear clock: raw units scale to nanoseconds by one factor.
                let unit = 1u64 << 32;
                let scale = match self.measuring.clock.elapsed(0, unit) {
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
                // The extremes through the clock's own conversion, as each sample of the
                // reservoir was converted: a scaled and rounded figure can be 1 ns off the
                // sample that is the minimum or maximum (the clock truncates), which `prof`
                // rightly refuses.
                let ns = |raw: u64| match self.measuring.clock.elapsed(0, raw) {
                    Reading::Ready(ns) => ns,
                    _ => (raw as f64 * scale).round() as u64,
                };
                // Read while other threads may still add runs: the totals and the reservoir
                // can be a run apart, and the first run's minimum not stored yet. The extremes
                // hold every sample written, which `prof` checks.
                let total_min = match t.min.load(Relaxed) {
                    u64::MAX => None,
                    raw => Some(ns(raw)),
                };
                let total_max = ns(t.max.load(Relaxed));
                let kept_min = r.durations.iter().min().copied();
                let kept_max = r.durations.iter().max().copied();
                stats.count = count;
                stats.min_ns = total_min
                    .into_iter()
                    .chain(kept_min)
                    .min()
                    .unwrap_or(total_max);
                stats.max_ns = total_max.max(kept_max.unwrap_or(0)).max(stats.min_ns);
                stats.mean_ns = ((mean * scale).round() as u64).clamp(stats.min_ns, stats.max_ns);
                stats.stddev_ns = (var.sqrt() * scale).round() as u64;
            }
        }
        (r, stats)
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

/// Each sample's work as `prof.json` lists it: a list per key the annotation has (`keys`, its
/// `WORK_*` bits), when every sample has its work (not so for a merged event, which keeps
/// none).
fn work_json(keys: u8, work: &[(u64, u64)], samples: usize) -> Option<json::SampleWork> {
    use crate::register::descriptor::{WORK_BYTES, WORK_FLOPS};
    if keys == 0 || work.len() != samples {
        return None;
    }
    Some(json::SampleWork {
        flops: (keys & WORK_FLOPS != 0).then(|| work.iter().map(|w| w.0).collect()),
        bytes: (keys & WORK_BYTES != 0).then(|| work.iter().map(|w| w.1).collect()),
    })
}

/// Each sample's shape as `prof.json` lists it, when the annotation has a `shape` key and every
/// sample has its shape: the distinct shapes, the most frequent first (ties: first seen first),
/// at most `bound` of them; the samples of the others point nowhere, and are counted.
fn shapes_json(
    keys: u8,
    shapes: &[crate::store::shape::Dims],
    samples: usize,
    bound: u32,
) -> Option<json::Shapes> {
    use crate::register::descriptor::WORK_SHAPE;
    if keys & WORK_SHAPE == 0 || shapes.len() != samples {
        return None;
    }
    // Two shapes are one when they read the same (two cut alike).
    let names: Vec<String> = shapes.iter().map(|d| d.render()).collect();
    let mut seen: HashMap<&str, (usize, usize)> = HashMap::new();
    for (i, name) in names.iter().enumerate() {
        seen.entry(name).or_insert((0, i)).0 += 1;
    }
    let mut distinct: Vec<(&str, (usize, usize))> = seen.into_iter().collect();
    distinct.sort_by_key(|&(_, (count, first))| (std::cmp::Reverse(count), first));
    let others = distinct.len().saturating_sub(bound as usize);
    distinct.truncate(bound as usize);
    let index: HashMap<&str, u32> = distinct
        .iter()
        .enumerate()
        .map(|(k, &(name, _))| (name, k as u32))
        .collect();
    Some(json::Shapes {
        sample_shapes: names
            .iter()
            .map(|n| index.get(n.as_str()).copied())
            .collect(),
        values: distinct
            .into_iter()
            .map(|(name, _)| name.to_owned())
            .collect(),
        others: others as u64,
    })
}

/// Warns, once a process, that an event saw more distinct shapes than `PROF_SHAPES` keeps.
fn warn_shapes(id: &str, shapes: &json::Shapes, bound: u32) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if shapes.others == 0 || WARNED.swap(true, Relaxed) {
        return;
    }
    let total = shapes.others + shapes.values.len() as u64;
    say!(
        "profiler-core: warning: `{id}` ran with {total} distinct input shapes; the {bound} with \
         the most samples are reported on their own and the samples of the other {} as \
         `others` (PROF_SHAPES={bound}; raise it to keep more)",
        shapes.others
    );
}

/// Each sample's memory figures as `prof.json` lists them.
fn memory_json(figures: &[[u64; crate::store::samples::MEMORY_FIGURES]]) -> json::Memory {
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
