//! The CPU sampler (`PROF_CPU_SAMPLE`, issue 38): samples taken inside an annotated event carry
//! its tag, the open events are published, and the hostile cases end without a crash.
//!
//! The checks are on tags, never on shares or times: a sample whose sampled function is known
//! must carry the event that function runs in, however many samples a busy machine lets the
//! timers take (they count each thread's CPU time, so every thread that works gets some).
#![cfg(all(feature = "cpu-sample", target_os = "linux"))]

use std::hint::black_box;
use std::sync::{Mutex, MutexGuard};

use profiler_core::format::CpuSamples;
use profiler_core::{probe, profiled, Config, Filter, InitGuard, Mode, Profile, SampleClock};

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn out_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prof-cpu-sample-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{name}.json"))
}

fn start(name: &str, hz: u32) -> InitGuard {
    start_with(name, hz, Filter::all())
}

fn start_with(name: &str, hz: u32, filter: Filter) -> InitGuard {
    start_on(name, hz, filter, SampleClock::Auto)
}

fn start_on(name: &str, hz: u32, filter: Filter, clock: SampleClock) -> InitGuard {
    let config = Config {
        cpu_sample_clock: clock,
        filter,
        mode: Mode::Sample,
        warmup: 1,
        repeat: 1000,
        out: out_path(name).display().to_string(),
        summary: false,
        cpu_sample: Some(hz),
        ..Config::default()
    };
    profiler_core::init_with(config, None).unwrap()
}

fn finish(name: &str, guard: InitGuard) -> CpuSamples {
    // Two iterations, so that the file has events to read back.
    layer_b(1);
    profiler_core::step();
    layer_b(1);
    profiler_core::step();
    drop(guard);
    let path = out_path(name);
    let profile: Profile = profiler_core::format::load_profile(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    profile
        .cpu_samples
        .expect("prof.json has a cpu_samples section")
}

/// `n` rounds of arithmetic, written so that the function calls nothing: a sample inside it
/// has it as its sampled function whether or not the test is built with frame pointers (the
/// walk needs them to go further), and at any optimization level.
macro_rules! leaf {
    ($name:ident, $seed:expr) => {
        #[inline(never)]
        fn $name(n: u64) -> u64 {
            let mut x: u64 = $seed;
            let mut i = 0;
            while i < n {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i) ^ (x >> 7);
                i += 1;
            }
            x
        }
    };
}

leaf!(work_in_a, 1);
leaf!(work_in_b, 2);
leaf!(work_in_helper, 3);
leaf!(work_outside, 4);

/// [`work_in_a`] and friends, kept from being folded into their callers' constants.
fn spin(n: u64, seed: u64) -> u64 {
    match seed {
        1 => black_box(work_in_a(black_box(n))),
        2 => black_box(work_in_b(black_box(n))),
        3 => black_box(work_in_helper(black_box(n))),
        _ => black_box(work_outside(black_box(n))),
    }
}

#[profiled(layer = "sample_a", phase = "fwd")]
fn layer_a(n: u64) -> u64 {
    spin(n, 1)
}

#[profiled(layer = "sample_b", phase = "fwd")]
fn layer_b(n: u64) -> u64 {
    spin(n, 2)
}

#[profiled(layer = "sample_helper")]
fn helper_layer(n: u64) -> u64 {
    spin(n, 3)
}

/// The names of a stack's frames, the sampled function first.
fn names<'a>(samples: &'a CpuSamples, frames: &[u32]) -> Vec<&'a str> {
    frames
        .iter()
        .map(|&f| samples.functions[f as usize].name.as_deref().unwrap_or("?"))
        .collect()
}

/// Which of our functions a stack's frames say it ran in (the innermost one named).
fn ran_in(names: &[&str]) -> Option<&'static str> {
    for name in names {
        for known in ["work_in_a", "work_in_b", "work_in_helper", "work_outside"] {
            if name.ends_with(known) {
                return Some(known);
            }
        }
    }
    None
}

#[test]
fn samples_inside_an_event_carry_its_tag_on_every_thread() {
    let _serial = serial();
    let guard = start("tags", 2000);
    let rounds = 1_000_000;
    let helper = std::thread::Builder::new()
        .name("helper".into())
        .spawn(move || {
            let mut x = 0;
            for _ in 0..8 {
                x ^= helper_layer(rounds);
            }
            x
        })
        .unwrap();
    let mut x = 0;
    for _ in 0..8 {
        x ^= layer_a(rounds);
        x ^= layer_b(rounds);
        x ^= spin(rounds / 4, 4);
        profiler_core::step();
    }
    black_box(x ^ helper.join().unwrap());
    let samples = finish("tags", guard);
    assert_eq!(samples.hz, 2000);
    let mut seen = std::collections::BTreeMap::new();
    for stack in &samples.stacks {
        let names = names(&samples, &stack.frames);
        let Some(function) = ran_in(&names) else {
            continue;
        };
        let expected = match function {
            "work_in_a" => Some("sample_a"),
            "work_in_b" => Some("sample_b"),
            "work_in_helper" => Some("sample_helper"),
            _ => None,
        };
        assert_eq!(
            stack.layer.as_deref(),
            expected,
            "a sample in {function} tagged {:?}: {names:?}",
            stack.event
        );
        *seen.entry(function).or_insert(0) += stack.count;
    }
    // `work_outside` runs a quarter as long: at the kernel's tick (CPU timers are checked
    // there) a busy machine may leave it without a sample, so only its tag is checked.
    for function in ["work_in_a", "work_in_b", "work_in_helper"] {
        assert!(
            seen.get(function).copied().unwrap_or(0) > 0,
            "no sample in {function}: {seen:?} of {} taken",
            samples.taken
        );
    }
    let helper_thread = samples
        .threads
        .iter()
        .position(|t| t.name.as_deref() == Some("helper"))
        .expect("the helper thread was sampled") as u32;
    assert!(samples
        .stacks
        .iter()
        .filter(|s| s.layer.as_deref() == Some("sample_helper"))
        .all(|s| s.thread == helper_thread));
}

