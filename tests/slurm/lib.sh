# shellcheck shell=bash
# Shared set-up for the real-Slurm tests (label `slurm`). Sourced by each test script; ctest
# passes RANKTUNE, SRC and the cluster's RANKTUNE_SLURM_DIR/RANKTUNE_SLURM_PORT. Under ctest the
# slurm.cluster fixture has started the private cluster (scripts/local-slurm.sh); a script run
# alone starts it here and stops it again when it ends.
source "$(dirname "${BASH_SOURCE[0]}")/../mpi/lib.sh"
CLUSTER=$SRC/scripts/local-slurm.sh
if ! "$CLUSTER" status > /dev/null 2>&1; then
  "$CLUSTER" start > /dev/null || fail "the local Slurm cluster did not start (see the messages above)"
  trap 'show_cores; rm -rf "$WORK"; "$CLUSTER" stop' EXIT
fi
eval "$("$CLUSTER" env)"
# Slurm clients would otherwise block for minutes if the controller went away mid-test.
SQUEUE=$(type -P squeue) SCONTROL=$(type -P scontrol)
squeue() { timeout 10 "$SQUEUE" "$@"; }
scontrol() { timeout 10 "$SCONTROL" "$@"; }

# show_log FILE...: the job's log, for a failure message.
show_log() { for f in "$@"; do [[ -f $f ]] && { echo "== $f"; cat "$f"; }; done >&2; return 0; }
