#!/usr/bin/env bash
# mpirun inside an sbatch script: every rank inherits the batch shell's SLURM_PROCID=0, so
# roles must come from MPI_Comm_rank. The job first shows that premise (every rank sees
# SLURM_PROCID=0), then runs the quickstart on 3 workers + 1 driver to completion.
source "$(dirname "$0")/lib.sh"
cat > "$WORK/job.sh" << EOF2
#!/bin/bash
#SBATCH --ntasks=4
#SBATCH --time=5
#SBATCH --output=$WORK/job-%j.out
mpirun --bind-to none bash -c 'echo "premise: OMPI_COMM_WORLD_RANK=\$OMPI_COMM_WORLD_RANK SLURM_PROCID=\$SLURM_PROCID"'
mpirun --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/q.h5"
EOF2
job=$(timeout 180 sbatch --parsable --wait "$WORK/job.sh") || { show_log "$WORK"/job-*.out; fail "the sbatch job failed"; }
log=$WORK/job-$job.out
[[ $(grep -c '^premise: .* SLURM_PROCID=0$' "$log") == 4 ]] || { show_log "$log"; fail "expected all 4 ranks to see SLURM_PROCID=0"; }
grep -q "on 3 workers" "$log" || { show_log "$log"; fail "expected 3 workers"; }
check_results "$WORK/q.h5" 24 20
"$PY" - "$WORK/q.h5" "$job" << 'PY' || fail "stack"
import sys, h5py
with h5py.File(sys.argv[1], "r", swmr=True) as f:
    s = {k: v.decode() for k, v in f["stack"].attrs.items()}
    w = f["workers"][:]
    starts = [e for e in f["events"][:] if e["kind"] == b"start"]
assert s["slurm_launch"] == "mpirun in job" and s["slurm_job_id"] == sys.argv[2], s
assert s["world_size"] == "4" and sorted(w["rank"]) == [1, 2, 3], (s["world_size"], w["rank"])
assert {e["worker"] for e in starts} <= {1, 2, 3}, "a trial ran on a rank that is not a worker"
print("ok: mpirun in sbatch job", sys.argv[2])
PY
