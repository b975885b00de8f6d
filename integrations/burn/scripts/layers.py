#!/usr/bin/env python3
"""Backward by layer from a prof.json of the cnn example (or any model using profiler-burn or
candle's `backward` module).

    python3 scripts/layers.py [--backward NAME] prof.json [more.json ...]

For each file: the mean time per iteration of the event named NAME (default `backward`: the
function around loss.backward()), the share of it that the outermost `<layer>/bwd` runs cover
(a nested layer's runs are inside its parent's, counted once), and per layer the forward and
backward time per iteration and their ratio. Per iteration = the mean of a run times its
occurrences in an iteration (the event's `occurrence` rows), which is what trace mode measures.
Without an event NAME the share is not given.
"""
import argparse
import json
from collections import defaultdict


def per_iteration(events, pred):
    return sum(e["stats"]["mean_ns"] for e in events if pred(e) and e["stats"]["count"])


def outermost_bwd(events):
    """The `<layer>/bwd` events that no other `<layer>/bwd` event holds (by `parent`)."""
    by_order = {e["order"]: e for e in events}

    def inside_bwd(e):
        parent = e.get("parent")
        while parent is not None and parent in by_order:
            if by_order[parent]["name"].endswith("/bwd"):
                return True
            parent = by_order[parent].get("parent")
        return False

    return [e for e in events if e["name"].endswith("/bwd") and not inside_bwd(e)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backward", default="backward",
                        help="the event around the backward pass (default: backward)")
    parser.add_argument("files", nargs="+", help="prof.json files")
    args = parser.parse_args()
    for path in args.files:
        p = json.load(open(path))
        ev = p["events"]
        backward = per_iteration(ev, lambda e: e["name"] == args.backward)
        layers = sorted({e["layer"] for e in ev if e["name"].endswith("/bwd") and e["layer"]})
        fwd = defaultdict(int)
        bwd = defaultdict(int)
        for layer in layers:
            fwd[layer] = per_iteration(ev, lambda e: e["name"] == f"{layer}/fwd")
            bwd[layer] = per_iteration(ev, lambda e: e["name"] == f"{layer}/bwd")
        outer = outermost_bwd(ev)
        covered = per_iteration(outer, lambda e: True)
        if backward > 0:
            print(f"{path}: {args.backward} {backward / 1e6:.2f} ms/iter, "
                  f"{100 * covered / backward:.1f}% of it in <layer>/bwd")
        else:
            print(f"{path}: no measured event `{args.backward}` (--backward NAME names the "
                  f"event around the backward pass): <layer>/bwd {covered / 1e6:.2f} ms/iter")
        print(f"  {'layer':8} {'fwd ms':>8} {'bwd ms':>8} {'bwd/fwd':>8}")
        for layer in layers:
            ratio = bwd[layer] / fwd[layer] if fwd[layer] else float("nan")
            print(f"  {layer:8} {fwd[layer] / 1e6:8.2f} {bwd[layer] / 1e6:8.2f} {ratio:8.2f}")


main()
