#!/usr/bin/env bash
# Runs every side-by-side comparison in benchmarks/ (ranktune against a baseline measured in
# the same run: Optuna, PyTorch, dd, bare HDF5) and writes benchmarks/RESULTS.md: one section
# per comparison with its command, its table, the versions and the machine.
#
# Usage: benchmarks/run_all.sh [--quick] [--out FILE] [BUILD_DIR]
#   --quick   about 6 minutes on 2 cores (340 s at 34228a5, Optuna's runs cached) before the
#             multi-objective suite, which adds 2-4 (its random pairs: 2.2 CPU minutes at
#             f620dbd; about 8 more the first time, for Optuna's runs): the quality suite's quick plan
#             (Branin and Hartmann-6, 810 steps, 1 and 8 workers, 5 seeds), the multi-objective
#             suite's quick plan (ZDT1-3 and DTLZ2, 3,000 steps, 8 workers, 5 seeds), TPE ask
#             cost up to 1,000 observations, the dispatch overhead once, the Fashion-MNIST mlp
#             search against Optuna for 2 minutes per tool and one seed; the rest is skipped
#             and says so.
#   Without --quick: the full quality suite (3 functions x 2 budgets x 1 and 8 workers x 10
#   seeds: hours on 2 cores the first time; Optuna's runs are cached in BUILD_DIR/quality-cache
#   and reused), the multi-objective one (4 functions x 1 and 8 workers x 5 seeds), the mlp
#   search (3 tools x 3 seeds x 5 minutes), and every other comparison with its default
#   repetitions.
# The binaries come from BUILD_DIR (default: build); build them with
#   cmake --build build -j2 --target ranktune bench_quality bench_mo_quality bench_tpe bench_mlp bench_recording
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
quick=0
out="$here/RESULTS.md"
build="$here/../build"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --smoke) quick=2; shift ;;  # the smoke test: tiny quality and mlp plans only
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "run_all.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build="$1"; shift ;;
  esac
done
build="$(cd "$build" && pwd)"
for bin in apps/ranktune benchmarks/bench_quality benchmarks/bench_mo_quality benchmarks/bench_tpe benchmarks/bench_mlp; do
  [[ -x "$build/$bin" ]] || { echo "run_all.sh: no $build/$bin: build it first (see --help)" >&2; exit 2; }
