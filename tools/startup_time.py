#!/usr/bin/env python3
"""Start-up time of ember-train, measured from exec: process start to its first training step.

The parent takes the clock just before spawning ember-train (EMBER_LOG_LEVEL=debug) and again when the
child's "first training step" log line arrives on the pipe, then kills the child. Also reports the child's
peak RSS (VmHWM) at that moment. Runs alternate between the given binaries, so that a busy machine
affects them alike; prints the median and the spread per binary.

  tools/startup_time.py --runs 7 build/apps/ember-train [other/ember-train ...] -- --config configs/fashion_mlp.yaml
The child is killed at that point (no checkpoint is written); --out is a fresh temporary directory.
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def one_run(binary, args, marker):
    out = tempfile.mkdtemp(prefix="ember_startup_")
    env = dict(os.environ, EMBER_LOG_LEVEL="debug")
    started = time.perf_counter()
    child = subprocess.Popen([binary, *args, "--out", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=env, text=True)
    elapsed = None
    hwm = None
    for line in child.stderr:
        if marker in line:
            elapsed = time.perf_counter() - started
            with open(f"/proc/{child.pid}/status") as status:
                hwm = next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) / 1024
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    shutil.rmtree(out, ignore_errors=True)
    if elapsed is None:
        sys.exit(f"{binary} ended without logging its first training step")
    return elapsed, hwm


def main():
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--marker", default="first training step",
                        help="the log line that ends the timing (builds before this tool: 'training on', "
                             "logged just before the first batch is fetched)")
    parser.add_argument("binaries", nargs="+")
    opts = parser.parse_args(argv[:split])
    args = argv[split + 1:]
    times = {b: [] for b in opts.binaries}
    hwms = {b: [] for b in opts.binaries}
    for _ in range(opts.runs):
        for b in opts.binaries:
            t, h = one_run(b, args, opts.marker)
            times[b].append(t)
            hwms[b].append(h)
    for b in opts.binaries:
        t = times[b]
        print(f"{b}: exec to first step {statistics.median(t) * 1000:.0f} ms median "
              f"({min(t) * 1000:.0f}-{max(t) * 1000:.0f} ms, {len(t)} runs); VmHWM then {statistics.median(hwms[b]):.0f} MiB")


if __name__ == "__main__":
    main()
