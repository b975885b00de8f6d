#!/usr/bin/env python3
"""The checks of scripts/gpu-check.sh on what a GPU run wrote (standard library only).

    gpu_check.py profile PROF_JSON WALL_NS MIN_STREAMS kernels|nokernels
                                                         events on streams, times, kernels
    gpu_check.py trace PROF_JSON TRACE_JSON              `prof trace` puts them on stream tracks
    gpu_check.py nvtx NSYS_CSV PROF_JSON                 every probe has NVTX ranges (nsys stats)
    gpu_check.py memory PROF_JSON TOTALS_MIB             device memory figures present, plausible
                                                         (TOTALS_MIB: each GPU's memory.total from
                                                         nvidia-smi, comma-separated, GPU 0 first)

Each check prints `ok: ...` or `MISMATCH: ...`; the exit status is 1 when any mismatched.
"""

import csv
import json
import sys

failures = 0


def ok(text):
    print(f"  ok: {text}")


def bad(text):
    global failures
    failures += 1
    print(f"  MISMATCH: {text}")


def label(event):
    return f"{event.get('layer') or '-'}/{event.get('phase') or '-'} {event['name']}#{event['occurrence']}"


def on_stream(profile):
    return [e for e in profile["events"] if e.get("stream") is not None and e["samples_ns"]]


def check_times(event, wall_ns):
    """GPU times: positive, none longer than the whole run, and in total no more than it."""
    samples = event["samples_ns"]
    if min(samples) <= 0:
        bad(f"{label(event)}: a GPU time of 0 ns (events not recorded on the stream?)")
    elif max(samples) > wall_ns or sum(samples) > wall_ns:
        bad(
            f"{label(event)}: GPU times ({sum(samples)} ns in all, at most {max(samples)} ns) "
            f"exceed the run's wall clock ({wall_ns} ns)"
        )
    else:
        cpu = event.get("gpu", {}).get("cpu_stats") or {}
        ok(
            f"{label(event)} on stream {event['stream']}: {len(samples)} GPU times, median "
            f"{event['stats']['median_ns']} ns (CPU {cpu.get('median_ns', '?')} ns), all within "
            f"the run's {wall_ns / 1e9:.2f} s"
        )
    lost = event.get("gpu", {}).get("lost", 0)
    if lost:
        bad(f"{label(event)}: {lost} samples lost (events not recorded or read)")


def check_kernels(event):
    """Kernels attributed to the event ran on its stream, and most samples saw some."""
    kernels = (event.get("gpu") or {}).get("kernels")
    if not kernels or not kernels["list"]:
        bad(f"{label(event)}: no kernel attributed (PROF_KERNELS=1: CUPTI records missing?)")
        return
    elsewhere = [k for k in kernels["list"] if str(k["stream"]) != str(event["stream"])]
    if elsewhere:
        bad(
            f"{label(event)}: kernels on stream(s) "
            f"{sorted({str(k['stream']) for k in elsewhere})}, not the event's {event['stream']}"
        )
    seen = sum(1 for s in kernels["sum_ns"] if s > 0)
    if seen * 10 < len(kernels["sum_ns"]) * 9:
        bad(f"{label(event)}: kernels seen in only {seen} of {len(kernels['sum_ns'])} samples")
    elif not elsewhere:
        names = sorted({k["name"] for k in kernels["list"]})
        ok(
            f"{label(event)}: {len(names)} kernels attributed on its stream in {seen} samples "
            f"({', '.join(n[:40] for n in names[:3])}{', ...' if len(names) > 3 else ''})"
        )


def profile(path, wall_ns, min_streams, kernels):
    prof = json.load(open(path))
    if prof["run"]["clock"] != "cuda":
        bad(f"{path}: run.clock is {prof['run']['clock']!r}, not 'cuda': the GPU was not used")
        return
    events = on_stream(prof)
    streams = {(e["device"], e["stream"]) for e in events}
    if len(streams) < min_streams:
        bad(f"{path}: events on {len(streams)} stream(s), expected at least {min_streams}")
    else:
        ok(f"{path}: {len(events)} events timed on {len(streams)} stream(s)")
    for event in events:
        check_times(event, wall_ns)
        if kernels:
            check_kernels(event)


