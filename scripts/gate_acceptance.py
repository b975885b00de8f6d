#!/usr/bin/env python3
"""The acceptance harness of `prof ab` (issue 42): how often each way of comparing runs says what
it should, per program and load, as a markdown table for docs/overhead.md.

A live experiment on whatever machine runs it: its counts go into the docs, never into a test's
verdict (`cargo test` judges the recorded corpus, tests/data/ab-corpus, instead).

Programs (release builds of the examples): `dlrm`, `waits` (PROF_REPEAT=30) and `mlp`
(PROF_REPEAT=20). Loads (scripts/acceptance_loads.py), each started before a cell and stopped
(its process group killed) after it, also on Ctrl-C:

- `quiet`: nothing added;
- `switching`: two CPU hogs, busy 2.5 s then idle 2.5 s, in step;
- `compile`: a `nice`d `cargo build` of a copy of a small registry crate, in a loop.

A cell is one program, one load and one kind; it makes N comparisons (`--n`) of that kind:

- `aa`: `prof ab --before CMD --after CMD --dir D --seed S --format json`, the same command on
  both sides, at prof ab's defaults. Counted: exit 0 (what A/A must give), exit 1 (what it must
  never give), exit 3, and comparisons that named an event.
- `slow10`, `slow5`: the same with the `after` command's layer 10% (5%) slower (dlrm: `--slow
  top_mlp --slow-by P`, layer `top_mlp`; waits: `--slow forward=1.10`, layer `attn`; mlp:
  `--slow dense3 --slow-by P`, layer `dense3`). Counted: named alone with exit 1 (every named
  event regressed and of the slowed layer; the iteration, reported apart, may be named too),
  named alone whatever the exit, another event named, exit 0, exit 3.
- `one`: one run a side, `prof diff before.json after.json --format json`: a run as it is
  against a run with the layer 2x slower (named alone or not, another event named), and, from
  the same comparison's second run as it is, an A/A pair of single runs (named anything). Its
  three runs are made in a random order. Two rows: `one` and `one-aa`.
- `merge`: a 2-rank job, both ranks run at once (`RANK=0` and `RANK=1`, as profiler-core reads
  the rank), one rank (drawn at random) with the layer 3x slower; judged by `prof merge r0.json
  r1.json --format json`: named when the events the merge calls `slower` are all of the slowed
  layer, with the slowed rank as their straggler (and there is at least one).

An event is named when its `verdict` is `regressed` or `improved` and, where the row has the
boolean `matters`, `matters` is true. A comparison's wall time is that of the whole comparison:
the `prof ab` command; for `one` its three runs and two `prof diff`s; for `merge` the job and
`prof merge`. Each row shows the counts as "x of N" and the median wall time.

Usage:
  scripts/gate_acceptance.py [--n 20] [--programs dlrm,waits,mlp] [--loads quiet,switching,compile]
                             [--kinds aa,slow10,slow5,one,merge] [--seed 1] [--keep DIR]
                             [--prof PATH] [--no-build] [--ab-arg ARG]...

How long: a `prof ab` comparison is 20 runs. On this project's shared 2-core VM a `waits` run
took about 0.5 s, a `dlrm` run 2-4 s, an `mlp` run 6-10 s: a comparison about 10 s, 40-80 s and
2-3 min. At the default `--n 20`, the three `prof ab` kinds of one load take about 10 min for
waits, 1 h for dlrm and 3 h for mlp (`one` and `merge` add little); run the programs as separate
invocations (`--programs mlp`), each with its own `--keep`.

`--keep DIR` keeps every run's profile, prof's output and `comparisons.jsonl` (one record per
comparison) in DIR. `--ab-arg` passes an argument on to every `prof ab` (e.g.
`--ab-arg=--fail-on-regression` for a `prof` whose exit status needs it). `--no-build` uses the
release builds as they are (otherwise `cargo build --release` of prof and the three examples
first).
"""

import argparse
import datetime
import json
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import acceptance_loads as loads  # noqa: E402
import diff_acceptance as da  # noqa: E402

ROOT = da.ROOT


def _mlp_slower(percent):
    return ["--slow", "dense3", "--slow-by", str(percent)]


