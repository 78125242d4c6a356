#!/usr/bin/env bash
# A node dies under Slurm: a `ranktune slurm submit --nodes 3` job of 1-rank trials (driver on
# node1, workers on node1..3); once a live reader has seen 100 results and a trial of node3
# under way (ready_to_kill), node3's slurmd, job step and ranks are SIGKILLed. Open MPI 4.1
# has no fault tolerance and the driver keeps its other workers busy, so the job goes on
# until Slurm marks node3 DOWN (SlurmdTimeout, 10 s here: about 30 s), then srun says "Node
# failure on node3", the step is cancelled (rank 0 flushes on its SIGTERM) and the job ends
# NODE_FAIL. The file must open with every row the reader saw, and a job on the two nodes
# left (3 workers instead of 5) resumes it to the end with every (trial, attempt, iteration)
# once.
source "$(dirname "$0")/lib.sh"
export RANKTUNE_NETNS_SLURMD_TIMEOUT=10
start_slurm 3
cfg=$SRC/tests/data/quickstart_branin.toml
sets=(--set experiment.num_samples=60 --set trainable.seconds_per_step=0.05)
job=$(slogin "$RANKTUNE" slurm submit "$cfg" --results "$WORK/r.h5" --nodes 3 --workers 5 --time 10 "${sets[@]}" \
  2> "$WORK/submit.err") || { cat "$WORK/submit.err"; fail "submit exited $?"; }
log=$WORK/r-$job.out
deadline=$((SECONDS + 60))
until (($(ready_to_kill "$WORK/r.h5" "$WORK/seen.json") == 1)); do
  ((SECONDS < deadline)) || { show_log "$log"; fail "no 100 results with a trial of node3 under way within 60 s"; }
  sleep 0.1
done
t0=$(date +%s.%N)
"$SLURM" kill-node node3
state() { slogin scontrol show job "$job" 2> /dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
deadline=$((SECONDS + 120))
while st=$(state) && [[ $st == RUNNING || $st == COMPLETING ]] && ((SECONDS < deadline)); do sleep 0.5; done
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
echo "job $job ended ${st:-(gone)} ${took} s after node3 was killed; the log says:"
grep -E '^srun|CANCELLED|Node failure|signal' "$log" | sed 's/^/  /'
[[ $st == NODE_FAIL ]] || { show_log "$log"; fail "job $job is ${st:-gone} ${took} s after its node died, not NODE_FAIL"; }
grep -q "Node failure on node3" "$log" || { show_log "$log"; fail "the log does not name the lost node"; }
# Resume on the nodes left (node3 is DOWN, so Slurm allocates node1 and node2).
rjob=$(slogin "$RANKTUNE" slurm submit "$cfg" --results "$WORK/r.h5" --nodes 2 --workers 3 --time 10 "${sets[@]}" --wait \
  2> "$WORK/resume.err") || { rc=$?; cat "$WORK/resume.err"; show_log "$WORK/r-$rjob.out"; fail "the resume on 2 nodes exited $rc"; }
"$PY" - "$WORK/r.h5" "$WORK/seen.json" <<'PY' || { show_log "$WORK/r-$rjob.out"; fail "the resumed file"; }
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t, r = f["trials"][:], f["results"][:]
    runs = [e["message"].decode() for e in f["events"][:] if e["kind"] == b"slurm"]
seen = json.load(open(sys.argv[2]))
assert len(t) == 60 and set(t["status"]) == {b"TERMINATED"}, (len(t), set(t["status"]))
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "a (trial, attempt, iteration) was recorded twice"
assert sorted({(k[0], k[2]) for k in keys}) == [(i, j) for i in range(1, 61) for j in range(1, 21)], "iterations missing"
have = {k: float(x["loss"]) for k, x in zip(keys, r)}
lost = [s for s in seen if have.get(tuple(s[:3])) != s[3]]
assert not lost, ("rows a reader saw before the failure are gone", lost[:5])
retried = {x["hosts"].decode() for x in t if x["attempt"] > 0}
assert retried and retried <= {"node1", "node2"}, retried
assert len(runs) == 2 and "nodes node[1-3]" in runs[0] and "nodes node[1-2]" in runs[1], runs
print(f"ok: {len(seen)} rows seen before node3 died all kept; resumed on node[1-2] with 3 workers; runs: {runs}")
PY
