#!/usr/bin/env bash
# Results-file size over a long PBT run with and without checkpoint retention.
# examples/checkpointing.toml (a command trainable that checkpoints through
# RANKTUNE_CHECKPOINT_DIR), sized up: 8 trials of 400 steps on 4 workers, PBT every 4 steps,
# 256 KiB per checkpoint. Run 1 keeps every checkpoint; run 2 has [checkpoint] keep_last = 2.
# The file size is sampled every 0.2 s; benchmarks/plot_growth.py draws OUT_DIR/checkpoint_growth.svg.
# Usage: RANKTUNE=build/apps/ranktune benchmarks/checkpoint_growth.sh [OUT_DIR]
set -euo pipefail
RANKTUNE=${RANKTUNE:-build/apps/ranktune}
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$(mktemp -d /tmp/ranktune-growth.XXXXXX)}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
elapsed() { awk -v now="$(date +%s.%N)" -v start="$1" 'BEGIN { print now - start }'; }  # seconds since $1
for keep in 0 2; do
  h5="$OUT/keep_last_$keep.h5"
  rm -f "$h5"
  mpirun -np 5 --oversubscribe --bind-to none "$RANKTUNE" run "$SRC/examples/checkpointing.toml" --results "$h5" \
    --set stop.max_t=400 --set 'search.space.steps={choice=[400]}' --set 'search.space.state_kib={choice=[256]}' \
    --set checkpoint.keep_last=$keep --set checkpoint.keep_best=0 > "$OUT/keep_last_$keep.log" 2>&1 &
  pid=$!
  start=$(date +%s.%N)
  while kill -0 "$pid" 2>/dev/null; do
    echo "$(elapsed "$start") $(stat -c %s "$h5" 2>/dev/null || echo 0)"
    sleep 0.2
  done > "$OUT/keep_last_$keep.csv"
  wait "$pid"
  echo "$(elapsed "$start") $(stat -c %s "$h5")" >> "$OUT/keep_last_$keep.csv"
  rows=$(/usr/bin/python3 -c "import h5py,sys; c=h5py.File(sys.argv[1],'r')['checkpoints'][:]; print((c['trial_id']>0).sum(), (c['dropped']==0).sum())" "$h5")
  echo "keep_last=$keep: $(stat -c %s "$h5") bytes, checkpoint rows (trials) and live rows: $rows"
done
"$RANKTUNE" compact "$OUT/keep_last_0.h5" -o "$OUT/keep_last_0.compact.h5"
"$RANKTUNE" compact "$OUT/keep_last_2.h5" -o "$OUT/keep_last_2.compact.h5"
/usr/bin/python3 "$SRC/benchmarks/plot_growth.py" "$OUT" "$OUT/checkpoint_growth.svg"
echo "plot: $OUT/checkpoint_growth.svg"
