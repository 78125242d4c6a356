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