#[test]
fn the_open_event_is_published_while_sampling() {
    let _serial = serial();
    assert_eq!(
        profiler_core::open_event(),
        None,
        "no session: nothing published"
    );
    let guard = start("open", 100);
    assert_eq!(profiler_core::open_event(), None, "outside every event");
    let inside = {
        let _outer = probe!("outer_probe", layer = "open_outer");
        let outer = profiler_core::open_event();
        let inner = {
            let _inner = probe!("inner_probe", layer = "open_inner", phase = "bwd");
            profiler_core::open_event()
        };
        (outer, inner, profiler_core::open_event())
    };
    let (outer, inner, after) = inside;
    let outer = outer.expect("the outer probe is open");
    assert_eq!(
        (outer.name, outer.layer, outer.phase),
        ("outer_probe", Some("open_outer"), None)
    );
    let inner = inner.expect("the inner probe is open");
    assert_eq!(
        (inner.name, inner.layer, inner.phase),
        ("inner_probe", Some("open_inner"), Some("bwd"))
    );
    assert_eq!(
        after.map(|e| e.name),
        Some("outer_probe"),
        "the inner one closed"
    );
    assert_eq!(profiler_core::open_event(), None);
    // A discarded guard closes its event too.
    probe!("discarded", layer = "open_outer").discard();
    assert_eq!(profiler_core::open_event(), None);
    let _ = finish("open", guard);
    let _p = probe!("after_the_session", layer = "open_outer");
    assert_eq!(
        profiler_core::open_event(),
        None,
        "sampling over: nothing published"
    );
}

#[profiled(layer = "deep")]
fn recurse(depth: u32) -> u64 {
    if depth == 0 {
        spin(200_000, 4)
    } else {
        black_box(recurse(depth - 1)).wrapping_add(1)
    }
}

#[test]
fn a_deep_recursion_truncates_stacks_and_does_not_crash() {
    let _serial = serial();
    let guard = start("deep", 5000);
    // 10,000 nested runs on a thread with room for them (unoptimized frames are large).
    let total = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(|| (0..5).map(|_| recurse(10_000)).fold(0, u64::wrapping_add))
        .unwrap()
        .join()
        .unwrap();
    black_box(total);
    let samples = finish("deep", guard);
    assert!(
        samples.stacks.iter().all(|s| s.frames.len() <= 64),
        "no stack longer than the frames kept"
    );
    // `finish` runs `layer_b` (its first probe registers this thread with the sampler, inside
    // it): a sample may land there too, at this rate.
    let other: Vec<_> = samples
        .stacks
        .iter()
        .filter(|s| !matches!(s.layer.as_deref(), None | Some("deep") | Some("sample_b")))
        .collect();
    assert!(other.is_empty(), "{other:?}");
}

#[test]
fn a_thread_storm_is_sampled_without_a_crash() {
    let _serial = serial();
    let guard = start("storm", 10_000);
    for _ in 0..4 {
        let threads: Vec<_> = (0..64)
            .map(|i| std::thread::spawn(move || layer_b(20_000 + i)))
            .collect();
        for t in threads {
            black_box(t.join().unwrap());
        }
    }
    let samples = finish("storm", guard);
    assert!(
        samples.threads.len() >= 64,
        "{} threads",
        samples.threads.len()
    );
    for stack in &samples.stacks {
        let names = names(&samples, &stack.frames);
        if ran_in(&names) == Some("work_in_b") {
            assert_eq!(stack.layer.as_deref(), Some("sample_b"), "{names:?}");
        }
    }
}

/// The signal a test sends to a working thread; its handler runs a probe.
static HANDLED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn probe_in_handler(_: libc::c_int) {
    let _p = probe!("in_handler", layer = "sample_handler");
    HANDLED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

#[test]
fn a_probe_inside_a_signal_handler_keeps_the_tags_right() {
    let _serial = serial();
    // SAFETY: the handler runs a probe that takes no part (the filter leaves it out), on a
    // thread already registered: its path only stores into the thread's stack of open events
    // (a probe that takes part may take the learner's lock in warmup, which a handler must
    // not), and touches an atomic.
    unsafe {
        libc::signal(
            libc::SIGUSR1,
            probe_in_handler as *const () as libc::sighandler_t,
        )
    };
    let guard = start_with(
        "handler",
        5000,
        Filter::parse("layer!=sample_handler").unwrap(),
    );
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let worker = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            let mut x = 0;
            // Registered by its first run, before any signal comes.
            x ^= layer_b(1);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                x ^= layer_a(20_000);
                x ^= spin(5_000, 4);
            }
            x
        })
    };
    // Let the worker register, then interrupt it many times.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let thread = {
        use std::os::unix::thread::JoinHandleExt;
        worker.as_pthread_t()
    };
    for _ in 0..200 {
        // SAFETY: the worker runs until `done` is set, so its pthread_t is valid.
        unsafe { libc::pthread_kill(thread, libc::SIGUSR1) };
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    black_box(worker.join().unwrap());
    assert!(HANDLED.load(std::sync::atomic::Ordering::Relaxed) > 0);
    let samples = finish("handler", guard);
    for stack in &samples.stacks {
        let names = names(&samples, &stack.frames);
        match ran_in(&names) {
            Some("work_in_a") => assert_eq!(stack.layer.as_deref(), Some("sample_a"), "{names:?}"),
            Some("work_outside") => assert_eq!(stack.layer, None, "{names:?}"),
            _ => {}
        }
    }
}

