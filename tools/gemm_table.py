#!/usr/bin/python3
"""SGEMM at the Fashion-MNIST MLP's shapes, per library (bench/bench_gemm.cpp), as tables for docs/benchmarks.md.

    cmake --build build --target bench_gemm
    /usr/bin/python3 tools/gemm_table.py build/bench/bench_gemm [--rounds 3] [--threads 1,2] [--isa native|avx2]

Runs bench_gemm once per library and thread count, in `--rounds` alternating rounds (so all see the same
machine), and prints per batch size: GFLOP/s per GEMM and library (the median over rounds; the fastest
marked), the rate of one training step's GEMMs issued back to back by one library, and the "SGEMM rate at
the MLP's shapes": the FLOPs of one step's GEMMs over the sum of the fastest library's time for each.
OpenBLAS runs once per kernel family (OPENBLAS_CORETYPE is read when it loads): Haswell (AVX2) and, on an
AVX-512 CPU, SkylakeX (what Ember picks there). --isa avx2 limits every library to AVX2 (OPENBLAS_CORETYPE=
Haswell, ONEDNN_MAX_CPU_ISA=AVX2, LIBXSMM_TARGET=hsw, BLIS's zen3 kernels): an emulation of an AVX2-only CPU
on this one. BLIS also runs with its own kernel choice and, on AVX-512, its skx kernels; the column names
say which kernels ran (oneDNN and libxsmm pick the best ISA the CPU or the limit allows).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--isa", choices=["native", "avx2"], default="native")
    ap.add_argument("--batch", default="64,256")
    ap.add_argument("--ms", default="30", help="time per measurement batch inside bench_gemm (ms)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="time to report: wall-clock, or (1 thread only) the process's CPU time, which leaves out "
                         "other processes' time slices on a shared machine")
    ap.add_argument("--json", help="where to write the raw lines")
    a = ap.parse_args()
    if not os.path.exists(a.binary):
        sys.exit(f"error: {a.binary} not found: cmake --build <build> --target bench_gemm")
    with open("/proc/cpuinfo") as f:
        text = f.read()
    cpu = next((l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("model name")), "?")
    avx512 = " avx512f " in text and " avx512bw " in text

    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OPENBLAS_", "ONEDNN_", "DNNL_", "LIBXSMM_", "BLIS_", "OMP_", "EMBER_"))}
    if a.isa == "avx2":
        base.update({"ONEDNN_MAX_CPU_ISA": "AVX2", "LIBXSMM_TARGET": "hsw"})
    libs = [("openblas", {"OPENBLAS_CORETYPE": "Haswell"})]
    if avx512 and a.isa == "native":
        libs.append(("openblas", {"OPENBLAS_CORETYPE": "SkylakeX"}))
    libs += [("onednn-sgemm", {}), ("onednn-matmul", {})]
    # BLIS_ARCH_TYPE is a number in BLIS 0.9 (arch_t: 0 skx, 3 haswell, 6 zen3); its own choice otherwise.
    libs += [("blis", {"BLIS_ARCH_TYPE": "6"})] if a.isa == "avx2" else [("blis", {})]
    if avx512 and a.isa == "native":
        libs.append(("blis", {"BLIS_ARCH_TYPE": "0"}))
    libs.append(("libxsmm", {}))
    threads = [int(t) for t in a.threads.split(",")]
    if a.clock == "cpu" and threads != [1]:
        sys.exit("error: --clock cpu needs --threads 1 (with more threads CPU time counts every thread's spinning)")
    key = "cpu_us" if a.clock == "cpu" else "us"

    print(f"CPU: {cpu}; ISA: {a.isa}; clock: {a.clock}; {a.rounds} rounds; load average {open('/proc/loadavg').read().split()[0]} at "
          f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}", flush=True)
    lines = []
    for r in range(a.rounds):
        for t in threads:
            for lib, env in libs:
                if lib == "libxsmm" and t != 1:
                    continue
                p = subprocess.run([a.binary, "--lib", lib, "--threads", str(t), "--batch", a.batch, "--ms", a.ms],
                                   env={**base, **env}, capture_output=True, text=True)
                if p.returncode != 0:
                    msg = (p.stderr.strip().splitlines() or ["?"])[-1]
                    print(f"  {lib} {env} {t}T: failed ({msg}); left out", flush=True)
                    continue
                for line in p.stdout.splitlines():
                    d = json.loads(line)
                    d["round"] = r
                    lines.append(d)
        print(f"  round {r + 1} done", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(lines, f, indent=1)

    names = list(dict.fromkeys(d["lib"] for d in lines))
    for t in threads:
        for B in [int(b) for b in a.batch.split(",")]:
            sel = [d for d in lines if d["threads"] == t and d["batch"] == B]
            libs_t = [n for n in names if any(d["lib"] == n for d in sel)]
            us = {}
            for d in sel:
                if key in d:
                    us.setdefault((d["gemm"], d["lib"]), []).append(d[key])
            shapes = list(dict.fromkeys(d["gemm"] for d in sel if d["gemm"] != "step"))
            print(f"\n### batch {B}, {t} thread{'s' if t > 1 else ''}: GFLOP/s (median of {a.rounds} rounds, {a.clock} "
                  f"time; fastest in bold)\n")
            print("| GEMM (row-major, as Ember calls it) | " + " | ".join(libs_t) + " |")
            print("| --- |" + " --- |" * len(libs_t))
            best_total, flops_total = 0.0, 0.0
            for g in shapes:
                d0 = next(d for d in sel if d["gemm"] == g)
                flops = 2.0 * d0["m"] * d0["n"] * d0["k"]
                med = {n: statistics.median(us[(g, n)]) for n in libs_t if (g, n) in us}
                fastest = min(med, key=med.get)
                best_total += med[fastest]
                flops_total += flops
                cells = []
                for n in libs_t:
                    if n not in med:
                        cells.append("—")
                        continue
                    c = f"{flops / med[n] / 1e3:.0f}"
                    cells.append(f"**{c}**" if n == fastest else c)
                op = f"{'Aᵀ' if d0['ta'] else 'A'}·{'Bᵀ' if d0['tb'] else 'B'}"
                print(f"| {g}: {d0['m']}×{d0['n']}×{d0['k']} ({op}) | " + " | ".join(cells) + " |")
            step = {n: statistics.median([d[key] for d in sel if d["gemm"] == "step" and d["lib"] == n])
                    for n in libs_t if any(d["gemm"] == "step" and d["lib"] == n for d in sel)}
            print("| one step's GEMMs back to back | " + " | ".join(
                f"{flops_total / step[n] / 1e3:.0f} ({step[n]:.0f} µs)" if n in step else "—" for n in libs_t) + " |")
            print(f"\nSGEMM rate at the MLP's shapes (batch {B}, {t}T): {flops_total / best_total / 1e3:.0f} GFLOP/s with "
                  f"the fastest library per GEMM ({flops_total / 1e6:.1f} MFLOP in {best_total:.0f} µs)")
    print(f"\nload average at the end: {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
