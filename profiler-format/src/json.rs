//! `prof.json`, schema `profiler-core/prof/v1` (`v2` when it carries memory figures, host or
//! device): the types, which also read the file back.

use serde::{Deserialize, Serialize};

/// The schema name written in every file that carries no memory figures.
pub const SCHEMA: &str = "profiler-core/prof/v1";

/// The schema name of a file that carries memory figures: what runs allocated on the host
/// ([`Event::memory`], from `profiler_core::Alloc`), or device memory ([`Gpu::memory`] per
/// sample, [`Iterations::device_memory`] per step): v1 plus those. Readers of v1 files that
/// ignore unknown fields read it too; this version says that the figures are there.
pub const SCHEMA_V2: &str = "profiler-core/prof/v2";

/// The schemas this version reads.
pub const SCHEMAS: [&str; 2] = [SCHEMA, SCHEMA_V2];

/// The schema name of the file `prof merge` writes: not a run's profile, which reading says
/// when it is given one.
pub const MERGED_SCHEMA: &str = "profiler-core/merged/v1";

/// The schema a profile of these events and iterations is written with: [`SCHEMA_V2`] when
/// they carry memory figures (host or device), else [`SCHEMA`].
pub fn schema_for(events: &[Event], iterations: &Iterations) -> &'static str {
    let device = |e: &Event| e.gpu.as_ref().is_some_and(|g| g.memory.is_some());
    if !iterations.device_memory.is_empty()
        || events.iter().any(|e| e.memory.is_some() || device(e))
    {
        SCHEMA_V2
    } else {
        SCHEMA
    }
}

/// A whole `prof.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// False when the program ended before the schedule completed.
    pub complete: bool,
    /// How the run was made.
    pub run: Run,
    /// Iteration count and wall times.
    pub iterations: Iterations,
    /// The events, in execution order. In `continuous` mode: those of the last completed
    /// window (every window's statistics are in `windows`).
    pub events: Vec<Event>,
    /// `continuous` mode: the completed windows kept, oldest first: the run's first windows
    /// (`PROF_BASELINE_WINDOWS` of them, marked [`Window::baseline`], kept for the whole run),
    /// then the most recent ones after them (at most `run.windows`, oldest dropped first).
    /// Absent in the other modes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<Window>,
    /// The events that ran only before the loop (seen from start-up to the first `step()`, in
    /// none of warmup's later iterations: a model's construction), in the order they first ran.
    /// They get no place in the schedule; each one's first run is timed instead. Absent when
    /// there is none, and in files written before this field existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_loop: Vec<BeforeLoop>,
    /// The CPU samples taken while the program ran (`PROF_CPU_SAMPLE`), each stack tagged
    /// with the annotated event open on its thread. Absent when sampling was off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_samples: Option<CpuSamples>,
}

/// The CPU samples of a run (`PROF_CPU_SAMPLE`): identical stacks counted together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSamples {
    /// Samples asked for per second of each thread's CPU time.
    pub hz: u32,
    /// Samples taken (timer expirations the handler saw, overruns included).
    pub taken: u64,
    /// Samples lost because a thread's storage was full before it was read.
    #[serde(default)]
    pub dropped: u64,
    /// The threads sampled, in the order they were registered.
    pub threads: Vec<SampledThread>,
    /// The functions the stacks name; a frame whose address no symbol covers (a stripped
    /// binary) is a function of its own, with no name.
    pub functions: Vec<SampledFunction>,
    /// The distinct stacks, each with its count.
    pub stacks: Vec<SampledStack>,
    /// When each sample was taken (`trace` mode on the CPU clock only): absent otherwise, and
    /// in files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<SampleTimeline>,
    /// What interrupted the threads: `perf_task_clock` (a `perf_event_open` task-clock event
    /// per thread, one signal per period) or `posix_timer` (a `timer_create` timer of each
    /// thread's CPU clock, checked at the kernel's tick, a signal weighted by its overruns).
    /// Absent in files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
    /// Signals that found no thread's storage (a stopped timer's or event's, still pending when
    /// it stopped), not counted in `taken`. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unrouted: u64,
}