#[test]
fn a_probe_that_takes_no_part_is_published_but_not_recording() {
    let _serial = serial();
    let guard = start_with(
        "untaken",
        100,
        Filter::parse("layer!=open_untaken").unwrap(),
    );
    {
        let p = probe!("untaken_probe", layer = "open_untaken");
        assert!(!p.is_recording(), "it takes no sample");
        assert_eq!(
            profiler_core::open_event().map(|e| e.name),
            Some("untaken_probe")
        );
    }
    assert_eq!(profiler_core::open_event(), None);
    let _ = finish("untaken", guard);
}

/// The (iteration, offset) spans of the samples of the events of probe `id` in `profile`.
fn spans_of(profile: &Profile, id: &str) -> Vec<(u32, u64, u64)> {
    profile
        .events
        .iter()
        .filter(|e| e.id == id)
        .flat_map(|e| {
            (0..e
                .samples_ns
                .len()
                .min(e.offsets_ns.len())
                .min(e.sample_iters.len()))
                .map(move |j| {
                    let start = e.offsets_ns[j];
                    (e.sample_iters[j], start, start + e.samples_ns[j])
                })
        })
        .collect()
}

#[test]
fn trace_mode_places_each_sample_inside_the_slice_it_was_tagged_with() {
    let _serial = serial();
    let name = "timeline";
    let config = Config {
        filter: Filter::all(),
        mode: Mode::Trace,
        warmup: 1,
        repeat: 4,
        out: out_path(name).display().to_string(),
        summary: false,
        cpu_sample: Some(2000),
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, None).unwrap();
    let rounds = 1_000_000;
    let mut x = 0;
    for _ in 0..5 {
        let helper = std::thread::Builder::new()
            .name("timeline-helper".into())
            .spawn(move || helper_layer(rounds))
            .unwrap();
        x ^= layer_a(rounds);
        x ^= layer_b(rounds);
        x ^= spin(rounds / 4, 4);
        x ^= helper.join().unwrap();
        profiler_core::step();
    }
    black_box(x);
    drop(guard);
    let path = out_path(name);
    let profile: Profile = profiler_core::format::load_profile(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let samples = profile.cpu_samples.clone().expect("cpu_samples");
    let timeline = samples
        .timeline
        .clone()
        .expect("trace mode lists when each sample was taken");
    let n = timeline.threads.len();
    assert!(n > 0, "no sample on the timeline ({} taken)", samples.taken);
    assert_eq!(timeline.iters.len(), n);
    assert_eq!(timeline.offsets_ns.len(), n);
    assert_eq!(timeline.stacks.len(), n);
    assert!(n as u64 + timeline.dropped <= samples.taken);
    let mut inside = std::collections::BTreeMap::new();
    for i in 0..n {
        let stack = &samples.stacks[timeline.stacks[i] as usize];
        assert_eq!(
            stack.thread, timeline.threads[i],
            "sample {i}: its stack's thread"
        );
        let names = names(&samples, &stack.frames);
        let Some(function) = ran_in(&names) else {
            continue;
        };
        let Some(id) = stack.event.as_deref() else {
            continue;
        };
        if function == "work_outside" {
            continue;
        }
        let spans = spans_of(&profile, id);
        let (iter, at) = (timeline.iters[i], timeline.offsets_ns[i]);
        if !spans.iter().any(|s| s.0 == iter) {
            continue; // the warmup iteration: no slice drawn
        }
        assert!(
            spans
                .iter()
                .any(|&(k, start, end)| k == iter && start <= at && at <= end),
            "a sample in {function} at iteration {iter} + {at} ns lies in no slice of {id}: \
             {spans:?}"
        );
        *inside.entry(function).or_insert(0) += 1;
    }
    for function in ["work_in_a", "work_in_b", "work_in_helper"] {
        assert!(
            inside.get(function).copied().unwrap_or(0) > 0,
            "no sample in {function} placed inside its slice: {inside:?} of {n} listed"
        );
    }
}

/// The functions of ours that `samples`' stacks ran in, with their samples.
fn functions_sampled(samples: &CpuSamples) -> std::collections::BTreeMap<&'static str, u64> {
    let mut seen = std::collections::BTreeMap::new();
    for stack in &samples.stacks {
        if let Some(function) = ran_in(&names(samples, &stack.frames)) {
            *seen.entry(function).or_insert(0) += stack.count;
        }
    }
    seen
}

#[test]
fn continuous_mode_writes_each_windows_samples_only() {
    let _serial = serial();
    let name = "windows";
    let config = Config {
        filter: Filter::all(),
        mode: Mode::Continuous,
        warmup: 1,
        repeat: 4,
        windows: 4,
        baseline_windows: 0,
        out: out_path(name).display().to_string(),
        summary: false,
        cpu_sample: Some(2000),
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, None).unwrap();
    let rounds = 1_000_000;
    // Warmup learns both layers: windows of 2 events x 4 iterations = 8 iterations.
    let mut x = layer_a(1) ^ layer_b(1);
    profiler_core::step();
    // Phase 1, iterations 1-16 (windows 0 and 1): only layer A works.
    for _ in 0..16 {
        x ^= layer_a(rounds);
        profiler_core::step();
    }
    let first = profiler_core::snapshot().expect("a session");
    // Phase 2, iterations 17-40 (windows 2, 3 and 4): only layer B works.
    for _ in 0..24 {
        x ^= layer_b(rounds);
        profiler_core::step();
    }
    black_box(x);
    drop(guard);
    let path = out_path(name);
    let last: Profile = profiler_core::format::load_profile(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        first.iterations.first, 9,
        "the first snapshot shows window 1"
    );
    assert_eq!(last.iterations.first, 33, "the file shows window 4");
    let first = first.cpu_samples.expect("window 1's file has its samples");
    let last = last.cpu_samples.expect("window 4's file has its samples");
    let (in_first, in_last) = (functions_sampled(&first), functions_sampled(&last));
    assert!(in_first.contains_key("work_in_a"), "window 1: {in_first:?}");
    assert!(
        !in_first.contains_key("work_in_b"),
        "window 1: {in_first:?}"
    );
    assert!(in_last.contains_key("work_in_b"), "window 4: {in_last:?}");
    assert!(!in_last.contains_key("work_in_a"), "window 4: {in_last:?}");
    assert_eq!(
        first.taken,
        first.stacks.iter().map(|s| s.count).sum::<u64>()
    );
    assert_eq!(last.taken, last.stacks.iter().map(|s| s.count).sum::<u64>());
    assert!(last.timeline.is_none(), "no timeline outside trace mode");
}

