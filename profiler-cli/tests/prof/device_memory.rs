//! Device memory in `prof.json` and through `prof`: a profile that carries it (the dlrm trace
//! fixture with its embedding layer timed on GPU 0 and the devices' memory at each step added,
//! as a CUDA run writes them) round-trips as schema v2; older files, v1 and v2 with host memory
//! only, still load; lists that do not line up are refused with a message naming them; `prof
//! report` and `prof trace` show the figures.

use std::path::Path;

use profiler_analysis::load_profile;
use profiler_format::read::parse_profile;
use profiler_format::{
    schema_for, DeviceMemory, DeviceUsage, Gpu, Memory, Profile, SCHEMA, SCHEMA_V2,
};
use serde_json::Value;

use crate::common;
use common::{prof, scratch};

fn fixture() -> Profile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/trace/dlrm-trace.json");
    load_profile(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The fixture as a CUDA run with device memory writes it: the embedding layer's events on
/// GPU 0, stream 7, each run leaving 1 MiB more in use; device 0 with 100 MiB in use plus 1 MiB
/// per iteration at the steps, device 1 read from iteration 2 on.
fn with_device_memory() -> Profile {
    let mut p = fixture();
    for e in &mut p.events {
        if e.layer.as_deref() == Some("embedding") {
            e.device = Some(0);
            e.stream = Some("7".into());
            let used = e
                .sample_iters
                .iter()
                .map(|&k| Some((100 + u64::from(k)) << 20))
                .collect();
            e.gpu = Some(Gpu {
                memory: Some(DeviceMemory {
                    used_bytes: used,
                    change_bytes: vec![Some(1 << 20); e.samples_ns.len()],
                }),
                ..Gpu::default()
            });
        }
    }
    let n = p.iterations.wall_ns.len() as u64;
    p.iterations.device_memory = vec![
        DeviceUsage {
            device: 0,
            used_bytes: (0..n).map(|k| Some((100 + k) << 20)).collect(),
        },
        DeviceUsage {
            device: 1,
            used_bytes: (0..n).map(|k| (k >= 2).then_some(5 << 30)).collect(),
        },
    ];
    p.schema = schema_for(&p.events, &p.iterations).to_owned();
    p
}

fn text(p: &Profile) -> String {
    serde_json::to_string_pretty(p).unwrap()
}

fn parse(text: &str) -> Result<Profile, String> {
    parse_profile(text.as_bytes(), Path::new("prof.json")).map_err(|e| e.to_string())
}

#[test]
fn a_profile_with_device_memory_round_trips_as_v2() {
    let p = with_device_memory();
    assert_eq!(p.schema, SCHEMA_V2);
    let json: Value = serde_json::from_str(&text(&p)).unwrap();
    let steps = &json["iterations"]["device_memory"];
    assert_eq!(steps[0]["device"], 0);
    assert_eq!(steps[0]["used_bytes"][3], 103 << 20);
    assert_eq!(steps[1]["used_bytes"][0], Value::Null);
    let lookup = json["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "lookup")
        .unwrap();
    assert_eq!(lookup["gpu"]["memory"]["change_bytes"][0], 1 << 20);
    assert_eq!(parse(&text(&p)).unwrap(), p, "read back as written");
}

#[test]
fn older_files_still_load() {
    // v1, as an older profiler-core wrote it (the fixture on disk).
    let v1 = fixture();
    assert_eq!(v1.schema, SCHEMA);
    assert!(v1.iterations.device_memory.is_empty());
    assert!(v1.events.iter().all(|e| e.gpu.is_none()));
    // v2 with host memory only (`profiler_core::Alloc`), from before device memory.
    let mut v2 = fixture();
    for e in &mut v2.events {
        let n = e.samples_ns.len();
        e.memory = Some(Memory {
            alloc_bytes: vec![64; n],
            freed_bytes: vec![64; n],
            allocs: vec![1; n],
            peak_bytes: vec![64; n],
        });
    }
    v2.schema = schema_for(&v2.events, &v2.iterations).to_owned();
    assert_eq!(v2.schema, SCHEMA_V2);
    let written = text(&v2);
    assert!(!written.contains("device_memory"), "no empty lists written");
    let read = parse(&written).unwrap();
    assert_eq!(read, v2);
    assert!(read.iterations.device_memory.is_empty());
}

#[test]
fn device_memory_that_does_not_line_up_is_refused() {
    let mut short = with_device_memory();
    short.iterations.device_memory[1].used_bytes.pop();
    let why = parse(&text(&short)).unwrap_err();
    assert!(
        why.contains(
            "iterations.device_memory[1] (device 1) has 7 used_bytes but there are 8 wall_ns"
        ),
        "{why}"
    );
    let mut twice = with_device_memory();
    twice.iterations.device_memory[1].device = 0;
    let why = parse(&text(&twice)).unwrap_err();
    assert!(why.contains("lists device 0 twice"), "{why}");
    let mut sample = with_device_memory();
    let e = sample
        .events
        .iter_mut()
        .find(|e| e.name == "lookup")
        .unwrap();
    let m = e.gpu.as_mut().unwrap().memory.as_mut().unwrap();
    m.change_bytes.pop();
    let why = parse(&text(&sample)).unwrap_err();
    assert!(
        why.contains("has 5 samples_ns but gpu.memory lists of 5 and 4"),
        "{why}"
    );
}

#[test]
fn prof_report_and_trace_show_device_memory() {
    let dir = scratch("device-memory");
    let file = dir.join("prof.json");
    std::fs::write(&file, text(&with_device_memory())).unwrap();
    let out = prof(&["report", file.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains(
            "device 0 memory in use at the steps: min 100.00MiB, max 107.00MiB, last 107.00MiB \
             (8 steps)"
        ),
        "{table}"
    );
    let lookup = table
        .lines()
        .find(|l| l.contains(" Embedding::lookup "))
        .unwrap();
    // Sampled in iterations 3 to 7: the median run ends with 105 MiB in use.
    assert!(lookup.contains("105.00MiB   +1.00MiB"), "{table}");

    let trace = dir.join("trace.json");
    let out = prof(&[
        "trace",
        file.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let counters: Vec<&Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "device memory")
        .collect();
    // Device 0 only (device 1 has no event drawn): the reading before the first step drawn,
    // then one at the end of each of the 5 steps.
    assert_eq!(counters.len(), 6, "{counters:?}");
    assert!(counters.iter().all(|c| c["pid"] == 0));
    let used: Vec<u64> = counters
        .iter()
        .map(|c| c["args"]["used_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(used, (102..=107).map(|k| k << 20).collect::<Vec<u64>>());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sample_mode_trace_holds_the_median_reading_over_the_average_iteration() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/trace/dlrm-sample.json");
    let mut p = load_profile(&path).unwrap_or_else(|e| panic!("{e}"));
    for e in &mut p.events {
        if e.layer.as_deref() == Some("embedding") {
            e.device = Some(0);
            e.stream = Some("7".into());
        }
    }
    let n = p.iterations.wall_ns.len() as u64;
    p.iterations.device_memory = vec![DeviceUsage {
        device: 0,
        used_bytes: (0..n).map(|k| Some((100 + k) << 20)).collect(),
    }];
    let trace = profiler_analysis::trace::chrome_trace(&p).unwrap();
    let counters: Vec<(f64, u64)> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "device memory")
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (ts, e["args"]["used_bytes"].as_u64().unwrap())
        })
        .collect();
    // Iterations 3 to 127 are measured (warmup 3): their median reading, 165 MiB, held from
    // the start of the average step to its end.
    assert_eq!(counters.len(), 2, "{counters:?}");
    assert_eq!(counters[0], (0.0, 165 << 20));
    assert_eq!(counters[1].1, 165 << 20);
    assert!(counters[1].0 > 0.0);
}