# program: (extra env, arguments that make its layer `percent`% slower, that layer's `layer`).
# dlrm and waits as scripts/diff_acceptance.py runs them.
PROGRAMS = {
    "dlrm": (da.PROGRAMS["dlrm"][0], da.PROGRAMS["dlrm"][1], "top_mlp"),
    "waits": (da.PROGRAMS["waits"][0], da.PROGRAMS["waits"][1], "attn"),
    "mlp": ({"PROF_REPEAT": "20"}, _mlp_slower, "dense3"),
}
LOAD_NAMES = ["quiet", "switching", "compile"]
KINDS = ["aa", "slow10", "slow5", "one", "merge"]
# Where profiler-core reads a process's rank (docs/guide.md, "Multi-rank runs").
RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")


def build():
    subprocess.run(["nice", "cargo", "build", "--release", "-q", "-p", "profiler-cli"], cwd=ROOT,
                   check=True)
    subprocess.run(["nice", "cargo", "build", "--release", "-q", "-p", "profiler-suite",
                    "--example", "waits", "--example", "dlrm", "--example", "mlp"], cwd=ROOT,
                   check=True)


def clean_env(extra):
    """The environment of a run: no PROF_* variable or rank from the caller's, then `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PROF_") and k not in RANK_VARS}
    env.update(extra)
    return env


def named(rows):
    """The rows that name their event: verdict regressed or improved, and `matters` true where
    the row has it."""
    return [r for r in rows if r.get("verdict") in ("regressed", "improved")
            and r.get("matters", True) is not False]


def alone(rows, layer):
    """Whether the named rows are all regressions of `layer` (and there is one)."""
    hits = named(rows)
    return bool(hits) and all(r.get("layer") == layer and r["verdict"] == "regressed"
                              for r in hits)


def others(rows, layer):
    return any(r.get("layer") != layer for r in named(rows))


# The commands in flight (prof, the programs): killed when the script is stopped.
_children = set()


def kill_children():
    for p in list(_children):
        p.kill()


def run_json(argv, env=None, log=None):
    """Runs a prof command; (exit status, its JSON or None, seconds)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    _children.add(p)
    try:
        stdout, stderr = p.communicate()
    finally:
        _children.discard(p)
    wall = time.monotonic() - t0
    if log:
        with open(log, "a") as f:
            f.write(f"$ {shlex.join(argv)}\n[exit {p.returncode}, {wall:.1f} s]\n{stderr}\n")
    try:
        out = json.loads(stdout) if stdout.strip() else None
    except json.JSONDecodeError:
        out = None
    if out is None and p.returncode not in (0, 1, 3):
        print(f"warning: `{shlex.join(argv)}` exited {p.returncode}: "
              f"{stderr.strip()[-500:]}", file=sys.stderr)
    return p.returncode, out, wall


def run_program(argv, out, env_extra):
    """One run of an example writing its profile to `out`; its Popen (not waited for)."""
    env = clean_env(env_extra)
    env["PROF_OUT"] = out.replace("%", "%%")
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    _children.add(p)
    return p


def wait_program(p, argv):
    try:
        _, err = p.communicate()
    finally:
        _children.discard(p)
    if p.returncode != 0:
        raise RuntimeError(f"`{shlex.join(argv)}` failed ({p.returncode}): {err.strip()[-500:]}")


