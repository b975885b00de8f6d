#!/usr/bin/env python3
"""Writes random, valid prof.json files (they pass prof's loader) of every shape the trace and
report code handles: trace and sample mode, nested events, GPU streams named and numbered,
events running concurrently, merged events, memory figures, samples in the iteration still
running, runs longer than their iteration. Used by scripts/prof-outputs.sh to compare two
builds of prof on more than the fixtures.

    scripts/random_profiles.py OUT_DIR [COUNT] [SEED]
"""
import json
import os
import random
import sys


def stats(values, count=None):
    s = sorted(values)
    n = len(s)
    if n == 0:
        return {"count": count or 0, "mean_ns": 0, "median_ns": 0, "min_ns": 0,
                "max_ns": 0, "stddev_ns": 0, "p90_ns": 0}
    mean = sum(s) / n
    median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) // 2
    var = sum((v - mean) ** 2 for v in s) / (n - 1) if n > 1 else 0.0
    rank = min(max(-(-9 * n // 10), 1), n)
    return {"count": count or n, "mean_ns": round(mean), "median_ns": median, "min_ns": s[0],
            "max_ns": s[-1], "stddev_ns": round(var ** 0.5), "p90_ns": s[rank - 1]}


def profile(rng, mode):
    iterations = rng.randint(1, 12)
    walls = [rng.randint(500, 40_000) for _ in range(iterations)]
    warmup = rng.randint(0, iterations - 1)
    repeat = rng.randint(1, 6)
    memory = rng.random() < 0.3
    events = []
    for order in range(rng.randint(1, 10)):
        name = rng.choice(["fwd", "bwd", "mlp", "lookup"])
        e = {"id": f"m::{name}", "name": name,
             "layer": rng.choice([None, "embedding", "top_mlp"]),
             "phase": rng.choice([None, "fwd", "bwd"]), "kind": rng.choice(["fn", "probe"]),
             "module": "m", "file": "m.rs", "line": rng.randint(1, 99), "occurrence": order,
             "order": order, "device": None, "stream": None,
             "merged": rng.random() < 0.15,
             "parent": rng.randrange(order) if order and rng.random() < 0.5 else None}
        gpu = rng.random()
        if gpu < 0.15:
            e["device"] = rng.randint(0, 1)
        elif gpu < 0.3:
            e["device"], e["stream"] = 1, rng.choice(["7", "copy", "3"])
        n = rng.randint(0, repeat if not e["merged"] else repeat + 4)
        e["sample_iters"] = [rng.randint(warmup, iterations) for _ in range(n)]
        e["offsets_ns"] = [rng.randint(0, 45_000) for _ in range(n)]
        e["samples_ns"] = [rng.randint(0, 9_000) for _ in range(n)]
        e["stats"] = stats(e["samples_ns"], n + rng.randint(0, 50) if e["merged"] else None)
        if memory:
            e["memory"] = {k: [rng.randint(0, 1 << 20) for _ in range(n)]
                           for k in ["alloc_bytes", "freed_bytes", "allocs", "peak_bytes"]}
        events.append(e)
    return {"schema": "profiler-core/prof/v2" if memory else "profiler-core/prof/v1",
            "complete": rng.random() < 0.8,
            "run": {"program": "rand", "pid": rng.choice([0, 1, 4242]), "host": "h",
                    "rank": rng.randint(0, 3), "mode": mode, "filter": "", "warmup": warmup,
                    "repeat": repeat, "clock": "fake", "max_events": 4096,
                    "timer_floor_ns": rng.randint(0, 30), "profiler_version": "0.1.0"},
            "iterations": {"count": iterations, "wall_ns": walls},
            "events": events}


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    os.makedirs(out, exist_ok=True)
    for i in range(count):
        mode = "sample" if i % 3 == 0 else "trace"
        with open(os.path.join(out, f"random{i:03}.json"), "w") as f:
            json.dump(profile(rng, mode), f, indent=2)


main()
