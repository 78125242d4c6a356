# shellcheck shell=bash
# Shared set-up for the multi-node tests (label `multinode`): each test starts its own cluster
# of network namespaces (scripts/netns-cluster.sh: hosts node1..N at 10.213.0.1..N, one file
# system) and stops it when it ends, also on failure. Sourced by each test script; ctest passes
# RANKTUNE, SRC and RANKTUNE_NETNS_PREFIX (derived from the build directory, so two build trees
# get two clusters). Every client of the cluster (mpirun, Slurm's commands, ranktune) runs
# inside a namespace (`on nodeI CMD`), also those that only read files; the cluster's
# addresses exist nowhere else.
source "$(dirname "${BASH_SOURCE[0]}")/../mpi/lib.sh"
CLUSTER=$SRC/scripts/netns-cluster.sh
export RANKTUNE_NETNS_PREFIX=${RANKTUNE_NETNS_PREFIX:-rtn-}
NETNS_STARTED=0
# Tests add their own clean-up (a Slurm cluster) here; it runs before the namespaces go.
CLEANUP=()

skip() { echo "SKIP: $*"; exit 77; }

cleanup() {
  local rc=$? c
  for c in "${CLEANUP[@]}"; do eval "$c" || true; done
  ((NETNS_STARTED == 0)) || "$CLUSTER" stop 8>&- || true
  show_cores
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# start_cluster N: N hosts node1..N, or a skip (exit 77) naming what this machine lacks.
start_cluster() {
  [[ $(id -u) == 0 ]] || skip "the multi-node tests make network namespaces, which needs root"
  local tool
  for tool in ip unshare nsenter flock; do
    command -v "$tool" > /dev/null || skip "$tool is missing (apt-get install iproute2 util-linux; scripts/setup.sh does)"
  done
  # A container without CAP_SYS_ADMIN/CAP_NET_ADMIN cannot make namespaces: say so and skip.
  local probe=${RANKTUNE_NETNS_PREFIX}probe err
  ip netns del "$probe" 2> /dev/null || true
  if ! err=$(ip netns add "$probe" 2>&1); then skip "cannot create a network namespace here: $err"; fi
  ip netns del "$probe"
  # One test at a time per prefix, also across ctest runs of one build tree: the lock (fd 8,
  # closed for everything the test starts, so no leftover daemon can hold it) goes with this
  # shell, and a cluster left by a killed test is cleared by the next start.
  mkdir -p /run/ranktune-netns
  exec 8> "/run/ranktune-netns/${RANKTUNE_NETNS_PREFIX}test.lock"
  flock -w 400 8 || fail "another test held the cluster ${RANKTUNE_NETNS_PREFIX}* for 400 s"
  NETNS_STARTED=1
  "$CLUSTER" start "$1" 8>&- || fail "the namespace cluster did not start"
  # The guard: the subnet is blackholed in the root namespace while the cluster runs.
  ip route show 10.213.0.0/24 | grep -q '^blackhole' || fail "no blackhole route for 10.213.0.0/24 in the root namespace"
}

# on HOST CMD...: CMD on HOST (node1, ...), with its host name.
on() { "$CLUSTER" exec "$@" 8>&-; }

# cluster_mpirun SLOTS SECONDS MPIRUN_ARGS...: mpirun on node1 over the cluster, bounded;
# SLOTS is a comma-separated list of slots per host ("3,2,2": 3 on node1, ...).
cluster_mpirun() {
  local slots=$1 limit=$2
  shift 2
  # shellcheck disable=SC2046
  on node1 timeout "$limit" mpirun $("$CLUSTER" mpirun-args ${slots//,/ }) --bind-to none "$@"
}

# start_slurm N: a Slurm cluster on N new hosts (scripts/netns-slurm.sh; its state directory
# is RANKTUNE_NETNS_SLURM_DIR, which ctest sets per build tree), stopped when the test ends.
SLURM=$SRC/scripts/netns-slurm.sh
start_slurm() {
  for tool in munged slurmctld slurmd sbatch srun; do
    command -v "$tool" > /dev/null || PATH=$PATH:/usr/sbin command -v "$tool" > /dev/null \
      || skip "$tool is missing (apt-get install slurm-wlm munge libpmix-dev; scripts/setup.sh does)"
  done
  start_cluster "$1"
  CLEANUP+=('"$SLURM" stop 8>&-')
  "$SLURM" start "$1" 8>&- || fail "the Slurm cluster on the namespaces did not start"
}
# slogin CMD...: CMD on node1 (the login node) with SLURM_CONF set, bounded.
slogin() { "$SLURM" login timeout "${SLOGIN_TIMEOUT:-30}" "$@" 8>&-; }
# show_log FILE...: a job's log, for a failure message.
show_log() { for f in "$@"; do [[ -f $f ]] && { echo "== $f"; cat "$f"; }; done >&2; return 0; }

# ready_to_kill FILE OUT: what a SWMR reader of the results FILE sees now, its rows saved
# into OUT (JSON); prints 1 once there are 100 of them and a trial on node3 is well inside
# its 20 steps (1 to 12 recorded), else 0. The node-failure tests kill node3 then, so that
# the kill cuts a trial, which the resume must retry on the hosts left: a kill between two
# of node3's trials, or in a trial's first step, would cut nothing.
ready_to_kill() {
  "$PY" - "$@" <<'PY' 2> /dev/null || echo 0
import json, sys, h5py
with h5py.File(sys.argv[1], "r", swmr=True) as f:
    r, t = f["results"][:], f["trials"][:]
json.dump([[int(x["trial_id"]), int(x["attempt"]), int(x["iteration"]), float(x["loss"])] for x in r], open(sys.argv[2], "w"))
on3 = {int(x["trial_id"]) for x in t if x["status"] == b"RUNNING" and x["hosts"] == b"node3"}
cut = [i for i in on3 if 1 <= max([int(x["iteration"]) for x in r if x["trial_id"] == i], default=0) <= 12]
print(1 if len(r) >= 100 and cut else 0)
PY
}