/// When each sample was taken, on the events' time line (`trace` mode): parallel lists, one
/// entry per sample, in the order the samples were taken on each thread. A sample is placed as
/// an event's sample is: its iteration, then its time from that iteration's start, so that it
/// falls inside the slices of the events open when it was taken. At most
/// [`SampleTimeline::BOUND`] samples are listed; the others (and those taken before the first
/// iteration began) are counted in `dropped`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleTimeline {
    /// Index into [`CpuSamples::threads`] of each sample's thread.
    pub threads: Vec<u32>,
    /// The iteration (0 first) each sample was taken in.
    pub iters: Vec<u32>,
    /// Each sample's time from the start of its iteration, in nanoseconds.
    pub offsets_ns: Vec<u64>,
    /// Index into [`CpuSamples::stacks`] of each sample's stack (whose thread is the
    /// sample's).
    pub stacks: Vec<u32>,
    /// Samples not listed: past the bound, or taken before the first iteration began.
    #[serde(default)]
    pub dropped: u64,
}

impl SampleTimeline {
    /// The most samples a timeline lists (about 17 minutes of one thread's CPU time at
    /// 1,000 samples a second).
    pub const BOUND: usize = 1 << 20;

    /// How many samples it lists (the shortest of its lists, should they differ).
    pub fn len(&self) -> usize {
        self.threads
            .len()
            .min(self.iters.len())
            .min(self.offsets_ns.len())
            .min(self.stacks.len())
    }

    /// Whether it lists no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A thread that was sampled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampledThread {
    /// The thread's id in the operating system.
    pub tid: u32,
    /// The thread's name, when it has one.
    #[serde(default)]
    pub name: Option<String>,
}

/// One function of the sampled stacks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampledFunction {
    /// Its demangled name, `null` when no symbol covers its address.
    pub name: Option<String>,
    /// An address inside it (hexadecimal, `0x...`), as the program ran.
    pub addr: String,
}

/// A distinct stack, counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampledStack {
    /// Index into [`CpuSamples::threads`].
    pub thread: u32,
    /// The id of the innermost annotated event open when the samples were taken (`null`:
    /// none).
    pub event: Option<String>,
    /// That event's name.
    #[serde(default)]
    pub name: Option<String>,
    /// That event's `layer` key.
    #[serde(default)]
    pub layer: Option<String>,
    /// That event's `phase` key.
    #[serde(default)]
    pub phase: Option<String>,
    /// Indices into [`CpuSamples::functions`], the sampled function first, then its callers.
    pub frames: Vec<u32>,
    /// True when the stack was deeper than the frames kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// True when the samples' thread had opened no annotated event while sampling (a pool's
    /// worker): `event` is then the innermost event of the thread that last opened or closed
    /// one when they were taken (the layer whose work the pool was most likely doing), not an
    /// event of their own thread.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inherited: bool,
    /// How many samples had this stack and this event.
    pub count: u64,
}

/// An event that ran only before the loop: not scheduled, reported with its first run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BeforeLoop {
    /// The probe's unique id.
    pub id: String,
    /// The probe's name.
    pub name: String,
    /// The `layer` key, or `null`.
    pub layer: Option<String>,
    /// The `phase` key, or `null`.
    pub phase: Option<String>,
    /// `fn`, `probe`, `runtime` or `span`.
    pub kind: String,
    /// `module_path!()` of the annotation.
    pub module: String,
    /// Source file of the annotation.
    pub file: String,
    /// Source line of the annotation.
    pub line: u32,
    /// Which run of the probe before the first `step()` (0 first; per stream when a stream is
    /// named); for a merged one, the first run it holds.
    pub occurrence: u32,
    /// True when it holds every run of the probe from `occurrence` on (`PROF_MAX_EVENTS` was
    /// reached). Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merged: bool,
    /// GPU device of the runs' stream, `null` on the CPU.
    #[serde(default)]
    pub device: Option<u32>,
    /// The runs' stream, `null` on the CPU.
    #[serde(default)]
    pub stream: Option<String>,
    /// Duration of its first run, measured as a sample is (on the CPU); `null` when it was not
    /// timed: a run on a stream, an `async fn`'s.
    pub duration_ns: Option<u64>,
    /// When that run started, from start-up (the start of the first iteration); `null` when
    /// it was not timed.
    pub offset_ns: Option<u64>,
}

