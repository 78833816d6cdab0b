#!/usr/bin/python3
"""Ember vs LibTorch on the Fashion-MNIST CNN's two convolutions, run alternately (A B A B ...) so that
both see the same machine load; prints each pair's ratio (Ember GFLOP/s / LibTorch GFLOP/s) and the
medians. LibTorch runs in its best configuration for this CPU (docs/benchmarks.md): the OpenBLAS kernel family that
matches the CPU's flags (SkylakeX with AVX-512, Haswell with AVX2: tools/vs_libtorch.py's choice, never a
hard-coded one), malloc tunables; Ember as installed.

    /usr/bin/python3 tools/compare_conv_vs_libtorch.py build/bench/bench_nn [pairs=5] [threads=2]
"""
import os
import re
import statistics
import subprocess
import sys

bench, pairs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
threads = sys.argv[3] if len(sys.argv) > 3 else "2"
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from vs_libtorch import cpu_info, openblas_family  # noqa: E402 (one choice of kernel family for every tool)

cpu, flags = cpu_info()
family = openblas_family(flags)
torch_env = {**os.environ, "OPENBLAS_NUM_THREADS": "1",
             "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824"}
if family:
    torch_env["OPENBLAS_CORETYPE"] = family  # else OpenBLAS's own detection
print(f"CPU: {cpu}; LibTorch's OpenBLAS kernels: {family or 'auto-detected'}", flush=True)
ember_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}  # as installed elsewhere
ember_env["EMBER_NUM_THREADS"] = threads
names = ["conv1 fwd", "conv2 fwd", "conv1 fwd+bwd", "conv2 fwd+bwd"]
ratios = {n: [] for n in names}
for i in range(pairs):
    out = subprocess.run([bench, "--benchmark_filter=Conv", "--benchmark_min_time=0.5"], env=ember_env,
                         capture_output=True, text=True, check=True).stdout
    scale = {"": 1e-9, "k": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}  # Google Benchmark's SI suffixes → GFLOP/s
    ember = [float(v) * scale[u] for v, u in re.findall(r"GFLOP/s=([\d.]+)([kMGT]?)/s", out)]
    out = subprocess.run(["/usr/bin/python3", os.path.join(here, "bench_torch_nn.py"), threads], env=torch_env,
                         capture_output=True, text=True, check=True).stdout
    fwd = [float(x) for x in re.findall(r"forward ([\d.]+) GFLOP/s", out)]
    fb = [float(x) for x in re.findall(r"forward\+backward ([\d.]+) GFLOP/s", out)]
    torch = fwd + fb
    line = []
    for n, e, t in zip(names, ember, torch):
        ratios[n].append(e / t)
        line.append(f"{n}: {e:.0f}/{t:.0f}={e / t:.2f}")
    print(f"pair {i + 1}: " + ", ".join(line), flush=True)
for n in names:
    print(f"median {n}: {statistics.median(ratios[n]):.2f}")
