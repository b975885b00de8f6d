#!/usr/bin/env python3
"""Records the noisy sets of tests/data/ab-corpus (issue 42): real runs of the `dlrm` and `mlp`
examples (release builds) made in `prof ab`'s round order while the machine's load changes,
gzipped, with `rounds.json` saying how each file was made and which run pairs with which.

Sets (`--sets`):

- `alternate`: the machine alternates between two states from run to run: every other run (the
  odd ones, counted over the whole set) has a CPU hog pinned to the sibling core
  (scripts/acceptance_loads.py `hog`), the others nothing added. Kinds `base` (A/A: the program
  on both sides), `slow10` and `slow5` (the `after` side's layer 10% and 5% slower: dlrm
  `--slow top_mlp --slow-by P`, mlp `--slow dense3 --slow-by P`), `--rounds` rounds each. A
  round is one run of each side, in an order drawn from the seed, as `prof ab` does: files
  `PROGRAM-alternate-KIND-before-K.json.gz` and `...-after-K.json.gz` are round K's pair, made
  one after the other.
- `switching`: the same kinds and rounds under two CPU hogs switching on and off every 2.5 s
  (`switching`), for the whole set: the load changes within a run.
- `rank3x`, `rank10`: a 2-rank job (`RANK=0` and `RANK=1` at once, as profiler-core reads the
  rank), one rank (drawn at random, see `slowed_rank`) with the layer 3x slower (`--slow-by
  200`; waits-style factor 3.0) or 10% slower, under the switching hogs; `--jobs` jobs each:
  `PROGRAM-switching-rank3x-rR-K.json.gz` is rank R of job K.

Each run gets `PROF_AB_PAD` of a random length (0 to 4,095 bytes), as under `prof ab`.

Usage: scripts/record_ab_corpus.py [--programs dlrm,mlp] [--sets alternate,switching,rank3x,rank10]
                                   [--rounds 5] [--jobs 5] [--seed 42] [--out tests/data/ab-corpus]
                                   [--no-build]
"""

import argparse
import datetime
import gzip
import json
import os
import platform
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import acceptance_loads as loads  # noqa: E402
import gate_acceptance as gate  # noqa: E402

ROOT = gate.ROOT
SETS = ["alternate", "switching", "rank3x", "rank10"]
KINDS = {"base": 0, "slow10": 10, "slow5": 5}


def gzip_to(src, dst):
    with open(src, "rb") as f, gzip.GzipFile(dst, "wb", mtime=0) as g:
        g.write(f.read())
    os.remove(src)


class Recorder:
    def __init__(self, args, examples):
        self.args = args
        self.examples = examples
        self.rng = random.Random(args.seed)
        self.files = []

    def start(self, program, argv_extra, out, env_extra):
        env_extra = dict(gate.PROGRAMS[program][0], **env_extra)
        pad = self.rng.randrange(4096)
        env_extra["PROF_AB_PAD"] = "x" * pad
        argv = [os.path.join(self.examples, program)] + argv_extra
        command = " ".join([f"{k}={v}" for k, v in env_extra.items() if k != "PROF_AB_PAD"] +
                           [f"target/release/examples/{program}"] + argv_extra)
        return gate.run_program(argv, out, env_extra), argv, {"command": command, "pad": pad}

    def finish(self, started, out, entry):
        p, argv, info = started
        gate.wait_program(p, argv)
        gzip_to(out, out + ".gz")
        entry.update(info, file=os.path.basename(out) + ".gz", made=len(self.files),
                     size=os.path.getsize(out + ".gz"))
        self.files.append(entry)
        print(f"{entry['file']} ({entry['size'] // 1024} KiB)", file=sys.stderr, flush=True)

    def rounds(self, program, condition):
        slower = gate.PROGRAMS[program][1]
        made = 0
        for kind, percent in KINDS.items():
            for k in range(self.args.rounds):
                sides = [("before", []), ("after", slower(percent) if percent else [])]
                self.rng.shuffle(sides)
                for side, extra in sides:
                    out = os.path.join(self.args.out, f"{program}-{condition}-{kind}-{side}-{k}.json")
                    hog = condition == "alternate" and made % 2 == 1
                    with loads.Load("hog" if hog else "quiet"):
                        started = self.start(program, extra, out, {})
                        self.finish(started, out, {
                            "program": program, "set": condition, "condition": condition,
                            "kind": kind, "side": side, "round": k,
                            "slower_percent": percent if side == "after" else 0,
                            "hog": hog if condition == "alternate" else None})
                    made += 1

    def ranks(self, program, kind):
        slower = gate.PROGRAMS[program][1]
        percent = {"rank3x": 200, "rank10": 10}[kind]
        for k in range(self.args.jobs):
            slowed = self.rng.randrange(2)
            started = []
            for rank in range(2):
                out = os.path.join(self.args.out, f"{program}-switching-{kind}-r{rank}-{k}.json")
                extra = slower(percent) if rank == slowed else []
                started.append((self.start(program, extra, out, {"RANK": str(rank)}), out, rank))
            for s, out, rank in started:
                self.finish(s, out, {
                    "program": program, "set": kind, "condition": "switching", "kind": kind,
                    "rank": rank, "round": k, "slowed_rank": slowed,
                    "slower_percent": percent if rank == slowed else 0})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", default="dlrm,mlp")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "ab-corpus"))
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args()
    programs = gate.split(args.programs, ["dlrm", "mlp"], "program")
    sets = gate.split(args.sets, SETS, "set")
    if not args.no_build:
        gate.build()
    examples = os.path.join(ROOT, "target", "release", "examples")
    os.makedirs(args.out, exist_ok=True)
    loads.install_cleanup(also=gate.kill_children)
    recorder = Recorder(args, examples)
    load_before = os.getloadavg()[0]
    try:
        for program in programs:
            for s in sets:
                if s == "alternate":
                    recorder.rounds(program, "alternate")
                else:
                    with loads.Load("switching"):
                        if s == "switching":
                            recorder.rounds(program, "switching")
                        else:
                            recorder.ranks(program, s)
    finally:
        gate.kill_children()
        loads.stop_all()

    manifest_path = os.path.join(args.out, "rounds.json")
    manifest = {"about": "How each file of the noisy sets was made (scripts/record_ab_corpus.py; "
                         "tests/data/ab-corpus/README.md). Pairs: before-K and after-K of one "
                         "set, program and kind are round K; rN-K are the ranks of job K.",
                "recordings": [], "files": []}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    manifest["recordings"].append({
        "command": f"scripts/record_ab_corpus.py --programs {','.join(programs)} --sets "
                   f"{','.join(sets)} --rounds {args.rounds} --jobs {args.jobs} --seed {args.seed}",
        "date": datetime.datetime.now().isoformat(timespec="minutes"),
        "commit": commit,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
                   f"{platform.release()}, shared with other work",
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "loads": {k: loads.LOADS[k] for k in ("hog", "switching")},
    })
    names = {f["file"] for f in recorder.files}
    manifest["files"] = [f for f in manifest["files"] if f["file"] not in names] + recorder.files
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
