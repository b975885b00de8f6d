//! The stacks of one profile, and their mean over several: frames, nesting, self times, the
//! filter and the groups (the rules are the module documentation's, in `mod.rs`).

use std::collections::{HashMap, HashSet};

use super::{Flame, Frame, FrameKey, Grouping, Stack};
use profiler_format::filter::{Filter, Key};
use profiler_format::{Event, Profile};
use profiler_tables::breakdown::{breakdown, OTHER};
use profiler_tables::rows::{parent_indices, profile_rows};

/// The stacks of one profile, before rounding.
pub(super) struct ProfileStacks {
    /// Frames by key, with the name they would have (before names are made unique).
    pub frames: Vec<Frame>,
    /// Each stack: frame indices (into `frames`) from the root, and its weight in ns.
    pub stacks: Vec<(Vec<usize>, f64)>,
    /// The mean measured iteration.
    pub iteration_ns: f64,
}

/// The frame name of event `e`: `layer/phase/name` (a method's name with its type,
/// `Type::method`), `#occurrence` when its probe has several events in `profile`.
fn event_name(e: &Event, repeated: bool) -> String {
    let part = |v: &Option<String>| v.as_deref().unwrap_or("-").to_owned();
    let mut name = format!("{}/{}/{}", part(&e.layer), part(&e.phase), e.display_name());
    if repeated || e.occurrence > 0 {
        name.push_str(&format!("#{}", e.occurrence));
    }
    clean(&name)
}

/// `name` as a frame of a folded line: what a folded line cannot hold (`;`, control
/// characters) and what XML 1.0 forbids in the SVG (U+FFFE, U+FFFF) as `_`; and, so that the
/// name stays one frame's whole, the space before a final number (`block 1`, which a reader
/// took for a count: a differential graph's "before") and after a leading `#` (`# x`, a comment
/// line to inferno) as a no-break space, which looks the same.
pub(crate) fn clean(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c == ';' || c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' {
                '_'
            } else {
                c
            }
        })
        .collect();
    if let Some(space) = out.rfind(' ') {
        let tail = &out[space + 1..];
        if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit() || c == '.') {
            out.replace_range(space..=space, "\u{a0}");
        }
    }
    if out.starts_with("# ") {
        out.replace_range(1..2, "\u{a0}");
    }
    out
}

/// The value of `key` for event `e`, as the filter tests it.
fn field(e: &Event, key: Key) -> Option<&str> {
    match key {
        Key::Name => Some(&e.name),
        Key::Id => Some(&e.id),
        Key::Layer => e.layer.as_deref(),
        Key::Phase => e.phase.as_deref(),
        Key::Kind => Some(&e.kind),
        Key::Module => Some(&e.module),
        Key::File => Some(&e.file),
    }
}