#[test]
fn an_armed_probe_with_keys_counts_its_work_while_sampling() {
    let _serial = serial();
    let name = "keys";
    let guard = start_with(name, 100, Filter::parse("name=keyed_probe").unwrap());
    for _ in 0..4 {
        let _p = probe!(
            "keyed_probe",
            layer = "sample_keys",
            flops = 1000,
            bytes = 24
        );
        black_box(work_in_a(100));
        profiler_core::step();
    }
    drop(guard);
    let path = out_path(name);
    let profile: Profile = profiler_core::format::load_profile(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let event = profile
        .events
        .iter()
        .find(|e| e.name == "keyed_probe")
        .expect("the probe's event");
    assert!(!event.samples_ns.is_empty(), "{event:?}");
    let flops = event.work.as_ref().and_then(|w| w.flops.clone());
    assert_eq!(
        flops,
        Some(vec![1000; event.samples_ns.len()]),
        "its keys were evaluated: {event:?}"
    );
}

leaf!(work_unannotated, 6);

/// The calling thread's CPU time.
fn thread_cpu() -> std::time::Duration {
    // SAFETY: `now` is written by the call.
    let now = unsafe {
        let mut now: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now);
        now
    };
    std::time::Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// [`work_unannotated`] until this thread has used `cpu` more CPU time: a number of samples
/// that depends on CPU time, not on how busy the machine is.
fn work_for(cpu: std::time::Duration) -> u64 {
    let end = thread_cpu() + cpu;
    let mut x = 0;
    while thread_cpu() < end {
        x ^= black_box(work_unannotated(black_box(20_000)));
    }
    x
}

/// Whether a POSIX timer or a perf event notifies thread `tid` (`None` when the kernel does
/// not list timers in `/proc/self/timers`).
fn timer_notifies(tid: i32) -> Option<bool> {
    Some(timer_threads()?.contains(&tid))
}

/// The threads a task-clock event's signals go to: the owners (`F_GETOWN_EX`) of this
/// process's perf event descriptors.
fn perf_event_owners() -> Vec<i32> {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut owners = Vec::new();
    for fd in fds.flatten() {
        let Ok(fd_num) = fd.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let is_perf = std::fs::read_link(fd.path())
            .is_ok_and(|target| target.to_string_lossy() == "anon_inode:[perf_event]");
        if !is_perf {
            continue;
        }
        // `struct f_owner_ex`: type, pid.
        let mut owner = [0i32; 2];
        // SAFETY: F_GETOWN_EX (16) writes a `struct f_owner_ex` into `owner`.
        if unsafe { libc::fcntl(fd_num, 16, owner.as_mut_ptr()) } == 0 && owner[1] > 0 {
            owners.push(owner[1]);
        }
    }
    owners
}

/// This process's perf event descriptor whose signals go to thread `tid`, if any.
fn perf_event_of(tid: i32) -> Option<i32> {
    let fds = std::fs::read_dir("/proc/self/fd").ok()?;
    fds.flatten().find_map(|fd| {
        let fd_num = fd.file_name().to_string_lossy().parse::<i32>().ok()?;
        let target = std::fs::read_link(fd.path()).ok()?;
        if target.to_string_lossy() != "anon_inode:[perf_event]" {
            return None;
        }
        let mut owner = [0i32; 2];
        // SAFETY: F_GETOWN_EX (16) writes a `struct f_owner_ex` into `owner`.
        (unsafe { libc::fcntl(fd_num, 16, owner.as_mut_ptr()) } == 0 && owner[1] == tid)
            .then_some(fd_num)
    })
}

/// Whether this process may open a task-clock perf event of the calling thread (what the
/// sampler's `auto` clock needs).
fn perf_events_allowed() -> bool {
    // perf_event_attr, version 0 (64 bytes): software task clock, disabled, user time only.
    let mut attr = [0u64; 8];
    attr[0] = 1 | (64 << 32); // type PERF_TYPE_SOFTWARE, size 64
    attr[1] = 1; // PERF_COUNT_SW_TASK_CLOCK
    attr[2] = 1_000_000; // sample_period
    attr[5] = 1 | (1 << 5) | (1 << 6); // disabled, exclude_kernel, exclude_hv
                                       // SAFETY: a valid perf_event_attr of the size it states.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            8 as libc::c_ulong,
        )
    };
    if fd >= 0 {
        // SAFETY: ours, closed once.
        unsafe { libc::close(fd as i32) };
    }
    fd >= 0
}

