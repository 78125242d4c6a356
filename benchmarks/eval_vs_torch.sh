#!/usr/bin/env bash
# Inference latency of `ranktune eval` against PyTorch (Debian's python3-torch, installed
# here if missing) on the identical 784-256-128-10 ReLU MLP, same thread count, same
# protocol (mlp_torch.py --infer: warm-up, then batches of the 10k test images timed one by
# one, each until the predictions are in host memory), alternating in the same run.
# Prints each run's p50 and samples/s at batch 1 and 128, and the ratios of the medians
# (ranktune / PyTorch samples/s: above 1 is faster).
# Usage: benchmarks/eval_vs_torch.sh [BUILD_DIR] [ROUNDS] [THREADS...]   (default build, 3, 1 2)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../build}"
rounds="${2:-3}"
shift $(( $# >= 2 ? 2 : $# ))
thread_counts=("${@:-1 2}")
ranktune="$build/apps/ranktune"
[[ -x "$ranktune" ]] || { echo "no $ranktune: build it first" >&2; exit 1; }
source "$here/torch_lib.sh"
ensure_torch
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/ranktune-eval-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$ranktune" run "$here/eval_latency.toml" --np 1 --results "$work/m.h5" > "$work/run.txt" 2>&1 \
  || { cat "$work/run.txt"; exit 1; }
for threads in ${thread_counts[*]}; do
  declare -A ours=() theirs=() ours_p50=() theirs_p50=()
  for ((r = 1; r <= rounds; r++)); do
    "$ranktune" eval "$work/m.h5" --device cpu --threads "$threads" --batch-sizes 1,128 --latency-s 2 \
      --format json --no-record > "$work/e.json" 2> "$work/e.err" || { cat "$work/e.err"; exit 1; }
    while read -r b p50 sps; do
      ours[$b]+="$sps "; ours_p50[$b]+="$p50 "
    done < <(/usr/bin/python3 -c "
import json, sys
for l in json.load(open(sys.argv[1]))['evaluations'][0]['latency']:
    print(l['batch_size'], '%.4f' % l['p50_ms'], '%.0f' % l['samples_per_s'])" "$work/e.json")
    out=$(OMP_WAIT_POLICY=${TORCH_OMP_WAIT_POLICY:-PASSIVE} OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
          /usr/bin/python3 "$here/mlp_torch.py" --infer 1,128 --threads "$threads" --latency-s 2)
    [[ $r == 1 ]] && echo "pytorch: $(grep '^blas:' <<<"$out")"
    while read -r _ _ b _ _ _ p50 _ _ _ sps; do
      theirs[$b]+="$sps "; theirs_p50[$b]+="$p50 "
    done < <(grep '^infer' <<<"$out")
  done
  for b in 1 128; do
    mo=$(median ${ours[$b]}); mt=$(median ${theirs[$b]})
    echo "threads $threads batch $b: ranktune p50 ${ours_p50[$b]}ms, ${ours[$b]}samples/s;" \
         "pytorch p50 ${theirs_p50[$b]}ms, ${theirs[$b]}samples/s; medians $mo vs $mt:" \
         "$(awk -v a="$mo" -v b="$mt" 'BEGIN {printf "%.2fx", a / b}')"
  done
  unset ours theirs ours_p50 theirs_p50
done
