#!/usr/bin/env bash
# MPI_Init's closing barrier spans the nodes in ranktune's job script. Open MPI 4.1 leaves
# MPI_Init after a zero-byte PMIx fence; Slurm 22.05's mpi/pmix runs such a fence as a tree
# that, in slurmstepd, has no edges, so each node completes it alone. A rank can then leave
# MPI_Init and send to a rank on another node that has not registered its message handlers
# yet, and that rank dies with SIGSEGV inside MPI_Init (about 1 launch in 100 on 3 namespace
# hosts, 2 tasks each; docs/guide/multinode.md). The job script that `ranktune slurm script`
# writes exports SLURM_PMIX_FENCE=ring, whose fences wait for every node.
# The probe (pmix_barrier.cc) delays the ranks of node3 by 2 s before MPI_Finalize, which is
# the same zero-byte fence as the end of MPI_Init: with the script's setting every rank waits
# for them; without it (the script before this fix) the ranks of node1 and node2 return at
# once, which this test prints for comparison.
# With LAUNCHES=N in the environment it also counts crashed launches of `pmix_barrier
# exchange` (every rank sends as soon as MPI_Init returns) over N launches each, with and
# without the setting: the figure in docs/guide/multinode.md (N=600: about 15 minutes each way).
source "$(dirname "$0")/lib.sh"
probe=${1:?usage: slurm_pmix_barrier.sh PMIX_BARRIER_PROGRAM}
start_slurm 3
on node1 "$RANKTUNE" slurm script "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/q.h5" --nodes 3 --workers 5 \
  > "$WORK/q.sbatch" || fail "slurm script exited $?"
grep -q '^export SLURM_PMIX_FENCE=' "$WORK/q.sbatch" || fail "the job script does not set SLURM_PMIX_FENCE: $(grep '^export' "$WORK/q.sbatch")"
# The script's SLURM_PMIX_* lines, run before srun for LABEL script (none for LABEL bare).
declare -A lines=([script]="$(grep '^export SLURM_PMIX_' "$WORK/q.sbatch")" [bare]='')

# launch LABEL ARG: the probe with ARG over 3 nodes (2 ranks each), after lines[LABEL].
launch() { slogin bash -c 'unset SLURM_PMIX_FENCE; eval "$1"; shift; srun --nodes=3 --ntasks=6 --mpi=pmix "$@"' _ "${lines[$1]}" "$probe" "$2"; }
# finalize_wait LABEL: launch LABEL 2 (node3 waits 2 s); prints the longest MPI_Finalize on
# node1 and node2.
finalize_wait() {
  local out=$WORK/$1.out
  launch "$1" 2 > "$out" 2>&1 || { cat "$out" >&2; fail "the probe ($1) exited $?"; }
  (($(grep -c '^rank [0-9]* node [0-9] finalize ' "$out") == 6)) || { cat "$out" >&2; fail "the probe ($1) did not report 6 ranks"; }
  awk '$1 == "rank" && $4 != 2 && $6 > m {m = $6} END {printf "%.3f\n", m + 0}' "$out"
}
bare=$(finalize_wait bare)
echo "without SLURM_PMIX_FENCE: the ranks of node1 and node2 waited at most $bare s for node3's"
got=$(finalize_wait script)
echo "with the job script's setting: at most $got s"
awk -v t="$got" 'BEGIN {exit !(t >= 1.5)}' || { cat "$WORK/script.out" >&2; fail "with the job script's SLURM_PMIX_* settings, \
MPI_Finalize's fence on node1 and node2 did not wait for node3's ranks (at most $got s of 2 s): the fence is not a barrier across the nodes"; }
echo "ok: the job script's PMIx fence is a barrier across the nodes ($got s for a 2 s delay; without the setting $bare s)"

# crashes LABEL N: how many of N launches of the exchange failed (LABEL script or bare).
crashes() {
  local i bad=0
  for ((i = 0; i < $2; i++)); do
    launch "$1" exchange > "$WORK/exchange.out" 2>&1 || { bad=$((bad + 1)); grep -m1 'Signal:' "$WORK/exchange.out" >&2; }
  done
  echo "$bad"
}
if ((${LAUNCHES:-0} > 0)); then
  echo "launches of the exchange that failed: with the job script's setting $(crashes script "$LAUNCHES") of $LAUNCHES," \
    "without it $(crashes bare "$LAUNCHES") of $LAUNCHES"
fi