#[test]
fn a_thread_that_runs_no_probe_is_sampled() {
    let _serial = serial();
    // One thread that runs no probe is alive when the sampler starts (found by the first
    // scan), the other starts after (found by a later one).
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (ready, started) = std::sync::mpsc::channel::<()>();
    let before = std::thread::Builder::new()
        .name("noprobe-before".into())
        .spawn(move || {
            // Running, so named: the sampler's first scan reads its name.
            ready.send(()).unwrap();
            wait.recv().unwrap();
            work_for(std::time::Duration::from_millis(100))
        })
        .unwrap();
    started.recv().unwrap();
    let guard = start("no_probe", 2000);
    go.send(()).unwrap();
    black_box(before.join().unwrap());
    let after = std::thread::Builder::new()
        .name("noprobe-after".into())
        .spawn(|| {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            // Wait (working) for a scan to give this thread a timer: a guard of 3 minutes, not a
            // verdict. Without /proc/self/timers, a second of CPU time spans several scans.
            let guard = std::time::Instant::now() + std::time::Duration::from_secs(180);
            let mut x = 0;
            match timer_notifies(tid) {
                None => x ^= work_for(std::time::Duration::from_secs(1)),
                Some(_) => {
                    while timer_notifies(tid) != Some(true) && std::time::Instant::now() < guard {
                        x ^= work_for(std::time::Duration::from_millis(5));
                    }
                }
            }
            x ^ work_for(std::time::Duration::from_millis(100))
        })
        .unwrap();
    black_box(after.join().unwrap());
    let samples = finish("no_probe", guard);
    for name in ["noprobe-before", "noprobe-after"] {
        let index = samples
            .threads
            .iter()
            .position(|t| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{name} is sampled: {:?}", samples.threads));
        let mut inside = 0;
        for stack in samples.stacks.iter().filter(|s| s.thread as usize == index) {
            let names = names(&samples, &stack.frames);
            assert_eq!(stack.layer, None, "{name} ran in no event: {names:?}");
            if names
                .first()
                .is_some_and(|n| n.ends_with("work_unannotated"))
            {
                inside += stack.count;
            }
        }
        assert!(inside > 0, "{name}: samples in work_unannotated");
    }
}

/// The threads a POSIX timer (`/proc/self/timers`) or a task-clock perf event notifies
/// (`None` when the kernel does not list timers there).
fn timer_threads() -> Option<Vec<i32>> {
    let timers = std::fs::read_to_string("/proc/self/timers").ok()?;
    let mut tids: Vec<i32> = timers
        .lines()
        .filter(|line| line.starts_with("notify:"))
        .filter_map(|line| line.rsplit_once("/tid.")?.1.trim().parse().ok())
        .collect();
    tids.extend(perf_event_owners());
    Some(tids)
}

#[test]
fn a_thread_that_runs_no_probe_and_ends_gives_its_timer_back() {
    let _serial = serial();
    let guard = start("no_probe_ends", 2000);
    let Some(_) = timer_threads() else {
        // Without /proc/self/timers the timers cannot be seen from here.
        let _ = finish("no_probe_ends", guard);
        return;
    };
    let mut tids = Vec::new();
    for _ in 0..3 {
        let worker = std::thread::spawn(|| {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            // Working until a scan gives it a timer (a guard of 3 minutes, not a verdict).
            let guard = std::time::Instant::now() + std::time::Duration::from_secs(180);
            let mut x = 0;
            while timer_notifies(tid) != Some(true) && std::time::Instant::now() < guard {
                x ^= work_for(std::time::Duration::from_millis(5));
            }
            black_box(x ^ work_for(std::time::Duration::from_millis(20)));
            tid
        });
        tids.push(worker.join().unwrap());
    }
    // The ended threads' timers are deleted by a later scan (waited for, with a guard).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let mut left = timer_threads().unwrap();
    while tids.iter().any(|t| left.contains(t)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        left = timer_threads().unwrap();
    }
    assert!(
        !tids.iter().any(|t| left.contains(t)),
        "timers of ended threads {tids:?} still notify {left:?}"
    );
    let samples = finish("no_probe_ends", guard);
    for tid in tids {
        assert!(
            samples.threads.iter().any(|t| t.tid == tid as u32),
            "the ended thread {tid} was sampled"
        );
    }
}

#[test]
fn a_thread_that_ran_a_probe_in_an_earlier_session_is_sampled_in_the_next() {
    let _serial = serial();
    let (go, wait) = std::sync::mpsc::channel::<u32>();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::Builder::new()
        .name("two-sessions".into())
        .spawn(move || {
            // Session 1: registered by its probe. Session 2: runs none.
            while let Ok(session) = wait.recv() {
                if session == 1 {
                    black_box(layer_b(20_000));
                } else {
                    black_box(work_for(std::time::Duration::from_millis(100)));
                }
                done.send(()).unwrap();
            }
        })
        .unwrap();
    let guard = start("first_session", 2000);
    go.send(1).unwrap();
    finished.recv().unwrap();
    let _ = finish("first_session", guard);
    let guard = start("second_session", 2000);
    go.send(2).unwrap();
    finished.recv().unwrap();
    let samples = finish("second_session", guard);
    drop(go);
    worker.join().unwrap();
    let index = samples
        .threads
        .iter()
        .position(|t| t.name.as_deref() == Some("two-sessions"))
        .expect("the worker is sampled in the second session");
    let inside: u64 = samples
        .stacks
        .iter()
        .filter(|s| s.thread as usize == index)
        .filter(|s| {
            names(&samples, &s.frames)
                .first()
                .is_some_and(|n| n.ends_with("work_unannotated"))
        })
        .map(|s| s.count)
        .sum();
    assert!(inside > 0, "samples of the worker's second session");
}

/// [`work_in_helper`] until this thread has used `cpu` more CPU time.
fn helper_work_for(cpu: std::time::Duration) -> u64 {
    let end = thread_cpu() + cpu;
    let mut x = 0;
    while thread_cpu() < end {
        x ^= black_box(work_in_helper(black_box(20_000)));
    }
    x
}

/// A layer that hands its work to a thread that runs no annotated code (a pool's worker).
#[profiled(layer = "sample_pool")]
fn hands_work_to_a_worker() -> u64 {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("pool-worker".into())
            .spawn_scoped(scope, || {
                profiler_core::sample_this_thread();
                helper_work_for(std::time::Duration::from_millis(150))
            })
            .unwrap()
            .join()
            .unwrap()
    })
}

