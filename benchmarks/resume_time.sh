#!/usr/bin/env bash
# Resume time of a big experiment: a results file of TRIALS finished trials x ITERATIONS
# results each (default 10^4 x 100 = 10^6 results), written by `ranktune simulate` (the same
# ResultsWriter, schema and Recorder as `ranktune run`; checked below against a real run's
# file), then `ranktune run CONFIG --results FILE --resume` on it. Every trial is finished
# and num_samples is met, so the resumed run reads the file, rebuilds the controller, finds
# nothing to do and exits: its wall time minus that of the same resume of a 2-trial file
# (mpirun, MPI_Init, set-up and shutdown) is the cost of reading the file and rebuilding.
# Baseline, in the same run when python3-optuna is installed: Optuna 3.1 loading a
# JournalStorage of as many trials and reports (resume_optuna.py). NO_OPTUNA=1 skips it.
#
# usage: RANKTUNE=build/apps/ranktune benchmarks/resume_time.sh [TRIALS] [ITERATIONS] [RUNS]
set -euo pipefail
RANKTUNE=${RANKTUNE:-build/apps/ranktune}
SRC=$(cd "$(dirname "$0")/.." && pwd)
trials=${1:-10000} iterations=${2:-100} runs=${3:-3}
PY=/usr/bin/python3   # Debian's python: h5py and python3-optuna live there
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d /tmp/ranktune-resume.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

cat > "$tmp/resume.toml" <<TOML
[experiment]
name = "resume_time"
metric = "loss"
mode = "min"
seed = 1
num_samples = $trials

[search]
algorithm = "random"

[search.space]
x1 = { uniform = [-5.0, 5.0] }
x2 = { uniform = [-5.0, 5.0] }

[trainable]
kind = "synthetic"
function = "sphere"
seconds_per_step = 0.001

[stop]
max_t = $iterations
TOML
echo "resume_time: $trials trials x $iterations results; $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# 1. The big file, and a small one of the same experiment for the fixed costs.
t0=$(now)
"$RANKTUNE" simulate "$tmp/resume.toml" --workers 256 --results "$tmp/big.h5" > "$tmp/sim.txt"
echo "simulate: $(elapsed "$t0" "$(now)") s, $(stat -c %s "$tmp/big.h5") bytes"
"$RANKTUNE" simulate "$tmp/resume.toml" --workers 2 --results "$tmp/small.h5" \
  --set experiment.num_samples=2 --set stop.max_t=2 > /dev/null
# A real run of the same space and metrics: its tables must have the simulated file's types.
mpirun -np 2 --bind-to none "$RANKTUNE" run "$tmp/resume.toml" --results "$tmp/real.h5" \
  --set experiment.num_samples=2 --set stop.max_t=2 > "$tmp/real.txt" 2>&1 || { cat "$tmp/real.txt"; exit 1; }
"$PY" - "$tmp/big.h5" "$tmp/real.h5" "$trials" "$iterations" <<'PY'
import sys, h5py
big, real = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
for name in ("trials", "results", "events", "checkpoints", "workers", "checkpoint_data"):
    assert big[name].dtype == real[name].dtype, f"/{name}: simulate writes {big[name].dtype}, run {real[name].dtype}"
assert big.attrs["schema_version"] == real.attrs["schema_version"]
n, r = len(big["trials"]), len(big["results"])
assert n == int(sys.argv[3]) and r == n * int(sys.argv[4]), (n, r)
print(f"schema: simulate and run write the same table types; {n} trials, {r} results")
PY

# 2. Resume each file RUNS times (the file stays finished, so every run does the same work).
resume() {  # FILE [--set ...]: prints the wall seconds of one resume
  local t0 rc=0
  t0=$(now)
  mpirun -np 2 --bind-to none "$RANKTUNE" run "$tmp/resume.toml" --results "$@" --resume > "$tmp/resume.txt" 2>&1 || rc=$?
  local t1; t1=$(now)
  [[ $rc -eq 0 ]] && grep -q "ranktune: resuming" "$tmp/resume.txt" || { cat "$tmp/resume.txt" >&2; echo "resume failed ($rc)" >&2; exit 1; }
  elapsed "$t0" "$t1"
}
for run in $(seq 1 "$runs"); do
  b=$(resume "$tmp/big.h5")
  s=$(resume "$tmp/small.h5" --set experiment.num_samples=2 --set stop.max_t=2)
  echo "run $run: resume of the big file $b s, of the 2-trial file $s s"
  echo "$b $s" >> "$tmp/times"
done
"$PY" - "$tmp/big.h5" "$trials" "$iterations" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t, r = f["trials"][:], len(f["results"])
    resumes = sum(e["kind"] == b"resume" for e in f["events"][:])
assert len(t) == int(sys.argv[2]) and r == len(t) * int(sys.argv[3]), "a resume ran trials again"
assert all(s == b"TERMINATED" for s in t["status"]) and resumes >= 1
PY
big=$(cut -d' ' -f1 "$tmp/times" | median) small=$(cut -d' ' -f2 "$tmp/times" | median)
echo "median resume wall: big $big s, 2-trial $small s; read + rebuild of $trials trials / $((trials * iterations)) results: $(elapsed "$small" "$big") s"

# The read alone: `ranktune report` reads the file through the same ResultsFile::read as
# rank 0 does at resume (all four tables, every row).
t0=$(now); "$RANKTUNE" report "$tmp/big.h5" --top 1 > /dev/null; r1=$(elapsed "$t0" "$(now)")
t0=$(now); "$RANKTUNE" report "$tmp/small.h5" --top 1 > /dev/null; r2=$(elapsed "$t0" "$(now)")
echo "ranktune report (one read of the file): big $r1 s, 2-trial $r2 s"

# 3. The baseline.
if [[ -z "${NO_OPTUNA:-}" ]] && "$PY" -c 'import optuna' 2>/dev/null; then
  mkdir "$tmp/optuna"
  "$PY" "$SRC/benchmarks/resume_optuna.py" "$tmp/optuna" "$trials" "$iterations"
else
  echo "optuna baseline: skipped (python3-optuna not installed, or NO_OPTUNA=1)"
fi
