//! The schema checks of a parsed profile: what serde cannot see, that its parts add up (counts,
//! lengths of parallel lists, times within range, parents, windows). Each check says what does not
//! add up, naming the field and the event.

use std::collections::{HashMap, HashSet};

use crate::write::shorten;
use crate::{Event, Profile, Run, Stats};

/// Beyond this a time is not a measurement: 2^53 ns is 104 days, longer than any run, and
/// readers that hold JSON numbers as doubles (Perfetto, the HTML page) lose precision past it.
pub const MAX_NS: u64 = 1 << 53;

/// `N ns (about D days)`, for a time past [`MAX_NS`].
fn absurd(ns: u64) -> String {
    format!(
        "{ns} ns (about {:.0} days; a time above 2^53 ns, about {} days, is not a measurement)",
        ns as f64 / 86_400e9,
        MAX_NS / 86_400_000_000_000
    )
}

/// The values of `run.mode` the core writes (`PROF_MODE`).
const MODES: [&str; 4] = ["sample", "trace", "continuous", "off"];

/// How a message names an event: its id (shortened, since a file may hold anything and a
/// message should stay readable), occurrence and order.
fn describe(e: &Event) -> String {
    format!(
        "event `{}` (occurrence {}, order {})",
        shorten(&e.id, 120),
        e.occurrence,
        e.order
    )
}

/// Checks that a parsed profile adds up; the error says what does not.
pub(super) fn check(profile: &Profile) -> Result<(), String> {
    check_run(&profile.run)?;
    check_iterations(profile)?;
    // A sample belongs to the iteration its run started in, by its start mark. A run that
    // started after the last `step()` (the program ended between two steps, or a run on
    // another thread began just after the step that completed the schedule) is in iteration
    // `count`, which never completed; nothing is ever in a later one.
    let count = profile.iterations.count;
    for e in &profile.events {
        check_samples(e, count)?;
        check_sample_values(e, &profile.run)?;
        check_stats(e)?;
    }
    check_warmup(profile)?;
    check_device_memory(profile)?;
    check_unique(&profile.events)?;
    check_parents(&profile.events)?;
    check_windows(profile)?;
    check_cpu_counts(profile)?;
    check_sample_timeline(profile)
}

/// Beyond this a count (of samples, of shapes) is not one: 2^53 CPU samples are 285 years of
/// one thread sampled at a million per second; the sums of counts stay exact and in range.
pub const MAX_COUNT: u64 = 1 << 53;

/// `cpu_samples.stacks`: their counts add up to at most [`MAX_COUNT`].
fn check_cpu_counts(profile: &Profile) -> Result<(), String> {
    let Some(samples) = &profile.cpu_samples else {
        return Ok(());
    };
    let total = samples.stacks.iter().try_fold(0u64, |sum, s| {
        sum.checked_add(s.count).filter(|&t| t <= MAX_COUNT)
    });
    if total.is_none() {
        return Err(format!(
            "cpu_samples.stacks: their counts add up to more than 2^53 ({MAX_COUNT}), which no \
             run samples"
        ));
    }
    Ok(())
}

/// `cpu_samples.timeline`: its four lists of one length, each sample's thread one of the
/// threads and its stack one of the stacks, of that thread.
fn check_sample_timeline(profile: &Profile) -> Result<(), String> {
    let Some(samples) = &profile.cpu_samples else {
        return Ok(());
    };
    let Some(t) = &samples.timeline else {
        return Ok(());
    };
    let n = t.threads.len();
    for (name, len) in [
        ("iters", t.iters.len()),
        ("offsets_ns", t.offsets_ns.len()),
        ("stacks", t.stacks.len()),
    ] {
        if len != n {
            return Err(format!(
                "cpu_samples.timeline has {n} threads but {len} {name} (one entry per \
                 sample in each list)"
            ));
        }
    }
    for i in 0..n {
        let (thread, stack) = (t.threads[i], t.stacks[i]);
        if thread as usize >= samples.threads.len() {
            return Err(format!(
                "cpu_samples.timeline: sample {i}'s thread {thread} is not one of the {} threads",
                samples.threads.len()
            ));
        }
        let Some(s) = samples.stacks.get(stack as usize) else {
            return Err(format!(
                "cpu_samples.timeline: sample {i}'s stack {stack} is not one of the {} stacks",
                samples.stacks.len()
            ));
        };
        if s.thread != thread {
            return Err(format!(
                "cpu_samples.timeline: sample {i} is of thread {thread} but its stack {stack} \
                 of thread {}",
                s.thread
            ));
        }
    }
    Ok(())
}