#[test]
fn a_worker_without_events_inherits_the_event_that_handed_it_work() {
    let _serial = serial();
    let guard = start("pool", 2000);
    black_box(hands_work_to_a_worker());
    // Outside every event, a worker's samples carry none.
    let idle = std::thread::Builder::new()
        .name("idle-worker".into())
        .spawn(|| {
            profiler_core::sample_this_thread();
            work_for(std::time::Duration::from_millis(50))
        })
        .unwrap();
    black_box(idle.join().unwrap());
    let samples = finish("pool", guard);
    let thread = |name: &str| {
        samples
            .threads
            .iter()
            .position(|t| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{name} is sampled: {:?}", samples.threads)) as u32
    };
    let (worker, idle) = (thread("pool-worker"), thread("idle-worker"));
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() } as u32;
    let me = samples
        .threads
        .iter()
        .position(|t| t.tid == me)
        .expect("this thread is sampled") as u32;
    let mut inherited = 0;
    for stack in &samples.stacks {
        let names = names(&samples, &stack.frames);
        if stack.thread == worker && ran_in(&names) == Some("work_in_helper") {
            assert_eq!(stack.layer.as_deref(), Some("sample_pool"), "{names:?}");
            assert!(stack.inherited, "marked inherited: {stack:?}");
            inherited += stack.count;
        }
        if stack.thread == idle {
            assert_eq!(stack.layer, None, "{names:?}");
        }
        // A thread that opens events keeps its own tags. (Any other thread that runs no
        // event, the test harness's or the profiler's, may inherit too, as a worker does.)
        if stack.thread == me {
            assert!(
                !stack.inherited,
                "a thread that opens events inherits nothing: {stack:?} {names:?}"
            );
        }
    }
    assert!(inherited > 0, "the worker's samples: {:?}", samples.stacks);
}

/// Tags on the main thread and a helper, `n` rounds each; checks every sample whose function is
/// known carries its event, and returns the samples.
fn tagged_run(name: &str, clock: SampleClock) -> (CpuSamples, Vec<i32>) {
    let guard = start_on(name, 2000, Filter::all(), clock);
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    black_box(layer_a(1));
    let clocked = timer_threads().unwrap_or_default();
    let helper = std::thread::spawn(|| {
        let end = thread_cpu() + std::time::Duration::from_millis(60);
        let mut x = 0;
        while thread_cpu() < end {
            x ^= helper_layer(black_box(20_000));
        }
        x
    });
    let end = thread_cpu() + std::time::Duration::from_millis(60);
    while thread_cpu() < end {
        black_box(layer_a(black_box(20_000)));
    }
    black_box(helper.join().unwrap());
    let samples = finish(name, guard);
    for stack in &samples.stacks {
        let names = names(&samples, &stack.frames);
        match ran_in(&names) {
            Some("work_in_a") => assert_eq!(stack.layer.as_deref(), Some("sample_a"), "{names:?}"),
            Some("work_in_helper") => {
                assert_eq!(stack.layer.as_deref(), Some("sample_helper"), "{names:?}")
            }
            _ => {}
        }
    }
    assert!(
        samples
            .stacks
            .iter()
            .any(|s| s.layer.as_deref() == Some("sample_a")),
        "samples in layer a"
    );
    assert!(
        clocked.contains(&me),
        "the main thread is sampled: {clocked:?}"
    );
    (samples, clocked)
}

#[test]
fn the_perf_task_clock_samples_when_the_kernel_allows_it() {
    let _serial = serial();
    if !perf_events_allowed() {
        eprintln!(
            "skipped: perf_event_open is refused here (perf_event_paranoid 3, or a seccomp \
             filter); the sampler uses POSIX timers"
        );
        return;
    }
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let (samples, _) = tagged_run("perf_clock", SampleClock::Auto);
    assert_eq!(samples.clock.as_deref(), Some("perf_task_clock"));
    // The main thread had a task-clock event, and no timer.
    let timers = std::fs::read_to_string("/proc/self/timers").unwrap_or_default();
    assert!(
        !timers.contains(&format!("/tid.{me}")),
        "no POSIX timer while sampling with perf events: {timers}"
    );
    // Its event is closed once sampling stopped.
    assert_eq!(perf_event_of(me), None, "the event is closed at the end");
}

#[test]
fn posix_timers_sample_when_asked_for() {
    let _serial = serial();
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let guard = start_on("posix_clock_probe", 2000, Filter::all(), SampleClock::Posix);
    black_box(layer_a(1));
    assert_eq!(
        perf_event_of(me),
        None,
        "no perf event with PROF_CPU_SAMPLE_CLOCK=posix"
    );
    let _ = finish("posix_clock_probe", guard);
    let (samples, _) = tagged_run("posix_clock", SampleClock::Posix);
    assert_eq!(samples.clock.as_deref(), Some("posix_timer"));
}

/// Sends this thread a `SIGPROF` as a perf event's would come, naming descriptor `fd`.
fn forge_perf_signal(fd: i32) {
    // A siginfo_t (128 bytes) with SIGPOLL's fields: signo, errno, code, then band (a long,
    // at offset 16) and fd (offset 24).
    let mut info = [0u8; 128];
    info[0..4].copy_from_slice(&libc::SIGPROF.to_ne_bytes());
    info[8..12].copy_from_slice(&1i32.to_ne_bytes()); // POLL_IN
    info[24..28].copy_from_slice(&fd.to_ne_bytes());
    // SAFETY: a thread may queue a signal with any si_code to itself; `info` is 128 bytes.
    unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            libc::getpid(),
            libc::gettid(),
            libc::SIGPROF,
            info.as_ptr(),
        )
    };
}

