#!/usr/bin/env bash
# Two ember-bench binaries (e.g. a base commit's build and this tree's) alternating on the same arguments,
# one line per run: "round N A|B samples/s ms/step-median". Alternation makes a shared machine's load fall
# on both alike; compare per round.
#
#   tools/ab_bench.sh ROUNDS THREADS BIN_A BIN_B -- --config configs/fashion_mlp.yaml --device cpu --steps 400
set -euo pipefail
if [[ $# -lt 5 || $5 != "--" ]]; then
  echo "usage: $0 ROUNDS THREADS BIN_A BIN_B -- EMBER_BENCH_ARGS..." >&2
  exit 2
fi
rounds=$1 threads=$2 a=$3 b=$4
shift 5
for ((r = 1; r <= rounds; ++r)); do
  for side in A B; do
    bin=$a
    [[ $side == B ]] && bin=$b
    # the device row of ember-bench's table: "cpu  <samples/s>  <ms/step median> ..."
    row=$(EMBER_NUM_THREADS=$threads "$bin" "$@" 2>&1 | awk '$1 == "cpu" && $2 ~ /^[0-9]+$/ {print $2, $3}')
    [[ -n $row ]] || { echo "$bin printed no cpu row" >&2; exit 1; }
    echo "round $r $side $row"
  done
done