/// The stacks of `profile`; `None` without a measured iteration.
pub(super) fn of_profile(
    profile: &Profile,
    filter: Option<&Filter>,
    group: Option<Grouping>,
) -> Option<ProfileStacks> {
    let events = &profile.events;
    let measures = profile_rows(profile, f64::INFINITY, f64::INFINITY);
    let bd = breakdown(profile, &measures)?;
    let rows = &measures.events;
    let parents = parent_indices(events);
    let held = &bd.held_ns;

    // Which events are drawn: the matching ones, and the ones they ran inside as context.
    let matched: Vec<bool> = events
        .iter()
        .map(|e| filter.is_none_or(|f| f.matches(|k| field(e, k))))
        .collect();
    let mut shown = matched.clone();
    for (i, _) in matched.iter().enumerate().filter(|(_, &m)| m) {
        for a in measures.ancestors.of(i) {
            shown[a] = true;
        }
    }

    // Widths, children before parents (deepest first): a matching event is as wide as the
    // iteration holds it; a context event as wide as the drawn events it holds.
    let mut by_depth: Vec<usize> = (0..events.len()).collect();
    by_depth.sort_by_key(|&i| std::cmp::Reverse(measures.ancestors.depth(i)));
    let mut width = vec![0.0f64; events.len()];
    let mut children_width = vec![0.0f64; events.len()];
    for &i in &by_depth {
        if !shown[i] {
            continue;
        }
        width[i] = if matched[i] {
            held[i]
        } else {
            children_width[i]
        };
        if let Some(p) = parents[i] {
            children_width[p] += width[i];
        }
    }

    // Names: `#k` for the events of a probe that has several.
    let mut per_probe: HashMap<&str, usize> = HashMap::new();
    for e in events {
        *per_probe.entry(e.id.as_str()).or_default() += 1;
    }

    let mut frames: Vec<Frame> = Vec::new();
    let mut index_of: HashMap<FrameKey, usize> = HashMap::new();
    let mut frame = |key: FrameKey, make: &dyn Fn() -> Frame| -> usize {
        *index_of.entry(key).or_insert_with(|| {
            frames.push(make());
            frames.len() - 1
        })
    };
    let mut event_frames = vec![usize::MAX; events.len()];
    // In execution order, so that stacks come depth first in that order.
    let mut in_order: Vec<usize> = (0..events.len()).collect();
    in_order.sort_by_key(|&i| events[i].order);
    for &i in &in_order {
        if !shown[i] || width[i] <= 0.0 {
            continue;
        }
        let e = &events[i];
        let row = &rows[i];
        event_frames[i] = frame(FrameKey::Event(e.id.clone(), e.occurrence), &|| Frame {
            name: event_name(e, per_probe[e.id.as_str()] > 1),
            key: FrameKey::Event(e.id.clone(), e.occurrence),
            total_ns: row.total_ns,
            self_ns: row.self_ns,
            width_ns: width[i],
            calls_per_iter: row.calls_per_iter,
            merged: e.merged,
            concurrent: e.concurrent,
            matched: matched[i],
            diff: None,
            missing_from: 0,
        });
    }

    // Stacks: depth first from the top-level events, in execution order.
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); events.len()];
    let mut roots = Vec::new();
    let mut by_order: Vec<usize> = (0..events.len()).collect();
    by_order.sort_by_key(|&i| events[i].order);
    for &i in &by_order {
        if event_frames[i] == usize::MAX {
            continue;
        }
        match parents[i] {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let mut stacks: Vec<(Vec<usize>, f64)> = Vec::new();
    let mut seen = HashSet::new();
    for &root in &roots {
        let mut prefix = Vec::new();
        if let Some(g) = group {
            let (what, value) = match g {
                Grouping::Layer => ("layer", events[root].layer.as_deref()),
                Grouping::Phase => ("phase", events[root].phase.as_deref()),
            };
            let name = match value {
                Some(v) => clean(&format!("{what}={v}")),
                None => format!("(no {what})"),
            };
            prefix.push(frame(FrameKey::Group(name.clone()), &|| Frame {
                name: name.clone(),
                key: FrameKey::Group(name.clone()),
                total_ns: 0.0,
                self_ns: 0.0,
                width_ns: 0.0,
                calls_per_iter: 0.0,
                merged: false,
                concurrent: false,
                matched: true,
                diff: None,
                missing_from: 0,
            }));
        }
        // Depth first, without recursion (nesting may be deep).
        let mut todo = vec![(root, prefix)];
        while let Some((i, mut path)) = todo.pop() {
            if !seen.insert(i) {
                continue;
            }
            path.push(event_frames[i]);
            let own = if matched[i] {
                (width[i] - children_width[i]).max(0.0)
            } else {
                0.0
            };
            stacks.push((path.clone(), own));
            for &c in children[i].iter().rev() {
                todo.push((c, path.clone()));
            }
        }
    }
    if filter.is_none() {
        let other = bd
            .categories
            .iter()
            .find(|c| c.name == OTHER)
            .map_or(0.0, |c| c.total_ns);
        let f = frame(FrameKey::Other, &|| Frame {
            name: OTHER.to_owned(),
            key: FrameKey::Other,
            total_ns: 0.0,
            self_ns: 0.0,
            width_ns: 0.0,
            calls_per_iter: 0.0,
            merged: false,
            concurrent: false,
            matched: true,
            diff: None,
            missing_from: 0,
        });
        stacks.push((vec![f], other));
    }
    // Groups and `other`: as wide as what they hold.
    for (path, w) in &stacks {
        for &f in path {
            if !matches!(frames[f].key, FrameKey::Event(..)) {
                frames[f].width_ns += w;
                frames[f].total_ns += w;
            }
        }
    }
    for f in frames.iter_mut() {
        if f.key == FrameKey::Other {
            f.self_ns = f.total_ns;
        }
    }
    Some(ProfileStacks {
        frames,
        stacks,
        iteration_ns: bd.iteration_ns,
    })
}

/// The mean of several runs' stacks (matched by their frames' keys), rounded to nanoseconds so
/// that every running sum of the weights is its exact value rounded; names made unique.
pub(super) fn mean(runs: Vec<ProfileStacks>) -> Flame {
    let n = runs.len().max(1) as f64;
    let mut frames: Vec<Frame> = Vec::new();
    let mut index_of: HashMap<FrameKey, usize> = HashMap::new();
    let mut stacks: Vec<(Vec<usize>, f64)> = Vec::new();
    let mut stack_of: HashMap<Vec<usize>, usize> = HashMap::new();
    // How many runs have each frame: an event's title figures are its mean over those (an
    // event missing from a run is not a run where it took no time), its width the mean over all.
    let mut present: Vec<usize> = Vec::new();
    let mut iteration_ns = 0.0;
    for run in runs {
        iteration_ns += run.iteration_ns / n;
        let mut local = Vec::with_capacity(run.frames.len());
        for f in run.frames {
            let at = *index_of.entry(f.key.clone()).or_insert_with(|| {
                frames.push(Frame {
                    total_ns: 0.0,
                    self_ns: 0.0,
                    width_ns: 0.0,
                    calls_per_iter: 0.0,
                    ..f.clone()
                });
                present.push(0);
                frames.len() - 1
            });
            present[at] += 1;
            let m = &mut frames[at];
            m.total_ns += f.total_ns;
            m.self_ns += f.self_ns;
            m.width_ns += f.width_ns / n;
            m.calls_per_iter += f.calls_per_iter;
            m.merged |= f.merged;
            m.concurrent |= f.concurrent;
            m.matched |= f.matched;
            local.push(at);
        }
        for (path, w) in run.stacks {
            let path: Vec<usize> = path.iter().map(|&f| local[f]).collect();
            let at = *stack_of.entry(path.clone()).or_insert_with(|| {
                stacks.push((path, 0.0));
                stacks.len() - 1
            });
            stacks[at].1 += w / n;
        }
    }
    for (m, &k) in frames.iter_mut().zip(&present) {
        let over = if matches!(m.key, FrameKey::Event(..)) {
            k.max(1) as f64
        } else {
            n
        };
        m.total_ns /= over;
        m.self_ns /= over;
        m.calls_per_iter /= over;
        m.missing_from = (n as usize).saturating_sub(k);
    }
    unique_names(&mut frames);
    let mut sum = 0.0f64;
    let mut rounded = 0u64;
    let mut out = Vec::with_capacity(stacks.len());
    for (path, w) in stacks {
        sum += w;
        let next = sum.round().max(0.0) as u64;
        let weight = next.saturating_sub(rounded);
        rounded = rounded.max(next);
        if weight > 0 {
            out.push(Stack {
                frames: path,
                weight_ns: weight,
            });
        }
    }
    Flame {
        frames,
        stacks: out,
        iteration_ns,
        title: String::new(),
        subtitle: None,
        icicle: false,
    }
}

/// Two frames with the same name: the later one gets ` (id)`, then ` (2)`, ... if need be.
fn unique_names(frames: &mut [Frame]) {
    let mut taken: HashSet<String> = HashSet::new();
    for f in frames.iter_mut() {
        if taken.contains(&f.name) {
            if let FrameKey::Event(id, _) = &f.key {
                f.name = clean(&format!("{} ({id})", f.name));
            }
            let base = f.name.clone();
            let mut k = 2;
            while taken.contains(&f.name) {
                f.name = format!("{base} ({k})");
                k += 1;
            }
        }
        taken.insert(f.name.clone());
    }
}
