//! A simulated GPU, so that everything the core does with streams (pending samples, per-stream
//! events, the event pools, iteration offsets, kernel attribution, the `PROF_SYNC`, `PROF_NVTX`
//! and `PROF_CAPTURE` hooks) is tested on machines without one.
//!
//! The device has its own time line, moved by the test ([`SimDevice::advance`]). Each stream is a
//! queue: [`SimDevice::launch`] enqueues a kernel that starts when the stream is free (or now) and
//! runs for the given time; a mark recorded on a stream gets the time at which the stream reaches
//! it, and can be read only once the device's time has passed it, as a CUDA event. Marks come from
//! a bounded [`Pool`] per stream, the same pool the CUDA clock uses. Its memory is what the test
//! allocates and frees on each device ([`SimDevice::allocate`], [`SimDevice::free`]).

use std::sync::{Arc, Mutex, MutexGuard};

use crate::instrument::clock::{Clock, Reading};
use crate::instrument::device::{
    decode_mark, encode_mark, Correlation, Device, KernelActivity, Pool, RangeInfo, Stream, NO_MARK,
};

#[derive(Debug)]
struct StreamState {
    stream: Stream,
    /// When the work queued so far on this stream will be done.
    queue_end: u64,
    /// The event pool prepared for this stream, if any.
    pool: Option<Pool<u64>>,
}

#[derive(Debug, Default)]
struct State {
    now: u64,
    streams: Vec<StreamState>,
    pool_limit: Option<usize>,
    unknown_stream_marks: u64,
    correlation: u32,
    tags: Vec<u64>,
    kernels_on: bool,
    kernels: Vec<KernelActivity>,
    correlations: Vec<Correlation>,
    ranges: Vec<RangeInfo>,
    nvtx: bool,
    log: Vec<String>,
    synchronizations: u64,
    /// The device's work never ends ([`SimDevice::hang`]).
    hung: bool,
    /// Bytes allocated on each device: (ordinal, bytes).
    memory: Vec<(u32, u64)>,
    /// The device reports its memory ([`Device::memory_used`]).
    memory_info: bool,
    /// How many times its memory was asked for.
    memory_queries: u64,
}

impl State {
    fn stream(&mut self, stream: Stream) -> &mut StreamState {
        let i = match self.streams.iter().position(|s| s.stream == stream) {
            Some(i) => i,
            None => {
                self.streams.push(StreamState {
                    stream,
                    queue_end: 0,
                    pool: None,
                });
                self.streams.len() - 1
            }
        };
        &mut self.streams[i]
    }

    fn memory(&mut self, device: u32) -> &mut u64 {
        let i = match self.memory.iter().position(|&(d, _)| d == device) {
            Some(i) => i,
            None => {
                self.memory.push((device, 0));
                self.memory.len() - 1
            }
        };
        &mut self.memory[i].1
    }

    fn timestamp(&self, mark: u64) -> Option<u64> {
        let (pool, slot) = decode_mark(mark)?;
        let pool = self.streams.get(pool as usize)?.pool.as_ref()?;
        if pool.is_taken(slot) {
            pool.get(slot).copied()
        } else {
            None
        }
    }
}

/// A simulated GPU with streams, scripted by the test. Clones share one device.
#[derive(Clone, Debug, Default)]
pub struct SimDevice {
    state: Arc<Mutex<State>>,
}

impl SimDevice {
    /// A device at time 0 with no work queued and no memory in use; NVTX is available, and
    /// the device reports its memory.
    pub fn new() -> SimDevice {
        let sim = SimDevice::default();
        let mut s = sim.lock();
        s.nvtx = true;
        s.memory_info = true;
        drop(s);
        sim
    }

    /// Makes the device unable to report its memory, as a device without the query would be:
    /// [`Device::memory_used`] answers `None`.
    pub fn without_memory_info(self) -> SimDevice {
        self.lock().memory_info = false;
        self
    }

    /// Allocates `bytes` of memory on device `device` (any ordinal): the memory it reports
    /// in use grows by that much, at once, as with `cuMemAlloc`.
    pub fn allocate(&self, device: u32, bytes: u64) {
        let mut s = self.lock();
        let used = s.memory(device);
        *used = used.saturating_add(bytes);
    }