/// `run`: a mode the core writes, and at least one repeat.
fn check_run(run: &Run) -> Result<(), String> {
    if !MODES.contains(&run.mode.as_str()) {
        return Err(format!(
            "run.mode `{}` is not one of {}",
            shorten(&run.mode, 80),
            MODES.join(", ")
        ));
    }
    if run.repeat == 0 {
        return Err("run.repeat is 0 (PROF_REPEAT is at least 1)".to_owned());
    }
    if let Some(peak) = &run.peak {
        peak.check_figures()
            .map_err(|why| format!("run.peak: {why}"))?;
    }
    Ok(())
}

/// Samples are taken after the warmup: a warmup longer than the run that holds samples did
/// not happen.
fn check_warmup(profile: &Profile) -> Result<(), String> {
    let (warmup, count) = (u64::from(profile.run.warmup), profile.iterations.count);
    let sampled = profile.events.iter().any(|e| !e.samples_ns.is_empty());
    if sampled && warmup > count {
        return Err(format!(
            "run.warmup is {warmup}, but only {count} iterations completed and the events hold \
             samples (nothing is measured during the warmup)"
        ));
    }
    Ok(())
}

/// Device memory lists line up: one reading per iteration listed in each device's series (and a
/// device listed once), one value per sample in each event's `gpu.memory`.
fn check_device_memory(profile: &Profile) -> Result<(), String> {
    let walls = profile.iterations.wall_ns.len();
    let mut devices = HashSet::new();
    for (i, u) in profile.iterations.device_memory.iter().enumerate() {
        if u.used_bytes.len() != walls {
            return Err(format!(
                "iterations.device_memory[{i}] (device {}) has {} used_bytes but there are \
                 {walls} wall_ns (one reading per iteration listed, null where none was taken)",
                u.device,
                u.used_bytes.len()
            ));
        }
        if !devices.insert(u.device) {
            return Err(format!(
                "iterations.device_memory lists device {} twice (one series per device)",
                u.device
            ));
        }
    }
    for e in &profile.events {
        let Some(m) = e.gpu.as_ref().and_then(|g| g.memory.as_ref()) else {
            continue;
        };
        let n = e.samples_ns.len();
        if m.used_bytes.len() != n || m.change_bytes.len() != n {
            return Err(format!(
                "{} has {n} samples_ns but gpu.memory lists of {} and {} (used_bytes, \
                 change_bytes: one value per sample each)",
                describe(e),
                m.used_bytes.len(),
                m.change_bytes.len()
            ));
        }
    }
    Ok(())
}

/// Each event once: no two share an `order`, nor an (id, occurrence, device, stream).
fn check_unique(events: &[Event]) -> Result<(), String> {
    let mut orders: HashMap<u32, usize> = HashMap::with_capacity(events.len());
    let mut keys = HashMap::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        if let Some(j) = orders.insert(e.order, i) {
            return Err(format!(
                "events[{j}] and events[{i}] both have order {} ({} and {}); each event has a \
                 place of its own in the iteration's order",
                e.order,
                describe(&events[j]),
                describe(e)
            ));
        }
        let key = (&e.id, e.occurrence, e.merged, e.device, &e.stream);
        if let Some(j) = keys.insert(key, i) {
            return Err(format!(
                "events[{j}] and events[{i}] are the same event: {} appears twice",
                describe(e)
            ));
        }
    }
    Ok(())
}

