#!/usr/bin/env python3
"""docs/overhead.md's "Against the peers" tables from one or more runs of the peers bench.

Usage: scripts/peers_table.py RUN.txt [RUN.txt ...]

Each file is the output of `cargo bench -p profiler-peers --bench peers` (divan's table), after
an optional first line `# run N/RUNS, DATE, commit C, load L` (scripts/peers.sh writes it). For
each case the first table gives the median of the runs' medians, their range, and the ratios to
the raw clock pair and to puffin, each computed within a run (ratios within one run are steadier
than absolute numbers on a shared machine) and then the median taken over the runs. The second
gives each run on its own: when, at which commit and under which load it ran, its raw clock
pair, armed, `trace` and unarmed medians with their ratios (to the pair; the unarmed probe's to
the body alone), and how many runs kept the armed probe within ARMED_LIMIT times the pair, so
that a regression of one path shows even where the medians of the runs hide it.
"""

import re
import statistics
import sys

# Row labels, in the bench's order; a case not listed keeps its bench name.
LABELS = {
    "a_bare_call": "the body alone (a non-inlined call)",
    "b_profiling_no_backend": "`profiling::scope!`, no backend feature (expands to nothing)",
    "c_instant_pair": "`Instant::now()` pair",
    "d_quanta_raw_pair": "raw clock pair (`quanta`, TSC: profiler-core's clock)",
    "e_core_unarmed": "**profiler-core, unarmed probe** (`sample` mode)",
    "f_core_armed_sample": "**profiler-core, armed probe** (`sample` mode)",
    "g_core_trace": "**profiler-core, `trace` mode** (every call recorded)",
    "h_tracy_ondemand_no_client": "tracy-client `span!`, `ondemand`, no client",
    "i_puffin_scope": "puffin `profile_scope!`, scopes on (nested)",
    "j_tracing_registry_span": "tracing span entered and exited, `registry()`",
}
RAW_PAIR = "d_quanta_raw_pair"
PUFFIN = "i_puffin_scope"
BARE = "a_bare_call"
ARMED = "f_core_armed_sample"
TRACE = "g_core_trace"
UNARMED = "e_core_unarmed"

# The armed probe's bound, as a multiple of the raw clock pair of the same run (issue 43: at most
# 1.2x in at least 4 of 5 runs of `scripts/peers.sh 5`).
ARMED_LIMIT = 1.2

HEADER = re.compile(r"^# run (\S+), (.*), commit (\S+), load (\S+)\s*$")

UNITS = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
ROW = re.compile(r"^[├╰]─ (\S+)\s+(.*)$")
TIME = re.compile(r"^([0-9.]+)\s*(ps|ns|µs|us|ms|s)$")


def read_lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.readlines()
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"{path}: cannot read it ({e}); pass the saved output of the peers bench")


def parse_meta(path):
    """The run's header line, as scripts/peers.sh writes it: {run, date, commit, load}, with
    "-" for what the file does not say (a run saved without the script)."""
    for line in read_lines(path):
        m = HEADER.match(line.strip())
        if m:
            return dict(zip(("run", "date", "commit", "load"), m.groups()))
    return {"run": "-", "date": "-", "commit": "-", "load": "-"}


def parse_run(path):
    """Median nanoseconds of each case in one divan output: {case: ns}, in output order."""
    lines = read_lines(path)
    medians = {}
    for line in lines:
        m = ROW.match(line.strip())
        if not m:
            continue
        # Columns: fastest │ slowest │ median │ mean │ samples │ iters
        cols = [c.strip() for c in m.group(2).split("│")]
        if len(cols) < 3:
            continue
        t = TIME.match(cols[2])
        if not t:
            sys.exit(f"{path}: cannot read the median of {m.group(1)!r}: {cols[2]!r}")
        medians[m.group(1)] = float(t.group(1)) * UNITS[t.group(2)]
    if not medians:
        sys.exit(
            f"{path}: no divan results in it; pass the output of "
            "`cargo bench -p profiler-peers --bench peers`"
        )
    for needed in (RAW_PAIR, PUFFIN):
        if needed not in medians:
            sys.exit(f"{path}: case {needed} is missing (a filtered run?); the ratios need it")
    return medians


def fmt_ns(ns):
    return f"{ns:#.3g}" if ns < 10 else f"{ns:.1f}"


def fmt_ratio(r):
    return f"{r:.2f}" if r < 10 else f"{r:.1f}"


def table(runs):
    """The Markdown table of several runs' medians."""
    cases = [c for c in runs[0] if all(c in r for r in runs)]
    partial = sorted({c for r in runs for c in r} - set(cases))
    if partial:
        print(f"note: left out, not in every run: {', '.join(partial)}", file=sys.stderr)
    lines = [
        f"| case | median ns ({len(runs)} runs) | range of the runs' medians "
        "| × raw clock pair | × puffin |",
        "|---|---:|---:|---:|---:|",
    ]
    for case in cases:
        values = [r[case] for r in runs]
        to_raw = statistics.median(r[case] / r[RAW_PAIR] for r in runs)
        to_puffin = statistics.median(r[case] / r[PUFFIN] for r in runs)
        spread = f"{fmt_ns(min(values))}–{fmt_ns(max(values))}"
        lines.append(
            f"| {LABELS.get(case, case)} | {fmt_ns(statistics.median(values))} | {spread} "
            f"| {fmt_ratio(to_raw)} | {fmt_ratio(to_puffin)} |"
        )
    return "\n".join(lines)


def cell(run, case, ratio_to=None):
    """`ns` of `case` in one run, with its ratio to case `ratio_to` of the same run; "-" for a
    case the run does not have."""
    if case not in run:
        return "-"
    text = f"{fmt_ns(run[case])} ns"
    if ratio_to is not None and ratio_to in run and run[ratio_to] > 0:
        text += f" ({run[case] / run[ratio_to]:.2f}×)"
    return text


def within(runs, case):
    """How many runs have `case`, and how many of them within ARMED_LIMIT times the raw pair."""
    having = [r for r in runs if case in r]
    inside = [r for r in having if r[case] <= ARMED_LIMIT * r[RAW_PAIR]]
    return len(inside), len(having)


def per_run_table(runs, metas):
    """The Markdown table of each run's own figures, and the count of runs whose armed probe
    stayed within ARMED_LIMIT times their raw clock pair."""
    lines = [
        "| run | date | commit | load (1 min) | raw clock pair | armed probe (× pair) "
        "| `trace` mode (× pair) | unarmed probe (× body alone) |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for run, meta in zip(runs, metas):
        lines.append(
            f"| {meta['run']} | {meta['date']} | {meta['commit']} | {meta['load']} "
            f"| {cell(run, RAW_PAIR)} | {cell(run, ARMED, RAW_PAIR)} "
            f"| {cell(run, TRACE, RAW_PAIR)} | {cell(run, UNARMED, BARE)} |"
        )
    summary = []
    for case, name in ((ARMED, "armed probe"), (TRACE, "`trace` mode")):
        inside, having = within(runs, case)
        if having:
            summary.append(f"{name} within {ARMED_LIMIT}× the raw clock pair in {inside} of "
                           f"{having} runs")
    lines.append("")
    lines.append("; ".join(summary) + "." if summary else "no armed or `trace` case in these runs.")
    return "\n".join(lines)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    paths = argv[1:]
    runs = [parse_run(p) for p in paths]
    print(table(runs))
    print()
    print(per_run_table(runs, [parse_meta(p) for p in paths]))


if __name__ == "__main__":
    main(sys.argv)
