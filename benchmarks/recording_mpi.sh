#!/usr/bin/env bash
# End-to-end recording rate through real MPI: `ranktune run` of recording_mpi.toml (8 trials
# x max_t steps of zero cost on 8 workers). results/s = rows in /results / experiment span.
# This includes the synchronous Result -> Decision round trip of every step and the sleeping
# backoff of idle ranks, with 9 ranks on however many cores there are.
#
# usage: benchmarks/recording_mpi.sh [RUNS] [MAX_T]     (defaults: 3 runs, max_t 20000)
# env:   RANKTUNE  the binary (default: build-bench/apps/ranktune, else build/apps/ranktune,
#                  else ranktune in PATH)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
runs=${1:-3}
max_t=${2:-20000}
workers=8

if [[ -z "${RANKTUNE:-}" ]]; then
  for c in "$root/build-bench/apps/ranktune" "$root/build/apps/ranktune" "$(command -v ranktune || true)"; do
    [[ -n "$c" && -x "$c" ]] && { RANKTUNE=$c; break; }
  done
fi
[[ -x "${RANKTUNE:-}" ]] || { echo "recording_mpi.sh: no ranktune binary; set RANKTUNE" >&2; exit 2; }
PY=/usr/bin/python3   # Debian's python, which has h5py
[[ $(id -u) == 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

tmp=$(mktemp -d /tmp/ranktune-recording.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "recording_mpi: $workers trials x max_t $max_t on $workers workers, $runs runs; $(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq 1 "$runs"); do
  t0=$(date +%s.%N)
  "$RANKTUNE" run "$here/recording_mpi.toml" --np $workers --results "$tmp/r_$run.h5" \
    --set stop.max_t="$max_t" >"$tmp/log_$run.txt" 2>&1 \
    || { cat "$tmp/log_$run.txt" >&2; echo "recording_mpi.sh: ranktune run failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  read -r rows span rate < <("$PY" "$here/analyze_trials.py" "$tmp/r_$run.h5" --results-rate)
  [[ $rows == $((workers * max_t)) ]] || { echo "recording_mpi.sh: expected $((workers * max_t)) rows, got $rows" >&2; exit 1; }
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  printf '%s\t%s\t%s\t%s\n' "$rows" "$span" "$rate" "$wall" >>"$tmp/rows.tsv"
  awk -v r="$run" -v rows="$rows" -v s="$span" -v w="$wall" -v n=$workers 'BEGIN {
    printf "run %d: %d rows in %.3f s span (%.3f s wall): %.0f results/s, %.1f us per step round trip per worker\n",
      r, rows, s, w, rows / s, s / (rows / n) * 1e6 }'
  rm -rf "$tmp/r_$run.h5" "$tmp/r_$run.h5.logs"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
sort -t$'\t' -k3,3g "$tmp/rows.tsv" | awk -F'\t' -v n="$runs" '
  { rate[NR] = $3 }
  END { m = (n % 2) ? rate[(n + 1) / 2] : (rate[n / 2] + rate[n / 2 + 1]) / 2
        printf "median over %d runs: %.0f results/s through MPI (target for the driver path: >= 100000)\n", n, m }'
