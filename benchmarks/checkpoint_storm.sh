#!/usr/bin/env bash
# Results keep flowing while checkpoints stream (issue 16): the results/s that rank 0 records
# for two trials that report fast, while two other trials of the same experiment save a
# MIB MiB checkpoint every 2,000 steps (checkpoint_storm.toml), against the same run with 1 KiB
# checkpoints (calm). A driver that wrote each chunk on its main thread would stall the
# fast trials' Result -> Decision round trips for the length of every write.
# Usage: RANKTUNE=build/apps/ranktune benchmarks/checkpoint_storm.sh [RUNS] [MIB]   (3 runs, 64 MiB)
set -euo pipefail
RUNS=${1:-3}
MIB=${2:-64}
SRC=$(cd "$(dirname "$0")/.." && pwd)
RANKTUNE=${RANKTUNE:-}
for candidate in "$RANKTUNE" "$SRC/build-bench/apps/ranktune" "$SRC/build/apps/ranktune" "$(command -v ranktune || true)"; do
  [[ -n $candidate && -x $candidate ]] && { RANKTUNE=$candidate; break; }
done
[[ -x $RANKTUNE ]] || { echo "no ranktune binary: set RANKTUNE" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d "${TMPDIR:-/tmp}/ranktune-storm.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
echo "ranktune: $RANKTUNE; 2 fast trials beside 2 saving $MIB MiB every 2,000 steps, 4 workers; load: $(cut -d' ' -f1-3 /proc/loadavg); cores: $(nproc)"
measure() {  # $1: KiB per checkpoint of the saving trials; prints "results/s MiB-stored"
  rm -rf "$OUT/s.h5" "$OUT/s.h5.logs"
  mpirun -np 5 --oversubscribe --bind-to none "$RANKTUNE" run "$SRC/benchmarks/checkpoint_storm.toml" \
    --results "$OUT/s.h5" --set "search.space.state_kib={grid=[0, $1]}" > "$OUT/run.log" 2>&1 \
    || { cat "$OUT/run.log" >&2; exit 1; }
  /usr/bin/python3 - "$OUT/s.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    t, r, ck = f["trials"][:], f["results"][:], f["checkpoints"][:]
fast = {int(x["trial_id"]) for x in t if int(x["state_kib"]) == 0}
rows = r[np.isin(r["trial_id"], list(fast))]
# The fast trials' rows while both kinds ran (the saving trials stream all along).
saving = r[~np.isin(r["trial_id"], list(fast))]
lo = max(float(saving["time"].min()), float(rows["time"].min()))
hi = min(float(saving["time"].max()), float(rows["time"].max()))
during = rows[(rows["time"] >= lo) & (rows["time"] <= hi)]
assert len(during) > 100, f"only {len(during)} fast results while the others saved"
big = ck[~np.isin(ck["trial_id"], list(fast))]
print(f"{len(during) / (hi - lo):.0f} {int(big['size'].sum()) / 2**20:.0f}")
PY
}
storms=() calms=()
for run in $(seq "$RUNS"); do
  read -r storm mib <<< "$(measure $((MIB * 1024)))"
  read -r calm small <<< "$(measure 1)"
  echo "run $run: fast trials' results/s while the others save: $storm (storm: $mib MiB of checkpoints), $calm (calm: 1 KiB checkpoints); load $(cut -d' ' -f1 /proc/loadavg)"
  storms+=("$storm") calms+=("$calm")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
s=$(median "${storms[@]}") c=$(median "${calms[@]}")
echo "median of $RUNS: $s results/s during the storm, $c calm (ratio $(awk -v a="$s" -v b="$c" 'BEGIN {printf "%.2f", a / b}'))"
