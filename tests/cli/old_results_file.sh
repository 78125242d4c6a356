#!/usr/bin/env bash
# A results file written by an older ranktune (tests/data/old_results/README.md: before the
# redesign of issue 14, state as rows of trial 0 in /checkpoints, controller state version
# 2) must still report, evaluate and resume with this one: the resume finishes its PENDING
# trial from that trial's checkpoint, makes no trial the old run had not planned, and keeps
# every row the old run wrote. The fixture is copied first; the source tree is never written.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
DATA="$SRC/tests/data/old_results"
f="$WORK/old.h5"
gunzip -c "$DATA/asha_mlp_interrupted.h5.gz" > "$f"
# The overrides the old run was given (the file's `overrides` attribute); the resume must
# repeat them, as a job script would, and may name another path with --results.
sets=(--set experiment.num_samples=5 --set 'search.space.hidden={choice=["4","4-4"]}'
  --set 'search.space.optimizer={choice=["sgd"]}' --set stop.max_t=9 --set trainable.batches_per_step=4000
  --set trainable.train_samples=4000 --set trainable.val_samples=300 --set checkpoint.at_end=true
  --set checkpoint.keep_best=1 --set checkpoint.every=0)

"$R" report "$f" > "$WORK/report.txt" 2>&1 || { cat "$WORK/report.txt"; fail "report of the old file failed"; }
grep -q "trials      5 (PENDING 1, TERMINATED 4)" "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "report: not the old file's 5 trials"; }
# It has no end_reason column (issue 27 item 9): the events say which ASHA stopped; the rest
# are "unknown", in every format.
grep -q "^ended       stopped 2, unknown 2$" "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "report: the old file's end reasons"; }
"$R" report "$f" --format json > "$WORK/report.json" || fail "report --format json of the old file failed"
"$PY" - "$WORK/report.json" <<'PY' || fail "the old file's end reasons in JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["end_reasons"] == {"stopped": 2, "unknown": 2}, d["end_reasons"]
assert sorted(str(t["end_reason"]) for t in d["trials"]) == ["None", "stopped", "stopped", "unknown", "unknown"], d["trials"]
PY
echo "ok: the old file reports"

"$R" eval "$f" --top 2 --device cpu --latency-s 0.1 > "$WORK/eval.txt" 2> "$WORK/eval.err" ||
  { cat "$WORK/eval.txt" "$WORK/eval.err"; fail "eval of the old file failed"; }
grep -q "recorded as evaluation 1 in" "$WORK/eval.err" || { cat "$WORK/eval.err"; fail "eval: not recorded"; }
echo "ok: the old file evaluates"

"$PY" - "$f" > "$WORK/before.json" <<'PY' || fail "cannot read the old file"
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    r = f["results"][:]
    print(json.dumps(sorted([int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])] for x in r)))
PY

"$R" run "$DATA/fashion_mlp_asha.toml" --np 2 --results "$f" "${sets[@]}" --resume > "$WORK/resume.txt" 2>&1 ||
  { tail -20 "$WORK/resume.txt"; fail "the resume of the old file failed"; }
grep -q "resuming $f: 5 trials recorded" "$WORK/resume.txt" || { cat "$WORK/resume.txt"; fail "not resumed"; }

"$PY" - "$f" "$WORK/before.json" <<'PY' || fail "the resumed old file is wrong"
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t, r, ev = f["trials"][:], f["results"][:], f["events"][:]
    runs = f["evaluations/runs"][:]
before = {tuple(k) for k in json.load(open(sys.argv[2]))}
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert list(t["trial_id"]) == [1, 2, 3, 4, 5], f"trials {list(t['trial_id'])}: the resume made trials the old run never planned"
assert all(s == b"TERMINATED" for s in t["status"]), list(t["status"])
assert len(set(keys)) == len(keys), "a (trial, attempt, iteration) twice"
assert before <= set(keys), f"rows of the old run lost: {sorted(before - set(keys))[:5]}"
# Trial 5 was PENDING with its checkpoint at iteration 1: it goes on from iteration 2.
five = sorted(k[2] for k in keys if k[0] == 5 and k not in before)
assert five and five[0] == 2, f"trial 5 did not go on from its checkpoint: new iterations {five}"
assert any(e["kind"] == b"resume" for e in ev), "no resume event"
assert len(runs) == 1, "the evaluation made before the resume is gone"
print(f"ok: the old file resumed: 5 trials, {len(keys)} results, trial 5 went on at iterations {five}")
PY
"$R" report "$f" > "$WORK/report2.txt" 2>&1 || fail "report after the resume failed"
grep -q "trials      5 (TERMINATED 5)" "$WORK/report2.txt" || { cat "$WORK/report2.txt"; fail "report after the resume"; }
# The resume leaves the old layout whole (no end_reason column); trial 5's reason is unknown too.
grep -q "^ended       stopped 2, unknown 3$" "$WORK/report2.txt" || { cat "$WORK/report2.txt"; fail "end reasons after the resume"; }
echo "PASS"
