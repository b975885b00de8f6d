#!/usr/bin/env python3
"""Two sample-mode profiles of many small events, to time `prof diff` on them (docs/overhead.md,
"Large profiles"; docs/reference.md, "Limits").

Usage: scripts/many_events.py [--events 40000] [--repeat 50] OUT_DIR
Writes OUT_DIR/a.json and OUT_DIR/b.json (two runs of the same code: every event steady within
2%, iterations of 50-60 µs), made from the fixture profiler-cli/tests/data/cli/batch32.json.
Then: /usr/bin/time prof diff OUT_DIR/a.json OUT_DIR/b.json >/dev/null
"""

import argparse
import json
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(ROOT, "profiler-cli", "tests", "data", "cli", "batch32.json")


def profile(seed, events, repeat, warmup=10):
    rng = random.Random(seed)
    with open(TEMPLATE) as f:
        p = json.load(f)
    template = p["events"][0]
    p["run"].update(mode="sample", warmup=warmup, repeat=repeat)
    iterations = warmup + events * repeat
    out = []
    for k in range(events):
        base = random.Random(k).randint(100, 5000)  # the same code in both runs
        samples = [int(base * (1 + 0.02 * rng.random())) for _ in range(repeat)]
        ordered = sorted(samples)
        e = dict(template)
        e.update(id=f"many::e{k}", name=f"e{k}", layer="many", phase="fwd", occurrence=0,
                 order=k, merged=False, parent=None, samples_ns=samples, offsets_ns=[0] * repeat,
                 sample_iters=list(range(warmup + k * repeat, warmup + (k + 1) * repeat)))
        e["stats"] = {"count": repeat, "mean_ns": sum(samples) // repeat,
                      "median_ns": ordered[repeat // 2], "min_ns": ordered[0],
                      "max_ns": ordered[-1], "stddev_ns": 1,
                      "p90_ns": ordered[9 * repeat // 10]}
        out.append(e)
    p["events"] = out
    p["iterations"] = {"count": iterations,
                       "wall_ns": [rng.randint(50_000, 60_000) for _ in range(iterations)]}
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("out_dir")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for seed, name in ((1, "a"), (2, "b")):
        with open(os.path.join(args.out_dir, f"{name}.json"), "w") as f:
            json.dump(profile(seed, args.events, args.repeat), f)


if __name__ == "__main__":
    main()