#[test]
fn a_signal_naming_another_threads_event_does_not_reach_its_ring() {
    let _serial = serial();
    if !perf_events_allowed() {
        eprintln!("skipped: perf_event_open is refused here; no task-clock events to route");
        return;
    }
    let guard = start("stale_fd", 1000);
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    black_box(layer_b(1000));
    let fd = perf_event_of(me).expect("this thread has a task-clock event");
    // Another thread, inside layer `sample_helper`, gets signals naming this thread's event
    // (as a signal still pending for a closed descriptor that was reused would): they must
    // not be written into this thread's ring (where they would carry `sample_helper`).
    std::thread::spawn(move || {
        let _p = probe!("stale_target", layer = "sample_helper");
        for _ in 0..200 {
            forge_perf_signal(fd);
        }
    })
    .join()
    .unwrap();
    let samples = finish("stale_fd", guard);
    let index = samples
        .threads
        .iter()
        .position(|t| t.tid == me as u32)
        .expect("this thread is sampled") as u32;
    for stack in samples.stacks.iter().filter(|s| s.thread == index) {
        assert_ne!(
            stack.layer.as_deref(),
            Some("sample_helper"),
            "a signal of another thread landed in this thread's ring: {:?}",
            names(&samples, &stack.frames)
        );
    }
    assert!(
        samples
            .stacks
            .iter()
            .any(|s| s.thread != index && s.layer.as_deref() == Some("sample_helper")),
        "the forged signals were sampled on their own thread"
    );
}

static SIGPROFS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn count_sigprof(_: libc::c_int) {
    SIGPROFS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// Installs [`count_sigprof`] for `SIGPROF`; returns the action it replaced.
fn count_sigprofs() -> libc::sigaction {
    // SAFETY: the action is zeroed then filled as sigaction(2) says; the handler only touches
    // an atomic.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = count_sigprof as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(libc::SIGPROF, &action, &mut old), 0);
        old
    }
}

#[test]
fn a_forked_child_gets_no_signal_and_keeps_no_clock_running() {
    let _serial = serial();
    let guard = start("fork", 2000);
    black_box(layer_a(1000));
    let mut pipe = [0i32; 2];
    // SAFETY: two descriptors written into `pipe`.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    // SAFETY: the child calls only async-signal-safe functions (sigaction, clock_gettime,
    // read, _exit) and arithmetic.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork");
    if child == 0 {
        // The child holds copies of the parent's event descriptors. It counts the SIGPROFs
        // it gets while it computes, then waits for the parent to close the pipe.
        let _ = count_sigprofs();
        black_box(work_for(std::time::Duration::from_millis(50)));
        let mut byte = 0u8;
        // SAFETY: the read end of our pipe, one byte.
        unsafe {
            libc::close(pipe[1]);
            libc::read(pipe[0], (&mut byte as *mut u8).cast(), 1);
            libc::_exit(SIGPROFS.load(std::sync::atomic::Ordering::SeqCst).min(100) as i32)
        }
    }
    // SAFETY: our descriptor, closed once.
    unsafe { libc::close(pipe[0]) };
    // The parent's thread is still sampled after the fork.
    let end = thread_cpu() + std::time::Duration::from_millis(50);
    while thread_cpu() < end {
        black_box(layer_b(black_box(20_000)));
    }
    let samples = finish("fork", guard);
    assert!(
        samples
            .stacks
            .iter()
            .any(|s| s.layer.as_deref() == Some("sample_b")),
        "the parent is sampled after the fork"
    );
    // Sampling has stopped: with the child still holding its copies of the descriptors, this
    // thread must get no more SIGPROF (each event was disabled before it was closed).
    let old = count_sigprofs();
    SIGPROFS.store(0, std::sync::atomic::Ordering::SeqCst);
    black_box(work_for(std::time::Duration::from_millis(100)));
    let after_stop = SIGPROFS.load(std::sync::atomic::Ordering::SeqCst);
    // SAFETY: puts back the action `count_sigprofs` replaced.
    unsafe { libc::sigaction(libc::SIGPROF, &old, std::ptr::null_mut()) };
    let mut status = 0;
    // SAFETY: our pipe's write end; our child.
    unsafe {
        libc::close(pipe[1]);
        assert_eq!(libc::waitpid(child, &mut status, 0), child);
    }
    assert_eq!(after_stop, 0, "SIGPROFs after sampling stopped");
    assert!(libc::WIFEXITED(status), "the child exited: {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "SIGPROFs the child got");
}

#[test]
fn a_thread_found_by_a_scan_keeps_its_one_registration_while_it_lives() {
    let _serial = serial();
    let guard = start("one_registration", 1000);
    let worker = std::thread::Builder::new()
        .name("noprobe-steady".into())
        .spawn(|| {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            // Working until a scan gives it a clock (a guard of 3 minutes, not a verdict),
            // then through about five more scans (every 200 ms): a scan must not take a live
            // thread for ended (and register it again as another thread).
            let guard = std::time::Instant::now() + std::time::Duration::from_secs(180);
            let mut x = 0;
            while timer_notifies(tid) == Some(false) && std::time::Instant::now() < guard {
                x ^= work_for(std::time::Duration::from_millis(5));
            }
            let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
            while std::time::Instant::now() < until {
                x ^= work_for(std::time::Duration::from_millis(5));
            }
            black_box(x);
            tid
        })
        .unwrap();
    let tid = worker.join().unwrap();
    let samples = finish("one_registration", guard);
    let entries = samples
        .threads
        .iter()
        .filter(|t| t.tid == tid as u32)
        .count();
    assert_eq!(
        entries, 1,
        "registrations of thread {tid}: {:?}",
        samples.threads
    );
}

/// The descriptors of this process that are perf events.
fn perf_event_fds() -> Vec<i32> {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    fds.flatten()
        .filter(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|t| t.to_string_lossy() == "anon_inode:[perf_event]")
        })
        .filter_map(|fd| fd.file_name().to_string_lossy().parse().ok())
        .collect()
}

