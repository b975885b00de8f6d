#!/usr/bin/env python3
"""Does duet benchmarking (Bulej et al., ICPE 2020: the two versions run at the same time, so that
interference hits both) make `prof ab`'s comparisons sharper on this machine? The measurement
behind the `--duet` paragraph of docs/overhead.md ("Several runs a side").

For each program (`waits`, `dlrm`) and condition (quiet; a CPU hog per core), records PAIRS pairs
of runs of the program as it is (A/A) and PAIRS pairs of it against its layer 5% slower, two ways:

- interleaved: the pair's two runs one after the other, in random order (what `prof ab` does);
- pinned: interleaved, each run pinned to a core drawn at random (pinning without duet);
- duet: the pair's two runs at the same time, each pinned to a core of its own (cores 0 and 1).

Then compares the sides of each set of pairs, per event, on the log of each run's median, as
`prof diff`'s several-runs comparison does (Welch, the run as the unit), and also paired:

- unpaired: Welch's interval of mean(log after) - mean(log before);
- paired by run: the t interval of the pairs' differences of log medians;
- paired by iteration (duet): each pair's median over its samples of log(after / before), the
  samples matched by their iteration (both runs follow the same schedule), then the t interval
  over the pairs.

It prints, per program, condition and way: the median half-width of the events' 95% intervals
in the A/A set (how small a change could be seen), how many of the events' A/A intervals exclude
no change (false alarms at 95% per event, before any family correction), and the slowed layer's
estimate and interval in the 5% set. Wall time of each way is printed too.

Usage: scripts/duet_acceptance.py [--pairs 10] [--programs waits,dlrm] [--seed S] [--keep DIR]
A live experiment on a shared machine: its numbers go into the docs, never into a test.
"""

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diff_acceptance as da  # noqa: E402

# Student's t 0.975 quantiles for 1 to 30 degrees of freedom; beyond, the normal's.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


WAYS = ("interleaved", "pinned", "duet")


def t975(df):
    df = max(1, int(math.floor(df)))
    return T975[df - 1] if df <= 30 else 1.96


def hogs_for(condition, seed):
    if condition != "loaded":
        return []
    cores = os.cpu_count() or 2
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]


