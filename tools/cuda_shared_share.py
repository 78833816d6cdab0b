#!/usr/bin/env python3
"""The share of the backend code a CUDA run needs that is shared with (and so run by) the CPU build.

What it counts, in the tree at REV (default: the working tree):
  CUDA-only lines: every file under backends/cuda/ (.cu, .cuh, .cpp, .h).
  shared lines:    every file outside backends/cuda/ but under backends/ that the CUDA files include,
                   directly or through each other (#include "backends/..."), plus the .cpp of each such
                   header where one exists (backends/checks.cpp for checks.h, caching_allocator.cpp, ...):
                   code the CPU build compiles and the CPU tests run too.
  a line:          a non-blank line once // and /* */ comments are removed (preprocessor lines count).
base/ (error, dtype, Philox, ...) is not counted on either side: it is below the backends.
share = shared / (shared + CUDA-only).

Usage: tools/cuda_shared_share.py [--rev REV] [--files]   (--files: one line per file)
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s+"(backends/[^"]+)"', re.M)


def reader(rev):
    if rev is None:
        files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "backends"],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        return sorted(f for f in files if (ROOT / f).is_file()), lambda f: (ROOT / f).read_text()
    files = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "backends"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    return sorted(files), lambda f: subprocess.run(["git", "show", f"{rev}:{f}"], cwd=ROOT, capture_output=True,
                                                   text=True, check=True).stdout


def code_lines(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    # // comments, but not inside string literals (a URL or "//" in a message)
    out = 0
    for line in text.splitlines():
        in_string, i, cut = False, 0, len(line)
        while i < len(line):
            c = line[i]
            if c == "\\" and in_string:
                i += 2
                continue
            if c == '"':
                in_string = not in_string
            elif not in_string and line.startswith("//", i):
                cut = i
                break
            i += 1
        if line[:cut].strip():
            out += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", help="a git revision (default: the working tree)")
    ap.add_argument("--files", action="store_true", help="list every counted file")
    args = ap.parse_args()
    files, read = reader(args.rev)
    present = set(files)
    sources = {".cu", ".cuh", ".cpp", ".h"}
    cuda = [f for f in files if f.startswith("backends/cuda/") and Path(f).suffix in sources]
    shared, pending = set(), list(cuda)
    seen = set(pending)
    while pending:
        f = pending.pop()
        for inc in INCLUDE.findall(read(f)):
            if inc not in present or inc in seen:
                continue
            seen.add(inc)
            pending.append(inc)
            if not inc.startswith("backends/cuda/"):
                shared.add(inc)
                impl = str(Path(inc).with_suffix(".cpp"))
                if inc.endswith(".h") and impl in present and impl not in seen:
                    seen.add(impl)
                    pending.append(impl)
                    shared.add(impl)
    counts = {f: code_lines(read(f)) for f in cuda + sorted(shared)}
    n_cuda = sum(counts[f] for f in cuda)
    n_shared = sum(counts[f] for f in shared)
    if args.files:
        for f in cuda:
            print(f"  cuda-only {counts[f]:5d}  {f}")
        for f in sorted(shared):
            print(f"  shared    {counts[f]:5d}  {f}")
    where = args.rev or "working tree"
    print(f"{where}: CUDA-only {n_cuda} lines in {len(cuda)} files, shared {n_shared} lines in {len(shared)} files; "
          f"shared share {100.0 * n_shared / (n_shared + n_cuda):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
