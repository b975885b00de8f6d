#!/usr/bin/env python3
"""How often `prof diff` says what it should, quiet and under load: the numbers in docs/overhead.md.

For each program (the `waits` and `dlrm` examples), makes RUNS quiet runs, RUNS loaded runs (a
CPU-hog process per core for the whole run), RUNS/2 quiet runs with one layer 20% slower and
RUNS/2 loaded runs with that layer 75% slower, then runs `prof diff --format json` on every pair
of each kind and counts the verdicts:

- A/A pairs (quiet/quiet, quiet/loaded, loaded/quiet, loaded/loaded): how many named any event
  regressed or improved (a false positive), and how many called the iteration a regression;
- slowed pairs: how often the slowed layer's event was called regressed (power), and how many
  pairs named any other event.

Usage: scripts/diff_acceptance.py [--runs N] [--programs waits,dlrm] [--keep DIR [--reuse]]
                                  [--prof PATH]
Builds the examples and `prof` in release first. Takes about 5 minutes with the defaults.
`--reuse` judges the profiles already in `--keep DIR` again instead of making new runs.
"""

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = {
    # program: (extra env, 20% slower, 75% slower, the slowed event)
    "waits": ({"PROF_REPEAT": "30"}, ["--slow", "forward=1.2"], ["--slow", "forward=1.75"],
              "forward"),
    "dlrm": ({}, ["--slow", "top_mlp", "--slow-by", "20"],
             ["--slow", "top_mlp", "--slow-by", "75"], "top_backward"),
}


def build():
    # Two commands: with `--example`, cargo builds only the examples named.
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "profiler-cli"], cwd=ROOT,
                   check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "profiler-suite",
                    "--example", "waits", "--example", "dlrm"], cwd=ROOT, check=True)
    release = os.path.join(ROOT, "target", "release")
    return os.path.join(release, "prof"), os.path.join(release, "examples")


def run(exe, out, env_extra, args, loaded):
    hogs = []
    if loaded:
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(os.cpu_count() or 2)]
        time.sleep(0.2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    env.update(env_extra, PROF_OUT=out)
    try:
        subprocess.run([exe] + args, env=env, cwd=os.path.dirname(out), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def diff(prof, before, after):
    p = subprocess.run([prof, "diff", before, after, "--format", "json",
                        "--fail-on-regression"], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"prof diff {before} {after} failed: {p.stderr}")
    return json.loads(p.stdout), p.returncode


def named(d):
    return [e["name"] for e in d["events"] if e["verdict"] in ("regressed", "improved")]


def pairs(runs, a, b):
    if a == b:
        return list(itertools.combinations(runs[a], 2))
    return [(x, y) for x in runs[a] for y in runs[b]]


def measure(prof, examples, work, program, n, reuse):
    env_extra, slow20, slow75, target = PROGRAMS[program]
    exe = os.path.join(examples, program)
    runs = {"quiet": [], "loaded": [], "slow20": [], "slow75-loaded": []}
    for k in range(n):
        for kind, args, loaded, count in [("quiet", [], False, n), ("loaded", [], True, n),
                                          ("slow20", slow20, False, n // 2),
                                          ("slow75-loaded", slow75, True, n // 2)]:
            if k < count:
                out = os.path.join(work, f"{program}-{kind}-{k}.json")
                if not (reuse and os.path.exists(out)):
                    run(exe, out, env_extra, args, loaded)
                runs[kind].append(out)
        print(f"{program}: runs {k + 1}/{n}", file=sys.stderr)
    rows = []
    for a, b in [("quiet", "quiet"), ("quiet", "loaded"), ("loaded", "quiet"),
                 ("loaded", "loaded")]:
        ps = pairs(runs, a, b)
        fp = it = 0
        for x, y in ps:
            d, _ = diff(prof, x, y)
            fp += bool(named(d))
            it += d["iteration"]["verdict"] in ("regressed", "improved")
        rows.append((program, f"A/A {a} -> {b}", len(ps), f"{fp} named an event",
                     f"{it} called the iteration changed"))
    for a, b in [("quiet", "slow20"), ("quiet", "slow75-loaded"), ("loaded", "slow75-loaded")]:
        ps = pairs(runs, a, b)
        hit = other = fail = 0
        for x, y in ps:
            d, status = diff(prof, x, y)
            names = named(d)
            hit += target in names and all(
                e["verdict"] == "regressed" for e in d["events"] if e["name"] == target)
            other += any(name != target for name in names)
            fail += status == 1
        rows.append((program, f"{target} slower, {a} -> {b}", len(ps),
                     f"{hit} named it regressed", f"{other} named another event",
                     f"{fail} exit 1"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--programs", default="waits,dlrm")
    ap.add_argument("--keep", help="keep the profiles in this folder")
    ap.add_argument("--prof", help="judge with this prof binary instead of building one")
    ap.add_argument("--reuse", action="store_true",
                    help="judge the profiles already in --keep's folder again")
    args = ap.parse_args()
    if args.runs < 2:
        sys.exit("--runs must be at least 2")
    if args.reuse and not args.keep:
        sys.exit("--reuse needs --keep DIR")
    programs = args.programs.split(",")
    for p in programs:
        if p not in PROGRAMS:
            sys.exit(f"unknown program {p}: choose from {', '.join(PROGRAMS)}")
    prof, examples = build()
    if args.prof:
        prof = os.path.abspath(args.prof)
    work = args.keep or tempfile.mkdtemp(prefix="diff-acceptance-")
    os.makedirs(work, exist_ok=True)
    print("| program | comparison | pairs | verdicts |")
    print("|---|---|---:|---|")
    for program in programs:
        for row in measure(prof, examples, work, program, args.runs, args.reuse):
            print(f"| {row[0]} | {row[1]} | {row[2]} | {'; '.join(row[3:])} |", flush=True)


if __name__ == "__main__":
    main()
