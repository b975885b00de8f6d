#!/usr/bin/env python3
"""Does writing a trace taken on demand move the training thread's step time?

Runs the dlrm example (release build) in continuous mode, asks it for TRACES traces of
PROF_REPEAT iterations by signal (`prof trigger PID`), one every GAP seconds, then stops it and
compares, from the continuous profile's windows (every window kept), the wall time of the
iterations right after each trace (while the writer thread serializes and writes it) with that of
the iterations right before it. Also reports the traced iterations themselves (every event armed)
against the sampled ones.

    cargo build --release --example dlrm -p profiler-cli
    python3 scripts/on_demand_stall.py [--traces 20] [--gap 1.0] [--repeat 50] [--window 200]

Prints one line per trace and a summary; the numbers go into docs/guide.md (trace on demand).
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=20)
    ap.add_argument("--gap", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--window", type=int, default=200, help="iterations compared on each side")
    args = ap.parse_args()
    dlrm = os.path.join(ROOT, "target/release/examples/dlrm")
    prof = os.path.join(ROOT, "target/release/prof")
    work = tempfile.mkdtemp(prefix="on-demand-stall-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    env.update(PROF_MODE="continuous", PROF_REPEAT=str(args.repeat), PROF_WINDOWS="100000")
    job = subprocess.Popen([dlrm, "--iters", "100000000"], cwd=work, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    out = os.path.join(work, "prof.json")
    while not os.path.exists(out):
        time.sleep(0.05)
    time.sleep(args.gap)
    for _ in range(args.traces):
        subprocess.run([prof, "trigger", str(job.pid)], check=True, stderr=subprocess.DEVNULL)
        time.sleep(args.gap)
    job.send_signal(signal.SIGINT)
    job.wait()
    profile = json.load(open(out))
    wall = {}
    for w in profile["windows"]:
        for k, ns in enumerate(w["wall_ns"]):
            wall[w["first_iteration"] + k] = ns
    traces = []
    for name in os.listdir(work):
        if name.startswith("prof.trace-"):
            t = json.load(open(os.path.join(work, name)))
            first = t["iterations"]["first"]
            traces.append((first, len(t["iterations"]["wall_ns"]), t["iterations"]["wall_ns"]))
    traces.sort()
    n = args.window
    ratios, p90s, traced_ratio = [], [], []
    before_all, after_all = [], []
    print(f"{len(traces)} traces of {args.repeat} iterations; {n} iterations each side")
    print("  first   before med   after med   ratio   before p90   after p90")
    for first, length, traced in traces:
        end = first + length
        before = [wall[i] for i in range(first - n, first) if i in wall]
        after = [wall[i] for i in range(end, end + n) if i in wall]
        if len(before) < n // 2 or len(after) < n // 2:
            continue
        b, a = statistics.median(before), statistics.median(after)
        ratios.append(a / b)
        p90s.append(percentile(after, 0.9) / percentile(before, 0.9))
        traced_ratio.append(statistics.median(traced) / b)
        before_all += before
        after_all += after
        print(f"  {first:6d}  {b/1e3:9.1f}µs {a/1e3:9.1f}µs  {a/b:6.3f}  "
              f"{percentile(before, 0.9)/1e3:9.1f}µs {percentile(after, 0.9)/1e3:9.1f}µs")
    if not ratios:
        print("no trace with enough iterations around it")
        return
    print(f"after/before median ratio: median {statistics.median(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f} over {len(ratios)} traces")
    print(f"after/before p90 ratio: median {statistics.median(p90s):.3f}, "
          f"range {min(p90s):.3f}-{max(p90s):.3f}")
    print(f"pooled: before median {statistics.median(before_all)/1e3:.1f}µs, "
          f"after median {statistics.median(after_all)/1e3:.1f}µs")
    print(f"traced iterations (every event armed) / sampled before: median "
          f"{statistics.median(traced_ratio):.3f}")


if __name__ == "__main__":
    main()
