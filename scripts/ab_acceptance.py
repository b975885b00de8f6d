#!/usr/bin/env python3
"""How often several runs a side (`prof diff b1 ... -- a1 ...`, what `prof ab` runs) say what
they should, quiet and under load: the rates in docs/overhead.md ("Several runs a side").

For each program (`waits`, `dlrm`), records RUNS runs as it is and RUNS/2 runs with one layer 5%
and 3% slower, half of each kind under a CPU hog per core, all in a seeded random order (the
interleaving `prof ab` does). Then draws comparisons of SIDE runs against SIDE runs (half of each
side loaded), without sharing a run between the two sides:

- A/A (two disjoint draws of the runs as they are): how many name any event or exit 1;
- one side all quiet, the other all loaded (A/A);
- the layer 5% slower, and 3% slower: how often it is named regressed, alone;
- the 5% slower runs all loaded against quiet runs as they are.

Usage: scripts/ab_acceptance.py [--runs 40] [--side 10] [--programs waits,dlrm] [--seed S]
                                [--keep DIR [--reuse]]
Builds the examples and `prof` in release first (scripts/diff_acceptance.py's build). A live
experiment: its rates depend on the machine; they go into the docs, never into a test's verdict.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diff_acceptance as da  # noqa: E402


def judge(prof, before, after):
    p = subprocess.run([prof, "diff", "--format", "json", "--fail-on-regression"] + before +
                       ["--"] + after, capture_output=True, text=True)
    if p.returncode not in (0, 1, 3):
        sys.exit(f"prof diff failed: {p.stderr}")
    d = json.loads(p.stdout)
    named = [e["name"] for e in d["events"] if e["verdict"] in ("regressed", "improved")]
    return named, p.returncode, d


def load_differs(d):
    """Whether the comparison found the two sides differently loaded (every verdict inconclusive)."""
    return bool(d.get("load", {}).get("differs"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--side", type=int, default=10)
    ap.add_argument("--programs", default="waits,dlrm")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep")
    ap.add_argument("--reuse", action="store_true",
                    help="judge the runs already in --keep's folder again")
    args = ap.parse_args()
    prof, examples = da.build()
    work = os.path.abspath(args.keep or tempfile.mkdtemp(prefix="ab-acceptance-"))
    os.makedirs(work, exist_ok=True)
    rng = random.Random(args.seed)
    print("| program | comparison | draws | verdicts |")
    print("|---|---|---:|---|")
    for program in args.programs.split(","):
        env_extra, slower, target = da.PROGRAMS[program]
        kinds = {"base": args.runs, "slow5": args.runs // 2, "slow3": args.runs // 2}
        todo = [(kind, k) for kind, n in kinds.items() for k in range(n)]
        rng.shuffle(todo)
        files = {}
        t0 = time.time()
        for i, (kind, k) in enumerate(todo):
            loaded = k % 2 == 1
            percent = {"base": 0, "slow5": 5, "slow3": 3}[kind]
            out = os.path.join(work, f"{program}-{kind}-{k}.json")
            if not (args.reuse and os.path.exists(out)):
                da.run(os.path.join(examples, program), out, env_extra,
                       slower(percent) if percent else [], "loaded" if loaded else "quiet",
                       args.seed + i)
            files.setdefault(kind, []).append((out, loaded))
        per_run = (time.time() - t0) / len(todo)

        def draw(kind, n, quiet, loaded, exclude=()):
            pool_q = [f for f, l in files[kind] if not l and f not in exclude]
            pool_l = [f for f, l in files[kind] if l and f not in exclude]
            return rng.sample(pool_q, quiet) + rng.sample(pool_l, loaded)

        half = args.side // 2

        def aa(draws, before_split, after_split):
            """A/A draws: how many named an event, exited 1, exited 3, found the load differing."""
            named = exit1 = exit3 = load = 0
            for _ in range(draws):
                b = draw("base", args.side, *before_split)
                a = draw("base", args.side, *after_split, exclude=b)
                n, status, d = judge(prof, b, a)
                # The iteration named counts too: the code is the same on both sides.
                named += bool(n) or d["iteration"]["verdict"] in ("regressed", "improved")
                exit1 += status == 1
                exit3 += status == 3
                load += load_differs(d)
            return named, exit1, exit3, load

        def slowed(kind, draws, before_split, after_split):
            """Draws against slowed runs: how many named the target alone, another event, found
            the load differing, exited 0."""
            hit = other = load = exit0 = 0
            for _ in range(draws):
                b = draw("base", args.side, *before_split)
                a = draw(kind, args.side, *after_split)
                n, status, d = judge(prof, b, a)
                hit += n == [target]
                other += any(x != target for x in n)
                load += load_differs(d)
                exit0 += status == 0
            return hit, other, load, exit0

        rows = []
        def loaded_text(load):
            return f"; load differs in {load}" if load else ""

        named, exit1, exit3, load = aa(100, (half, half), (half, half))
        rows.append(("A/A, half of each side loaded", 100,
                     f"{named} named an event; {exit1} exit 1; {exit3} exit 3"
                     f"{loaded_text(load)}"))
        named, exit1, exit3, load = aa(20, (args.side, 0), (0, args.side))
        rows.append(("A/A, quiet before, loaded after", 20,
                     f"{named} named an event; {exit1} exit 1; {exit3} exit 3"
                     f"{loaded_text(load)}"))
        for kind, label in [("slow5", "5%"), ("slow3", "3%")]:
            hit, other, load, _ = slowed(kind, 40, (half, half), (half, half))
            rows.append((f"`{target}` {label} slower, half of each side loaded", 40,
                         f"{hit} named it alone; {other} named another event"
                         f"{loaded_text(load)}"))
        hit, other, load, exit0 = slowed("slow5", 40, (args.side, 0), (0, args.side))
        rows.append((f"`{target}` 5% slower, quiet before, loaded after", 40,
                     f"{hit} named it alone; {other} named another event{loaded_text(load)}; "
                     f"{exit0} exit 0"))
        hit, other, load, exit0 = slowed("slow5", 40, (0, args.side), (args.side, 0))
        rows.append((f"`{target}` 5% slower, loaded before, quiet after", 40,
                     f"{hit} named it alone; {other} named another event{loaded_text(load)}; "
                     f"{exit0} exit 0"))
        for label, draws, verdicts in rows:
            print(f"| {program} | {label} | {draws} | {verdicts} |", flush=True)
        if not args.reuse:
            print(f"{program}: {len(todo)} runs in {per_run * len(todo):.0f} s ({per_run:.2f} s "
                  f"a run): {2 * args.side} runs of a comparison take about "
                  f"{2 * args.side * per_run:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