def trace(prof_path, trace_path):
    prof = json.load(open(prof_path))
    doc = json.load(open(trace_path))
    slices = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    names = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    for event in on_stream(prof):
        mine = [s for s in slices if s.get("args", {}).get("id") == event["id"]
                and s["args"].get("occurrence") == event["occurrence"]]
        track = f"stream {event['stream']}"
        wrong = [s for s in mine if s["pid"] != event["device"]
                 or not names.get((s["pid"], s["tid"]), "").startswith(track)]
        if not mine:
            bad(f"{label(event)}: not in the trace")
        elif wrong:
            bad(f"{label(event)}: {len(wrong)} slices not on GPU {event['device']}'s '{track}' track")
        else:
            ok(f"{label(event)}: {len(mine)} slices on GPU {event['device']}, track '{track}'")
    kernels = [s for s in slices if s.get("cat") == "kernel"]
    if not kernels:
        print("  note: the trace draws no kernel slices of its own (prof trace draws the events;"
              " their kernels' streams were checked above)")
    for k in kernels:
        stream = str(k.get("args", {}).get("stream"))
        if not names.get((k["pid"], k["tid"]), "").startswith(f"stream {stream}"):
            bad(f"kernel {k['name'][:40]} not on its stream's track ({stream})")
    if kernels:
        ok(f"{len(kernels)} kernel slices, each on its stream's track")


def nvtx(csv_path, prof_path):
    prof = json.load(open(prof_path))
    text = open(csv_path).read()
    rows = list(csv.reader(line for line in text.splitlines() if "," in line))
    seen = " ".join(" ".join(r) for r in rows)
    probes = sorted({e["name"] for e in prof["events"] if e["kind"] != "span"})
    missing = [p for p in probes if p not in seen]
    if missing:
        bad(f"no NVTX range named {missing} in nsys's NVTX summary")
    else:
        ok(f"NVTX ranges in nsys for every probe ({', '.join(probes)})")


def memory(prof_path, totals_mib):
    """Device memory: a series per device an event was timed on, one reading per iteration
    listed, read from the device's first use on; each reading and each sample's figures within
    the GPU's memory; every event on a stream has its figures."""
    prof = json.load(open(prof_path))
    totals = [int(t) << 20 for t in totals_mib.split(",") if t.strip()]
    walls = len(prof["iterations"]["wall_ns"])
    series = {u["device"]: u["used_bytes"] for u in prof["iterations"].get("device_memory", [])}
    events = on_stream(prof)
    for device in sorted({e["device"] for e in events}):
        total = totals[device] if device < len(totals) else None
        used = series.get(device)
        if used is None:
            bad(f"{prof_path}: no device memory at the steps for GPU {device}")
            continue
        read = [b for b in used if b is not None]
        if len(used) != walls:
            bad(f"GPU {device}: {len(used)} step readings for {walls} iterations listed")
        elif len(read) < walls - 1:
            bad(f"GPU {device}: only {len(read)} of {walls} steps have a reading")
        elif min(read) <= 0 or (total and max(read) > total):
            bad(f"GPU {device}: step readings {min(read)}..{max(read)} bytes, outside 1..{total}")
        else:
            ok(
                f"GPU {device}: {len(read)} step readings, {min(read) >> 20}..{max(read) >> 20} MiB "
                f"in use (of {total >> 20 if total else '?'} MiB)"
            )
    for event in events:
        m = (event.get("gpu") or {}).get("memory")
        total = totals[event["device"]] if event["device"] < len(totals) else None
        if not m:
            bad(f"{label(event)}: no device memory figures (gpu.memory)")
            continue
        used = [b for b in m["used_bytes"] if b is not None]
        change = [c for c in m["change_bytes"] if c is not None]
        n = len(event["samples_ns"])
        if len(m["used_bytes"]) != n or len(m["change_bytes"]) != n or len(used) < n:
            bad(f"{label(event)}: {len(used)} device memory readings for {n} samples")
        elif min(used) <= 0 or (total and (max(used) > total or max(map(abs, change)) > total)):
            bad(f"{label(event)}: device memory {min(used)}..{max(used)} bytes, outside 1..{total}")
        else:
            ok(
                f"{label(event)}: {n} samples with device memory, median change "
                f"{sorted(change)[len(change) // 2]} bytes"
            )


def main(argv):
    if len(argv) == 6 and argv[1] == "profile" and argv[5] in ("kernels", "nokernels"):
        profile(argv[2], int(argv[3]), int(argv[4]), argv[5] == "kernels")
    elif len(argv) == 4 and argv[1] == "trace":
        trace(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "nvtx":
        nvtx(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "memory":
        memory(argv[2], argv[3])
    else:
        sys.exit(__doc__)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
