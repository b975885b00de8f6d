//! The metadata events (`"ph": "M"`): the names and sort indices of the processes (the
//! program's, one per GPU device) and of their tracks.

use std::collections::HashMap;

use serde_json::{json, Value};

use profiler_format::Profile;

use super::{Streams, Track};

/// Process and thread names and sort indices.
pub(super) fn metadata_events(
    profile: &Profile,
    cpu_pid: u32,
    streams: &Streams,
    tracks: &[(Track, u32)],
    tids: &[Vec<u32>],
) -> Vec<Value> {
    let mut out = Vec::new();
    process_metadata(profile, cpu_pid, streams, &mut out);
    cpu_thread_metadata(cpu_pid, tracks, &mut out);
    gpu_thread_metadata(streams, tracks, tids, &mut out);
    out
}

/// A metadata event (`"ph": "M"`).
fn meta(name: &str, pid: u32, tid: u32, args: Value) -> Value {
    json!({ "name": name, "ph": "M", "pid": pid, "tid": tid, "args": args })
}

/// The CPU process (named after the program and rank, labelled with the host, mode and clock,
/// first) and one process per GPU device, after it.
fn process_metadata(profile: &Profile, cpu_pid: u32, streams: &Streams, out: &mut Vec<Value>) {
    let run = &profile.run;
    out.push(meta(
        "process_name",
        cpu_pid,
        0,
        json!({ "name": format!("{} rank {}", run.program, run.rank) }),
    ));
    out.push(meta(
        "process_labels",
        cpu_pid,
        0,
        json!({ "labels": format!("host {}, {} mode, {} clock", run.host, run.mode, run.clock) }),
    ));
    out.push(meta(
        "process_sort_index",
        cpu_pid,
        0,
        json!({ "sort_index": 0 }),
    ));
    for device in streams.devices() {
        out.push(meta(
            "process_name",
            device,
            0,
            json!({ "name": format!("GPU {device}") }),
        ));
        out.push(meta(
            "process_sort_index",
            device,
            0,
            json!({ "sort_index": device as u64 + 1 }),
        ));
    }
}

/// The CPU tracks: `main`, then `concurrent 1`, `concurrent 2`, ...
fn cpu_thread_metadata(cpu_pid: u32, tracks: &[(Track, u32)], out: &mut Vec<Value>) {
    // Every CPU lane up to the last used, so that `main` is named even with no event.
    let cpu_lanes = tracks
        .iter()
        .find(|(t, _)| *t == Track::Cpu)
        .map_or(0, |&(_, lanes)| lanes)
        .max(1);
    for lane in 0..cpu_lanes {
        let name = if lane == 0 {
            "main".to_string()
        } else {
            format!("concurrent {lane}")
        };
        let tid = lane + 1;
        out.push(meta("thread_name", cpu_pid, tid, json!({ "name": name })));
        out.push(meta(
            "thread_sort_index",
            cpu_pid,
            tid,
            json!({ "sort_index": lane }),
        ));
    }
}

/// The GPU tracks in use: `stream <stream>`, and `stream <stream> (concurrent 1)`, ... sorted
/// after their stream.
fn gpu_thread_metadata(
    streams: &Streams,
    tracks: &[(Track, u32)],
    tids: &[Vec<u32>],
    out: &mut Vec<Value>,
) {
    let stream_names: HashMap<(u32, u32), &str> = streams
        .tids
        .iter()
        .map(|((d, name), &tid)| ((*d, tid), name.as_str()))
        .collect();
    let lanes = tracks
        .iter()
        .zip(tids)
        .flat_map(|(&(track, _), tids)| tids.iter().enumerate().map(move |(l, &t)| (track, l, t)));
    for (track, lane, tid) in lanes {
        if let Track::Gpu { device, stream } = track {
            let base = format!("stream {}", stream_names[&(device, stream)]);
            let name = if lane == 0 {
                base
            } else {
                format!("{base} (concurrent {lane})")
            };
            out.push(meta("thread_name", device, tid, json!({ "name": name })));
            out.push(meta(
                "thread_sort_index",
                device,
                tid,
                json!({ "sort_index": (stream as u64) * 1000 + lane as u64 }),
            ));
        }
    }
}