    /// Frees `bytes` of memory on device `device` (never below nothing in use).
    pub fn free(&self, device: u32, bytes: u64) {
        let mut s = self.lock();
        let used = s.memory(device);
        *used = used.saturating_sub(bytes);
    }

    /// How many times the device was asked for its memory ([`Device::memory_used`]).
    pub fn memory_queries(&self) -> u64 {
        self.lock().memory_queries
    }

    /// Caps every stream's event pool at `events`, whatever [`Device::prepare`] asks for, so
    /// that a test can exhaust it.
    pub fn with_pool_limit(self, events: usize) -> SimDevice {
        self.lock().pool_limit = Some(events);
        self
    }

    /// Makes NVTX unavailable, as on a machine without the NVTX library.
    pub fn without_nvtx(self) -> SimDevice {
        self.lock().nvtx = false;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The device's current time in nanoseconds.
    pub fn now(&self) -> u64 {
        self.lock().now
    }

    /// Moves the device's time forward by `ns`: work and marks queued before then complete.
    pub fn advance(&self, ns: u64) {
        self.lock().now += ns;
    }

    /// Queues a kernel of `duration_ns` on `stream`: it starts when the stream is free (or now)
    /// and its launch is tagged with the innermost id pushed by [`Device::kernels_push`], if
    /// any. Returns the kernel's start on the device's time line.
    pub fn launch(&self, stream: Stream, duration_ns: u64, name: &str) -> u64 {
        self.launch_with(stream, duration_ns, name, [1, 1, 1], [1, 1, 1])
    }

    /// [`SimDevice::launch`] with a grid and block.
    pub fn launch_with(
        &self,
        stream: Stream,
        duration_ns: u64,
        name: &str,
        grid: [u32; 3],
        block: [u32; 3],
    ) -> u64 {
        let mut s = self.lock();
        let now = s.now;
        let st = s.stream(stream);
        let start = st.queue_end.max(now);
        st.queue_end = start + duration_ns;
        s.correlation += 1;
        let correlation = s.correlation;
        if s.kernels_on {
            s.kernels.push(KernelActivity {
                correlation,
                name: name.to_owned(),
                start_ns: start,
                end_ns: start + duration_ns,
                device: stream.device(),
                stream: stream.handle(),
                grid,
                block,
            });
            if let Some(&external) = s.tags.last() {
                s.correlations.push(Correlation {
                    correlation,
                    external,
                });
            }
        }
        start
    }

    /// Events of every stream's pool taken now (recorded and not yet released).
    pub fn events_in_use(&self) -> usize {
        let s = self.lock();
        s.streams
            .iter()
            .filter_map(|st| st.pool.as_ref())
            .map(Pool::in_use)
            .sum()
    }

    /// The size of the pool prepared for `stream`, if any.
    pub fn pool_capacity(&self, stream: Stream) -> Option<usize> {
        let s = self.lock();
        s.streams
            .iter()
            .find(|st| st.stream == stream)
            .and_then(|st| st.pool.as_ref())
            .map(Pool::capacity)
    }

    /// What the hooks did, in order: `push <name>`, `pop`, `sync`, `capture on`, `capture off`,
    /// `kernels on`, `kernels off`.
    pub fn log(&self) -> Vec<String> {
        self.lock().log.clone()
    }

    /// How many times the device was synchronized.
    pub fn synchronizations(&self) -> u64 {
        self.lock().synchronizations
    }

    /// From now on the device's work never ends (a collective whose peer died): a real
    /// device's `synchronize` and `settle` would wait for ever, and panic here instead;
    /// `settle_within` gives up, its pending marks never ready.
    pub fn hang(&self) {
        self.lock().hung = true;
    }
}

impl Clock for SimDevice {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn mark(&self) -> u64 {
        NO_MARK
    }

    fn elapsed(&self, start: u64, stop: u64) -> Reading {
        let s = self.lock();
        match (s.timestamp(start), s.timestamp(stop)) {
            (Some(a), Some(b)) if a <= s.now && b <= s.now => Reading::Ready(b.saturating_sub(a)),
            (Some(_), Some(_)) => Reading::Pending,
            _ => Reading::Lost,
        }
    }

    fn is_linear(&self) -> bool {
        false
    }