impl BeforeLoop {
    /// Its label for people, as an event's: `layer/phase name#occurrence`.
    pub fn label(&self) -> String {
        crate::Identity {
            id: self.id.clone(),
            name: self.name.clone(),
            layer: self.layer.clone(),
            phase: self.phase.clone(),
            occurrence: self.occurrence,
        }
        .label()
    }
}

/// `continuous` mode: one full pass of the schedule (every event measured `run.repeat` times).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// 0 for the run's first window; windows dropped by the `run.windows` cap leave a gap
    /// before the first one kept.
    pub index: u64,
    /// The index of the window's first iteration.
    pub first_iteration: u64,
    /// Wall time of each of the window's iterations, in order.
    pub wall_ns: Vec<u64>,
    /// Each event measured in the window (merged events are not), in execution order.
    pub events: Vec<WindowEvent>,
    /// One of the run's first windows (`PROF_BASELINE_WINDOWS` of them), kept for the whole run
    /// so that drift can be judged against the run's start; they do not count against
    /// `run.windows`.
    /// Absent (false) in the others, and in files written before this field existed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub baseline: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Window {
    /// How many iterations the window spans.
    pub fn iterations(&self) -> u64 {
        self.wall_ns.len() as u64
    }
}

/// One event in one window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowEvent {
    /// The event's `order`, as in `events` (the same across windows; a probe first seen late
    /// gets a new one).
    pub order: u32,
    /// Durations, one per sample.
    pub samples_ns: Vec<u64>,
    /// Statistics of `samples_ns`.
    pub stats: Stats,
}

/// How the run was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The program's file name.
    pub program: String,
    /// Process id.
    pub pid: u32,
    /// Host name.
    pub host: String,
    /// Rank (from `RANK`, `OMPI_COMM_WORLD_RANK`, `SLURM_PROCID`, else 0).
    pub rank: u32,
    /// `sample`, `trace` or `continuous`.
    pub mode: String,
    /// `PROF_FILTER` as given (empty: every probe).
    pub filter: String,
    /// `PROF_WARMUP`.
    pub warmup: u32,
    /// `PROF_REPEAT`.
    pub repeat: u32,
    /// The clock that timed the samples (`cpu`, `fake`, ...).
    pub clock: String,
    /// `PROF_MAX_EVENTS`.
    #[serde(default)]
    pub max_events: u32,
    /// Median duration of an empty measurement on this clock, measured at start-up: the floor
    /// included in every sample (not subtracted).
    #[serde(default)]
    pub timer_floor_ns: u64,
    /// Version of profiler-core that wrote the file.
    #[serde(default)]
    pub profiler_version: String,
    /// `continuous` mode: the most windows kept besides the baseline windows (`PROF_WINDOWS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<u32>,
    /// A trace taken on demand from a `continuous`-mode run (`prof trigger`): what asked for
    /// it. Absent in every other file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_demand: Option<OnDemand>,
    /// The machine's peak the run's rates and MFU are reported against (`PROF_PEAK`, or
    /// `PROF_PEAK_FLOPS` and `PROF_PEAK_BYTES`); absent when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<crate::peak::Peak>,
    /// The delay the run injected into the probes `PROF_DELAY_FILTER` selects (`PROF_DELAY`,
    /// what `prof whatif` sets); absent when none was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Delay>,
}

/// The delay a run injected (`run.delay`): every run of the selected probes was followed by a
/// calibrated spin of the amount asked for, outside its own sample.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delay {
    /// `PROF_DELAY_FILTER` as given: which probes were delayed.
    pub filter: String,
    /// `PROF_DELAY` as written back by the run: a duration (`50us`) or a share of each run's
    /// own duration (`10%`).
    pub amount: String,
    /// Runs of the selected probes that were delayed (each one, a delay of 0 included).
    pub calls: u64,
    /// The delay asked for over those runs, in nanoseconds.
    pub requested_ns: u64,
    /// The delay the spins took, in nanoseconds (measured on the CPU clock: the request, plus
    /// the last read of the clock and any time the thread was not running at the end).
    pub injected_ns: u64,
}