class Harness:
    def __init__(self, args, prof, examples, work):
        self.args = args
        self.prof = prof
        self.examples = examples
        self.work = work
        self.records = open(os.path.join(work, "comparisons.jsonl"), "a")

    def exe(self, program):
        return os.path.join(self.examples, program)

    def record(self, rec):
        self.records.write(json.dumps(rec) + "\n")
        self.records.flush()

    def ab(self, program, kind, d, seed):
        env_extra, slower, layer = PROGRAMS[program]
        before = [self.exe(program)]
        after = before + (slower(int(kind[4:])) if kind.startswith("slow") else [])
        argv = [self.prof, "ab", "--before", shlex.join(before), "--after", shlex.join(after),
                "--dir", d, "--seed", str(seed), "--format", "json"] + self.args.ab_arg
        # prof ab passes the PROF_* variables on to the programs.
        status, out, wall = run_json(argv, env=clean_env(env_extra),
                                     log=os.path.join(d, "prof.log"))
        events = (out or {}).get("events", [])
        return {"exit": status, "named": [r.get("name") for r in named(events)],
                "alone": alone(events, layer), "others": others(events, layer),
                "iteration": (out or {}).get("iteration", {}).get("verdict"),
                "wall_s": wall, "ok": out is not None}

    def one(self, program, d, rng):
        env_extra, slower, layer = PROGRAMS[program]
        t0 = time.monotonic()
        runs = {"before": [], "after": slower(100), "again": []}
        order = list(runs)
        rng.shuffle(order)
        for which in order:
            argv = [self.exe(program)] + runs[which]
            wait_program(run_program(argv, os.path.join(d, f"{which}.json"), env_extra), argv)
        log = os.path.join(d, "prof.log")
        s2, o2, _ = run_json([self.prof, "diff", os.path.join(d, "before.json"),
                              os.path.join(d, "after.json"), "--format", "json"], log=log)
        s1, o1, _ = run_json([self.prof, "diff", os.path.join(d, "before.json"),
                              os.path.join(d, "again.json"), "--format", "json"], log=log)
        wall = time.monotonic() - t0
        e2, e1 = (o2 or {}).get("events", []), (o1 or {}).get("events", [])
        return {"exit": s2, "named": [r.get("name") for r in named(e2)],
                "alone": alone(e2, layer), "hit": any(r.get("layer") == layer and
                                                      r["verdict"] == "regressed"
                                                      for r in named(e2)),
                "others": others(e2, layer), "order": order,
                "aa_exit": s1, "aa_named": [r.get("name") for r in named(e1)],
                "wall_s": wall, "ok": o1 is not None and o2 is not None}

    def merge(self, program, d, rng):
        env_extra, slower, layer = PROGRAMS[program]
        slowed = rng.randrange(2)
        t0 = time.monotonic()
        procs = []
        for rank in range(2):
            argv = [self.exe(program)] + (slower(200) if rank == slowed else [])
            procs.append((run_program(argv, os.path.join(d, f"r{rank}.json"),
                                      dict(env_extra, RANK=str(rank))), argv))
        for p, argv in procs:
            wait_program(p, argv)
        status, out, _ = run_json([self.prof, "merge", os.path.join(d, "r0.json"),
                                   os.path.join(d, "r1.json"), "--format", "json"],
                                  log=os.path.join(d, "prof.log"))
        wall = time.monotonic() - t0
        slower_rows = [e for e in (out or {}).get("events", [])
                       if e.get("straggler_verdict") == "slower"]
        hit = bool(slower_rows) and all(e.get("layer") == layer and e.get("straggler") == slowed
                                        for e in slower_rows)
        return {"exit": status, "slowed_rank": slowed,
                "named": [[e.get("name"), e.get("straggler")] for e in slower_rows],
                "alone": hit, "others": any(e.get("layer") != layer for e in slower_rows),
                "iteration_straggler": (out or {}).get("straggler"),
                "wall_s": wall, "ok": out is not None}

    def cell(self, program, load, kind):
        n = self.args.n
        rng = random.Random(f"{self.args.seed}-{program}-{load}-{kind}")
        results = []
        with loads.Load(load):
            for i in range(n):
                d = os.path.join(self.work, program, load, kind, str(i))
                os.makedirs(d, exist_ok=True)
                seed = self.args.seed + i
                if kind in ("aa", "slow10", "slow5"):
                    r = self.ab(program, kind, d, seed)
                elif kind == "one":
                    r = self.one(program, d, rng)
                else:
                    r = self.merge(program, d, rng)
                r.update(program=program, load=load, kind=kind, i=i, seed=seed, dir=d)
                self.record(r)
                if not self.args.keep:
                    # A prof ab comparison leaves 20 profiles: a full table's would fill a disk.
                    shutil.rmtree(d, ignore_errors=True)
                results.append(r)
                print(f"{program} {load} {kind} {i + 1}/{n}: exit {r['exit']}, named "
                      f"{r['named']} ({r['wall_s']:.0f} s)", file=sys.stderr, flush=True)
        return results


def of(count, n):
    return f"{count} of {n}"


