#!/usr/bin/env bash
# Training throughput (samples/s over one epoch of Fashion-MNIST's 54,000 training images),
# ranktune's mlp (bench_mlp) against PyTorch (Debian's python3-torch, installed here if
# missing) on the identical 784-256-128-10 ReLU MLP, SGD+momentum, same batch size and
# thread count, alternating in the same run. Prints the BLAS each side loaded, each run's
# samples/s, and the ratio of the medians (target >= 1.0x).
# PyTorch runs with OMP_WAIT_POLICY=PASSIVE (override with TORCH_OMP_WAIT_POLICY): with
# other work on the cores, OpenMP's default spin-waiting made its 2-thread epoch ~20x slower
# (1.3k against 29k samples/s here), which would flatter ranktune.
# Usage: benchmarks/mlp_vs_torch.sh [BUILD_DIR] [ROUNDS]   (default build, 3)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../build}"
rounds="${2:-3}"
bench="$build/benchmarks/bench_mlp"
[[ -x "$bench" ]] || { echo "no $bench: build it with cmake --build $build --target bench_mlp" >&2; exit 1; }
source "$here/torch_lib.sh"
ensure_torch
hidden=256-128
batch=128
for threads in 1 2; do
  ours=() theirs=()
  for ((r = 1; r <= rounds; r++)); do
    out=$("$bench" --hidden $hidden --batch $batch --threads $threads --epochs 1)
    [[ $r == 1 ]] && echo "ranktune: $(grep '^blas:' <<<"$out")"
    ours+=("$(awk '/^epoch/ {print $4}' <<<"$out")")
    out=$(OMP_WAIT_POLICY=${TORCH_OMP_WAIT_POLICY:-PASSIVE} OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads /usr/bin/python3 "$here/mlp_torch.py" --hidden $hidden --batch $batch --threads $threads --epochs 1)
    [[ $r == 1 ]] && echo "pytorch:  $(grep '^blas:' <<<"$out")"
    theirs+=("$(awk '/^epoch/ {print $4}' <<<"$out")")
  done
  mo=$(median "${ours[@]}"); mt=$(median "${theirs[@]}")
  echo "threads $threads batch $batch: ranktune ${ours[*]} samples/s; pytorch ${theirs[*]} samples/s;" \
       "medians $mo vs $mt: $(awk -v a="$mo" -v b="$mt" 'BEGIN {printf "%.2fx", a / b}')"
done
