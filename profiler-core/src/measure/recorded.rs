//! The recorded half of a run: `trace` mode's runs, and the runs of its learning iterations,
//! each a record in its thread's buffer.

use std::sync::atomic::Ordering::Relaxed;

use super::{Learning, Measuring, Recorded, Run};
use crate::instrument::device::Stream;
use crate::register::descriptor::Descriptor;
use crate::store::buffer::{self, tag, Record};

impl Measuring {
    /// A recorded run of `desc` starts.
    #[inline(always)]
    pub(crate) fn start_recorded(&'static self, desc: &'static Descriptor) -> Run {
        Run::Recorded(Recorded {
            at: self,
            tag: desc.index.load(Relaxed),
            start: self.clock.mark(),
        })
    }

    /// A recorded run ends: one record into this thread's buffer (`flags`: [`tag::DISCARD`]
    /// for a run whose sample is not kept, which still counts as an occurrence).
    #[inline(never)]
    pub(crate) fn end_recorded(&'static self, r: &Recorded, flags: u32) {
        let stop = self.clock.mark();
        let len = stop.wrapping_sub(r.start);
        let handed_over = if len < u64::from(tag::LONG) {
            self.buffers.push_one(r.start, len as u32, r.tag | flags)
        } else {
            self.push_long(r.start, stop, r.tag | flags)
        };
        if let Some(held) = handed_over {
            (self.hand_over)(held);
        }
    }

    /// A run too long for a 32-bit length (about 4 s of the clock's units), or whose stop mark
    /// is before its start (clocks of two cores that disagree): its stop mark follows whole.
    #[cold]
    #[inline(never)]
    fn push_long(&self, start: u64, stop: u64, tag: u32) -> Option<usize> {
        self.buffers.push(&[
            Record {
                start,
                len: tag::LONG,
                tag: tag | tag::EXT,
            },
            Record {
                start: stop,
                len: 0,
                tag: 0,
            },
        ])
    }

    /// A run of a learning iteration of `trace` mode starts: its stream gets its lane (under
    /// the learner's lock, as in `sample` mode), a run that nests raises this thread's depth,
    /// and one that may move notes where it started. `None` for a probe whose index does not
    /// fit a record (never so below four million probes).
    // Out of line: a warmup path, which inlined into `enter_slow` would cost every armed run
    // its registers (entry 108 -> 129 instructions when the work keys' callers were added).
    #[inline(never)]
    pub(super) fn start_learning(
        &'static self,
        desc: &'static Descriptor,
        nests: bool,
        stream: Option<Stream>,
        hooks: u8,
    ) -> Option<Learning> {
        let entry = desc.index.load(Relaxed);
        if entry > tag::ENTRY {
            return None;
        }
        let lane = stream.map_or(0, |s| self.schedule.lane_of(s));
        let (depth, origin) = if nests {
            let depth = buffer::enter_depth();
            (Some(depth), 0)
        } else {
            let at = buffer::depth();
            let origin = match self.buffers.log_index() {
                Some(log) if at > 0 => tag::origin(log, at),
                _ => 0,
            };
            (None, origin)
        };
        let level = depth.unwrap_or_else(buffer::depth);
        let mut flags = tag::LEARN | (level.min(tag::MAX_DEPTH) << tag::DEPTH_SHIFT);
        if !nests {
            flags |= tag::ASYNC;
        }
        Some(Learning {
            at: self,
            tag: entry | flags,
            lane,
            origin,
            depth,
            hooks,
            start: self.clock.mark(),
        })
    }

    /// A run of a learning iteration ends: its record (with an extension word for a stream, a
    /// run that may move, or a long run), its depth given back, its hooks closed.
    pub(crate) fn end_learning(&'static self, l: &Learning, flags: u32) {
        let stop = self.clock.mark();
        let len = stop.wrapping_sub(l.start);
        let ext = l.lane != 0 || l.origin != 0 || len >= u64::from(tag::LONG);
        let first = Record {
            start: l.start,
            len: if ext { tag::LONG } else { len as u32 },
            tag: l.tag | flags | if ext { tag::EXT } else { 0 },
        };
        let handed_over = if ext {
            let second = Record {
                start: stop,
                len: l.lane,
                tag: l.origin,
            };
            self.buffers.push(&[first, second])
        } else {
            self.buffers.push_one(first.start, first.len, first.tag)
        };
        if let Some(depth) = l.depth {
            buffer::leave_depth(depth);
        }
        if let Some(held) = handed_over {
            (self.hand_over)(held);
        }
        self.close_hooks(l.hooks);
        if l.hooks & crate::schedule::HOOK_DELAY != 0 {
            self.delay_after(l.start, stop);
        }
    }
}