/// This machine's host name, as `run.host` records it (and as `prof trigger` and `prof peak`
/// compare and record it).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// What asked a `continuous`-mode run for the trace a file holds (`run.on_demand`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnDemand {
    /// `signal` (SIGUSR2, `prof trigger PID`) or `control file` (`PROF_CONTROL`).
    pub source: String,
    /// The iterations asked for (the trace holds at most `PROF_REPEAT`).
    pub asked_iterations: u32,
    /// The iteration the request named (`at=`), when it named one; the trace begins there,
    /// or as soon after as the run saw the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<u64>,
    /// The request's `id=`, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Every completed iteration, warmup included (in `continuous` mode: those of the last
/// completed window, whose first is iteration `first`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Iterations {
    /// How many iterations completed.
    pub count: u64,
    /// The index of the iteration `wall_ns[0]` is the wall time of: 0, except in `continuous`
    /// mode, where memory is bounded and only the last window's iterations are listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first: u64,
    /// Wall time of each, from the previous `step()` (the first: from start-up) to this one:
    /// `wall_ns[k]` is iteration `first + k`.
    pub wall_ns: Vec<u64>,
    /// Device memory in use at each `step()`, one entry per device in use (one that an event
    /// was timed on a stream of), by device ordinal; absent without a device (schema
    /// [`SCHEMA_V2`] when present).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_memory: Vec<DeviceUsage>,
}

/// One device's memory in use at each `step()`, aligned with [`Iterations::wall_ns`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceUsage {
    /// The device ordinal.
    pub device: u32,
    /// `used_bytes[k]`: the bytes in use on the device (for CUDA, `cuMemGetInfo`'s total less
    /// free: every process's allocations and the contexts' own) at the `step()` that ended
    /// iteration `first + k`, the same list as `wall_ns`; `null` where it was not read (before
    /// the device was first used, or the device could not say).
    pub used_bytes: Vec<Option<u64>>,
}

impl DeviceUsage {
    /// The readings there are, in order.
    pub fn readings(&self) -> impl Iterator<Item = u64> + '_ {
        self.used_bytes.iter().flatten().copied()
    }
}

impl Iterations {
    /// The wall time of iteration `iter`, if listed.
    pub fn wall_of(&self, iter: u64) -> Option<u64> {
        let k = iter.checked_sub(self.first)?;
        self.wall_ns.get(usize::try_from(k).ok()?).copied()
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One event: a (probe, occurrence within the iteration) pair, or a probe's merged occurrences.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The probe's unique id.
    pub id: String,
    /// The probe's name.
    pub name: String,
    /// The `layer` key, or `null`.
    pub layer: Option<String>,
    /// The `phase` key, or `null`.
    pub phase: Option<String>,
    /// `fn` or `probe`.
    pub kind: String,
    /// `module_path!()` of the annotation.
    pub module: String,
    /// Source file of the annotation.
    pub file: String,
    /// Source line of the annotation.
    pub line: u32,
    /// Which run of the probe within an iteration (0 first); for a merged event, the first run
    /// it holds.
    pub occurrence: u32,
    /// Position in the iteration's execution order (0 first).
    pub order: u32,
    /// GPU device, `null` on the CPU clock.
    pub device: Option<u32>,
    /// GPU stream, `null` on the CPU clock.
    pub stream: Option<String>,
    /// True when this event holds every run of the probe from `occurrence` on (the
    /// `PROF_MAX_EVENTS` bound was reached).
    #[serde(default)]
    pub merged: bool,
    /// The `order` of the event that was running (on the same thread) when this one started,
    /// learned during warmup; `null` for a top-level event. A parent's time includes its
    /// children's.
    #[serde(default)]
    pub parent: Option<u32>,
    /// The event ran on a thread other than the one that calls `step()`: beside that thread's
    /// work, not on its stack. With a `parent`, it is work handed to a worker while the parent
    /// was open (within the parent's time); without one, a thread that runs on its own (a
    /// loader). Absent (false) for events on the stepping thread.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub concurrent: bool,
    /// Durations, one per sample.
    pub samples_ns: Vec<u64>,
    /// Start of each sample from the start of its iteration.
    pub offsets_ns: Vec<u64>,
    /// Iteration index (0 first) of each sample.
    pub sample_iters: Vec<u32>,
    /// Summary statistics of the durations.
    pub stats: Stats,
    /// Present for an event timed on a device stream, or one whose kernels were attributed
    /// (`PROF_KERNELS=1`): what the device adds to the picture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Gpu>,
    /// Present when the program installed `profiler_core::Alloc` (schema
    /// [`SCHEMA_V2`]): what each sample's run allocated on its thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Memory>,
    /// Present when the annotation has a `flops` or `bytes` key: the work each sample's run
    /// did, as the keys counted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<SampleWork>,
    /// Present when the annotation has a `shape` key: each sample's input shape, so that the
    /// reports split the event by shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shapes: Option<Shapes>,
}

/// The input shape of each sample of an event, as its annotation's `shape` key gave it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Shapes {
    /// The distinct shapes kept, the one with the most samples first (ties: the first seen
    /// first), at most `PROF_SHAPES` of them. A shape is its lists of dimensions, each list's
    /// numbers joined by `x` and the lists by `, ` (`32x512, 512x1024`); `…` ends one cut at 8
    /// numbers.
    pub values: Vec<String>,
    /// For each sample, in the order of `samples_ns`: the index in `values` of its shape, or
    /// `null` for a shape past the bound.
    pub sample_shapes: Vec<Option<u32>>,
    /// How many distinct shapes were past the bound (their samples' entries are `null`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub others: u64,
}

