//! `prof trace --iterations A..B`: a `trace`-mode profile cut to some of its iterations, so that
//! a long run's trace can be written (and opened) a piece at a time, in either format. What is
//! kept is drawn as the whole profile would draw it: the steps of the kept iterations, with
//! their numbers, and the samples that ran in them (their memory figures too); time 0 is the
//! first kept step's start.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use profiler_format::{Event, Profile};

/// The iterations `start..end` (`end` excluded), as `A..B`, `A..=B` or `A..` say them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IterationRange {
    /// The first iteration kept.
    pub start: u64,
    /// The first iteration after those kept (`u64::MAX`: every one from `start` on).
    pub end: u64,
}

impl IterationRange {
    fn range(&self) -> Range<u64> {
        self.start..self.end
    }
}

impl fmt::Display for IterationRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.end == u64::MAX {
            write!(f, "{}..", self.start)
        } else {
            write!(f, "{}..{}", self.start, self.end)
        }
    }
}

impl FromStr for IterationRange {
    type Err = String;

    /// `A..B` (A to B-1), `A..=B` (A to B) or `A..` (A on), A and B whole numbers.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad =
            || format!("`{s}` is not a range of iterations: write A..B (A to B-1), A..=B or A..");
        let (a, b) = s.split_once("..").ok_or_else(bad)?;
        let start: u64 = a.trim().parse().map_err(|_| bad())?;
        let end = match b.trim() {
            "" => u64::MAX,
            b => match b.strip_prefix('=') {
                Some(last) => last
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| bad())?
                    .saturating_add(1),
                None => b.parse().map_err(|_| bad())?,
            },
        };
        if end <= start {
            return Err(format!("`{s}` holds no iteration: B must be above A"));
        }
        Ok(IterationRange { start, end })
    }
}

/// Why a profile cannot be cut.
#[derive(Debug, PartialEq, Eq)]
pub enum CutError {
    /// Only a `trace`-mode profile has iterations to cut (the mode is given).
    NotTraceMode(String),
    /// No iteration of the range is drawn: the range, and the iterations that are.
    Empty(IterationRange, Option<(u64, u64)>),
}

impl fmt::Display for CutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CutError::NotTraceMode(mode) => write!(
                f,
                "--iterations cuts a trace-mode profile, and this one is in {mode} mode\n  = \
                 help: leave --iterations out: its trace is one average iteration"
            ),
            CutError::Empty(range, None) => write!(
                f,
                "no iteration of {range} is in the profile\n  = help: the profile has no \
                 iteration to draw; leave --iterations out"
            ),
            CutError::Empty(range, Some((first, last))) => write!(
                f,
                "no iteration of {range} is in the profile\n  = help: its trace draws \
                 iterations {first} to {last}: pick a range among them"
            ),
        }
    }
}

impl std::error::Error for CutError {}

/// Cuts `profile` (in `trace` mode) to `iterations`: the samples of other iterations are
/// dropped, and the window of measured iterations (`run.warmup`, `run.repeat`) is narrowed to
/// the range, so that only the kept iterations are drawn as steps.
pub fn keep_iterations(profile: &mut Profile, iterations: IterationRange) -> Result<(), CutError> {
    if profile.run.mode != "trace" {
        return Err(CutError::NotTraceMode(profile.run.mode.clone()));
    }
    let before = drawn(profile);
    let range = iterations.range();
    for e in &mut profile.events {
        keep_samples(e, &range);
    }
    let run = &mut profile.run;
    let window = u64::from(run.warmup)..u64::from(run.warmup) + u64::from(run.repeat);
    let start = window.start.max(range.start);
    let end = window.end.min(range.end).max(start);
    // The window's start need not fit a u32 once past it: then the window is empty.
    run.warmup = u32::try_from(start).unwrap_or(u32::MAX);
    run.repeat = u32::try_from(end - start).unwrap_or(0);
    if drawn(profile).is_none() {
        return Err(CutError::Empty(iterations, before));
    }
    Ok(())
}

/// The first and last iteration the profile's trace draws (listed in the window, or holding
/// a sample), if any.
fn drawn(profile: &Profile) -> Option<(u64, u64)> {
    let listed = profile.iterations.first
        ..profile
            .iterations
            .first
            .saturating_add(profile.iterations.wall_ns.len() as u64);
    let run = &profile.run;
    let window = u64::from(run.warmup).max(listed.start)
        ..(u64::from(run.warmup) + u64::from(run.repeat)).min(listed.end);
    let samples = profile
        .events
        .iter()
        .flat_map(|e| e.sample_iters.iter().map(|&k| u64::from(k)));
    let all = window
        .clone()
        .take(1)
        .chain(window.end.checked_sub(1).filter(|&l| l >= window.start));
    let (mut lo, mut hi) = (u64::MAX, 0);
    for k in all.chain(samples) {
        lo = lo.min(k);
        hi = hi.max(k);
    }
    (lo <= hi).then_some((lo, hi))
}

/// Keeps the samples of `e` (and their memory figures) that ran in `range`.
fn keep_samples(e: &mut Event, range: &Range<u64>) {
    let keep: Vec<bool> = e
        .sample_iters
        .iter()
        .map(|&k| range.contains(&u64::from(k)))
        .collect();
    if keep.iter().all(|&k| k) {
        return;
    }
    fn retain<T>(v: &mut Vec<T>, keep: &[bool]) {
        let mut i = 0;
        v.retain(|_| {
            i += 1;
            keep.get(i - 1).copied().unwrap_or(false)
        });
    }
    retain(&mut e.samples_ns, &keep);
    retain(&mut e.offsets_ns, &keep);
    retain(&mut e.sample_iters, &keep);
    if let Some(m) = &mut e.memory {
        retain(&mut m.alloc_bytes, &keep);
        retain(&mut m.freed_bytes, &keep);
        retain(&mut m.allocs, &keep);
        retain(&mut m.peak_bytes, &keep);
    }
}
