#!/usr/bin/env bash
# Checkpoint write bandwidth into the results file through rank 0, against dd on the same
# disk in the same run. WORKERS workers (4) each save one checkpoint of MIB MiB (256) at
# about the same time (checkpoint_bandwidth.toml); they stream to rank 0 in chunks, which
# its writer thread writes into /checkpoint_data. `... 2 2048 1` measures ONE 2 GiB checkpoint.
# Each run measures ranktune twice, with [checkpoint] fsync = false (the default) and
# = true (fdatasync after each checkpoint's last chunk), then dd writing the same number of
# bytes with conv=fdatasync and without it. ranktune's rate is the bytes stored / (last
# checkpoint stored - first chunk received), from the "checkpoint" events ("..., N bytes in
# S s" at time T); rank 0's peak RSS comes from the "driver" event.
# Usage: RANKTUNE=build/apps/ranktune benchmarks/checkpoint_bandwidth.sh [RUNS] [MIB_PER_CHECKPOINT] [WORKERS]
set -euo pipefail
RUNS=${1:-3}
MIB=${2:-256}
WORKERS=${3:-4}
SRC=$(cd "$(dirname "$0")/.." && pwd)
RANKTUNE=${RANKTUNE:-}
for candidate in "$RANKTUNE" "$SRC/build-bench/apps/ranktune" "$SRC/build/apps/ranktune" "$(command -v ranktune || true)"; do
  [[ -n $candidate && -x $candidate ]] && { RANKTUNE=$candidate; break; }
done
[[ -x $RANKTUNE ]] || { echo "no ranktune binary: set RANKTUNE" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d "${TMPDIR:-/tmp}/ranktune-ckbw.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
TOTAL_MIB=$((WORKERS * MIB))
echo "ranktune: $RANKTUNE; $WORKERS workers x $MIB MiB checkpoints; disk of $OUT: $(df -h --output=source,fstype "$OUT" | tail -1)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); cores: $(nproc)"
dd_rate() {  # MiB/s of dd writing TOTAL_MIB MiB into OUT, with the given extra flags
  local line
  line=$(dd if=/dev/zero of="$OUT/dd.bin" bs=8M count=$((TOTAL_MIB / 8)) "$@" 2>&1 | tail -1)
  rm -f "$OUT/dd.bin"
  awk -v mib="$TOTAL_MIB" '{for (i = 1; i <= NF; ++i) if ($(i+1) == "s,") print mib / $i}' <<< "$line"
}
ranktune_rate() {  # prints "MiB/s peak_RSS_MiB per-checkpoint-MiB/s" of one run; $1: fsync true|false
  rm -f "$OUT/bw.h5"
  mpirun -np $((WORKERS + 1)) --oversubscribe --bind-to none "$RANKTUNE" run "$SRC/benchmarks/checkpoint_bandwidth.toml" \
    --results "$OUT/bw.h5" --set "search.space.state_kib={choice=[$((MIB * 1024))]}" \
    --set "experiment.num_samples=$WORKERS" --set "checkpoint.fsync=$1" > "$OUT/run.log" 2>&1 \
    || { cat "$OUT/run.log" >&2; exit 1; }
  /usr/bin/python3 - "$OUT/bw.h5" "$WORKERS" <<'PY'
import re, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    ev = f["events"][:]
spans, total, per = [], 0, []
for e in ev:
    m = re.fullmatch(r"iteration \d+, (\d+) bytes in ([0-9.]+) s", e["message"].decode())
    if e["kind"] == b"checkpoint" and m:
        size, took = int(m.group(1)), float(m.group(2))
        spans.append((float(e["time"]) - took, float(e["time"])))
        total += size
        per.append(size / 2**20 / max(took, 1e-9))
peak = [e["message"].decode().split()[2] for e in ev if e["kind"] == b"driver"]
assert len(spans) == int(sys.argv[2]), f"expected {sys.argv[2]} checkpoints, found {len(spans)}"
print(f"{total / 2**20 / (max(b for _, b in spans) - min(a for a, _ in spans)):.0f} {int(peak[0]) // 1024} "
      + ",".join(f"{p:.0f}" for p in sorted(per)))
PY
  rm -f "$OUT/bw.h5"
}
rates=() synced=() dds=() cached=()
for run in $(seq "$RUNS"); do
  read -r rate peak per <<< "$(ranktune_rate false)"
  read -r srate speak sper <<< "$(ranktune_rate true)"
  dd=$(dd_rate conv=fdatasync)
  dc=$(dd_rate)
  echo "run $run: ranktune $rate MiB/s (each checkpoint alone: $per MiB/s; rank 0 peak RSS $peak MiB);" \
       "with fsync $srate MiB/s (each: $sper; peak RSS $speak MiB);" \
       "dd conv=fdatasync $dd MiB/s; dd without fdatasync $dc MiB/s; load $(cut -d' ' -f1 /proc/loadavg)"
  rates+=("$rate") synced+=("$srate") dds+=("$dd") cached+=("$dc")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
r=$(median "${rates[@]}") s=$(median "${synced[@]}") d=$(median "${dds[@]}") c=$(median "${cached[@]}")
echo "median of $RUNS ($WORKERS x $MIB MiB): ranktune $r MiB/s, with fsync $s MiB/s; dd conv=fdatasync $d MiB/s, dd without $c MiB/s"
echo "ratios: ranktune / dd conv=fdatasync $(ratio "$r" "$d"), ranktune fsync / dd conv=fdatasync $(ratio "$s" "$d"), ranktune / dd without fdatasync $(ratio "$r" "$c"), ranktune fsync / dd without $(ratio "$s" "$c")"
