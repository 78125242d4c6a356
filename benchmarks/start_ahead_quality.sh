#!/usr/bin/env bash
# Does start-ahead cost search quality? Start-ahead (search/controller_ahead.cc) asks the
# searcher for a worker's next trial while the worker's current trial still runs, so a
# model-based searcher suggests with up to one observation per worker fewer. This runs
# start_ahead_quality.toml (TPE, hartmann6, 150 trials on 8 workers) through MPI for SEEDS
# seeds twice: as it is (start-ahead on), and with `checkpoint.at_end = true`, under which
# no Start goes ahead (every worker waits for the driver's answer to its last result; the
# synthetic trainable's checkpoint is a few bytes). Prints the best objective's regret per
# seed and mode, their medians and means, how often each mode won, and, where SciPy is
# installed, a paired Wilcoxon signed-rank test.
#
# usage: benchmarks/start_ahead_quality.sh [SEEDS]     (default 40; about 1 s per run)
# env:   RANKTUNE  the binary (default: build-bench/apps/ranktune, else build/apps/ranktune,
#                  else ranktune in PATH)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
seeds=${1:-40}
if [[ -z "${RANKTUNE:-}" ]]; then
  for c in "$root/build-bench/apps/ranktune" "$root/build/apps/ranktune" "$(command -v ranktune || true)"; do
    [[ -n "$c" && -x "$c" ]] && { RANKTUNE=$c; break; }
  done
fi
[[ -x "${RANKTUNE:-}" ]] || { echo "start_ahead_quality.sh: no ranktune binary; set RANKTUNE" >&2; exit 2; }
PY=/usr/bin/python3
[[ $(id -u) == 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d /tmp/ranktune-ahead-quality.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "start_ahead_quality: $seeds seeds x 2 modes; $RANKTUNE"
for seed in $(seq 1 "$seeds"); do
  for mode in ahead wait; do
    extra=()
    [[ $mode == wait ]] && extra=(--set checkpoint.at_end=true)
    "$RANKTUNE" run "$here/start_ahead_quality.toml" --np 8 --results "$tmp/${mode}_$seed.h5" \
      --set experiment.seed="$seed" "${extra[@]}" >"$tmp/${mode}_$seed.log" 2>&1 \
      || { cat "$tmp/${mode}_$seed.log" >&2; echo "start_ahead_quality.sh: run $mode $seed failed" >&2; exit 1; }
  done
done
"$PY" - "$tmp" "$seeds" <<'PYEOF'
import statistics as st, sys, h5py, numpy as np
tmp, seeds = sys.argv[1], int(sys.argv[2])
optimum = -3.32237  # hartmann6
regret = {}
for mode in ("ahead", "wait"):
    regret[mode] = []
    for seed in range(1, seeds + 1):
        with h5py.File(f"{tmp}/{mode}_{seed}.h5", "r") as f:
            regret[mode].append(float(np.min(f["results"]["objective"])) - optimum)
for mode, v in regret.items():
    print(f"{mode:>5}: regret median {st.median(v):.3f}, mean {st.mean(v):.3f}  ({' '.join(f'{x:.3f}' for x in v)})")
a, w = regret["ahead"], regret["wait"]
print(f"start-ahead found the better point in {sum(x < y for x, y in zip(a, w))} of {seeds} seeds, "
      f"the worse in {sum(x > y for x, y in zip(a, w))}")
try:
    from scipy import stats
    r = stats.wilcoxon(a, w)
    print(f"paired Wilcoxon signed-rank: statistic {r.statistic:.1f}, p = {r.pvalue:.3f}")
except ImportError:
    print("(SciPy is not installed: no Wilcoxon test)")
PYEOF
