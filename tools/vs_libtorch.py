#!/usr/bin/python3
"""Ember against LibTorch, trained side by side: each workload runs Ember and LibTorch alternately
(A B A B ..., `pairs` pairs) so both see the same machine; prints every pair's ratio and the medians.

    cmake -S . -B build-vs -DEMBER_BENCH_LIBTORCH=ON && cmake --build build-vs --target vs_ember_train vs_torch_train
    /usr/bin/python3 tools/vs_libtorch.py build-vs/bench/vs_libtorch [pairs=5] [threads=2]

LibTorch runs in its best configuration (docs/benchmarks.md): SkylakeX OpenBLAS kernels with one
OpenBLAS thread, raised glibc malloc thresholds, denormals flushed, torch::set_num_threads(threads).
Ember runs as installed (no OPENBLAS_* variables).
"""
import json
import os
import statistics
import subprocess
import sys

bindir = sys.argv[1]
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
threads = sys.argv[3] if len(sys.argv) > 3 else "2"
torch_env = {**os.environ, "OPENBLAS_CORETYPE": "SkylakeX", "OPENBLAS_NUM_THREADS": "1",
             "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824"}
ember_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
workloads = [
    ("MLP 784-256-128-10, batch 64, SGD momentum", ["--model", "mlp", "--batch", "64", "--optimizer", "sgd"]),
    ("MLP, batch 256, SGD momentum", ["--model", "mlp", "--batch", "256", "--optimizer", "sgd"]),
    ("CNN, batch 64, Adam", ["--model", "cnn", "--batch", "64", "--optimizer", "adam", "--steps", "40", "--warmup", "5"]),
    ("tiny MLP 10-10-10, batch 1 (µs/step)", ["--model", "tiny", "--steps", "20000", "--warmup", "1000"]),
]


def run(binary, args, env):
    out = subprocess.run([os.path.join(bindir, binary), *args, "--threads", threads], env=env, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


for title, args in workloads:
    ratios, first, rss = [], [], []
    for i in range(pairs):
        e = run("vs_ember_train", args, ember_env)
        t = run("vs_torch_train", args, torch_env)
        tiny = "tiny" in args
        ratio = t["us_per_step_median"] / e["us_per_step_median"] if tiny else e["samples_per_sec"] / t["samples_per_sec"]
        ratios.append(ratio)
        first.append((e["first_step_seconds"], t["first_step_seconds"]))
        rss.append((e["peak_rss_mib"], t["peak_rss_mib"]))
        what = (f"{e['us_per_step_median']:.1f} vs {t['us_per_step_median']:.1f} µs/step" if tiny
                else f"{e['samples_per_sec']:.0f} vs {t['samples_per_sec']:.0f} samples/s")
        print(f"{title} pair {i + 1}: Ember {what} -> {ratio:.2f}x", flush=True)
    print(f"== {title}: median Ember/LibTorch speed {statistics.median(ratios):.2f}x; first step done after "
          f"{statistics.median(f[0] for f in first):.3f} s vs {statistics.median(f[1] for f in first):.3f} s; peak RSS "
          f"{statistics.median(r[0] for r in rss):.0f} vs {statistics.median(r[1] for r in rss):.0f} MiB", flush=True)
