//! The schedule: which events exist, which one is measured in each iteration, and where a
//! probe's runs go. Three stages, one file each:
//!
//! - `learn.rs`: during warmup, every run of a selected probe reports (probe, stream,
//!   occurrence) and its parent; distinct triples become events, in execution order.
//! - `plan.rs`: when warmup ends, the events are allocated with their sample storage (the
//!   budget is checked here, never on the hot path) and each probe gets its routing table;
//!   probes first seen later are planned as they appear.
//! - `arm.rs`: at each `step()`, the next event (all of them in `trace` mode) is armed and the
//!   others put back to rest.
//!
//! The routing tables live here, beside the schedule that fills them: a descriptor holds only
//! its state and its index into [`ProbeRoute`]s.

mod arm;
mod learn;
mod plan;

use std::sync::atomic::{
    AtomicPtr, AtomicU32,
    Ordering::{Acquire, Relaxed},
};

use crate::device::Stream;

pub(crate) use learn::{Key, Learner, Planned, MERGED};

/// No event: an index that means "none".
pub(crate) const NONE: u32 = u32::MAX;

/// Where the runs of one probe on one stream go.
#[derive(Debug)]
pub(crate) struct Route {
    pub stream: Stream,
    /// Runs on this stream started in the current iteration.
    pub calls: AtomicU32,
    pub first_event: u32,
    pub events: u32,
    pub merged_event: u32,
}

/// A probe's routes, one per stream it ran on during warmup.
#[derive(Debug)]
pub(crate) struct Routes(pub Box<[Route]>);

impl Route {
    /// The event of the next run on this stream, or `NONE`.
    #[inline]
    pub(crate) fn next_event(&self) -> u32 {
        let occ = self.calls.fetch_add(1, Relaxed);
        if occ < self.events {
            self.first_event + occ
        } else {
            self.merged_event
        }
    }
}

/// Where the runs of one probe go: its events without a stream, its per-stream routes, and its
/// run counter for the current iteration. One per registered probe, owned by the session and
/// indexed by [`Descriptor::index`](crate::descriptor::Descriptor).
#[derive(Debug)]
pub(crate) struct ProbeRoute {
    /// Runs of this probe started in the current iteration (counted while not `Off`).
    pub calls: AtomicU32,
    /// Index of this probe's first event in the session's event table.
    pub first_event: AtomicU32,
    /// How many per-occurrence events this probe has.
    pub events: AtomicU32,
    /// The event later occurrences fold into, or `NONE`.
    pub merged_event: AtomicU32,
    /// The events of this probe's runs on streams, when it ran on any during warmup (owned by
    /// the session, which is never freed), else null.
    pub streams: AtomicPtr<Routes>,
}

impl Default for ProbeRoute {
    fn default() -> Self {
        ProbeRoute {
            calls: AtomicU32::new(0),
            first_event: AtomicU32::new(NONE),
            events: AtomicU32::new(0),
            merged_event: AtomicU32::new(NONE),
            streams: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

impl ProbeRoute {
    /// The route of runs on `stream`, if warmup saw this probe run there.
    #[inline]
    pub(crate) fn on(&self, stream: Stream) -> Option<&Route> {
        self.streams()
            .and_then(|r| r.0.iter().find(|r| r.stream == stream))
    }

    /// The per-stream routes, if any.
    #[inline]
    pub(crate) fn streams(&self) -> Option<&Routes> {
        // SAFETY: a non-null pointer comes from a `Box<Routes>` owned by a session, and
        // sessions are never freed.
        unsafe { self.streams.load(Acquire).as_ref() }
    }

    /// The event that occurrence `occ` of this probe belongs to, or `NONE`.
    #[inline]
    pub(crate) fn event_for(&self, occ: u32) -> u32 {
        if occ < self.events.load(Relaxed) {
            self.first_event.load(Relaxed) + occ
        } else {
            self.merged_event.load(Relaxed)
        }
    }

    /// A new iteration: no run counted yet, on any stream.
    pub(crate) fn reset_calls(&self) {
        self.calls.store(0, Relaxed);
        if let Some(routes) = self.streams() {
            for route in routes.0.iter() {
                route.calls.store(0, Relaxed);
            }
        }
    }
}