#[test]
fn task_clock_events_take_at_most_half_the_descriptors() {
    let _serial = serial();
    if !perf_events_allowed() {
        eprintln!("skipped: perf_event_open is refused here; no task-clock events");
        return;
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is written by the call.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
        0
    );
    let low = libc::rlimit {
        rlim_cur: 64,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: a valid rlimit; put back below.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &low) }, 0);
    let guard = start("fd_cap", 1000);
    let (tell, told) = std::sync::mpsc::channel::<()>();
    let release = std::sync::Arc::new(std::sync::Barrier::new(41));
    let workers: Vec<_> = (0..40)
        .map(|_| {
            let (tell, release) = (tell.clone(), release.clone());
            std::thread::spawn(move || {
                profiler_core::sample_this_thread();
                tell.send(()).unwrap();
                release.wait();
            })
        })
        .collect();
    for _ in 0..40 {
        told.recv().unwrap();
    }
    // Every worker is registered: an event or a timer each.
    let fds = perf_event_fds();
    release.wait();
    for worker in workers {
        worker.join().unwrap();
    }
    let samples = finish("fd_cap", guard);
    // SAFETY: the limit read above.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    assert_eq!(samples.clock.as_deref(), Some("perf_task_clock"));
    assert!(!fds.is_empty(), "task-clock events");
    assert!(
        fds.iter().all(|&fd| fd < 32),
        "events below half the limit of 64: {fds:?}"
    );
}

/// The task-clock count (ns) of the perf event `fd`.
fn task_clock_count(fd: i32) -> u64 {
    let mut count = 0u64;
    // SAFETY: read(2) of a perf event's 8-byte count into a valid u64.
    let n = unsafe { libc::read(fd, (&mut count as *mut u64).cast(), 8) };
    assert_eq!(n, 8);
    count
}

/// A process forked while sampling runs that ends with `exit` (its threads' thread-locals
/// dropped) leaves the parent's sampling alone. Before, the child's copy of this thread's
/// registration disabled the perf event that the child's descriptor shares with the parent, and
/// the parent's thread was never sampled again (found in review: its task clock stopped).
#[test]
fn a_forked_child_that_exits_leaves_the_parents_sampling_alone() {
    let _s = serial();
    if !perf_events_allowed() {
        println!("skipped: this machine refuses perf events (the POSIX timers are not shared)");
        return;
    }
    let guard = start("fork-exit", 1000);
    black_box(layer_a(200_000)); // this thread registers itself: its own perf event
                                 // SAFETY: gettid(2).
    let me = unsafe { libc::gettid() };
    let fd = perf_event_of(me).expect("this thread's perf event");
    // SAFETY: the child only leaves, through exit(3), which runs this thread's thread-local
    // destructors as a program that returns from a worker does.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: as above.
        unsafe { libc::exit(0) };
    }
    let mut status = 0;
    // SAFETY: waitpid(2) on our own child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    let before = task_clock_count(fd);
    black_box(work_for(std::time::Duration::from_millis(100)));
    let after = task_clock_count(fd);
    drop(guard);
    let _ = std::fs::remove_file(out_path("fork-exit"));
    assert!(
        after > before,
        "this thread's task clock stopped counting when the child exited ({before} ns, then \
         {after} ns after 100 ms of CPU)"
    );
}

/// This process's resident memory, in KiB.
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// A sampled thread's ring (about 2 MiB) is resident only as far as its samples are written:
/// 32 threads that register and then wait cost a few pages each, not their whole rings (found
/// in review: 2.1 MiB each, at once, up to 2 GB at a thousand threads).
#[test]
fn an_idle_sampled_thread_keeps_little_of_its_ring_resident() {
    let _s = serial();
    let guard = start("resident", 1000);
    black_box(layer_a(1_000));
    let before = resident_kib();
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let wait = std::sync::Arc::new(Mutex::new(wait));
    let (ready, registered) = std::sync::mpsc::channel::<()>();
    let threads: Vec<_> = (0..32)
        .map(|_| {
            let wait = std::sync::Arc::clone(&wait);
            let ready = ready.clone();
            std::thread::spawn(move || {
                black_box(layer_a(10)); // registers this thread: its ring
                ready.send(()).unwrap();
                let _ = wait.lock().unwrap().recv();
            })
        })
        .collect();
    for _ in 0..32 {
        registered.recv().unwrap();
    }
    let grown = resident_kib().saturating_sub(before);
    drop(go);
    for t in threads {
        t.join().unwrap();
    }
    drop(guard);
    let _ = std::fs::remove_file(out_path("resident"));
    assert!(
        grown < 32 * 1024,
        "32 idle sampled threads made {grown} KiB resident (a whole ring is about 2 MiB)"
    );
}

/// Continuous mode keeps only what it needs of the threads that ended: a program that starts a
/// thread per iteration (a scoped thread per batch) listed every thread it had ever started in
/// each window's samples, and kept their stacks, for as long as it ran (memory and the file's
/// size grew with the threads started, not with those alive).
#[test]
fn continuous_mode_forgets_the_threads_that_ended() {
    let _serial = serial();
    let name = "thread-per-iteration";
    let config = Config {
        filter: Filter::all(),
        mode: Mode::Continuous,
        warmup: 1,
        repeat: 2,
        windows: 2,
        baseline_windows: 0,
        out: out_path(name).display().to_string(),
        summary: false,
        cpu_sample: Some(1000),
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, None).unwrap();
    let mut x = layer_a(1) ^ layer_b(1);
    profiler_core::step();
    for _ in 0..80 {
        x ^= std::thread::scope(|s| s.spawn(|| layer_a(20_000)).join().unwrap());
        x ^= layer_b(1);
        profiler_core::step();
    }
    black_box(x);
    let profile = profiler_core::snapshot().expect("a session");
    drop(guard);
    let _ = std::fs::remove_file(out_path(name));
    let samples = profile.cpu_samples.expect("the window's samples");
    // The threads alive (this one, the profiler's) and those the window's samples name.
    assert!(
        samples.threads.len() <= 16,
        "{} threads listed after 80 threads started and ended",
        samples.threads.len()
    );
    for stack in &samples.stacks {
        assert!((stack.thread as usize) < samples.threads.len());
    }
}
