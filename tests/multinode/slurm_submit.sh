#!/usr/bin/env bash
# Multi-node Slurm (scripts/netns-slurm.sh: slurmctld on node1, a slurmd on each of 3 hosts):
#  1. `ranktune slurm submit --nodes 3 --workers 5 --wait`: the generated script's
#     `srun --mpi=pmix` puts the driver and the workers on three hosts (2 tasks per node,
#     block distribution), the job's /stack has slurm_nnodes = 3, the node list and every host;
#     the script's SLURM_PMIX_FENCE=ring leaves ranktune nothing to warn about.
#  2. A hand-written job script (docs/guide/slurm.md) that launches with
#     mpirun inside the allocation (its daemons start through srun) runs on 3 hosts too.
source "$(dirname "$0")/lib.sh"
start_slurm 3
sets=(--set experiment.num_samples=12 --set trainable.seconds_per_step=0.005)

# 1.
slogin "$RANKTUNE" slurm submit "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/q.h5" --nodes 3 --workers 5 --time 5 \
  "${sets[@]}" --wait > "$WORK/submit.out" 2> "$WORK/submit.err" \
  || { rc=$?; cat "$WORK/submit.err"; show_log "$WORK"/q-*.out; fail "slurm submit --nodes 3 --wait exited $rc"; }
job=$(cat "$WORK/submit.out")
[[ $job =~ ^[0-9]+$ ]] || fail "submit printed '$job', not a job id"
grep -q '^#SBATCH --nodes=3 ' "$WORK/q.sbatch" || fail "the script does not ask for 3 nodes"
# The script exports SLURM_PMIX_FENCE=ring, so ranktune has no fence to warn about.
! grep -q 'warning: srun --mpi=pmix' "$WORK/q-$job.out" || { show_log "$WORK/q-$job.out"; fail "the job warned about the PMIx fence"; }
"$PY" - "$WORK/q.h5" "$job" <<'PY' || { show_log "$WORK/q-$job.out"; fail "results of the 3-node job"; }
import sys, h5py
path, job = sys.argv[1], sys.argv[2]
with h5py.File(path, "r") as f:
    s = {k: v.decode() for k, v in f["stack"].attrs.items()}
    w = {int(x["rank"]): (x["host"].decode(), int(x["local_index"])) for x in f["workers"][:]}
    t = f["trials"][:]
assert len(t) == 12 and set(t["status"]) == {b"TERMINATED"}, t["status"]
assert s["slurm_job_id"] == job and s["slurm_nnodes"] == "3" and s["slurm_ntasks"] == "6", s
assert s["slurm_job_nodelist"] == "node[1-3]" and s["slurm_launch"] == "srun", s
assert s["hosts"] == "node1,node2,node3" and s["driver_host"] == "node1", s
assert w == {1: ("node1", 0), 2: ("node2", 0), 3: ("node2", 1), 4: ("node3", 0), 5: ("node3", 1)}, w
assert {x.decode() for x in t["hosts"]} == {"node1", "node2", "node3"}, set(t["hosts"])
print(f"ok: job {job} on {s['slurm_job_nodelist']}: driver on node1, workers {w}")
PY

# 2.
cat > "$WORK/hand.sbatch" <<SH
#!/bin/bash
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=2
#SBATCH --output=$WORK/hand-%j.out
mpirun --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/hand.h5" ${sets[*]}
SH
hjob=$(slogin sbatch --parsable --wait "$WORK/hand.sbatch") || { show_log "$WORK"/hand-*.out; fail "the hand-written job failed"; }
"$PY" - "$WORK/hand.h5" <<'PY' || { show_log "$WORK/hand-$hjob.out"; fail "results of the hand-written job"; }
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    s = {k: v.decode() for k, v in f["stack"].attrs.items()}
    hosts = sorted({x["host"].decode() for x in f["workers"][:]})
    t = f["trials"][:]
assert len(t) == 12 and set(t["status"]) == {b"TERMINATED"}, t["status"]
assert s["slurm_nnodes"] == "3" and s["slurm_launch"] == "mpirun in job" and s["hosts"] == "node1,node2,node3", s
assert hosts == ["node1", "node2", "node3"], hosts
print(f"ok: a hand-written script with mpirun in the job ran on {hosts}")
PY
