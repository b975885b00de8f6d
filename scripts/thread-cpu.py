#!/usr/bin/env python3
"""CPU time of each thread of a dlrm run, as the kernel counts it.

Usage: scripts/thread-cpu.py DLRM ITERS [MODE]   (MODE: PROF_MODE, default continuous)

Runs the example in a scratch directory and samples /proc/PID/task/TID/stat every 50 ms until
it exits; prints the example's last line, the elapsed time, each thread's user + system CPU
time at its last sample (a thread that ended between two samples loses at most 50 ms; threads
that came and went unseen are missing) and the size of the prof.json left. Linux only.
"""
import os
import subprocess
import sys
import tempfile
import time


def main():
    exe, iters = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "continuous"
    env = dict(os.environ, PROF_MODE=mode)
    tick = os.sysconf("SC_CLK_TCK")
    work = tempfile.mkdtemp()
    start = time.time()
    child = subprocess.Popen([os.path.realpath(exe), "--iters", iters], cwd=work, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    last = {}
    while child.poll() is None:
        try:
            tids = os.listdir(f"/proc/{child.pid}/task")
        except OSError:
            tids = []
        for tid in tids:
            try:
                with open(f"/proc/{child.pid}/task/{tid}/comm") as f:
                    comm = f.read().strip()
                with open(f"/proc/{child.pid}/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            last[(tid, comm)] = (int(fields[11]) + int(fields[12])) / tick
        time.sleep(0.05)
    lines = child.stdout.read().decode().strip().splitlines()
    print(lines[-1] if lines else "(no output)")
    print("elapsed %.2f s" % (time.time() - start))
    for (_, comm), cpu in sorted(last.items()):
        print(f"  {comm:20} {cpu:7.2f} s CPU")
    out = os.path.join(work, "prof.json")
    print("prof.json", os.path.getsize(out) if os.path.exists(out) else 0, "bytes")


if __name__ == "__main__":
    main()
