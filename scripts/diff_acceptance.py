#!/usr/bin/env python3
"""How often `prof diff` says what it should, quiet and under load: a live experiment, and the
recorder of the corpus that `cargo test` judges (tests/data/diff-corpus, docs/overhead.md).

For each program (the `waits` and `dlrm` examples) and each condition of the machine:

- quiet: nothing added (on a shared machine, "quiet" means whatever the neighbours do);
- loaded: a CPU-hog process per core for the whole run;
- bursty: a process per core that is busy and idle by turns, each spell 20-300 ms long (seeded);

makes RUNS runs of the program as it is and RUNS/2 runs (at least 1) with one layer 5%, 20% and
75% slower, in a seeded random order (so that a slow spell of the machine does not line up with
one kind of run). Then runs `prof diff --fail-on-regression --format json` on every pair that the
comparisons below define and counts the verdicts:

- A/A pairs (two runs of the same code): how many named any event regressed or improved (a false
  positive), how many called the iteration changed, how many exited 1;
- slowed pairs (a run as it is before, a slowed run after): how often the slowed layer's event was
  called regressed (the detection), how many named another event, how many exited 1.

It prints the table, then the machine's steadiness while it ran: each condition's spread of the
median iteration between runs of the same code, and the largest shift of one event between two
quiet runs.

Usage: scripts/diff_acceptance.py [--runs N] [--programs waits,dlrm] [--seed S]
                                  [--keep DIR [--reuse]] [--prof PATH]

Builds the examples and `prof` in release first. With `--keep DIR` the profiles are kept there,
gzipped, with `manifest.json` (how each file was made, and the comparisons): that is how
tests/data/diff-corpus was recorded (`--runs 4 --keep tests/data/diff-corpus`, about 4 minutes).
`--reuse` judges the profiles already in DIR again instead of making new runs (`--prof PATH`
judges them with another build of `prof`). The numbers are an experiment on a shared machine:
they belong in docs, never in a test's verdict (profiler-cli/tests/prof/diff_corpus.rs judges the
recorded corpus, whose verdicts do not change from run to run).
"""

import argparse
import datetime
import gzip
import itertools
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLOWDOWNS = [5, 20, 75]
CONDITIONS = {
    "quiet": "nothing added",
    "loaded": "a CPU-hog process per core (`while True: pass`) for the whole run",
    "bursty": "a process per core busy and idle by turns, each spell 20-300 ms (seeded)",
}
PROGRAMS = {
    # program: (extra env, arguments that make the layer `percent`% slower, the slowed event)
    "waits": ({"PROF_REPEAT": "30"},
              lambda percent: ["--slow", f"forward={1 + percent / 100:.2f}"], "forward"),
    "dlrm": ({}, lambda percent: ["--slow", "top_mlp", "--slow-by", str(percent)],
             "top_backward"),
}
# (before, after) conditions compared: every A/A pair of runs as they are, and for each
# slowdown, the slowed runs against the runs as they are.
AA = [("quiet", "quiet"), ("quiet", "loaded"), ("quiet", "bursty"), ("loaded", "loaded"),
      ("bursty", "bursty"), ("loaded", "bursty")]
SLOWED = [("quiet", "quiet"), ("quiet", "loaded"), ("quiet", "bursty"), ("loaded", "loaded"),
          ("bursty", "bursty")]

BURSTY_HOG = """
import random, sys, time
rng = random.Random(int(sys.argv[1]))
while True:
    end = time.monotonic() + rng.uniform(0.02, 0.3)
    while time.monotonic() < end:
        pass
    time.sleep(rng.uniform(0.02, 0.3))
"""


def build():
    # Two commands: with `--example`, cargo builds only the examples named.
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "profiler-cli"], cwd=ROOT,
                   check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "profiler-suite",
                    "--example", "waits", "--example", "dlrm"], cwd=ROOT, check=True)
    release = os.path.join(ROOT, "target", "release")
    return os.path.join(release, "prof"), os.path.join(release, "examples")