/// `iterations`: `count` agrees with `first` and the number of wall times.
fn check_iterations(profile: &Profile) -> Result<(), String> {
    let run = &profile.run;
    let iterations = &profile.iterations;
    let mut total: u64 = 0;
    for (k, &wall) in iterations.wall_ns.iter().enumerate() {
        total = total.saturating_add(wall);
        if wall > MAX_NS || total > MAX_NS {
            return Err(if wall > MAX_NS {
                format!("iterations.wall_ns[{k}] is {}", absurd(wall))
            } else {
                format!(
                    "iterations.wall_ns adds up to {} by wall_ns[{k}]",
                    absurd(total)
                )
            });
        }
    }
    // `wall_ns[k]` is iteration `first + k`, and the last listed is the last completed, except
    // in `continuous` mode, which lists the last completed window's iterations: those of the
    // window still running when the file was written come after them.
    let listed_end = iterations
        .first
        .checked_add(iterations.wall_ns.len() as u64);
    let adds_up = match listed_end {
        Some(end) if run.mode == "continuous" => end <= iterations.count,
        Some(end) => end == iterations.count,
        None => false,
    };
    if adds_up {
        return Ok(());
    }
    Err(if iterations.first == 0 && run.mode != "continuous" {
        format!(
            "iterations.count is {} but there are {} wall_ns (one per completed iteration)",
            iterations.count,
            iterations.wall_ns.len()
        )
    } else {
        format!(
            "iterations.count is {} but iterations.first + the number of wall_ns is {} + {} \
             (wall_ns lists the iterations from first on, {})",
            iterations.count,
            iterations.first,
            iterations.wall_ns.len(),
            if run.mode == "continuous" {
                "none past the last completed one"
            } else {
                "to the last completed one"
            }
        )
    })
}

/// An event's samples: one offset and one iteration each, no iteration past `count` (the one
/// still running, see [`check`]), and `stats.count` equal to their number (at least it, for a
/// merged event, which keeps a bounded sample of its runs).
fn check_samples(e: &Event, count: u64) -> Result<(), String> {
    let n = e.samples_ns.len();
    if e.offsets_ns.len() != n || e.sample_iters.len() != n {
        return Err(format!(
            "{} has {n} samples_ns but {} offsets_ns and {} sample_iters",
            describe(e),
            e.offsets_ns.len(),
            e.sample_iters.len()
        ));
    }
    if let Some(m) = &e.memory {
        let lens = [
            m.alloc_bytes.len(),
            m.freed_bytes.len(),
            m.allocs.len(),
            m.peak_bytes.len(),
        ];
        if lens.iter().any(|&l| l != n) {
            return Err(format!(
                "{} has {n} samples_ns but memory lists of {} (alloc_bytes, freed_bytes, \
                 allocs, peak_bytes: one value per sample each)",
                describe(e),
                lens.map(|l| l.to_string()).join(", ")
            ));
        }
    }
    if let Some(w) = &e.work {
        for (key, list) in [("flops", &w.flops), ("bytes", &w.bytes)] {
            if let Some(list) = list {
                if list.len() != n {
                    return Err(format!(
                        "{} has {n} samples_ns but {} values in work.{key} (one value per sample)",
                        describe(e),
                        list.len()
                    ));
                }
            }
        }
    }
    if let Some(shapes) = &e.shapes {
        if shapes.others > MAX_COUNT {
            return Err(format!(
                "{}: shapes.others is {}, above 2^53 ({MAX_COUNT}): not a count of shapes",
                describe(e),
                shapes.others
            ));
        }
        if shapes.sample_shapes.len() != n {
            return Err(format!(
                "{} has {n} samples_ns but {} entries in shapes.sample_shapes (one per sample)",
                describe(e),
                shapes.sample_shapes.len()
            ));
        }
        let kept = shapes.values.len();
        if let Some((i, k)) = shapes
            .sample_shapes
            .iter()
            .enumerate()
            .find_map(|(i, k)| k.filter(|&k| k as usize >= kept).map(|k| (i, k)))
        {
            return Err(format!(
                "{}: shapes.sample_shapes[{i}] is {k}, but shapes.values has {kept} entries \
                 (indices run from 0 to {})",
                describe(e),
                kept.saturating_sub(1)
            ));
        }
    }
    let iteration_bound = count.saturating_add(1);
    if let Some((i, &iter)) = e
        .sample_iters
        .iter()
        .enumerate()
        .find(|(_, &iter)| u64::from(iter) >= iteration_bound)
    {
        return Err(format!(
            "{}: sample_iters[{i}] is {iter}, but iterations.count is {count} (indices run \
             from 0 to {count}, the last for runs that began after the last completed iteration)",
            describe(e),
        ));
    }
    let stats_count = e.stats.count;
    if e.merged && stats_count < n as u64 {
        return Err(format!(
            "{}: stats.count is {stats_count}, fewer than its {n} samples_ns (a merged event \
             counts every run and keeps a bounded sample of them)",
            describe(e)
        ));
    }
    if !e.merged && stats_count != n as u64 {
        return Err(format!(
            "{}: stats.count is {stats_count} but it has {n} samples_ns (they must be equal for \
             an event that is not merged)",
            describe(e)
        ));
    }
    Ok(())
}

