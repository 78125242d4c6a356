#!/usr/bin/env bash
# `ranktune slurm submit --wait` of a synthetic ASHA experiment: the script lands beside the
# results file, sbatch runs it on 4 workers + 1 driver through srun, the job completes, and
# the results file is complete (every trial TERMINATED, every iteration recorded once, ASHA
# really stopped trials early) and records the job in its stack. `slurm status` then joins
# the job id with the progress.
source "$(dirname "$0")/lib.sh"
resume=()
# Links planted where submit writes the script and the job id (issue 27 item 2; in a shared
# folder another user could plant them, as tests/fault/written_files.sh does for the script):
# each must be replaced, never written through.
echo precious > "$WORK/victim"
ln -s "$WORK/victim" "$WORK/asha.sbatch"
ln -s "$WORK/victim" "$WORK/asha.jobid"
t0=$SECONDS
"$RANKTUNE" slurm submit "$SRC/configs/hartmann6_asha.toml" --results "$WORK/asha.h5" --workers 4 --time 5 \
  --set trainable.seconds_per_step=0.002 "${resume[@]}" --wait > "$WORK/submit.out" 2> "$WORK/submit.err" \
  || { cat "$WORK/submit.err"; show_log "$WORK"/asha-*.out; fail "slurm submit --wait exited $?"; }
job=$(cat "$WORK/submit.out")
[[ $job =~ ^[0-9]+$ ]] || fail "submit printed '$job', not a job id"
echo "job $job done after $((SECONDS - t0)) s"
[[ -f $WORK/asha.sbatch ]] || fail "no script beside the results file"
[[ $(cat "$WORK/victim") == precious ]] || fail "submit wrote through a link: $(head -c 200 "$WORK/victim")"
[[ ! -L $WORK/asha.sbatch && ! -L $WORK/asha.jobid && $(cat "$WORK/asha.jobid") == "$job" ]] \
  || fail "the script or the job id is not a file of its own: $(ls -l "$WORK"/asha.sbatch "$WORK"/asha.jobid)"
grep -q '^#SBATCH --ntasks=5 ' "$WORK/asha.sbatch" || fail "the script does not ask for 4 workers + 1 driver"
log=$WORK/asha-$job.out
[[ -f $log ]] || fail "no job log $log"
grep -q "results: $WORK/asha.h5" "$log" || { show_log "$log"; fail "ranktune's output is not in the job log"; }
grep -q "on 4 workers" "$log" || { show_log "$log"; fail "expected 4 workers in the job"; }
"$PY" - "$WORK/asha.h5" "$job" << 'PY' || { show_log "$log"; fail "results file"; }
import sys, h5py
path, job = sys.argv[1], sys.argv[2]
with h5py.File(path, "r", swmr=True) as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
    s = {k: v.decode() for k, v in f["stack"].attrs.items()}
    w = f["workers"][:]
assert len(t) == 40 and sorted(t["trial_id"]) == list(range(1, 41)), len(t)
assert all(x == b"TERMINATED" for x in t["status"]), set(t["status"])
for row in t:
    mine = r[(r["trial_id"] == row["trial_id"]) & (r["attempt"] == row["attempt"])]
    assert list(mine["iteration"]) == list(range(1, row["iterations"] + 1)), row["trial_id"]
    assert 1 <= row["iterations"] <= 81
stopped = sum(1 for k, _ in ev if k == "early_stop")
full = int((t["iterations"] == 81).sum())
assert stopped > 0 and full + stopped == 40, (stopped, full)
assert s["slurm_job_id"] == job, s.get("slurm_job_id")
assert s["slurm_launch"] == "srun", s.get("slurm_launch")
assert s["slurm_restart_count"] == "0" and s["slurm_ntasks"] == "5", s
assert s["world_size"] == "5" and s["workers"] == "4", s
assert sorted(w["rank"]) == [1, 2, 3, 4], w["rank"]
print(f"ok: job {job}: 40 trials, {stopped} stopped early by ASHA, {full} ran to 81, {len(r)} results")
PY
"$RANKTUNE" slurm status "$WORK/asha.h5" > "$WORK/status.txt" || { cat "$WORK/status.txt"; fail "slurm status exited $?"; }
cat "$WORK/status.txt"
grep -q "^job: *$job " "$WORK/status.txt" || fail "status does not name job $job"
grep -q "^trials: *40 of 40 (40 TERMINATED)" "$WORK/status.txt" || fail "status does not show the progress"
grep -q "finished: every planned trial ended" "$WORK/status.txt" || fail "status does not say the experiment finished"
# The job is either still known (COMPLETED) or gone after MinJobAge; both must be said.
grep -Eq "^state: *(COMPLETED|unknown to Slurm)" "$WORK/status.txt" || fail "status has no job state"