done
py=/usr/bin/python3
"$py" -c 'import optuna, scipy, numpy' 2>/dev/null ||
  { echo "run_all.sh: needs Debian's python3-optuna and python3-scipy (scripts/setup.sh installs them)" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
svg_dir="$(dirname "$out")/results"
mkdir -p "$svg_dir"
started=$SECONDS

section() {  # TITLE COMMAND...: runs COMMAND, appends its output under TITLE
  local title="$1"; shift
  local t0=$SECONDS rc=0
  echo "run_all.sh: $title ..." >&2
  "$@" >"$tmp/section.out" 2>"$tmp/section.err" || rc=$?
  {
    echo "## $title"
    echo
    echo '```'
    echo "\$ ${*/#$here\//benchmarks/}"
    echo '```'
    echo
    if [[ $rc -ne 0 ]]; then
      echo "**Failed (exit $rc).** Its last lines:"
      echo '```'
      tail -n 15 "$tmp/section.err"
      echo '```'
    elif [[ "$title" == Search* ]]; then
      cat "$tmp/section.out"
    else
      echo '```'
      cat "$tmp/section.out"
      echo '```'
    fi
    echo
    echo "($((SECONDS - t0)) s)"
    echo
  } >>"$tmp/body.md"
}

skipped() { printf '## %s\n\nSkipped by --quick: run `benchmarks/run_all.sh` without it.\n\n' "$1" >>"$tmp/body.md"; }

mlp_data="${RANKTUNE_DATA_DIR:-/usr/share/datasets/fashion-mnist}"
mlp_search() {  # PLAN_FLAG TITLE_SUFFIX: the Fashion-MNIST mlp search, when the data is there
  local title="Search of the Fashion-MNIST mlp against Optuna at equal wall time$2"
  if ! compgen -G "$mlp_data/train-images-idx3-ubyte*" >/dev/null; then
    printf '## %s\n\nSkipped: no Fashion-MNIST in %s (install Debian'"'"'s dataset-fashion-mnist, or set RANKTUNE_DATA_DIR).\n\n' \
      "$title" "$mlp_data" >>"$tmp/body.md"
    return
  fi
  section "$title" "$py" "$here/quality/mlp_suite.py" $1 --build "$build"
}

: >"$tmp/body.md"
if [[ $quick -eq 2 ]]; then
  section "Search quality against Optuna (smoke plan)" \
    "$py" "$here/quality/suite.py" --smoke --bench "$build/benchmarks/bench_quality" \
    --cache "$tmp/cache" --out - --svg-dir "$svg_dir" --svg-link results -j 2
  section "Search quality against Optuna, multi-objective (smoke plan)" \
    "$py" "$here/quality/mo_suite.py" --smoke --bench "$build/benchmarks/bench_mo_quality" \
    --cache "$tmp/cache" --out - -j 2
  mlp_search --smoke " (smoke plan)"
elif [[ $quick -eq 1 ]]; then
  section "Search quality against Optuna (quick plan)" \
    "$py" "$here/quality/suite.py" --quick --bench "$build/benchmarks/bench_quality" \
    --cache "$build/quality-cache" --out - --svg-dir "$svg_dir" --svg-link results -j 2
  section "Search quality against Optuna, multi-objective (quick plan)" \
    "$py" "$here/quality/mo_suite.py" --quick --bench "$build/benchmarks/bench_mo_quality" \
    --cache "$build/quality-cache" --out - -j 2
  mlp_search --quick " (quick plan)"
  section "TPE ask cost against Optuna's TPESampler" "$here/tpe_compare.sh" "$build" 100 1000
  section "Dispatch overhead against Optuna (journal storage)" env RANKTUNE="$build/apps/ranktune" "$here/overhead.sh" 1
  skipped "MLP training against PyTorch"
  skipped "Checkpoint bandwidth against dd"
else
  section "Search quality against Optuna" \
    "$py" "$here/quality/suite.py" --bench "$build/benchmarks/bench_quality" \
    --cache "$build/quality-cache" --out - --svg-dir "$svg_dir" --svg-link results -j 2
  section "Search quality against Optuna, multi-objective" \
    "$py" "$here/quality/mo_suite.py" --bench "$build/benchmarks/bench_mo_quality" \
    --cache "$build/quality-cache" --out - -j 2
  mlp_search "" ""
  section "TPE ask cost against Optuna's TPESampler" "$here/tpe_compare.sh" "$build"
  section "Dispatch overhead against Optuna (journal storage)" env RANKTUNE="$build/apps/ranktune" "$here/overhead.sh" 3
  section "MLP training against PyTorch" "$here/mlp_vs_torch.sh" "$build" 3
  section "Checkpoint bandwidth against dd" env RANKTUNE="$build/apps/ranktune" "$here/checkpoint_bandwidth.sh" 2
fi

{
  echo "# Side-by-side results"
  echo
  echo "Written by \`benchmarks/run_all.sh$([[ $quick -eq 1 ]] && echo ' --quick')$([[ $quick -eq 2 ]] && echo ' --smoke')\` on $(date -u +%Y-%m-%d),"
  echo "ranktune $(git -C "$here/.." describe --always --dirty 2>/dev/null || echo '(no git)'), Optuna $("$py" -c 'import optuna; print(optuna.__version__)'),"
  echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))," \
       "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), in $((SECONDS - started)) s."
  echo "How each comparison is made, and what its figures mean: benchmarks/README.md."
  echo
  cat "$tmp/body.md"
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "run_all.sh: wrote $out" >&2