def rows_of(program, load, kind, results):
    """The table's rows of one cell: (program, load, comparison, result, median wall)."""
    n = len(results)
    wall = f"{statistics.median(r['wall_s'] for r in results):.0f} s"
    failed = sum(not r["ok"] for r in results)
    tail = f"; {failed} gave no JSON" if failed else ""
    layer = PROGRAMS[program][2]
    exits = {s: sum(r["exit"] == s for r in results) for s in (0, 1, 3)}
    if kind == "aa":
        text = (f"exit 0: {of(exits[0], n)}; exit 1: {of(exits[1], n)}; exit 3: "
                f"{of(exits[3], n)}; named an event: {of(sum(bool(r['named']) for r in results), n)}")
        return [(program, load, "A/A (`prof ab`)", text + tail, wall)]
    if kind.startswith("slow"):
        alone_1 = sum(r["alone"] and r["exit"] == 1 for r in results)
        text = (f"named alone, exit 1: {of(alone_1, n)}; named alone: "
                f"{of(sum(r['alone'] for r in results), n)}; another event named: "
                f"{of(sum(r['others'] for r in results), n)}; exit 0: {of(exits[0], n)}; "
                f"exit 3: {of(exits[3], n)}")
        return [(program, load, f"`{layer}` {kind[4:]}% slower (`prof ab`)", text + tail, wall)]
    if kind == "one":
        text = (f"named alone: {of(sum(r['alone'] for r in results), n)}; named: "
                f"{of(sum(r['hit'] for r in results), n)}; another event named: "
                f"{of(sum(r['others'] for r in results), n)}")
        aa = f"named an event: {of(sum(bool(r['aa_named']) for r in results), n)}"
        return [(program, load, f"`{layer}` 2x slower, one run a side (`prof diff`)",
                 text + tail, wall),
                (program, load, "A/A, one run a side (`prof diff`)", aa + tail, wall)]
    text = (f"named that layer on that rank: {of(sum(r['alone'] for r in results), n)}; "
            f"another event slower: {of(sum(r['others'] for r in results), n)}; iteration's "
            f"straggler the slowed rank: "
            f"{of(sum(r['iteration_straggler'] == r['slowed_rank'] for r in results), n)}")
    return [(program, load, f"2 ranks, `{layer}` 3x slower on one (`prof merge`)", text + tail,
             wall)]


def split(value, allowed, what):
    chosen = [v for v in value.split(",") if v]
    for v in chosen:
        if v not in allowed:
            sys.exit(f"unknown {what} {v}: choose from {', '.join(allowed)}")
    return chosen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20, help="comparisons per cell (default 20)")
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--loads", default=",".join(LOAD_NAMES))
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="keep the profiles, prof's output and comparisons.jsonl here")
    ap.add_argument("--prof", help="this prof binary instead of target/release/prof")
    ap.add_argument("--no-build", action="store_true", help="use the release builds as they are")
    ap.add_argument("--ab-arg", action="append", default=[],
                    help="an argument passed on to every prof ab (repeatable)")
    args = ap.parse_args()
    if args.n < 1:
        sys.exit("--n must be at least 1")
    programs = split(args.programs, PROGRAMS, "program")
    load_names = split(args.loads, loads.LOADS, "load")
    kinds = split(args.kinds, KINDS, "kind")

    if not args.no_build:
        build()
    release = os.path.join(ROOT, "target", "release")
    prof = os.path.abspath(args.prof) if args.prof else os.path.join(release, "prof")
    examples = os.path.join(release, "examples")
    for exe in [prof] + [os.path.join(examples, p) for p in programs]:
        if not os.access(exe, os.X_OK):
            sys.exit(f"{exe} is missing: build it (or drop --no-build)")
    work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="gate-acceptance-")
    os.makedirs(work, exist_ok=True)

    loads.install_cleanup(also=kill_children)
    harness = Harness(args, prof, examples, work)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    rows = []
    try:
        for program in programs:
            for load in load_names:
                for kind in kinds:
                    results = harness.cell(program, load, kind)
                    rows += rows_of(program, load, kind, results)
    except KeyboardInterrupt:
        print("interrupted: the table of the cells done so far", file=sys.stderr)
    finally:
        kill_children()
        loads.stop_all()
        harness.records.close()

    print(f"<!-- scripts/gate_acceptance.py --n {args.n} --programs {','.join(programs)} "
          f"--loads {','.join(load_names)} --kinds {','.join(kinds)} --seed {args.seed}; "
          f"{started}; {platform.machine()}, {os.cpu_count()} cores, load average at the end "
          f"{os.getloadavg()[0]:.1f} -->")
    print("| program | load | comparison | result | median wall |")
    print("|---|---|---|---|---:|")
    for program, load, label, text, wall in rows:
        print(f"| {program} | {load} | {label} | {text} | {wall} |")
    if args.keep:
        print(f"profiles and comparisons.jsonl kept in {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
