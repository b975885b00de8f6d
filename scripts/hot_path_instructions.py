#!/usr/bin/env python3
"""Instructions per call of the hot path's functions, counted by valgrind's callgrind (which
code layout does not move, unlike times): for each bench binary given, each (case, function)
below is run twice under callgrind with collection only inside the function, 20,000 and 40,000
iterations, and the difference divided by 20,000 is what one call costs.

Usage: scripts/hot_path_instructions.py BENCH [BENCH...]
where BENCH is a build of profiler-core's hot_path bench (`cargo bench -p profiler-core
--features enable --bench hot_path --no-run` prints its path; copy it aside to compare builds).
docs/overhead.md quotes its table for changes that touch the hot path.
"""

import re
import subprocess
import sys

# A function may be given as "a|b": both are counted (they must not call each other), so that
# builds from before and after a path was renamed compare (the armed run of a plain session enters
# through `enter_armed` and ends in `finish_sampled` since issue 43; `enter_slow` and
# `finish_armed` before).
CASES = [
    ("f_armed_probe", "enter_armed|enter_slow", "armed probe: entry"),
    ("f_armed_probe", "finish_sampled|finish_armed", "armed probe: end"),
    ("f_armed_probe", "ProbeGuard*finish|enter_armed|enter_slow", "armed probe: entry and end"),
    ("k_armed_probe_of_repeated_site", "enter_armed|enter_slow", "armed repeated site: entry"),
    ("l_trace_recorded_call", "enter_recorded", "recorded run (trace): entry"),
    ("l_trace_recorded_call", "end_recorded", "recorded run (trace): end"),
    ("i_iteration_not_profiled", "one_iteration", "an iteration of 25 unarmed probes"),
]

# Cases of benches that have them (from the work keys on): skipped for an older build.
OPTIONAL = [
    ("o_unarmed_probe_with_work", "unarmed_plain_site", "unarmed probe, no keys"),
    ("o_unarmed_probe_with_work", "unarmed_work_site", "unarmed probe, `flops` and `bytes` keys"),
    ("p_armed_probe_with_work", "enter_work", "armed probe, `flops`, `bytes`, `shape`: entry"),
    ("p_armed_probe_with_work", "armed_work_site", "armed probe, `flops`, `bytes`, `shape`: the whole call"),
    ("j_iteration_continuous", "one_iteration", "continuous: an iteration of 25 runs, no keys"),
    ("q_iteration_continuous_with_work", "one_iteration_with_work",
     "continuous: an iteration of 25 runs, keys kept"),
]


def count(bench, case, function, size, out):
    toggles = [f"--toggle-collect=*{f}*" for f in function.split("|")]
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *toggles,
                    bench, "--bench", case, "--sample-count", "1", "--sample-size", str(size)],
                   capture_output=True, check=True)
    with open(out) as f:
        m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
    return int(m.group(1))


def main():
    benches = sys.argv[1:]
    if not benches:
        sys.exit(__doc__)
    out = "/tmp/hot-path-instructions.cg"
    print("| what | " + " | ".join(benches) + " |")
    print("|---|" + "---:|" * len(benches))
    for case, function, label in CASES + OPTIONAL:
        cells = []
        for bench in benches:
            try:
                a = count(bench, case, function, 20000, out)
                b = count(bench, case, function, 40000, out)
            except subprocess.CalledProcessError:
                if (case, function, label) in OPTIONAL:
                    cells.append("-")
                    continue
                raise
            # A bench without the case runs nothing: the function is never entered.
            if a == 0 and (case, function, label) in OPTIONAL:
                cells.append("-")
                continue
            cells.append(f"{(b - a) / 20000:.1f}")
        names = ", ".join(f"`{f}`" for f in function.split("|"))
        print(f"| {label} ({names}) | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
