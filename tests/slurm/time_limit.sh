#!/usr/bin/env bash
# A job whose --time is too short for its experiment: the time-limit warning comes, ranktune
# checkpoints and stops, the script requeues the job, the next allocation resumes the results
# file, and so on until the experiment completes. The event log shows one `slurm` event per
# allocation (restart 0, 1, ...), and the file holds exactly what an uninterrupted run creates:
# the same trials with the same configs, every (trial, iteration) once, with the same values
# (the reference is `ranktune simulate` of the same config: same searcher, function, noise and
# seed). `slurm status` then counts the requeues of the one job and says it finished. Slurm
# checks time limits on a 30 s tick, so each allocation lasts up to ~40 s.
source "$(dirname "$0")/lib.sh"
cfg=$SRC/tests/data/quickstart_branin.toml
# 40 trials x 20 steps x 0.1 s on 2 workers: about 40 s of work, more than one allocation's share.
sets=(--set experiment.num_samples=40 --set trainable.seconds_per_step=0.1)
"$RANKTUNE" simulate "$cfg" --workers 2 --results "$WORK/ref.h5" "${sets[@]}" > /dev/null || fail "simulate exited $?"
job=$("$RANKTUNE" slurm submit "$cfg" --results "$WORK/t.h5" --workers 2 --time 1 --signal-lead 50 --requeue \
  "${sets[@]}" 2> "$WORK/submit.err") || { cat "$WORK/submit.err"; fail "submit exited $?"; }
log=$WORK/t-$job.out
# A requeued job waits ~2 min (Reason=BeginTime) before Slurm considers it; release it at once.
deadline=$((SECONDS + 300))
while ((SECONDS < deadline)); do
  st=$(squeue -h -j "$job" -o '%T/%r' 2> /dev/null)
  [[ -z $st ]] && break
  [[ $st == PENDING/BeginTime ]] && scontrol update jobid="$job" StartTime=now
  sleep 0.5
done
[[ -z $st ]] || { show_log "$log"; fail "job $job still queued after 300 s ($st)"; }
requeues=$(grep -c "requeueing" "$log" || true)
((requeues >= 1)) || { show_log "$log"; fail "the job finished without reaching its time-limit warning; lengthen the experiment"; }
grep -q "restart $requeues," "$log" || { show_log "$log"; fail "no run with restart $requeues"; }
"$PY" - "$WORK/t.h5" "$WORK/ref.h5" "$requeues" << 'PY' || { show_log "$log"; fail "the resumed file differs from an uninterrupted run"; }
import math, sys, h5py
path, ref_path, requeues = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(p):
    with h5py.File(p, "r") as f:
        return f["trials"][:], f["results"][:], [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
t, r, ev = load(path)
rt, rr, _ = load(ref_path)
assert len(t) == len(rt) == 40, (len(t), len(rt))
assert all(s == b"TERMINATED" for s in t["status"]), set(t["status"])
params = [n for n in rt.dtype.names if n in ("x1", "x2")]
for a, b in zip(sorted(t, key=lambda x: x["trial_id"]), sorted(rt, key=lambda x: x["trial_id"])):
    assert all(a[p] == b[p] for p in params), (a["trial_id"], [(a[p], b[p]) for p in params])
keys = [(int(x["trial_id"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "an iteration was recorded twice"
want = {(int(x["trial_id"]), int(x["iteration"])): x["loss"] for x in rr}
got = {(int(x["trial_id"]), int(x["iteration"])): x["loss"] for x in r}
assert set(got) == set(want), (len(got), len(want))
bad = [k for k in want if not math.isclose(got[k], want[k], rel_tol=1e-12, abs_tol=1e-12)]
assert not bad, ("values differ", bad[:5])
runs = [m for k, m in ev if k == "slurm"]
assert len(runs) == requeues + 1, runs
for i, m in enumerate(runs):
    assert f"restart {i}," in m, (i, m)
print(f"ok: {requeues + 1} allocations, {len(got)} iterations as in an uninterrupted run; runs: {runs}")
PY
# One job, requeued: `slurm status` counts the requeues, lists no second job, and says that the
# experiment finished (each time-limit stop's `end: interrupted` was followed by a resume).
"$RANKTUNE" slurm status "$WORK/t.h5" > "$WORK/status.txt" || fail "slurm status exited $?"
grep -q "^requeues: *$requeues\$" "$WORK/status.txt" && ! grep -q "^jobs:\|interrupted" "$WORK/status.txt" &&
  grep -q "^experiment: finished" "$WORK/status.txt" || { cat "$WORK/status.txt"; fail "slurm status of the requeued job"; }
echo "ok: slurm status: $requeues requeues of job $job, finished"
