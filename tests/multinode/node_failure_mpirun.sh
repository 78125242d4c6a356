#!/usr/bin/env bash
# A host dies under mpirun: 1-rank trials on node1 (driver + 1 worker), node2 and node3 (2
# workers each); once a live reader has seen 100 results and a trial of node3 under way
# (ready_to_kill), every process on node3 (its orted and both ranks) is SIGKILLed. mpirun
# must end the job within seconds (it loses the host's daemon; rank 0 gets SIGTERM and
# flushes), with Open MPI's message naming the lost host's address; the file must open with
# every row the reader saw; a resume on node1 and node2 alone (3 workers instead of 5)
# finishes the experiment with every (trial, attempt, iteration) once: the iterations of an
# uninterrupted run (`ranktune simulate`), with its values for every trial that the failure
# did not cut.
source "$(dirname "$0")/lib.sh"
start_cluster 3
cfg=$SRC/tests/data/quickstart_branin.toml
sets=(--set experiment.num_samples=30 --set trainable.seconds_per_step=0.05)
on node1 "$RANKTUNE" simulate "$cfg" --workers 5 --results "$WORK/ref.h5" "${sets[@]}" > /dev/null || fail "simulate exited $?"
cluster_mpirun 2,2,2 120 -np 6 "$RANKTUNE" run "$cfg" --results "$WORK/r.h5" "${sets[@]}" > "$WORK/run.txt" 2>&1 &
launcher=$!
deadline=$((SECONDS + 60))
until (($(ready_to_kill "$WORK/r.h5" "$WORK/seen.json") == 1)); do
  ((SECONDS < deadline)) || { kill "$launcher"; cat "$WORK/run.txt"; fail "no 100 results with a trial of node3 under way within 60 s"; }
  sleep 0.1
done
t0=$(date +%s.%N)
"$CLUSTER" kill-host node3
rc=0
wait "$launcher" || rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
echo "mpirun exited $rc, ${took} s after node3 was killed; it said:"
grep -v '^\[ranktune' "$WORK/run.txt" | grep -E 'ORTE|connect|signal|lost|daemon|node3|10\.213\.0\.3' | sed 's/^/  /'
((rc != 0)) || fail "mpirun exited 0 after a host died"
awk -v t="$took" 'BEGIN {exit !(t < 30)}' || fail "the job took ${took} s to end after its host died"
grep -Eq '10\.213\.0\.3|node3' "$WORK/run.txt" || { cat "$WORK/run.txt"; fail "no message names the lost host (node3, 10.213.0.3)"; }
# Resume on the two hosts left.
cluster_mpirun 2,2,0 120 -np 4 "$RANKTUNE" run "$cfg" --results "$WORK/r.h5" --resume "${sets[@]}" > "$WORK/resume.txt" 2>&1 \
  || { rc=$?; cat "$WORK/resume.txt"; fail "the resume on node1 and node2 exited $rc"; }
"$PY" - "$WORK/r.h5" "$WORK/ref.h5" "$WORK/seen.json" <<'PY'
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t, r = f["trials"][:], f["results"][:]
    print("workers after the resume:", f["workers"][:][["rank", "host"]].tolist())
with h5py.File(sys.argv[2], "r") as f:
    rr = f["results"][:]
seen = json.load(open(sys.argv[3]))
assert len(t) == 30 and set(t["status"]) == {b"TERMINATED"}, (len(t), set(t["status"]))
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "a (trial, attempt, iteration) was recorded twice"
have = {k: float(x["loss"]) for k, x in zip(keys, r)}
lost = [s for s in seen if have.get(tuple(s[:3])) != s[3]]
assert not lost, ("rows a reader saw before the failure are gone", lost[:5])
got = {(int(x["trial_id"]), int(x["iteration"])): float(x["loss"]) for x in r}
want = {(int(x["trial_id"]), int(x["iteration"])): float(x["loss"]) for x in rr}
assert set(got) == set(want), (len(got), len(want), sorted(set(got) ^ set(want))[:5])
# A trial cut by the failure goes on from its last checkpoint (none here) as attempt 1, so
# only the trials that ran uninterrupted must have the reference's values.
whole = {int(x["trial_id"]) for x in t if x["attempt"] == 0}
bad = [k for k in got if k[0] in whole and got[k] != want[k]]
assert not bad and len(whole) < 30, (bad[:5], len(whole))
retried = {x["hosts"].decode() for x in t if x["attempt"] > 0}
assert retried and retried <= {"node1", "node2"}, retried  # the resume ran on the hosts left
print(f"ok: {len(seen)} rows seen before node3 died all kept; resumed on node1, node2 "
      f"(3 workers) to the {len(got)} iterations of an uninterrupted run; {30 - len(whole)} trials retried")
PY
