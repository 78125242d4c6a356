#!/usr/bin/env bash
# `srun -n 5 ranktune run` without sbatch: Open MPI starts through PMIx, rank 0 drives 4
# workers, the results file is complete and its stack says the job ran under srun.
source "$(dirname "$0")/lib.sh"
timeout 120 srun -n 5 --mpi=pmix "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/q.h5" \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "srun -n 5 ranktune run exited $?"; }
grep -q "on 4 workers" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "expected 4 workers"; }
check_results "$WORK/q.h5" 24 20
"$PY" - "$WORK/q.h5" << 'PY' || fail "stack"
import sys, h5py
with h5py.File(sys.argv[1], "r", swmr=True) as f:
    s = {k: v.decode() for k, v in f["stack"].attrs.items()}
    w = f["workers"][:]
assert s["slurm_launch"] == "srun" and s["slurm_ntasks"] == "5" and s["slurm_job_id"].isdigit(), s
assert s["world_size"] == "5" and sorted(w["rank"]) == [1, 2, 3, 4], (s["world_size"], w["rank"])
assert sorted(w["local_index"]) == [0, 1, 2, 3], w["local_index"]
print("ok: srun job", s["slurm_job_id"], "on", s["slurm_job_nodelist"])
PY