/// An event's times are times (none past [`MAX_NS`]), and it has no more samples than its
/// run could take: one per iteration at most (an event is one run of a probe per iteration),
/// and at most `run.repeat` (the iterations it was armed in, or the active ones in `trace`
/// mode). A merged event keeps a bounded sample of any number of runs.
fn check_sample_values(e: &Event, run: &Run) -> Result<(), String> {
    let times = [("samples_ns", &e.samples_ns), ("offsets_ns", &e.offsets_ns)];
    for (field, values) in times {
        if let Some((i, &v)) = values.iter().enumerate().find(|(_, &v)| v > MAX_NS) {
            return Err(format!("{}: {field}[{i}] is {}", describe(e), absurd(v)));
        }
    }
    let n = e.samples_ns.len() as u64;
    if !e.merged && n > u64::from(run.repeat) {
        return Err(format!(
            "{} has {n} samples, but run.repeat is {}: an event is measured in at most \
             PROF_REPEAT iterations, once in each",
            describe(e),
            run.repeat
        ));
    }
    Ok(())
}

/// `stats` agree with the samples: min <= median <= p90 <= max and min <= mean <= max; for an
/// event that is not merged (whose samples are all its runs), min and max are those of the
/// samples; for a merged one, every sample lies between them.
fn check_stats(e: &Event) -> Result<(), String> {
    check_stats_of(&describe(e), &e.stats, &e.samples_ns, e.merged)
}

/// [`check_stats`] of `what` (an event, or an event in a window): `s` against `samples`, all of
/// them when not `merged`.
fn check_stats_of(what: &str, s: &Stats, samples: &[u64], merged: bool) -> Result<(), String> {
    if s.count == 0 {
        return Ok(());
    }
    if s.max_ns > MAX_NS {
        return Err(format!("{what}: stats.max_ns is {}", absurd(s.max_ns)));
    }
    let ordered = s.min_ns <= s.median_ns && s.median_ns <= s.p90_ns && s.p90_ns <= s.max_ns;
    if !ordered || s.mean_ns < s.min_ns || s.mean_ns > s.max_ns {
        return Err(format!(
            "{}: its stats do not add up (min_ns {}, median_ns {}, p90_ns {}, max_ns {}, \
             mean_ns {}; each must lie between min_ns and max_ns, in that order)",
            what, s.min_ns, s.median_ns, s.p90_ns, s.max_ns, s.mean_ns
        ));
    }
    let (Some(&lo), Some(&hi)) = (samples.iter().min(), samples.iter().max()) else {
        return Ok(());
    };
    let agree = if merged {
        s.min_ns <= lo && hi <= s.max_ns
    } else {
        s.min_ns == lo && s.max_ns == hi
    };
    if !agree {
        return Err(format!(
            "{}: stats.min_ns {} and stats.max_ns {} disagree with samples_ns, which run from \
             {lo} to {hi}",
            what, s.min_ns, s.max_ns
        ));
    }
    Ok(())
}