/// The work each run of an event did, as its annotation's `flops` and `bytes` keys counted it,
/// one value per sample in the order of `samples_ns`. Each list is present only when the
/// annotation has that key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleWork {
    /// Floating-point operations of each sample's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops: Option<Vec<u64>>,
    /// Bytes moved by each sample's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Vec<u64>>,
}

/// What each run of an event allocated, on the thread that ran it, one value per sample in
/// the order of `samples_ns` (counted by `profiler_core::Alloc`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Bytes allocated (a `realloc` counts its new size).
    pub alloc_bytes: Vec<u64>,
    /// Bytes freed (a `realloc` counts its old size).
    pub freed_bytes: Vec<u64>,
    /// Number of allocations.
    pub allocs: Vec<u64>,
    /// Peak of the bytes allocated and not yet freed during the run, above what was live when
    /// it started.
    pub peak_bytes: Vec<u64>,
}

impl Memory {
    /// How many samples the figures are for (the length of every list when they agree).
    pub fn len(&self) -> usize {
        self.alloc_bytes.len()
    }

    /// Whether there is no sample.
    pub fn is_empty(&self) -> bool {
        self.alloc_bytes.is_empty()
    }
}

/// The device side of an event.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    /// For an event timed on a stream (where `samples_ns` is device time): the CPU time of the
    /// same calls, from entry to return, one per sample in the same order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_samples_ns: Vec<u64>,
    /// Statistics of `cpu_samples_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_stats: Option<Stats>,
    /// Samples dropped because a device timestamp could not be taken (the stream's event pool
    /// was exhausted: the device lagged the CPU by many iterations) or read.
    #[serde(default)]
    pub lost: u64,
    /// Kernels launched inside the event's runs (`PROF_KERNELS=1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernels: Option<Kernels>,
    /// For an event timed on a stream whose device reports its memory: the device memory in
    /// use around each run, one value per sample in the order of `samples_ns` (schema
    /// [`SCHEMA_V2`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<DeviceMemory>,
}

/// The device memory in use around each run of an event timed on a stream, read on the CPU
/// when the run started and when it ended (what the device had allocated then, not where its
/// stream was).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemory {
    /// Bytes in use on the event's device when the run ended; `null` where the device could
    /// not say.
    pub used_bytes: Vec<Option<u64>>,
    /// That less the bytes in use when it started: what the run left allocated (negative: it
    /// freed more than it allocated); `null` where either reading is missing.
    pub change_bytes: Vec<Option<i64>>,
}

