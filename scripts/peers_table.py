#!/usr/bin/env python3
"""docs/overhead.md's "Against the peers" table from one or more runs of the peers bench.

Usage: scripts/peers_table.py RUN.txt [RUN.txt ...]

Each file is the output of `cargo bench -p profiler-peers --bench peers` (divan's table). For each
case the table gives the median of the runs' medians, their range, and the ratios to the raw
clock pair and to puffin, each computed within a run (ratios within one run are steadier than
absolute numbers on a shared machine) and then the median taken over the runs.
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

UNITS = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
ROW = re.compile(r"^[├╰]─ (\S+)\s+(.*)$")
TIME = re.compile(r"^([0-9.]+)\s*(ps|ns|µs|us|ms|s)$")


def parse_run(path):
    """Median nanoseconds of each case in one divan output: {case: ns}, in output order."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"{path}: cannot read it ({e}); pass the saved output of the peers bench")
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
    return f"{ns:.3g}" if ns < 10 else f"{ns:.1f}"


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


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    print(table([parse_run(p) for p in argv[1:]]))


if __name__ == "__main__":
    main(sys.argv)
