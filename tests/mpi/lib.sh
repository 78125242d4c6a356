# Shared set-up for the real-MPI tests. Sourced by each test script; ctest passes
# RANKTUNE (the binary) and SRC (the repository root) in the environment.
set -euo pipefail
: "${RANKTUNE:?RANKTUNE must point at the ranktune binary}"
: "${SRC:?SRC must point at the repository root}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
PY=/usr/bin/python3   # Debian's python, which has h5py
WORK=$(mktemp -d /tmp/ranktune-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# check_results FILE TRIALS ITERATIONS [STATUS...]: the file and the report must agree.
check_results() { "$PY" "$SRC/tests/mpi/check_results.py" "$RANKTUNE" "$@"; }

# wait_for_rank0 RESULTS LAUNCHER_PID: prints the pid of rank 0 (the driver) of the
# `ranktune run` writing RESULTS, once that file exists; fails (killing the launcher) when it
# does not appear within 10 s. Rank 0 is told apart by Open MPI's OMPI_COMM_WORLD_RANK.
wait_for_rank0() {
  local results=$1 launcher=$2 rank0="" pid
  for _ in $(seq 100); do
    for pid in $(pgrep -f "ranktune run .*$results" || true); do
      if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=0"; then rank0=$pid; fi
    done
    [[ -n $rank0 && -e $results ]] && break
    sleep 0.1
  done
  [[ -n $rank0 ]] || { kill "$launcher"; fail "rank 0 not found"; }
  echo "$rank0"
}

# command_config FILE NAME NUM_SAMPLES MAX_T PROGRAM [TRAINABLE_LINE...]: writes a config of
# NUM_SAMPLES random trials of x in [0, 1] running the command PROGRAM (relative to FILE's
# folder) for up to MAX_T iterations, minimising the loss it reports; each further argument
# is one more line of [trainable] (e.g. "checkpoint = true").
command_config() {
  local file=$1 name=$2 samples=$3 max_t=$4 program=$5
  shift 5
  {
    printf '[experiment]\nname = "%s"\nmetric = "loss"\nmode = "min"\nnum_samples = %s\n' "$name" "$samples"
    printf '[search]\nalgorithm = "random"\n[search.space]\nx = { uniform = [0.0, 1.0] }\n'
    printf '[stop]\nmax_t = %s\n[trainable]\nkind = "command"\ncommand = ["%s"]\n' "$max_t" "$program"
    if (($# > 0)); then printf '%s\n' "$@"; fi
  } > "$file"
}
