//! The processes and tracks of the drawing, named and ordered: the program's process with its
//! `main` and `concurrent N` tracks, one process per GPU device with a track per stream. Both
//! formats draw these: the JSON trace as metadata events (`"ph": "M"`, [`metadata_events`]),
//! the Perfetto trace as track descriptors.

use std::collections::HashMap;

use serde_json::{json, Value};

use profiler_format::Profile;

use super::{Streams, Track};

/// A process of the drawing.
pub(super) struct Process {
    pub(super) pid: u32,
    pub(super) name: String,
    /// The CPU process's host, mode and clock.
    pub(super) labels: Option<String>,
    pub(super) sort_index: u64,
}

/// A track ("thread") of a process: one lane of a track of the drawing, or a sampled thread's
/// track (`samples.rs`).
#[derive(Clone)]
pub(super) struct Thread {
    pub(super) pid: u32,
    pub(super) tid: u32,
    pub(super) name: String,
    pub(super) sort_index: u64,
    /// The drawing's track and lane it shows.
    pub(super) track: u32,
    pub(super) lane: u32,
}

/// The processes and their tracks, in the order the JSON trace names them.
pub(super) struct Names {
    pub(super) processes: Vec<Process>,
    pub(super) threads: Vec<Thread>,
}

impl Names {
    /// The names of `profile`'s drawing, whose tracks use `tracks` lanes with `tids`.
    pub(super) fn of(
        profile: &Profile,
        cpu_pid: u32,
        streams: &Streams,
        tracks: &[(Track, u32)],
        tids: &[Vec<u32>],
    ) -> Names {
        let mut threads = cpu_threads(cpu_pid, tracks);
        threads.extend(gpu_threads(streams, tracks, tids));
        Names {
            processes: processes(profile, cpu_pid, streams),
            threads,
        }
    }
}

/// Process and thread names and sort indices, as metadata events.
pub(super) fn metadata_events(names: &Names) -> Vec<Value> {
    let mut out = Vec::new();
    for p in &names.processes {
        out.push(meta("process_name", p.pid, 0, json!({ "name": p.name })));
        if let Some(labels) = &p.labels {
            out.push(meta(
                "process_labels",
                p.pid,
                0,
                json!({ "labels": labels }),
            ));
        }
        out.push(meta(
            "process_sort_index",
            p.pid,
            0,
            json!({ "sort_index": p.sort_index }),
        ));
    }
    for t in &names.threads {
        out.push(meta("thread_name", t.pid, t.tid, json!({ "name": t.name })));
        out.push(meta(
            "thread_sort_index",
            t.pid,
            t.tid,
            json!({ "sort_index": t.sort_index }),
        ));
    }
    out
}

/// A metadata event (`"ph": "M"`).
fn meta(name: &str, pid: u32, tid: u32, args: Value) -> Value {
    json!({ "name": name, "ph": "M", "pid": pid, "tid": tid, "args": args })
}

/// The CPU process (named after the program and rank, labelled with the host, mode and clock,
/// first) and one process per GPU device, after it.
fn processes(profile: &Profile, cpu_pid: u32, streams: &Streams) -> Vec<Process> {
    let run = &profile.run;
    let mut out = vec![Process {
        pid: cpu_pid,
        name: format!("{} rank {}", run.program, run.rank),
        labels: Some(format!(
            "host {}, {} mode, {} clock",
            run.host, run.mode, run.clock
        )),
        sort_index: 0,
    }];
    for device in streams.devices() {
        out.push(Process {
            pid: device,
            name: format!("GPU {device}"),
            labels: None,
            sort_index: device as u64 + 1,
        });
    }
    out
}

/// The CPU tracks: `main`, then `concurrent 1`, `concurrent 2`, ...
fn cpu_threads(cpu_pid: u32, tracks: &[(Track, u32)]) -> Vec<Thread> {
    // Every CPU lane up to the last used, so that `main` is named even with no event.
    let (track, lanes) = tracks
        .iter()
        .enumerate()
        .find(|(_, (t, _))| *t == Track::Cpu)
        .map_or((0, 0), |(i, &(_, lanes))| (i as u32, lanes));
    (0..lanes.max(1))
        .map(|lane| Thread {
            pid: cpu_pid,
            tid: lane + 1,
            name: if lane == 0 {
                "main".to_string()
            } else {
                format!("concurrent {lane}")
            },
            sort_index: lane as u64,
            track,
            lane,
        })
        .collect()
}

/// The GPU tracks in use: `stream <stream>`, and `stream <stream> (concurrent 1)`, ... sorted
/// after their stream.
fn gpu_threads(streams: &Streams, tracks: &[(Track, u32)], tids: &[Vec<u32>]) -> Vec<Thread> {
    let stream_names: HashMap<(u32, u32), &str> = streams
        .tids
        .iter()
        .map(|((d, name), &tid)| ((*d, tid), name.as_str()))
        .collect();
    let mut out = Vec::new();
    for (i, (&(track, _), tids)) in tracks.iter().zip(tids).enumerate() {
        let Track::Gpu { device, stream } = track else {
            continue;
        };
        for (lane, &tid) in tids.iter().enumerate() {
            let base = format!("stream {}", stream_names[&(device, stream)]);
            out.push(Thread {
                pid: device,
                tid,
                name: if lane == 0 {
                    base
                } else {
                    format!("{base} (concurrent {lane})")
                },
                sort_index: (stream as u64) * 1000 + lane as u64,
                track: i as u32,
                lane: lane as u32,
            });
        }
    }
    out
}
