#!/usr/bin/env bash
# Checkpoint write bandwidth into the results file through rank 0, against dd on the same
# disk in the same run. 4 workers each save one 256 MiB checkpoint at about the same time
# (checkpoint_bandwidth.toml); they stream to rank 0 in chunks, which writes them into
# /checkpoint_data. ranktune's rate is the bytes stored / (last checkpoint stored - first
# chunk received), from the "checkpoint" events ("..., N bytes in S s" at time T). dd writes
# the same number of bytes with conv=fdatasync (its figure includes the flush to the disk;
# ranktune's H5Fflush does not fsync, see the design doc), and once more without it.
# Usage: RANKTUNE=build/apps/ranktune benchmarks/checkpoint_bandwidth.sh [RUNS] [MIB_PER_CHECKPOINT]
set -euo pipefail
RUNS=${1:-3}
MIB=${2:-256}
SRC=$(cd "$(dirname "$0")/.." && pwd)
RANKTUNE=${RANKTUNE:-}
for candidate in "$RANKTUNE" "$SRC/build-bench/apps/ranktune" "$SRC/build/apps/ranktune" "$(command -v ranktune || true)"; do
  [[ -n $candidate && -x $candidate ]] && { RANKTUNE=$candidate; break; }
done
[[ -x $RANKTUNE ]] || { echo "no ranktune binary: set RANKTUNE" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d "${TMPDIR:-/tmp}/ranktune-ckbw.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
WORKERS=4
TOTAL_MIB=$((WORKERS * MIB))
echo "ranktune: $RANKTUNE; $WORKERS workers x $MIB MiB checkpoints; disk of $OUT: $(df -h --output=source,fstype "$OUT" | tail -1)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); cores: $(nproc)"
dd_rate() {  # MiB/s of dd writing TOTAL_MIB MiB into OUT, with the given extra flags
  local line
  line=$(dd if=/dev/zero of="$OUT/dd.bin" bs=8M count=$((TOTAL_MIB / 8)) "$@" 2>&1 | tail -1)
  rm -f "$OUT/dd.bin"
  awk -v mib="$TOTAL_MIB" '{for (i = 1; i <= NF; ++i) if ($(i+1) == "s,") print mib / $i}' <<< "$line"
}
rates=() dds=() cached=()
for run in $(seq "$RUNS"); do
  rm -f "$OUT/bw.h5"
  mpirun -np $((WORKERS + 1)) --oversubscribe --bind-to none "$RANKTUNE" run "$SRC/benchmarks/checkpoint_bandwidth.toml" \
    --results "$OUT/bw.h5" --set "search.space.state_kib={choice=[$((MIB * 1024))]}" > "$OUT/run.log" 2>&1 \
    || { cat "$OUT/run.log"; exit 1; }
  read -r rate peak per <<< "$(/usr/bin/python3 - "$OUT/bw.h5" <<'PY'
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
assert len(spans) == 4, f"expected 4 checkpoints, found {len(spans)}"
print(f"{total / 2**20 / (max(b for _, b in spans) - min(a for a, _ in spans)):.0f} {int(peak[0]) // 1024} "
      + ",".join(f"{p:.0f}" for p in sorted(per)))
PY
)"
  dd=$(dd_rate conv=fdatasync)
  dc=$(dd_rate)
  echo "run $run: ranktune $rate MiB/s (each checkpoint alone: $per MiB/s; rank 0 peak RSS $peak MiB);" \
       "dd conv=fdatasync $dd MiB/s; dd without fdatasync $dc MiB/s"
  rates+=("$rate") dds+=("$dd") cached+=("$dc")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
r=$(median "${rates[@]}") d=$(median "${dds[@]}") c=$(median "${cached[@]}")
echo "median of $RUNS: ranktune $r MiB/s, dd conv=fdatasync $d MiB/s (ratio $(awk -v a="$r" -v b="$d" 'BEGIN {printf "%.2f", a / b}')), dd without fdatasync $c MiB/s (ratio $(awk -v a="$r" -v b="$c" 'BEGIN {printf "%.2f", a / b}'))"
