//! `prof trace --format perfetto` end to end: the format chosen by flag or by the output's name,
//! the bytes of known profiles' traces kept beside them (`tests/data/trace/*.pftrace`: a change
//! of the encoding shows; `PROF_BLESS=1 cargo test -p profiler-cli --test prof trace_perfetto::`
//! writes them anew, deliberately), bad outputs, `--iterations` (both formats, and what is
//! refused), and an independent decoding: the kept files and
//! fresh ones are read with Perfetto's own protos (`tests/perfetto_check.py`, the `perfetto`
//! package of PyPI) and every slice, track and counter compared with the JSON trace of the same
//! profile. (`profiler-analysis`'s unit tests decode with the prost messages the writer uses, on
//! random profiles.)
//!
//! The Python check runs with the interpreter in `PROF_PERFETTO_PYTHON` (default `python3`).
//! Where the `perfetto` package cannot be imported it is skipped with a note on stderr, unless
//! `PROF_REQUIRE_PERFETTO=1`, which makes that a failure (CI sets it).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use profiler_format::{DeviceUsage, Memory, Profile};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn scratch(name: &str) -> PathBuf {
    common::target_scratch("trace_perfetto", name)
}

fn prof(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prof"))
        .args(args)
        .output()
        .expect("prof runs")
}

/// `prof trace FILE -o OUT [EXTRA...]`, which must succeed.
fn trace(file: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "trace".as_ref(),
        file.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    let o = prof(&args);
    assert!(
        o.status.success(),
        "prof trace failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A Perfetto trace starts with `Trace.packet`'s key; a JSON trace with `{`.
fn is_perfetto(bytes: &[u8]) -> bool {
    bytes.first() == Some(&0x0a)
}

/// The dlrm trace-mode profile with every kind of track: two events on GPU streams (one named,
/// one numbered), one run beside the loop (`concurrent`), memory figures on the top-level
/// events, and the devices' memory at each step.
fn shapes(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(data("tests/data/trace/dlrm-trace.json")).unwrap();
    let mut p: Profile = serde_json::from_str(&text).unwrap();
    p.events[0].device = Some(0);
    p.events[0].stream = Some("copy".into());
    p.events[9].device = Some(1);
    p.events[9].stream = Some("7".into());
    p.events[18].concurrent = true;
    for e in p.events.iter_mut().filter(|e| e.parent.is_none()) {
        let n = e.samples_ns.len() as u64;
        e.memory = Some(Memory {
            alloc_bytes: (0..n).map(|k| 4096 * (k + 1)).collect(),
            freed_bytes: (0..n).map(|k| 1024 * k).collect(),
            allocs: (0..n).collect(),
            peak_bytes: (0..n).map(|k| 2048 * (k + 2)).collect(),
        });
    }
    let n = p.iterations.wall_ns.len() as u64;
    p.iterations.device_memory = [0, 1]
        .into_iter()
        .map(|device| DeviceUsage {
            device,
            used_bytes: (0..n)
                .map(|k| Some(u64::from(device + 1) * 1_000_000 + k * 512))
                .collect(),
        })
        .collect();
    p.schema = profiler_format::schema_for(&p.events, &p.iterations).into();
    let path = dir.join("shapes-profile.json");
    std::fs::write(&path, serde_json::to_string_pretty(&p).unwrap()).unwrap();
    path
}

/// The format follows `--format`, else the output's name: `.pftrace` and `.perfetto-trace`
/// (gzipped or not) are Perfetto's, anything else JSON.
#[test]
fn the_format_follows_the_flag_or_the_name() {
    let dir = scratch("format");
    let file = data("tests/data/trace/dlrm-trace.json");
    for (name, extra, perfetto) in [
        ("t.pftrace", &[][..], true),
        ("t.perfetto-trace", &[], true),
        ("t.json", &[], false),
        ("t.trace", &[], false),
        ("t.json", &["--format", "perfetto"][..], true),
        ("u.pftrace", &["--format", "json"], false),
    ] {
        let out = dir.join(name);
        let o = trace(&file, &out, extra);
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(is_perfetto(&bytes), perfetto, "{name} {extra:?}");
        let said = String::from_utf8_lossy(&o.stderr);
        assert_eq!(said.contains("Perfetto protobuf"), perfetto, "{said}");
        assert!(!said.contains("warning"), "{said}");
    }
    // Gzipped: the same bytes, compressed.
    let gz = dir.join("t.pftrace.gz");
    trace(&file, &gz, &[]);
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap()),
        &mut plain,
    )
    .unwrap();
    assert_eq!(plain, std::fs::read(dir.join("t.pftrace")).unwrap());
    // Nothing but the outputs was written.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "t.json",
            "t.perfetto-trace",
            "t.pftrace",
            "t.pftrace.gz",
            "t.trace",
            "u.pftrace"
        ]
    );
}

