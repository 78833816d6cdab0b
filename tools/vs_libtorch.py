#!/usr/bin/python3
"""Ember against LibTorch 1.13, trained side by side on real Fashion-MNIST (bench/vs_libtorch).

    cmake -S . -B build -DEMBER_BENCH_LIBTORCH=ON && cmake --build build --target vs_ember_train vs_torch_train
    /usr/bin/python3 tools/vs_libtorch.py --build build                 # native: this CPU's own kernels
    /usr/bin/python3 tools/vs_libtorch.py --build build --load 1        # with one CPU-bound competitor

    # AVX2 emulation on an AVX-512 machine: both programs compiled for Haswell, both libraries limited to AVX2
    cmake -S . -B build-avx2 -DEMBER_ARCH=haswell -DEMBER_BENCH_LIBTORCH=ON -DEMBER_BUILD_TESTS=OFF
    cmake --build build-avx2 --target vs_ember_train vs_torch_train
    /usr/bin/python3 tools/vs_libtorch.py --build build-avx2 --mode avx2

What it does, in order:
1. Calibration: LibTorch's best configuration chosen on this CPU, per workload and thread count, from the
   candidates below (each tried in short runs, `--calibration-rounds` times, interleaved; the fastest median
   kept and printed). Never a hard-coded kernel family: a candidate that fails (e.g. SIGILL) is reported and
   skipped.
     - OPENBLAS_CORETYPE: unset (OpenBLAS's auto-detection) and every family the CPU can run (SkylakeX with
       AVX-512 F/BW/VL/DQ, Haswell with AVX2: both on an AVX-512 CPU); in --mode avx2 Haswell only;
     - OPENBLAS_NUM_THREADS: 1 and the thread count;
     - glibc malloc tunables (mmap_threshold 256 MiB, trim_threshold 1 GiB): off and on.
   Denormals are flushed in LibTorch always (torch_train.cpp). Ember runs as installed (its own OpenBLAS
   choice), with no OPENBLAS_* variables, except in --mode avx2.
2. Measurement: per workload, `--pairs` rounds; in each round, for each thread count, Ember then LibTorch
   (A B A B). Reported per workload and thread count: the median Ember/LibTorch speed ratio and its spread
   (min-max over the rounds); per framework, the 2-thread speed as a fraction of its own 1-thread speed in
   the same round (under --load N: with N busy-loop processes running throughout, started before step 1).
3. Start-up and memory (MLP batch 64 rows): exec -> first step done, timed from the wall clock the parent
   reads just before spawning to the CLOCK_REALTIME the child reads after its first step (library loading
   included), with the part spent reading the gzip-compressed dataset (the same code on both sides) shown
   separately; peak RSS as the child reports it after its last step (getrusage) and as wait4 reports it
   after exit (the difference is what exit adds).

--mode avx2 emulates an AVX2-only CPU (e.g. Zen 3) on an AVX-512 machine: Ember from a build configured with
-DEMBER_ARCH=haswell (checked in its CMakeCache.txt), OPENBLAS_CORETYPE=Haswell and ONEDNN_MAX_CPU_ISA=AVX2
for both sides, ATEN_CPU_CAPABILITY=avx2 for LibTorch. It is an emulation: the caches, clocks and memory are
this machine's.

All raw results go to --json (default: vs_libtorch_<mode>_load<N>.json in the current directory).
"""
import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824"
AVX2_ENV = {"OPENBLAS_CORETYPE": "Haswell", "ONEDNN_MAX_CPU_ISA": "AVX2"}

# name, arguments, timed steps, warm-up steps (calibration runs use a third of the steps)
WORKLOADS = {
    "mlp64": ("MLP 784-256-128-10, batch 64, SGD momentum", ["--model", "mlp", "--batch", "64", "--optimizer", "sgd"], 300, 30),
    "mlp256": ("MLP 784-256-128-10, batch 256, SGD momentum", ["--model", "mlp", "--batch", "256", "--optimizer", "sgd"], 150, 15),
    "cnn": ("CNN (2 conv + BN + pool, 2 linear), batch 64, Adam", ["--model", "cnn", "--batch", "64", "--optimizer", "adam"], 40, 5),
    "tiny": ("tiny MLP 10-10-10, batch 1 (framework overhead)", ["--model", "tiny"], 20000, 1000),
}