def start(exe, out, env_extra, args, core=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    env.update(env_extra, PROF_OUT=out)
    pre = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    return subprocess.Popen([exe] + args, env=env, cwd=os.path.dirname(out),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=pre)


def record(exe, work, program, condition, way, kind, pairs, rng, seed):
    """PAIRS pairs (before, after) of `program`; returns [(before.json, after.json)] and seconds."""
    env_extra, slower, _ = da.PROGRAMS[program]
    after_args = slower(5) if kind == "slow5" else []
    files = []
    t0 = time.time()
    for i in range(pairs):
        b = os.path.join(work, f"{program}-{condition}-{way}-{kind}-{i}-before.json")
        a = os.path.join(work, f"{program}-{condition}-{way}-{kind}-{i}-after.json")
        hogs = hogs_for(condition, seed + i)
        if hogs:
            time.sleep(0.2)
        try:
            if way == "duet":
                cores = sorted(os.sched_getaffinity(0))
                first, second = (cores[0], cores[1]) if rng.random() < 0.5 else (cores[1], cores[0])
                # Which side starts first (a few milliseconds ahead) is drawn too.
                sides = [(b, [], first), (a, after_args, second)]
                rng.shuffle(sides)
                procs = [start(exe, out, env_extra, args, core) for out, args, core in sides]
                for p in procs:
                    if p.wait() != 0:
                        sys.exit(f"{program} failed")
            else:
                order = [(b, []), (a, after_args)]
                rng.shuffle(order)
                for out, args in order:
                    # "pinned": interleaved, each run pinned to a core drawn at random (whether
                    # pinning alone, without running at the same time, is what helps).
                    core = rng.choice(sorted(os.sched_getaffinity(0))) if way == "pinned" else None
                    if start(exe, out, env_extra, args, core).wait() != 0:
                        sys.exit(f"{program} failed")
        finally:
            for h in hogs:
                h.kill()
                h.wait()
        files.append((b, a))
    return files, time.time() - t0


def events(path):
    with open(path) as f:
        d = json.load(f)
    return {(e["id"], e["occurrence"]): e for e in d["events"] if e.get("samples_ns")}


def interval(values, paired_df=None):
    """(mean, half-width) of the t interval of a list of differences."""
    n = len(values)
    m = statistics.fmean(values)
    sd = statistics.stdev(values) if n > 1 else float("inf")
    return m, t975(n - 1) * sd / math.sqrt(n)


def welch(b, a):
    m, n = len(b), len(a)
    vb, va = statistics.variance(b), statistics.variance(a)
    se2 = vb / m + va / n
    df = se2 ** 2 / ((vb / m) ** 2 / (m - 1) + (va / n) ** 2 / (n - 1)) if se2 > 0 else m + n - 2
    return statistics.fmean(a) - statistics.fmean(b), t975(df) * math.sqrt(se2)


def analyse(pairs, way):
    """{event: {method: (estimate, half-width)}} on the log scale."""
    loaded = [(events(b), events(a)) for b, a in pairs]
    keys = set(loaded[0][0]) & set(loaded[0][1])
    for b, a in loaded:
        keys &= set(b) & set(a)
    out = {}
    for k in sorted(keys):
        lb = [math.log(statistics.median(b[k]["samples_ns"])) for b, _ in loaded]
        la = [math.log(statistics.median(a[k]["samples_ns"])) for _, a in loaded]
        res = {"unpaired": welch(lb, la), "paired by run": interval([y - x for x, y in zip(lb, la)])}
        if way == "duet":
            per_pair = []
            for b, a in loaded:
                bi = dict(zip(b[k]["sample_iters"], b[k]["samples_ns"]))
                diffs = [math.log(s / bi[i]) for i, s in zip(a[k]["sample_iters"], a[k]["samples_ns"])
                         if i in bi and bi[i] > 0 and s > 0]
                if diffs:
                    per_pair.append(statistics.median(diffs))
            if len(per_pair) == len(loaded):
                res["paired by iteration"] = interval(per_pair)
        out[(k, loaded[0][0][k]["name"])] = res
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--programs", default="waits,dlrm")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--keep")
    args = ap.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("duet needs two cores")
    _, examples = da.build()
    work = os.path.abspath(args.keep or tempfile.mkdtemp(prefix="duet-acceptance-"))
    os.makedirs(work, exist_ok=True)
    rng = random.Random(args.seed)
    print("| program | condition | way | comparison | A/A: median interval | A/A: intervals "
          "excluding no change | 5% slower layer: estimate [interval] | wall s |")
    print("|---|---|---|---|---:|---:|---|---:|")
    for program in args.programs.split(","):
        target = da.PROGRAMS[program][2]
        exe = os.path.join(examples, program)
        for condition in ("quiet", "loaded"):
            # The four sets in random order, so that a slow spell does not favour one way.
            sets = [(way, kind) for way in WAYS for kind in ("aa", "slow5")]
            rng.shuffle(sets)
            recorded = {}
            for way, kind in sets:
                recorded[(way, kind)] = record(exe, work, program, condition, way, kind,
                                               args.pairs, rng, args.seed)
            for way in WAYS:
                aa = analyse(recorded[(way, "aa")][0], way)
                slow = analyse(recorded[(way, "slow5")][0], way)
                wall = recorded[(way, "aa")][1] + recorded[(way, "slow5")][1]
                for method in ("unpaired", "paired by run", "paired by iteration"):
                    widths = [r[method][1] for r in aa.values() if method in r]
                    if not widths:
                        continue
                    alarms = sum(abs(r[method][0]) > r[method][1] for r in aa.values()
                                 if method in r)
                    hit = [r[method] for (k, name), r in slow.items()
                           if name == target and method in r]
                    est = (f"{100 * math.expm1(hit[0][0]):+.2f}% "
                           f"[{100 * math.expm1(hit[0][0] - hit[0][1]):+.2f}%, "
                           f"{100 * math.expm1(hit[0][0] + hit[0][1]):+.2f}%]") if hit else "-"
                    print(f"| {program} | {condition} | {way} | {method} | "
                          f"\u00b1{100 * statistics.median(widths):.2f}% | "
                          f"{alarms} of {len(widths)} | {est} | {wall:.0f} |", flush=True)


if __name__ == "__main__":
    main()