    fn settle(&self) {
        self.synchronize();
    }

    fn release(&self, mark: u64) {
        let s = self.lock();
        if let Some((pool, slot)) = decode_mark(mark) {
            if let Some(pool) = s.streams.get(pool as usize).and_then(|st| st.pool.as_ref()) {
                pool.release(slot);
            }
        }
    }
}

/// Writes the timestamp of a slot the caller has just acquired.
fn set_item(pool: &mut Pool<u64>, slot: u32, at: u64) {
    if let Some(item) = pool.get_mut(slot) {
        *item = at;
    }
}

impl Device for SimDevice {
    fn mark_on(&self, stream: Stream) -> u64 {
        let mut s = self.lock();
        let now = s.now;
        let index = s.streams.iter().position(|st| st.stream == stream);
        let Some(index) = index else {
            s.unknown_stream_marks += 1;
            return NO_MARK;
        };
        let st = &mut s.streams[index];
        let at = st.queue_end.max(now);
        let Some(pool) = st.pool.as_ref() else {
            s.unknown_stream_marks += 1;
            return NO_MARK;
        };
        match pool.acquire() {
            Some(slot) => {
                // The pool's items are timestamps; a taken slot is owned by this mark.
                let pool = st.pool.as_mut().expect("checked above");
                set_item(pool, slot, at);
                encode_mark(index as u32, slot)
            }
            None => NO_MARK,
        }
    }

    fn prepare(&self, streams: &[(Stream, usize)]) {
        let mut s = self.lock();
        let limit = s.pool_limit;
        for &(stream, n) in streams {
            let st = s.stream(stream);
            if st.pool.is_none() {
                let n = limit.unwrap_or(n.max(8));
                st.pool = Some(Pool::new(vec![0; n]));
            }
        }
    }

    fn memory_used(&self, device: u32) -> Option<u64> {
        let mut s = self.lock();
        s.memory_queries += 1;
        if !s.memory_info {
            return None;
        }
        Some(*s.memory(device))
    }

    fn lost_marks(&self) -> u64 {
        let s = self.lock();
        s.unknown_stream_marks
            + s.streams
                .iter()
                .filter_map(|st| st.pool.as_ref())
                .map(Pool::exhausted)
                .sum::<u64>()
    }

    fn synchronize(&self) {
        let mut s = self.lock();
        assert!(
            !s.hung,
            "SimDevice: synchronizing a device whose work never ends waits for ever"
        );
        let end = s.streams.iter().map(|st| st.queue_end).max().unwrap_or(0);
        s.now = s.now.max(end);
        s.synchronizations += 1;
        s.log.push("sync".into());
    }

    fn settle_within(&self, _limit: std::time::Duration) -> bool {
        let hung = {
            let mut s = self.lock();
            s.log.push("settle within".into());
            s.hung
        };
        if hung {
            return false;
        }
        self.synchronize();
        true
    }

    fn set_ranges(&self, ranges: &[RangeInfo]) -> bool {
        let mut s = self.lock();
        s.ranges = ranges.to_vec();
        s.nvtx
    }

    fn range_push(&self, index: u32) {
        let mut s = self.lock();
        let name = s
            .ranges
            .get(index as usize)
            .map_or_else(|| format!("#{index}"), |r| r.name.clone());
        s.log.push(format!("push {name}"));
    }

    fn range_pop(&self) {
        self.lock().log.push("pop".into());
    }

    fn capture(&self, on: bool) {
        let entry = if on { "capture on" } else { "capture off" };
        self.lock().log.push(entry.into());
    }

    fn kernels_enable(&self, on: bool) -> bool {
        let mut s = self.lock();
        s.kernels_on = on;
        s.log
            .push(if on { "kernels on" } else { "kernels off" }.into());
        true
    }

    fn kernels_push(&self, external: u64) {
        self.lock().tags.push(external);
    }

    fn kernels_pop(&self) {
        self.lock().tags.pop();
    }

    fn drain_kernels(
        &self,
        kernels: &mut Vec<KernelActivity>,
        correlations: &mut Vec<Correlation>,
    ) {
        let mut s = self.lock();
        kernels.append(&mut s.kernels);
        correlations.append(&mut s.correlations);
    }
}
