#!/usr/bin/env python3
"""Backward by layer from a prof.json of the cnn example (or any model using profiler-burn).

    python3 scripts/layers.py prof.json [more.json ...]

For each file: the mean time per iteration of the `backward` event (the loss.backward() call),
the share of it that the `<layer>/bwd` runs cover, and per layer the forward and backward
time per iteration and their ratio. Per iteration = the mean of a run times its occurrences
in an iteration (the event's `occurrence` rows), which is what trace mode measures.
"""
import json
import sys
from collections import defaultdict


def per_iteration(events, pred):
    return sum(e["stats"]["mean_ns"] for e in events if pred(e) and e["stats"]["count"])


def main():
    for path in sys.argv[1:]:
        p = json.load(open(path))
        ev = p["events"]
        backward = per_iteration(ev, lambda e: e["name"] == "backward")
        layers = sorted({e["layer"] for e in ev if e["name"].endswith("/bwd") and e["layer"]})
        fwd = defaultdict(int)
        bwd = defaultdict(int)
        for layer in layers:
            fwd[layer] = per_iteration(ev, lambda e: e["name"] == f"{layer}/fwd")
            bwd[layer] = per_iteration(ev, lambda e: e["name"] == f"{layer}/bwd")
        covered = sum(bwd.values())
        print(f"{path}: backward {backward / 1e6:.2f} ms/iter, "
              f"{100 * covered / backward:.1f}% of it in <layer>/bwd")
        print(f"  {'layer':8} {'fwd ms':>8} {'bwd ms':>8} {'bwd/fwd':>8}")
        for layer in layers:
            ratio = bwd[layer] / fwd[layer] if fwd[layer] else float("nan")
            print(f"  {layer:8} {fwd[layer] / 1e6:8.2f} {bwd[layer] / 1e6:8.2f} {ratio:8.2f}")


main()
