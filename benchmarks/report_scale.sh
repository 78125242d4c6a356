#!/usr/bin/env bash
# The HTML report at scale: `ranktune report --html` of a file of 10^4 trials and 10^6
# results (tests/data/report_scale.toml, simulated), its size, and how long headless
# Chromium takes to load and paint it (a screenshot of the first 2,000 pixels), against
# the same Chromium painting an empty page in the same run (its start-up floor).
# Usage: RANKTUNE=build/apps/ranktune benchmarks/report_scale.sh [RUNS]
set -euo pipefail
RUNS=${1:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
RANKTUNE=${RANKTUNE:-$SRC/build/apps/ranktune}
BROWSER=$(command -v chromium || true)
[[ -x $RANKTUNE ]] || { echo "no ranktune binary: set RANKTUNE" >&2; exit 2; }
[[ -n $BROWSER ]] || { echo "no chromium (scripts/setup.sh installs it)" >&2; exit 2; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/ranktune-report.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); cores: $(nproc)"
"$RANKTUNE" simulate "$SRC/tests/data/report_scale.toml" --workers 64 --results "$OUT/big.h5" > /dev/null 2>&1
echo "results file: $(stat -c %s "$OUT/big.h5") bytes"
: > "$OUT/empty.html"
paint() { local t0 t1; t0=$(date +%s.%N)
  timeout 300 "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$OUT/profile" --window-size=1280,2000 \
    --screenshot="$OUT/shot.png" "file://$1" > /dev/null 2>&1
  t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}'; }
for run in $(seq "$RUNS"); do
  t0=$(date +%s.%N)
  "$RANKTUNE" report "$OUT/big.h5" --top 100 --html "$OUT/big.html" > /dev/null
  t1=$(date +%s.%N)
  floor=$(paint "$OUT/empty.html")
  page=$(paint "$OUT/big.html")
  echo "run $run: report --html $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s," \
       "page $(stat -c %s "$OUT/big.html") bytes; chromium: $page s (empty page: $floor s)"
done