/// The profiles whose Perfetto traces are kept (`tests/data/trace/`), with the kept file's name:
/// the dlrm example in `trace` and `sample` mode, and `shapes` (written into `dir`).
fn known(dir: &Path) -> [(PathBuf, &'static str); 3] {
    [
        (
            data("tests/data/trace/dlrm-trace.json"),
            "dlrm-trace.pftrace",
        ),
        (
            data("tests/data/trace/dlrm-sample.json"),
            "dlrm-sample.pftrace",
        ),
        (shapes(dir), "shapes.pftrace"),
    ]
}

/// The traces of known profiles are the bytes kept beside them: the encoding does not drift
/// between versions unnoticed. `PROF_BLESS=1` writes them anew.
#[test]
fn known_profiles_make_the_kept_perfetto_traces() {
    let dir = scratch("golden");
    let bless = std::env::var_os("PROF_BLESS").is_some();
    for (file, kept) in known(&dir) {
        let out = dir.join(kept);
        trace(&file, &out, &[]);
        let got = std::fs::read(&out).unwrap();
        let kept = data(&format!("tests/data/trace/{kept}"));
        if bless {
            std::fs::write(&kept, &got).unwrap();
            continue;
        }
        let want = std::fs::read(&kept).unwrap_or_default();
        assert!(
            got == want,
            "{} differs from the trace written now ({} bytes against {}); if the change is \
             meant, PROF_BLESS=1 writes it anew",
            kept.display(),
            want.len(),
            got.len()
        );
    }
}

/// Perfetto's own protos read the kept traces and fresh ones of every shape, and find the JSON
/// trace's slices, tracks and counters in them.
#[test]
fn perfettos_protos_read_the_same_slices_as_the_json_trace() {
    let Some(python) = perfetto_python() else {
        return;
    };
    let dir = scratch("official");
    for (file, kept) in known(&dir) {
        let json = dir.join(kept).with_extension("json");
        trace(&file, &json, &[]);
        let fresh = dir.join(kept);
        trace(&file, &fresh, &[]);
        for pftrace in [fresh, data(&format!("tests/data/trace/{kept}"))] {
            let out = Command::new(&python)
                .arg(data("tests/perfetto_check.py"))
                .arg(&pftrace)
                .arg(&json)
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{}: {said}{}",
                pftrace.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!("{}: {said}", pftrace.display());
            if kept == "shapes.pftrace" {
                // `main` and `concurrent 1`, a stream on each of two GPUs; counters.
                assert!(said.contains("3 processes"), "{said}");
                assert!(said.contains("4 threads"), "{said}");
            }
        }
    }
}

/// An output that cannot be written fails before the profile is read, with status 2, a help
/// line, and nothing written; so does a malformed profile.
#[test]
fn bad_outputs_and_inputs_fail_cleanly() {
    let dir = scratch("bad");
    let file = data("tests/data/trace/dlrm-trace.json");
    let missing = dir.join("no/such/dir/t.pftrace");
    let o = prof(&[
        "trace".as_ref(),
        file.as_os_str(),
        "-o".as_ref(),
        missing.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("cannot write") && said.contains("help"),
        "{said}"
    );
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"schema\": ").unwrap();
    let out = dir.join("t.pftrace");
    let o = prof(&[
        "trace".as_ref(),
        bad.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!out.exists());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

/// The interpreter with the `perfetto` package, or None (skipped, unless required).
fn perfetto_python() -> Option<String> {
    common::python_tool(
        "PROF_PERFETTO_PYTHON",
        &data("tests/perfetto_check.py"),
        "Perfetto's protos",
        "perfetto protobuf",
        "PROF_REQUIRE_PERFETTO",
    )
}

/// `--iterations` cuts either format to the steps asked for; a sample-mode profile or a range
/// the profile does not draw is refused (status 2, a help line, nothing written).
#[test]
fn iterations_cut_a_long_trace() {
    let dir = scratch("iterations");
    let file = data("tests/data/trace/dlrm-trace.json");
    let steps = |bytes: &[u8]| -> Vec<String> {
        let text = String::from_utf8_lossy(bytes);
        let mut found: Vec<String> = text
            .match_indices("ProfilerStep#")
            .map(|(at, _)| {
                let digits: String = text[at + 13..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                format!("ProfilerStep#{digits}")
            })
            .collect();
        found.sort();
        found.dedup();
        found
    };
    for (name, range, want) in [
        ("a.json", "4..6", &["ProfilerStep#4", "ProfilerStep#5"][..]),
        ("a.pftrace", "4..=5", &["ProfilerStep#4", "ProfilerStep#5"]),
        ("b.pftrace", "7..", &["ProfilerStep#7"]),
    ] {
        let out = dir.join(name);
        trace(&file, &out, &["--iterations", range]);
        assert_eq!(steps(&std::fs::read(&out).unwrap()), want, "{name}");
    }
    let refused = [
        (
            data("tests/data/trace/dlrm-sample.json"),
            "1..3",
            "sample mode",
        ),
        (file.clone(), "9..20", "draws iterations 3 to 7"),
    ];
    for (file, range, says) in refused {
        let out = dir.join("refused.pftrace");
        let o = prof(&[
            "trace".as_ref(),
            file.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
            "--iterations".as_ref(),
            range.as_ref(),
        ]);
        assert_eq!(o.status.code(), Some(2));
        let said = String::from_utf8_lossy(&o.stderr);
        assert!(said.contains(says) && said.contains("= help"), "{said}");
        assert!(!out.exists());
    }
}

/// The trace-mode profile `base` (dlrm's) with CPU samples placed on its time line: on thread
/// `main` (tid 4242), two per sample of three CPU events (the 1st, 6th and 11th: with the
/// dlrm profile `lookup`, `top_forward` over its nested `linear_forward`, `top_backward`),
/// each a quarter and three quarters into the event's slice; on thread `loader` (tid 4343),
/// one outside every event at each iteration's start.
fn with_cpu_samples(dir: &Path, base: &Path) -> PathBuf {
    use profiler_format::{
        CpuSamples, SampleTimeline, SampledFunction, SampledStack, SampledThread,
    };
    let text = std::fs::read_to_string(base).unwrap();
    let mut p: Profile = serde_json::from_str(&text).unwrap();
    let cpu: Vec<usize> = (0..p.events.len())
        .filter(|&e| p.events[e].device.is_none() && p.events[e].stream.is_none())
        .collect();
    let function = |name: &str| SampledFunction {
        name: Some(name.to_owned()),
        addr: "0x1000".to_owned(),
    };
    let mut samples = CpuSamples {
        hz: 1000,
        threads: vec![
            SampledThread {
                tid: 4242,
                name: Some("main".into()),
            },
            SampledThread {
                tid: 4343,
                name: Some("loader".into()),
            },
        ],
        functions: vec![
            function("dlrm::kernels::gemm"),
            function("dlrm::train_step"),
        ],
        timeline: Some(SampleTimeline::default()),
        ..CpuSamples::default()
    };
    let timeline = samples.timeline.as_mut().unwrap();
    for e in [cpu[0], cpu[5], cpu[10]] {
        let event = &p.events[e];
        let stack = samples.stacks.len() as u32;
        samples.stacks.push(SampledStack {
            thread: 0,
            event: Some(event.id.clone()),
            name: Some(event.name.clone()),
            layer: event.layer.clone(),
            phase: event.phase.clone(),
            frames: vec![0, 1],
            truncated: false,
            inherited: false,
            count: 2 * event.samples_ns.len() as u64,
        });
        for j in 0..event.samples_ns.len() {
            for quarter in [1, 3] {
                timeline.threads.push(0);
                timeline.iters.push(event.sample_iters[j]);
                timeline
                    .offsets_ns
                    .push(event.offsets_ns[j] + event.samples_ns[j] * quarter / 4);
                timeline.stacks.push(stack);
            }
        }
    }
    let outside = samples.stacks.len() as u32;
    samples.stacks.push(SampledStack {
        thread: 1,
        frames: vec![1],
        count: 5,
        ..SampledStack::default()
    });
    for k in 3..8 {
        timeline.threads.push(1);
        timeline.iters.push(k);
        timeline.offsets_ns.push(10);
        timeline.stacks.push(outside);
    }
    samples.taken = samples.stacks.iter().map(|s| s.count).sum();
    p.cpu_samples = Some(samples);
    let out = dir.join(format!(
        "{}-cpu-samples.json",
        base.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::write(&out, serde_json::to_string(&p).unwrap()).unwrap();
    out
}

/// The CPU samples of a `trace`-mode profile are instants on their threads' tracks, each
/// inside a slice of the event it was tagged with; Perfetto's protos read the same instants
/// from the Perfetto trace, on the same tracks, inside the same slices: for a CPU-only
/// profile (whose Perfetto trace is drawn one iteration at a time) and for one with every
/// kind of track (drawn whole).
#[test]
fn cpu_samples_are_instants_on_their_threads_tracks_inside_their_slices() {
    let dir = scratch("cpu-samples");
    let shapes = shapes(&dir);
    for base in [data("tests/data/trace/dlrm-trace.json"), shapes] {
        cpu_samples_drawn(&dir, &base);
    }
}

/// The checks of [`cpu_samples_are_instants_on_their_threads_tracks_inside_their_slices`] on
/// `base` with samples.
fn cpu_samples_drawn(dir: &Path, base: &Path) {
    let file = with_cpu_samples(dir, base);
    let json = file.with_extension("trace.json");
    trace(&file, &json, &[]);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let thread_name = |tid: u64| {
        events
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == tid)
            .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        thread_name(4242).as_deref(),
        Some("CPU samples: main (tid 4242)")
    );
    assert_eq!(
        thread_name(4343).as_deref(),
        Some("CPU samples: loader (tid 4343)")
    );
    let instants: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "i").collect();
    assert_eq!(instants.len(), 3 * 5 * 2 + 5, "every sample drawn");
    let ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
    for i in &instants {
        assert_eq!(i["cat"], "cpu_sample");
        assert_eq!(i["s"], "t");
        assert_eq!(
            i["pid"],
            events.iter().find(|e| e["ph"] == "X").unwrap()["pid"]
        );
        let Some(id) = i["args"]["event_id"].as_str() else {
            assert_eq!(i["tid"], 4343, "{i}");
            assert_eq!(i["args"]["event"], "(no event)");
            assert_eq!(i["name"], "dlrm::train_step");
            continue;
        };
        assert_eq!(i["tid"], 4242, "{i}");
        assert_eq!(i["name"], "dlrm::kernels::gemm");
        assert_eq!(
            i["args"]["stack"],
            "dlrm::kernels::gemm <- dlrm::train_step"
        );
        let at = ns(&i["ts"]);
        assert!(
            events.iter().any(|s| s["ph"] == "X"
                && s["args"]["id"] == id
                && ns(&s["ts"]) <= at
                && at <= ns(&s["ts"]) + ns(&s["dur"])),
            "{i} lies in no slice of {id}"
        );
    }
    let Some(python) = perfetto_python() else {
        return;
    };
    let pftrace = file.with_extension("pftrace");
    trace(&file, &pftrace, &[]);
    let out = Command::new(&python)
        .arg(data("tests/perfetto_check.py"))
        .arg(&pftrace)
        .arg(&json)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("35 samples"), "{said}");
    assert!(said.contains("30 inside their events' slices"), "{said}");
}