def cpu_info():
    name, flags = platform.processor() or "?", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and name in ("?", "", "x86_64"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    return name, flags


def openblas_family(flags):
    """The OpenBLAS kernel family matching the CPU flags (what Ember's own choice also uses)."""
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "SkylakeX"
    if "avx2" in flags:
        return "Haswell"
    return None


def openblas_families(flags):
    """Every OpenBLAS kernel family this CPU can run, among the two that matter on x86-64 servers: an AVX-512
    CPU runs Haswell's AVX2 kernels too, and on Zen 4 they are the faster ones at some of the MLP's shapes."""
    out = []
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        out.append("SkylakeX")
    if "avx2" in flags:
        out.append("Haswell")
    return out


def openblas_autodetect():
    """What OpenBLAS picks on its own here (asked through ctypes, in a clean child process)."""
    code = ("import ctypes\n"
            "for p in ('/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0', 'libopenblas.so.0'):\n"
            "    try:\n        l = ctypes.CDLL(p); break\n    except OSError: l = None\n"
            "l.openblas_get_corename.restype = ctypes.c_char_p\nprint(l.openblas_get_corename().decode())\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    try:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()
    except (subprocess.SubprocessError, AttributeError):
        return "?"


def read_cmake_cache(build):
    cache = {}
    path = os.path.join(build, "CMakeCache.txt")
    if not os.path.exists(path):
        sys.exit(f"error: {path} not found: --build must be a CMake build tree (see this script's docstring)")
    with open(path) as f:
        for line in f:
            if "=" in line and ":" in line.split("=", 1)[0] and not line.startswith(("//", "#")):
                key, value = line.rstrip("\n").split("=", 1)
                cache[key.split(":", 1)[0]] = value
    return cache


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


class Runner:
    def __init__(self, bindir, data):
        self.bindir, self.data = bindir, data

    def run(self, binary, args, threads, env, steps, warmup, max_seconds):
        """Runs one program; returns its JSON line plus the parent's measurements, or raises RuntimeError."""
        cmd = [os.path.join(self.bindir, binary), *args, "--threads", str(threads), "--steps", str(steps),
               "--warmup", str(warmup), "--max-seconds", str(max_seconds), "--data", self.data]
        with tempfile.TemporaryFile() as err:
            t0 = time.time_ns()  # just before the fork + exec
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err)
            out = p.stdout.read().decode()
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode != 0:
                err.seek(0)
                tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
                sig = f" (signal {-p.returncode})" if p.returncode < 0 else ""
                raise RuntimeError(f"{binary} exited with {p.returncode}{sig}: {' | '.join(tail)}")
        r = json.loads(out.strip().splitlines()[-1])
        r["exec_to_main_s"] = (r["main_ns"] - t0) / 1e9
        r["exec_to_first_step_s"] = (r["first_step_ns"] - t0) / 1e9
        r["data_load_s"] = (r["data_ns"] - r["main_ns"]) / 1e9
        r["peak_rss_after_exit_mib"] = usage.ru_maxrss / 1024.0
        return r


def speed(r, workload):
    """Higher is better: samples/s, or steps/s for the tiny model (batch 1)."""
    return 1e6 / r["us_per_step_median"] if workload == "tiny" else r["samples_per_sec"]


def fmt_speed(r, workload):
    return f"{r['us_per_step_median']:.1f} µs/step" if workload == "tiny" else f"{r['samples_per_sec']:.0f} samples/s"


def spread(values, digits=2):
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the CMake build tree (-DEMBER_BENCH_LIBTORCH=ON)")
    ap.add_argument("--mode", choices=["native", "avx2"], default="native")
    ap.add_argument("--pairs", type=int, default=5, help="measured rounds per workload (default 5)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    ap.add_argument("--load", type=int, default=0, help="N busy-loop processes competing throughout (default 0)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"subset of {','.join(WORKLOADS)}")
    ap.add_argument("--max-seconds", type=float, default=4.0,
                    help="timed steps stop after this long (default 4 s; calibration runs a third of it)")
    ap.add_argument("--calibration-rounds", type=int, default=2, help="short runs per LibTorch candidate (default 2)")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist", help="Fashion-MNIST IDX .gz directory")
    ap.add_argument("--json", help="where to write all raw results")
    a = ap.parse_args()

    threads = [int(t) for t in a.threads.split(",")]
    workloads = a.workloads.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            sys.exit(f"error: unknown workload {w}; known: {', '.join(WORKLOADS)}")
    cache = read_cmake_cache(a.build)
    arch = cache.get("EMBER_ARCH", "")
    native = cache.get("EMBER_NATIVE", "ON").upper() in ("ON", "1", "TRUE", "YES")
    if a.mode == "avx2" and (not arch or "avx512" in arch or arch in ("native",)):
        sys.exit(f"error: --mode avx2 needs Ember built for an AVX2 target; {a.build} has EMBER_ARCH='{arch}' "
                 f"(configure a tree with -DEMBER_ARCH=haswell, see this script's docstring)")
    if a.mode == "native" and arch:
        sys.exit(f"error: {a.build} is built for -march={arch}; --mode native wants a native build (or pass --mode avx2)")
    bindir = os.path.join(a.build, "bench", "vs_libtorch")
    for b in ("vs_ember_train", "vs_torch_train"):
        if not os.path.exists(os.path.join(bindir, b)):
            sys.exit(f"error: {os.path.join(bindir, b)} not built: cmake -S . -B {a.build} -DEMBER_BENCH_LIBTORCH=ON "
                     f"&& cmake --build {a.build} --target vs_ember_train vs_torch_train")
    runner = Runner(bindir, a.data)

    cpu, flags = cpu_info()
    family = openblas_family(flags)
    auto = openblas_autodetect()
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OPENBLAS_", "GLIBC_TUNABLES", "ONEDNN_", "DNNL_", "ATEN_CPU", "OMP_", "EMBER_"))}
    ember_env = dict(base)
    if a.mode == "avx2":
        ember_env.update(AVX2_ENV)
        torch_base = {**base, **AVX2_ENV, "ATEN_CPU_CAPABILITY": "avx2"}
        cores = ["Haswell"]
    else:
        torch_base = dict(base)
        cores = [None] + [f for f in openblas_families(flags) if f.lower() != auto.lower()]
    try:
        commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe", "--always",
                                 "--dirty"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    print(f"CPU: {cpu}, {os.cpu_count()} logical CPUs; AVX-512: {'avx512f' in flags}; OpenBLAS auto-detects "
          f"{auto}; flags match {family}")
    print(f"mode: {a.mode}" + (" (AVX2 emulation: Ember -march=" + arch + ", OPENBLAS_CORETYPE=Haswell and "
                               "ONEDNN_MAX_CPU_ISA=AVX2 for both, ATEN_CPU_CAPABILITY=avx2 for LibTorch)"
                               if a.mode == "avx2" else f" (Ember -march={'native' if native else 'default'})"))
    print(f"Ember {commit}, build {a.build} ({cache.get('CMAKE_BUILD_TYPE', '?')}); load: {a.load} busy loop(s); "
          f"load average {load_average()} at {time.strftime('%Y-%m-%d %H:%M:%S %Z')}", flush=True)

    competitors = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.load)]
    results = {"cpu": cpu, "mode": a.mode, "load": a.load, "commit": commit, "openblas_auto": auto,
               "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "load_average_start": load_average(),
               "calibration": {}, "runs": []}
    try:
        # --- 1. calibration ---------------------------------------------------------------------------
        best = {}
        print("\n== LibTorch calibration (short runs, median speed per candidate; * = chosen)", flush=True)
        for w, t in itertools.product(workloads, threads):
            title, args, steps, warmup = WORKLOADS[w]
            cands = []
            for core, nt, malloc in itertools.product(cores, sorted({1, t}), (False, True)):
                env = dict(torch_base)
                if core:
                    env["OPENBLAS_CORETYPE"] = core
                env["OPENBLAS_NUM_THREADS"] = str(nt)
                if malloc:
                    env["GLIBC_TUNABLES"] = MALLOC_TUNABLES
                label = f"coretype={core or 'auto(' + auto + ')'} openblas_threads={nt} malloc_tunables={'on' if malloc else 'off'}"
                cands.append({"label": label, "env": env, "speeds": [], "error": None})
            for _ in range(a.calibration_rounds):
                for c in cands:
                    if c["error"]:
                        continue
                    try:
                        r = runner.run("vs_torch_train", args, t, c["env"], max(steps // 3, 5), max(warmup // 3, 2),
                                       a.max_seconds / 3)
                        c["speeds"].append(speed(r, w))
                    except RuntimeError as e:
                        c["error"] = str(e)
            ok = [c for c in cands if c["speeds"]]
            if not ok:
                sys.exit(f"error: every LibTorch candidate failed for {w}, {t} thread(s): {cands[0]['error']}")
            chosen = max(ok, key=lambda c: statistics.median(c["speeds"]))
            best[(w, t)] = chosen["env"]
            results["calibration"][f"{w}/{t}"] = [{"label": c["label"], "speeds": c["speeds"], "error": c["error"],
                                                   "chosen": c is chosen} for c in cands]
            top = statistics.median(chosen["speeds"])
            print(f"-- {title}, {t} thread(s)")
            for c in cands:
                mark = "*" if c is chosen else " "
                what = (f"FAILED: {c['error']}" if c["error"] else
                        f"{statistics.median(c['speeds']) / top:.3f} of the best")
                print(f"   {mark} {c['label']}: {what}", flush=True)

        # --- 2. measurement ---------------------------------------------------------------------------
        print(f"\n== Measurement: {a.pairs} rounds per workload; each round runs, per thread count, Ember then "
              f"LibTorch", flush=True)
        table = []
        for w in workloads:
            title, args, steps, warmup = WORKLOADS[w]
            rounds = []
            for i in range(a.pairs):
                rnd = {}
                for t in threads:
                    e = runner.run("vs_ember_train", args, t, ember_env, steps, warmup, a.max_seconds)
                    to = runner.run("vs_torch_train", args, t, best[(w, t)], steps, warmup, a.max_seconds)
                    rnd[t] = (e, to)
                    results["runs"] += [{"workload": w, "round": i, **e}, {"workload": w, "round": i, **to}]
                    print(f"{w} round {i + 1}, {t} thread(s): Ember {fmt_speed(e, w)} (loss {e['mean_loss']:.3f}), "
                          f"LibTorch {fmt_speed(to, w)} (loss {to['mean_loss']:.3f}) -> "
                          f"{speed(e, w) / speed(to, w):.2f}x", flush=True)
                rounds.append(rnd)
            row = {"workload": w, "title": title}
            for t in threads:
                row[f"ratio_{t}"] = [speed(r[t][0], w) / speed(r[t][1], w) for r in rounds]
                row[f"ember_{t}"] = [speed(r[t][0], w) for r in rounds]
                row[f"torch_{t}"] = [speed(r[t][1], w) for r in rounds]
                row[f"ember_step_us_{t}"] = [r[t][0]["us_per_step_median"] for r in rounds]
                row[f"torch_step_us_{t}"] = [r[t][1]["us_per_step_median"] for r in rounds]
            if 1 in threads and len(threads) > 1:
                hi = max(threads)
                row["ember_scaling"] = [speed(r[hi][0], w) / speed(r[1][0], w) for r in rounds]
                row["torch_scaling"] = [speed(r[hi][1], w) / speed(r[1][1], w) for r in rounds]
            if w == "mlp64":
                for k in ("exec_to_first_step_s", "exec_to_main_s", "data_load_s", "peak_rss_mib",
                          "peak_rss_after_exit_mib"):
                    row[k] = ([r[threads[-1]][0][k] for r in rounds], [r[threads[-1]][1][k] for r in rounds])
            table.append(row)
        results["table"] = table
    finally:
        for c in competitors:
            c.kill()
            c.wait()
    results["load_average_end"] = load_average()

    # --- 3. summary ---------------------------------------------------------------------------------------
    print(f"\n== Summary: {cpu}, mode {a.mode}, load {a.load}, {a.pairs} rounds, load average "
          f"{results['load_average_start']} -> {results['load_average_end']}")
    print("Ember/LibTorch speed, median (min-max over rounds); LibTorch in the configuration calibration chose")
    hdr = "| workload | " + " | ".join(f"{t} thread{'s' if t > 1 else ''}" for t in threads)
    if "ember_scaling" in table[0]:
        hdr += f" | Ember {max(threads)}T / 1T | LibTorch {max(threads)}T / 1T"
    print(hdr + " |")
    print("|" + " --- |" * (hdr.count("|")))
    for row in table:
        cells = [spread(row[f"ratio_{t}"]) for t in threads]
        if "ember_scaling" in row:
            cells += [spread(row["ember_scaling"]), spread(row["torch_scaling"])]
        print(f"| {row['title']} | " + " | ".join(cells) + " |")
    print("\nAbsolute speeds, median (samples/s; tiny: steps/s), and the median step time (µs), which a loaded "
          "machine's time slices disturb less:")
    for row in table:
        print(f"  {row['workload']}: " + "; ".join(
            f"{t}T Ember {statistics.median(row[f'ember_{t}']):.0f}, LibTorch {statistics.median(row[f'torch_{t}']):.0f}"
            f" (steps {statistics.median(row[f'ember_step_us_{t}']):.0f} vs "
            f"{statistics.median(row[f'torch_step_us_{t}']):.0f} µs)" for t in threads))
    for row in table:
        if "exec_to_first_step_s" in row:
            e, t = row["exec_to_first_step_s"], row["data_load_s"]
            print(f"\nMLP batch 64, {threads[-1]} thread(s), Ember vs LibTorch (medians):")
            print(f"  exec -> first step done: {statistics.median(e[0]):.3f} vs {statistics.median(e[1]):.3f} s "
                  f"(of which reading the dataset: {statistics.median(t[0]):.3f} vs {statistics.median(t[1]):.3f} s; "
                  f"exec -> main: {statistics.median(row['exec_to_main_s'][0]):.3f} vs "
                  f"{statistics.median(row['exec_to_main_s'][1]):.3f} s)")
            print(f"  peak RSS after the last step: {statistics.median(row['peak_rss_mib'][0]):.0f} vs "
                  f"{statistics.median(row['peak_rss_mib'][1]):.0f} MiB; after exit (wait4): "
                  f"{statistics.median(row['peak_rss_after_exit_mib'][0]):.0f} vs "
                  f"{statistics.median(row['peak_rss_after_exit_mib'][1]):.0f} MiB")
    out = a.json or f"vs_libtorch_{a.mode}_load{a.load}.json"
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nraw results: {out}")


if __name__ == "__main__":
    main()
