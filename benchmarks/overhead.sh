#!/usr/bin/env bash
# Scheduling overhead: 2,000 one-step trials of 0.05 s on 8 workers (ideal 12.5 s), against
# bare sleep loops (the floor this VM's sleep granularity allows) and Optuna's journal
# storage, all in the same run. Prints each run and a table of medians.
#
# usage: benchmarks/overhead.sh [RUNS]        (default 3 runs)
# env:   RANKTUNE  the binary (default: build-bench/apps/ranktune, else build/apps/ranktune,
#                  else ranktune in PATH)
#        NO_OPTUNA=1 skips the Optuna baseline
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
runs=${1:-3}
trials=2000 workers=8 step=0.05
ideal=$(awk -v n=$trials -v s=$step -v w=$workers 'BEGIN { printf "%.3f", n * s / w }')

if [[ -z "${RANKTUNE:-}" ]]; then
  for c in "$root/build-bench/apps/ranktune" "$root/build/apps/ranktune" "$(command -v ranktune || true)"; do
    [[ -n "$c" && -x "$c" ]] && { RANKTUNE=$c; break; }
  done
fi
[[ -x "${RANKTUNE:-}" ]] || { echo "overhead.sh: no ranktune binary; set RANKTUNE" >&2; exit 2; }
PY=/usr/bin/python3   # Debian's python: h5py and python3-optuna live there
[[ $(id -u) == 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
optuna=0
if [[ -z "${NO_OPTUNA:-}" ]] && "$PY" -c 'import optuna' 2>/dev/null; then optuna=1; fi

tmp=$(mktemp -d /tmp/ranktune-overhead.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

echo "overhead: $trials trials x $step s on $workers workers, ideal $ideal s, $runs runs; $(nproc) cores"
echo "ranktune: $RANKTUNE; optuna baseline: $([[ $optuna == 1 ]] && "$PY" -c 'import optuna; print(optuna.__version__)' || echo 'not available')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
rows=$tmp/rows.tsv   # method run wall span
for run in $(seq 1 "$runs"); do
  # 1. The floor: 8 bare processes, each 250 sequential sleeps of 0.05 s. Each one prints
  #    its own loop time; the span is the slowest loop, the wall includes interpreter start.
  t0=$(now)
  for w in $(seq 1 $workers); do
    "$PY" -c "import time
t = time.perf_counter()
for _ in range($trials // $workers): time.sleep($step)
print(time.perf_counter() - t)" >"$tmp/sleep_${run}_$w.txt" &
  done
  wait
  t1=$(now)
  printf 'sleep-floor\t%s\t%s\t%s\n' "$run" "$(elapsed "$t0" "$t1")" \
    "$(cat "$tmp"/sleep_"${run}"_*.txt | sort -g | tail -1)" >>"$rows"

  # 2. ranktune, self-launched (mpirun -np 9 --bind-to none --oversubscribe).
  t0=$(now)
  "$RANKTUNE" run "$here/overhead.toml" --np $workers --results "$tmp/o_$run.h5" >"$tmp/ranktune_$run.log" 2>&1 \
    || { cat "$tmp/ranktune_$run.log" >&2; echo "overhead.sh: ranktune run failed" >&2; exit 1; }
  t1=$(now)
  printf 'ranktune\t%s\t%s\t%s\n' "$run" "$(elapsed "$t0" "$t1")" \
    "$("$PY" "$here/analyze_trials.py" "$tmp/o_$run.h5" --span-only)" >>"$rows"
  "$PY" "$here/analyze_trials.py" "$tmp/o_$run.h5" --step $step | sed 's/^/    /' >"$tmp/analysis_$run.txt"
  rm -rf "$tmp/o_$run.h5" "$tmp/o_$run.h5.logs"

  note=""
  # 3. Optuna 3.1, JournalFileStorage, random sampler, 8 processes.
  #    A run that loses a worker (Optuna 3.1's journal can hand a reader a half-written
  #    line: JSONDecodeError) is reported and left out of the medians.
  if [[ $optuna == 1 ]]; then
    t0=$(now)
    if "$PY" "$here/overhead_optuna.py" "$tmp/journal_$run.log" --trials $trials --workers $workers \
        --step $step >"$tmp/optuna_$run.txt" 2>&1; then
      t1=$(now)
      printf 'optuna-journal\t%s\t%s\t%s\n' "$run" "$(elapsed "$t0" "$t1")" \
        "$(awk '/^optuna_span/ { print $2 }' "$tmp/optuna_$run.txt")" >>"$rows"
    else
      note="  optuna-journal  FAILED: $(grep -m1 -o '[A-Za-z]*Error[^)]*' "$tmp/optuna_$run.txt" || true); $(grep -m1 '^optuna:' "$tmp/optuna_$run.txt" || true)"
      echo "optuna-journal" >>"$tmp/optuna_failures"
    fi
    rm -f "$tmp/journal_$run.log"*
  fi
  echo "run $run:"
  awk -F'\t' -v r="$run" -v i="$ideal" '$2 == r {
    printf "  %-15s wall %7.3f s (%.3fx)  span %7.3f s (%.3fx)\n", $1, $3, $3 / i, $4, $4 / i }' "$rows"
  [[ -n "$note" ]] && echo "$note"
  cat "$tmp/analysis_$run.txt"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Medians per method; ratios against the ideal and against the sleep floor of the same runs.
failed=$( [[ -f "$tmp/optuna_failures" ]] && wc -l <"$tmp/optuna_failures" || echo 0 )
"$PY" - "$rows" "$ideal" "$runs" "$failed" <<'PYEOF'
import statistics as st, sys
rows, ideal, runs, optuna_failed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = {}
for line in open(rows):
    m, _, wall, span = line.rstrip("\n").split("\t")
    data.setdefault(m, []).append((float(wall), float(span)))
med = {m: (st.median(w for w, _ in v), st.median(s for _, s in v), len(v)) for m, v in data.items()}
fw, fs, _ = med["sleep-floor"]
print(f"\nmedians over {runs} runs (wall: whole command incl. mpirun/python start-up; "
      f"span: the experiment's own time)")
print(f"{'method':<16}{'n':>3}{'wall s':>9}{'span s':>9}{'ideal s':>9}{'wall/ideal':>12}"
      f"{'span/ideal':>12}{'wall/floor':>12}{'span/floor':>12}")
for m in ("sleep-floor", "ranktune", "optuna-journal"):
    if m not in med:
        continue
    w, s, n = med[m]
    print(f"{m:<16}{n:>3}{w:>9.3f}{s:>9.3f}{ideal:>9.3f}{w/ideal:>12.3f}{s/ideal:>12.3f}"
          f"{w/fw:>12.3f}{s/fs:>12.3f}")
if optuna_failed:
    print(f"optuna-journal: {optuna_failed} of {runs} runs lost a worker (JSONDecodeError) and are not in the medians")
print("target: ranktune <= 1.05 x ideal; reference: Ray Tune 1.14, Optuna 3.1 journal 1.08 (design.md)")
PYEOF
