#!/usr/bin/env bash
# docs/benchmarks.md "Data-parallel (issue 16)": one epoch of training (no evaluation, loader on the training
# thread) of the Fashion MLP and CNN configs, Ember and PyTorch 1.13 DDP (gloo), at
#   1 process x 1 thread, 1 process x 2 threads, 2 processes x 1 thread (mpirun / torch.multiprocessing),
# each with the same global batch (the config's 128: 2 processes take 64 each) and, for weak scaling, 2 x 128.
# Prints one line per run: model, framework, layout, global batch, samples/s (the median of REPEATS runs).
#   [MODELS="mlp cnn"] [MLP_EXAMPLES=60000] [CNN_EXAMPLES=12800] tools/ddp_throughput.sh [build dir] [repeats]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${2:-3}
train=$build/apps/ember-train
mpirun_words=(mpirun --allow-run-as-root --oversubscribe -x EMBER_NUM_THREADS=1 -x OMP_WAIT_POLICY=passive)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ember_once() {  # model examples threads procs batch -> samples/s
  local model=$1 examples=$2 threads=$3 procs=$4 batch=$5 out="$tmp/run"
  rm -rf "$out"
  local args=(--config "configs/fashion_$model.yaml" --device cpu --out "$out" --set epochs=1 --set data.workers=0
              --set "data.limit=$examples" --set eval.every_epochs=0 --set "data.batch_size=$batch")
  if [ "$procs" = 1 ]; then
    EMBER_NUM_THREADS=$threads OMP_WAIT_POLICY=passive "$train" "${args[@]}" >/dev/null 2>&1
  else
    "${mpirun_words[@]}" -np "$procs" "$train" "${args[@]}" >/dev/null 2>&1
  fi
  python3 -c "import json,sys; print(json.loads(open('$out/metrics.jsonl').readline())['samples_per_sec'])"
}
torch_once() {
  /usr/bin/python3 tools/ddp_throughput_torch.py --model "$1" --examples "$2" --threads "$3" --world "$4" --batch "$5" |
    python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['samples_per_sec'])"
}
# Round-robin (every layout and framework once per round, REPEATS rounds): load from other programs on the
# machine then hits all of them alike, rather than whichever ran during a busy minute.
declare -A rates
layouts=("1 1 128" "1 2 128" "2 1 64" "2 1 128")
for model in ${MODELS:-mlp cnn}; do
  examples=${MLP_EXAMPLES:-60000}
  [ "$model" = cnn ] && examples=${CNN_EXAMPLES:-12800}
  for round in $(seq "$repeats"); do
    for layout in "${layouts[@]}"; do
      read -r procs threads batch <<<"$layout"
      for fw in ember torch; do
        if [ "$fw" = ember ]; then r=$(ember_once "$model" "$examples" "$threads" "$procs" "$batch")
        else r=$(torch_once "$model" "$examples" "$threads" "$procs" "$batch"); fi
        rates["$model $fw $layout"]+="$r "
      done
    done
    echo "# $model round $round done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  done
  for layout in "${layouts[@]}"; do
    read -r procs threads batch <<<"$layout"
    for fw in ember torch; do
      all=${rates["$model $fw $layout"]}
      med=$(echo "$all" | tr ' ' '\n' | grep . | median)
      printf "%s %-6s %dx%d threads  global batch %4d  %8.0f samples/s  (runs: %s)\n" "$model" "$fw" "$procs" "$threads" \
        $((procs * batch)) "$med" "$(echo $all | xargs printf '%.0f ')"
    done
  done
done