/// `continuous` mode's windows: increasing `index`, the baseline windows first, and in each,
/// events that name an event of `events` (by `order`) at most once each, with `stats.count`
/// equal to their number of samples.
fn check_windows(profile: &Profile) -> Result<(), String> {
    let merged: HashMap<u32, bool> = profile.events.iter().map(|e| (e.order, e.merged)).collect();
    let mut previous: Option<u64> = None;
    for (i, w) in profile.windows.iter().enumerate() {
        // Times are times, as at the top level.
        let mut total: u64 = 0;
        for (k, &wall) in w.wall_ns.iter().enumerate() {
            total = total.saturating_add(wall);
            if wall > MAX_NS {
                return Err(format!(
                    "windows[{i}] (index {}): wall_ns[{k}] is {}",
                    w.index,
                    absurd(wall)
                ));
            }
            if total > MAX_NS {
                return Err(format!(
                    "windows[{i}] (index {}): wall_ns adds up to {} by wall_ns[{k}]",
                    w.index,
                    absurd(total)
                ));
            }
        }
        if let Some(p) = previous.filter(|&p| w.index <= p) {
            return Err(format!(
                "windows[{i}] has index {}, not above the previous window's {p} (windows are \
                 listed oldest first)",
                w.index
            ));
        }
        if w.baseline && i > 0 && !profile.windows[i - 1].baseline {
            return Err(format!(
                "windows[{i}] (index {}) is a baseline window after one that is not (the run's \
                 first windows, its baseline, are listed first)",
                w.index
            ));
        }
        previous = Some(w.index);
        let mut seen = HashSet::with_capacity(w.events.len());
        for (j, e) in w.events.iter().enumerate() {
            let Some(&merged) = merged.get(&e.order) else {
                return Err(format!(
                    "windows[{i}] (index {}): events[{j}] has order {}, but no event has that \
                     order",
                    w.index, e.order
                ));
            };
            if !seen.insert(e.order) {
                return Err(format!(
                    "windows[{i}] (index {}): order {} is listed twice (each event is measured \
                     once per window)",
                    w.index, e.order
                ));
            }
            let n = e.samples_ns.len() as u64;
            if e.stats.count != n {
                return Err(format!(
                    "windows[{i}] (index {}): the event of order {} has stats.count {} but {n} \
                     samples_ns (they must be equal)",
                    w.index, e.order, e.stats.count
                ));
            }
            let what = format!(
                "windows[{i}] (index {}): the event of order {}",
                w.index, e.order
            );
            if let Some((k, &v)) = e.samples_ns.iter().enumerate().find(|(_, &v)| v > MAX_NS) {
                return Err(format!("{what}: samples_ns[{k}] is {}", absurd(v)));
            }
            check_stats_of(&what, &e.stats, &e.samples_ns, merged)?;
        }
    }
    Ok(())
}

/// Every `parent` is the `order` of an event, and following parents never comes back to where
/// it started, except through a merged event: a recursion past `PROF_MAX_EVENTS` folds runs at
/// several depths into one merged event, which then contains itself or an event it contains.
fn check_parents(events: &[Event]) -> Result<(), String> {
    let mut by_order: HashMap<u32, usize> = HashMap::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        by_order.entry(e.order).or_insert(i);
    }
    let mut parents = Vec::with_capacity(events.len());
    for e in events {
        parents.push(match e.parent {
            None => None,
            Some(p) => match by_order.get(&p) {
                Some(&j) => Some(j),
                None => {
                    return Err(format!(
                        "{} has parent {p}, but no event has order {p}",
                        describe(e)
                    ))
                }
            },
        });
    }
    // Each event has at most one parent: walk up from each event, marking the walk, until a
    // top-level event, an event already cleared, or an event of this walk (a cycle).
    const NEW: u8 = 0;
    const ON_WALK: u8 = 1;
    const CLEARED: u8 = 2;
    let mut state = vec![NEW; events.len()];
    for start in 0..events.len() {
        let mut walk = Vec::new();
        let mut cur = Some(start);
        while let Some(i) = cur {
            match state[i] {
                CLEARED => break,
                ON_WALK => {
                    let at = walk.iter().position(|&j| j == i).unwrap_or(0);
                    let cycle = &walk[at..];
                    if !cycle.iter().any(|&j: &usize| events[j].merged) {
                        let mut path: Vec<String> =
                            cycle.iter().map(|&j| describe(&events[j])).collect();
                        path.push(describe(&events[i]));
                        return Err(format!(
                            "parent cycle: {} (an event cannot contain itself)",
                            path.join(" has parent ")
                        ));
                    }
                    break;
                }
                _ => {
                    state[i] = ON_WALK;
                    walk.push(i);
                    cur = parents[i];
                }
            }
        }
        for j in walk {
            state[j] = CLEARED;
        }
    }
    Ok(())
}
