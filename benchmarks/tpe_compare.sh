#!/usr/bin/env bash
# TPE ask cost, ranktune vs Optuna's TPESampler, measured in the same run on the same problem
# (6 uniform floats + one 4-way categorical), medians in ms per ask.
# Usage: benchmarks/tpe_compare.sh [BUILD_DIR] [N ...]   (default build, 100 1000 10000)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../build}"
shift || true
bench="$build/benchmarks/bench_tpe"
[[ -x "$bench" ]] || { echo "no $bench: build it with cmake --build $build --target bench_tpe" >&2; exit 1; }
ours="$(mktemp)"; theirs="$(mktemp)"
trap 'rm -f "$ours" "$theirs"' EXIT
"$bench" "$@" >"$ours"
/usr/bin/python3 "$here/tpe_optuna.py" "$@" >"$theirs"
optuna_version="$(/usr/bin/python3 -c 'import optuna; print(optuna.__version__)')"
printf '%-13s %12s %14s %8s\n' observations ranktune_ms "optuna${optuna_version}_ms" ratio
join <(tail -n +2 "$ours" | awk '{print $1, $3}') <(tail -n +2 "$theirs" | awk '{print $1, $3}') |
  awk '{printf "%-13s %12.3f %14.3f %7.0fx\n", $1, $2, $3, ($2 > 0 ? $3 / $2 : 0)}'
