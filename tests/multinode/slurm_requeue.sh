#!/usr/bin/env bash
# Requeue across nodes: a `ranktune slurm submit --nodes 3 --requeue` job gets its time-limit
# warning mid-run (`scancel --batch --signal=USR1`, what Slurm sends at --signal=B:USR1@S;
# Slurm's own timer is tests/slurm/time_limit.sh, which takes a minute per allocation). The
# driver stops and flushes, the script requeues the job, the next allocation (the same 3
# nodes) resumes the file, and it ends with exactly the trials and values of an uninterrupted
# run (`ranktune simulate` of the same config), every (trial, iteration) once.
source "$(dirname "$0")/lib.sh"
start_slurm 3
cfg=$SRC/tests/data/quickstart_branin.toml
# 30 trials x 20 steps x 0.05 s on 5 workers: about 6 s of work.
sets=(--set experiment.num_samples=30 --set trainable.seconds_per_step=0.05)
on node1 "$RANKTUNE" simulate "$cfg" --workers 5 --results "$WORK/ref.h5" "${sets[@]}" > /dev/null || fail "simulate exited $?"
job=$(slogin "$RANKTUNE" slurm submit "$cfg" --results "$WORK/t.h5" --nodes 3 --workers 5 --time 10 --signal-lead 60 \
  --requeue "${sets[@]}" 2> "$WORK/submit.err") || { cat "$WORK/submit.err"; fail "submit exited $?"; }
log=$WORK/t-$job.out
# rows FILE: the rows of /results so far (0 while the file is not there).
rows() { "$PY" -c 'import sys, h5py; print(len(h5py.File(sys.argv[1], "r", swmr=True)["results"]))' "$1" 2> /dev/null || echo 0; }
deadline=$((SECONDS + 60))
until (($(rows "$WORK/t.h5") >= 100)); do
  ((SECONDS < deadline)) || { show_log "$log"; fail "the job recorded no 100 results within 60 s"; }
  sleep 0.2
done
slogin scancel --batch --signal=USR1 "$job" || fail "scancel --signal=USR1 failed"
# A requeued job waits ~2 min (Reason=BeginTime) before Slurm considers it; release it at once.
deadline=$((SECONDS + 90))
while ((SECONDS < deadline)); do
  st=$(slogin squeue -h -j "$job" -o '%T/%r' 2> /dev/null || true)
  [[ -z $st ]] && break
  [[ $st == PENDING/BeginTime ]] && slogin scontrol update jobid="$job" StartTime=now
  sleep 0.3
done
[[ -z $st ]] || { show_log "$log"; fail "job $job still queued after 90 s ($st)"; }
grep -q "requeueing" "$log" || { show_log "$log"; fail "the job was not requeued after the warning"; }
"$PY" - "$WORK/t.h5" "$WORK/ref.h5" <<'PY' || { show_log "$log"; fail "the requeued job's file differs from an uninterrupted run"; }
import sys, h5py
def load(p):
    with h5py.File(p, "r") as f:
        ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
        return f["trials"][:], f["results"][:], ev, {k: v.decode() for k, v in f["stack"].attrs.items()}
t, r, ev, s = load(sys.argv[1])
rt, rr, _, _ = load(sys.argv[2])
assert len(t) == len(rt) == 30 and set(t["status"]) == {b"TERMINATED"}, (len(t), set(t["status"]))
for a, b in zip(sorted(t, key=lambda x: x["trial_id"]), sorted(rt, key=lambda x: x["trial_id"])):
    assert a["x1"] == b["x1"] and a["x2"] == b["x2"], a["trial_id"]
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "a (trial, attempt, iteration) was recorded twice"
got = {(int(x["trial_id"]), int(x["iteration"])): float(x["loss"]) for x in r}
want = {(int(x["trial_id"]), int(x["iteration"])): float(x["loss"]) for x in rr}
assert got == want, (len(got), len(want), sorted(set(got) ^ set(want))[:5])
runs = [m for k, m in ev if k == "slurm"]
assert len(runs) == 2 and "restart 0," in runs[0] and "restart 1," in runs[1], runs
assert all("nodes node[1-3]" in m for m in runs), runs
assert s["slurm_nnodes"] == "3" and s["hosts"] == "node1,node2,node3", s
print(f"ok: stopped, requeued and resumed on 3 nodes: {len(got)} iterations as in an uninterrupted run; runs: {runs}")
PY