def run(exe, out, env_extra, args, condition, seed):
    hogs = []
    cores = os.cpu_count() or 2
    if condition == "loaded":
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(cores)]
    elif condition == "bursty":
        hogs = [subprocess.Popen([sys.executable, "-c", BURSTY_HOG, str(seed * 100 + k)])
                for k in range(cores)]
    if hogs:
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
    if p.returncode not in (0, 1, 3):
        sys.exit(f"prof diff {before} {after} failed: {p.stderr}")
    return json.loads(p.stdout), p.returncode


def named(d):
    return [e["name"] for e in d["events"] if e["verdict"] in ("regressed", "improved")]


def kind(condition, slow):
    return f"{condition}-slow{slow}" if slow else f"{condition}-base"


def plan(programs, n):
    """Every run to make: (program, condition, slowdown, index), in a seeded random order."""
    runs = []
    for program in programs:
        for condition in CONDITIONS:
            runs += [(program, condition, 0, k) for k in range(n)]
            for slow in SLOWDOWNS:
                runs += [(program, condition, slow, k) for k in range(max(1, n // 2))]
    return runs


def comparisons(programs):
    """The comparisons of the manifest: which runs are compared with which, and what is looked
    for (`target`: the slowed event, or null for A/A)."""
    rows = []
    for program in programs:
        target = PROGRAMS[program][2]
        for a, b in AA:
            rows.append({"program": program, "label": f"A/A {a} -> {b}",
                         "before": kind(a, 0), "after": kind(b, 0), "target": None})
        for slow in SLOWDOWNS:
            for a, b in SLOWED:
                rows.append({"program": program,
                             "label": f"`{target}` {slow}% slower, {a} -> {b}",
                             "before": kind(a, 0), "after": kind(b, slow), "target": target})
    return rows


def pairs(files, comparison):
    """The (before, after) file pairs of a comparison: each unordered pair once when both sides
    are the same kind of run, else every run of one kind against every run of the other."""
    def of(k):
        return sorted(f["file"] for f in files
                      if f["program"] == comparison["program"] and f["kind"] == k)
    before, after = of(comparison["before"]), of(comparison["after"])
    if comparison["before"] == comparison["after"]:
        return list(itertools.combinations(before, 2))
    return [(x, y) for x in before for y in after]


def judge(prof, work, manifest):
    # prof reads plain JSON: the gzipped profiles are unpacked into a scratch folder first.
    plain = tempfile.mkdtemp(prefix="diff-acceptance-plain-")
    for f in manifest["files"]:
        with gzip.open(os.path.join(work, f["file"]), "rb") as src, \
                open(os.path.join(plain, f["file"][:-3]), "wb") as dst:
            dst.write(src.read())
    table = []
    for c in manifest["comparisons"]:
        ps = pairs(manifest["files"], c)
        counts = [0, 0, 0, 0]
        for x, y in ps:
            d, status = diff(prof, os.path.join(plain, x[:-3]), os.path.join(plain, y[:-3]))
            names = named(d)
            if c["target"] is None:
                counts[0] += bool(names)
                counts[1] += d["iteration"]["verdict"] in ("regressed", "improved")
            else:
                counts[0] += c["target"] in names and all(
                    e["verdict"] == "regressed" for e in d["events"]
                    if e["name"] == c["target"])
                counts[1] += any(name != c["target"] for name in names)
            counts[2] += status == 1
            counts[3] += status == 3
        if c["target"] is None:
            verdicts = (f"{counts[0]} named an event; {counts[1]} called the iteration "
                        f"changed; {counts[2]} exit 1; {counts[3]} exit 3")
        else:
            verdicts = (f"{counts[0]} named it regressed; {counts[1]} named another event; "
                        f"{counts[2]} exit 1; {counts[3]} exit 3")
        table.append(f"| {c['program']} | {c['label']} | {len(ps)} | {verdicts} |")
    return table


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def steadiness(work, manifest):
    """The machine while the runs were made: per program and condition, the spread of the
    median iteration over the runs of the same code, and between quiet runs, the largest
    relative shift of one event's median."""
    lines = []
    for program in sorted({f["program"] for f in manifest["files"]}):
        for condition in CONDITIONS:
            base = [load(os.path.join(work, f["file"])) for f in manifest["files"]
                    if f["program"] == program and f["kind"] == kind(condition, 0)]
            medians = [statistics.median(p["iterations"]["wall_ns"]) for p in base]
            if len(medians) < 2:
                continue
            line = (f"{program} {condition}: median iteration {min(medians) / 1e3:.1f}-"
                    f"{max(medians) / 1e3:.1f} µs over {len(medians)} runs "
                    f"({max(medians) / min(medians) - 1:.1%} apart)")
            if condition == "quiet":
                shift = 0.0
                for a, b in itertools.combinations(base, 2):
                    # Events of a microsecond or more: below that, a few nanoseconds of the
                    # clock's own are a large share.
                    ma = {(e["id"], e["occurrence"]): statistics.median(e["samples_ns"])
                          for e in a["events"] if e["samples_ns"]}
                    for e in b["events"]:
                        k = (e["id"], e["occurrence"])
                        if k in ma and e["samples_ns"] and ma[k] >= 1000:
                            m = statistics.median(e["samples_ns"])
                            if m < 1000:
                                continue
                            shift = max(shift, max(m, ma[k]) / max(min(m, ma[k]), 1) - 1)
                line += f"; largest shift of one event between two quiet runs {shift:.1%}"
            lines.append(line)
    return lines


def record(prof, examples, work, programs, n, seed):
    rng = random.Random(seed)
    todo = plan(programs, n)
    rng.shuffle(todo)
    files = []
    for i, (program, condition, slow, k) in enumerate(todo):
        env_extra, slower, _ = PROGRAMS[program]
        args = slower(slow) if slow else []
        name = f"{program}-{kind(condition, slow)}-{k}.json"
        out = os.path.join(work, name)
        run(os.path.join(examples, program), out, env_extra, args, condition, seed + i)
        with open(out, "rb") as src, gzip.GzipFile(out + ".gz", "wb", mtime=0) as dst:
            dst.write(src.read())
        os.remove(out)
        files.append({"file": name + ".gz", "program": program, "kind": kind(condition, slow),
                      "condition": condition, "slower_percent": slow, "made": i,
                      "command": " ".join(
                          [f"{k}={v}" for k, v in env_extra.items()] +
                          [f"target/release/examples/{program}"] + args)})
        print(f"run {i + 1}/{len(todo)}: {name}", file=sys.stderr)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    return {
        "about": "Real runs of the examples for prof diff's tests; made by "
                 "scripts/diff_acceptance.py (its docstring says how). Each file is a "
                 "prof.json, gzipped; `command` is how it was run (release build, PROF_OUT "
                 "set to the file), `condition` what loaded the machine meanwhile.",
        "recorded": {
            "command": f"scripts/diff_acceptance.py --runs {n} --seed {seed} "
                       f"--programs {','.join(programs)} --keep DIR",
            "date": datetime.date.today().isoformat(),
            "commit": commit,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
                       f"{platform.release()}",
        },
        "conditions": CONDITIONS,
        "files": files,
        "comparisons": comparisons(programs),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--programs", default="waits,dlrm")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="keep the profiles and manifest.json in this folder")
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
    work = os.path.abspath(args.keep or tempfile.mkdtemp(prefix="diff-acceptance-"))
    os.makedirs(work, exist_ok=True)
    manifest_path = os.path.join(work, "manifest.json")
    if args.reuse:
        with open(manifest_path) as f:
            manifest = json.load(f)
    else:
        manifest = record(prof, examples, work, programs, args.runs, args.seed)
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
    print("| program | comparison | pairs | verdicts |")
    print("|---|---|---:|---|")
    for row in judge(prof, work, manifest):
        print(row, flush=True)
    print()
    for line in steadiness(work, manifest):
        print(line)


if __name__ == "__main__":
    main()