impl DeviceMemory {
    /// How many samples the figures are for.
    pub fn len(&self) -> usize {
        self.used_bytes.len()
    }

    /// Whether there is no sample.
    pub fn is_empty(&self) -> bool {
        self.used_bytes.is_empty()
    }
}

/// The kernels attributed to an event (`PROF_KERNELS=1`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Kernels {
    /// Per sample (the order of `samples_ns`): the sum of the durations of the kernels the run
    /// launched. Overlapping kernels count twice; gaps count zero.
    pub sum_ns: Vec<u64>,
    /// Per sample: from the start of the run's first kernel to the end of its last (the
    /// projection of the run on the device's time line). Gaps count; overlaps count once.
    pub projection_ns: Vec<u64>,
    /// Statistics of `sum_ns`.
    pub sum_stats: Stats,
    /// Statistics of `projection_ns`.
    pub projection_stats: Stats,
    /// Each distinct kernel (name, device, stream, grid, block) and its durations.
    pub list: Vec<Kernel>,
}

/// One kernel launched by an event's runs, aggregated over the samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// The kernel's name, as the driver reports it (mangled for C++ kernels).
    pub name: String,
    /// Device ordinal.
    pub device: u32,
    /// Stream id.
    pub stream: u64,
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Block dimensions.
    pub block: [u32; 3],
    /// Launches seen.
    pub count: u64,
    /// Sum of their durations.
    pub total_ns: u64,
    /// Mean duration.
    pub mean_ns: u64,
    /// Shortest.
    pub min_ns: u64,
    /// Longest.
    pub max_ns: u64,
}

/// Summary statistics, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of runs measured.
    pub count: u64,
    /// Arithmetic mean.
    pub mean_ns: u64,
    /// Median (mean of the two middle values for an even count).
    pub median_ns: u64,
    /// Smallest.
    pub min_ns: u64,
    /// Largest.
    pub max_ns: u64,
    /// Sample standard deviation (n - 1 in the denominator; 0 for fewer than two runs).
    pub stddev_ns: u64,
    /// 90th percentile (nearest rank).
    pub p90_ns: u64,
}

impl Stats {
    /// Statistics of a set of durations.
    pub fn of(values: &[u64]) -> Stats {
        if values.is_empty() {
            return Stats::default();
        }
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let sum: u128 = sorted.iter().map(|&v| v as u128).sum();
        let mean = sum as f64 / n as f64;
        let var = if n > 1 {
            sorted
                .iter()
                .map(|&v| (v as f64 - mean).powi(2))
                .sum::<f64>()
                / (n - 1) as f64
        } else {
            0.0
        };
        let (median, p90) = quantiles(&sorted);
        Stats {
            count: n as u64,
            mean_ns: mean.round() as u64,
            median_ns: median,
            min_ns: sorted[0],
            max_ns: sorted[n - 1],
            stddev_ns: var.sqrt().round() as u64,
            p90_ns: p90,
        }
    }
}

/// Median and 90th percentile of sorted values.
pub fn quantiles(sorted: &[u64]) -> (u64, u64) {
    let n = sorted.len();
    if n == 0 {
        return (0, 0);
    }
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        ((sorted[n / 2 - 1] as u128 + sorted[n / 2] as u128) / 2) as u64
    };
    let rank = ((0.9 * n as f64).ceil() as usize).clamp(1, n);
    (median, sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_known_values() {
        let s = Stats::of(&[10, 20, 30, 40]);
        assert_eq!(s.count, 4);
        assert_eq!(
            (s.mean_ns, s.median_ns, s.min_ns, s.max_ns),
            (25, 25, 10, 40)
        );
        assert_eq!(s.stddev_ns, 13); // sqrt(500/3) = 12.9
        assert_eq!(s.p90_ns, 40);
        let s = Stats::of(&[5]);
        assert_eq!((s.median_ns, s.stddev_ns, s.p90_ns), (5, 0, 5));
        assert_eq!(Stats::of(&[]), Stats::default());
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(Stats::of(&v).p90_ns, 90);
    }
}
