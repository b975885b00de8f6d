"""Load generators for the live experiments (scripts/gate_acceptance.py,
scripts/record_ab_corpus.py): what runs beside the program while it is measured.

Each load is a set of processes started in a session of their own, so that stopping the load
kills its whole process group (a `cargo build` loop takes its `rustc`s with it). `Load` is a
context manager, and `stop_all()` stops every load still running: the scripts call it on exit,
Ctrl-C (SIGINT) and SIGTERM, so that no hog outlives the experiment.

The loads:

- `quiet`: nothing added (on a shared machine, whatever the neighbours do);
- `hog`: one CPU hog (`nice -n 0 python3 -c 'while True: pass'`) pinned with `taskset` to the
  last core, the sibling of the core the program mostly runs on (unpinned where taskset is
  missing);
- `switching`: two CPU hogs, both busy for 2.5 s then idle for 2.5 s, in step with the wall
  clock (so that a run of a few seconds sees the load switch on and off within it);
- `compile`: a `nice`d `cargo build --release --offline` of a copy of a small registry crate
  (`memchr`, else another crate found in ~/.cargo/registry/src; the copy without its optional
  and dev-dependencies, so that it builds offline), with its own target folder, in a loop (the
  crate's `src/lib.rs` touched between builds, so that each build compiles it again).
"""

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

LOADS = {
    "quiet": "nothing added",
    "hog": "one CPU hog (`nice -n 0 python3 -c 'while True: pass'`) pinned with taskset to the "
           "last core",
    "switching": "two CPU hogs, busy 2.5 s then idle 2.5 s, in step with the wall clock",
    "compile": "a `nice`d `cargo build --release` of a copy of a small registry crate (memchr), "
               "its own target folder, in a loop",
}

# Busy while the wall clock's 2.5 s slot is even, idle while it is odd: every hog started with
# it switches at the same moments.
SWITCHING_HOG = """
import time
PERIOD = 2.5
while True:
    now = time.time()
    slot = int(now // PERIOD)
    end = (slot + 1) * PERIOD
    if slot % 2 == 0:
        while time.time() < end:
            pass
    else:
        time.sleep(max(0.0, end - time.time()))
"""

# Small crates without dependencies, in order of preference: what `compile` builds a copy of.
COMPILE_CRATES = ["memchr", "itoa", "ryu", "smallvec", "either", "bitflags"]

_running = []


def _spawn(argv):
    """Starts `argv` in a session of its own (its process group is the load's to kill)."""
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _pinned(argv, core):
    if shutil.which("taskset"):
        return ["taskset", "-c", str(core)] + argv
    return argv


def _crate_copy():
    """A copy of a small registry crate in a scratch folder, or None when none is found."""
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    for name in COMPILE_CRATES:
        found = sorted(glob.glob(os.path.join(home, "registry", "src", "*", f"{name}-[0-9]*")))
        for src in reversed(found):
            if os.path.isfile(os.path.join(src, "Cargo.toml")):
                dst = os.path.join(tempfile.mkdtemp(prefix="acceptance-compile-"),
                                   os.path.basename(src))
                shutil.copytree(src, dst)
                _standalone(os.path.join(dst, "Cargo.toml"))
                return dst
    return None


def _standalone(manifest):
    """Drops the copy's dependency and feature tables (only optional dependencies and
    dev-dependencies, for these crates): resolving them would need the registry's index, which an
    offline build may lack. What remains builds on its own, offline."""
    kept, skipping = [], False
    with open(manifest) as f:
        for line in f:
            header = line.strip()
            if header.startswith("["):
                skipping = "dependencies" in header or header == "[features]"
            if not skipping:
                kept.append(line)
    with open(manifest, "w") as f:
        f.writelines(kept)


class Load:
    """One load, started on entering and stopped (process groups killed) on leaving."""

    def __init__(self, name):
        if name not in LOADS:
            raise ValueError(f"unknown load {name}: choose from {', '.join(LOADS)}")
        self.name = name
        self.procs = []
        self.scratch = None

    def start(self):
        cores = os.cpu_count() or 2
        py = sys.executable or "python3"
        if self.name == "hog":
            self.procs.append(_spawn(_pinned(["nice", "-n", "0", py, "-c", "while True: pass"],
                                             cores - 1)))
        elif self.name == "switching":
            self.procs += [_spawn(["nice", "-n", "0", py, "-c", SWITCHING_HOG]) for _ in range(2)]
        elif self.name == "compile":
            crate = _crate_copy()
            if crate is None:
                raise RuntimeError("load compile: no small crate found in ~/.cargo/registry/src "
                                   f"(looked for {', '.join(COMPILE_CRATES)})")
            self.scratch = os.path.dirname(crate)
            target = os.path.join(self.scratch, "target")
            loop = (f"cd '{crate}' && while true; do "
                    f"nice cargo build --release --offline -q --target-dir '{target}' "
                    f">/dev/null 2>&1; touch src/lib.rs; sleep 0.1; done")
            self.procs.append(_spawn(["bash", "-c", loop]))
        if self.procs:
            _running.append(self)
            # Let the load get going before the first measured run.
            time.sleep(0.3)
        return self

    def stop(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        self.procs = []
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
        if self in _running:
            _running.remove(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def stop_all():
    """Stops every load still running."""
    for load in list(_running):
        load.stop()


def install_cleanup(also=None):
    """Stops the loads (and calls `also`, e.g. to kill the runs in flight) on SIGTERM and SIGHUP;
    Ctrl-C raises KeyboardInterrupt, which the scripts' `finally` handles, even where the script
    was started with SIGINT ignored (a background job of a shell script): the loads never outlive
    the script."""
    def handler(signum, _frame):
        if also:
            also()
        stop_all()
        sys.exit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
