#!/usr/bin/env bash
# Issue 31's live control under a real mpirun (1 driver + 2 workers, branin at 0.25 s a
# step): `ctl status` on the live file (table and JSON); `ctl pause` of a running trial (it
# checkpoints, stays PAUSED, its worker takes other work); `ctl budget` raising num_samples
# and lowering max_t; the refusals; `ctl stop-experiment` (exit 4, as SIGTERM). Then the
# resumed run keeps the pause and the new rules, waits for `ctl resume`, and the trial goes
# on from its checkpoint. A HyperBand run refuses a new max_t, saying why, and a trainable
# that cannot checkpoint refuses a pause.
source "$(dirname "$0")/lib.sh"
R="$RANKTUNE"
CFG="$SRC/tests/data/quickstart_branin.toml"
small=(--set trainable.seconds_per_step=0.25 --set trainable.noise=0.0)
ctl() {  # EXPECTED_RC TEXT ARGS...
  local want=$1 text=$2; shift 2
  local rc=0; "$R" ctl "$@" > "$WORK/ctl.txt" 2>&1 || rc=$?
  [[ $rc -eq $want ]] && grep -q -- "$text" "$WORK/ctl.txt" || { cat "$WORK/ctl.txt"; kill "$launcher" 2> /dev/null; fail "ctl $*: expected exit $want and '$text', got $rc"; }
}
json() {  # PYTHON_EXPRESSION over `s`, the JSON status of q.h5: prints it
  "$R" ctl status "$WORK/q.h5" --format json | "$PY" -c "import json, sys; s = json.load(sys.stdin); print($1)"
}

mpirun -np 3 --bind-to none "$R" run "$CFG" --results "$WORK/q.h5" --set experiment.num_samples=4 "${small[@]}" > "$WORK/run1.txt" 2>&1 &
launcher=$!
wait_for_rank0 "$WORK/q.h5" "$launcher" > /dev/null
sleep 1   # trials 1 and 2 are a few iterations in
ctl 0 "running (the file is being written)" status "$WORK/q.h5"
grep -q "^trials      .*RUNNING 2, PAUSED 0, TERMINATED 0" "$WORK/ctl.txt" || { cat "$WORK/ctl.txt"; fail "status: not 2 running of 4"; }
grep -q "^workers     2 of 2 busy (100%)" "$WORK/ctl.txt" || { cat "$WORK/ctl.txt"; fail "status: workers"; }
[[ $(json 's["live"] and len(s["running"]) == 2 and s["running"][0]["iteration"] >= 1 and "loss" in s["running"][0]["metrics"] and s["budget"]["max_t"] == 20') == True ]] \
  || { "$R" ctl status "$WORK/q.h5" --format json; fail "status --format json"; }
ctl 0 "applied: trial 1 pauses at iteration" pause "$WORK/q.h5" 1
ctl 2 "refused: trial 1 is already paused by ctl pause" pause "$WORK/q.h5" 1
ctl 2 "refused: no trial 99" resume "$WORK/q.h5" 99
ctl 2 "refused: trial 2 is not paused (it is RUNNING)" resume "$WORK/q.h5" 2
ctl 2 "give --time-budget-s S, --num-samples N or --max-t T" budget "$WORK/q.h5"
ctl 2 "num_samples 1 is below the" budget "$WORK/q.h5" --num-samples 1
ctl 0 "applied: num_samples 4 -> 5, max_t 20 -> 12; stopping rules now: time_budget_s=0 num_samples=5 max_t=12" \
  budget "$WORK/q.h5" --num-samples 5 --max-t 12
[[ $(json 's["budget"]["max_t"] == 12 and s["budget"]["trials"]["num_samples"] == 5') == True ]] \
  || { "$R" ctl status "$WORK/q.h5" --format json; fail "status: the new rules"; }
ctl 0 "max_t       12 iterations per trial" status "$WORK/q.h5"
sleep 1.5  # trial 1's checkpoint is stored; trial 3 runs on its worker
[[ $(json '[p["trial_id"] for p in s["paused"]]') == "[1]" ]] || { "$R" ctl status "$WORK/q.h5"; fail "trial 1 is not paused"; }
ctl 0 "applied: the experiment stops, as on SIGTERM: .* running trial(s) pause with a checkpoint" stop-experiment "$WORK/q.h5"
rc=0; wait "$launcher" || rc=$?
[[ $rc -eq 4 ]] || { cat "$WORK/run1.txt"; fail "expected exit 4 after stop-experiment, got $rc"; }
ctl 0 "not running (finished, stopped or killed)" status "$WORK/q.h5"
ctl 0 "^- run: not running" status "$WORK/q.h5" --format markdown
ctl 2 "ctl status: --format csv does not fit a status (several tables): use table, markdown or json" \
  status "$WORK/q.h5" --format csv
ctl 2 "unknown --format 'xml'; valid: table, markdown, json" status "$WORK/q.h5" --format xml
ctl 5 "" status "$WORK/nothing.h5"
ctl 2 "no run is writing it" resume "$WORK/q.h5" 1
"$PY" - "$WORK/q.h5" <<'PY' || fail "the stopped file"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    ctl = [e["message"].decode() for e in f["events"][:] if e["kind"] == b"control"]
st = {int(x["trial_id"]): x["status"].decode() for x in t}
assert st[1] == "PAUSED", st
# Resumable: the trials that ran pause with checkpoints and are PENDING again.
assert all(s in ("PENDING", "TERMINATED") for k, s in st.items() if k != 1), st
assert any("the experiment stops, as on SIGTERM" in m for m in ctl), ctl
print("ok: stopped with trial 1 paused,", st)
PY

# Resumed: trial 1 stays paused, the new rules hold (5 trials of 12 iterations), and the run
# waits for trial 1 once the others are done.
mpirun -np 3 --bind-to none "$R" run "$CFG" --results "$WORK/q.h5" --resume --set experiment.num_samples=4 "${small[@]}" > "$WORK/run2.txt" 2>&1 &
launcher=$!
wait_for_rank0 "$WORK/q.h5" "$launcher" > /dev/null
# Any reader that takes the HDF5 file lock (ranktune's, `ctl status` included) while the
# resume opens the file makes it refuse to resume: wait, reading without the lock, until
# the resumed run has committed its first rows.
for _ in $(seq 100); do
  "$PY" - "$WORK/q.h5" <<'PY' 2> /dev/null && break
import sys, h5py
with h5py.File(sys.argv[1], "r", locking=False, swmr=True) as f:
    sys.exit(0 if any(e["kind"] == b"resume" for e in f["events"][:]) else 1)
PY
  sleep 0.2
done
for _ in $(seq 150); do
  [[ $(json 's["counts"]["TERMINATED"] == 4 and s["counts"]["PAUSED"] == 1' 2> /dev/null) == True ]] && break
  sleep 0.2
done
[[ $(json 's["counts"]["TERMINATED"] == 4 and s["counts"]["PAUSED"] == 1 and s["workers"]["busy"] == 0') == True ]] \
  || { "$R" ctl status "$WORK/q.h5"; cat "$WORK/run2.txt"; kill "$launcher"; fail "the resumed run did not keep trial 1 paused"; }
ctl 2 "refused: trial 2 already ended (TERMINATED)" pause "$WORK/q.h5" 2
ctl 0 "applied: trial 1 is back in the queue (it goes on from its checkpoint at iteration" resume "$WORK/q.h5" 1
wait "$launcher" || { cat "$WORK/run2.txt"; fail "the resumed run exited $?"; }
"$PY" - "$WORK/q.h5" <<'PY' || fail "the resumed file"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = f["events"][:]
assert len(t) == 5 and all(s == b"TERMINATED" for s in t["status"]), t[["trial_id", "status"]]
# max_t 12: a trial already past it when the budget came ended there, every other one at 12.
came = [e["time"] for e in ev if e["kind"] == b"control" and b"max_t 20 -> 12" in e["message"]][0]
for x in t:
    before = r[(r["trial_id"] == x["trial_id"]) & (r["time"] <= came)]["iteration"]
    assert x["iterations"] == max(12, max(before, default=0)), (x["trial_id"], x["iterations"], max(before, default=0))
it1 = sorted(int(x) for x in r[r["trial_id"] == 1]["iteration"])
assert it1 == list(range(1, 13)), it1   # each iteration once: it went on from its checkpoint
print("ok: 5 trials ended at max_t 12 (or where they were past it); trial 1 went on from its checkpoint after ctl resume")
PY

# HyperBand's brackets derive from max_t: refused, saying why; its other rules change.
mpirun -np 3 --bind-to none "$R" run "$CFG" --results "$WORK/h.h5" "${small[@]}" --set scheduler.kind=hyperband \
  --set experiment.num_samples=20 > "$WORK/run3.txt" 2>&1 &
launcher=$!
wait_for_rank0 "$WORK/h.h5" "$launcher" > /dev/null
sleep 0.5
ctl 2 "refused: max_t: HyperBand's brackets were laid out for max_t = 20" budget "$WORK/h.h5" --max-t 30
ctl 0 "applied: time_budget_s none -> 3600" budget "$WORK/h.h5" --time-budget-s 3600
ctl 0 "applied: the experiment stops" stop-experiment "$WORK/h.h5"
rc=0; wait "$launcher" || rc=$?
[[ $rc -eq 4 ]] || { cat "$WORK/run3.txt"; fail "expected exit 4, got $rc"; }

# A trainable that cannot checkpoint (a command without checkpoint = true): a pause of a
# running trial would lose its work, so it is refused, saying so; stop-experiment stops its
# trials instead of pausing them, and says that too.
mpirun -np 3 --bind-to none "$R" run "$SRC/tests/data/shape_check.toml" --results "$WORK/s.h5" \
  --set trainable.checkpoint=false > "$WORK/run4.txt" 2>&1 &
launcher=$!
wait_for_rank0 "$WORK/s.h5" "$launcher" > /dev/null
sleep 1
ctl 2 "refused: trial 1 is running and its trainable cannot checkpoint, so a pause would lose its" pause "$WORK/s.h5" 1
ctl 0 "running trial(s) stop (the trainable cannot checkpoint: they start over on resume)" stop-experiment "$WORK/s.h5"
rc=0; wait "$launcher" || rc=$?
[[ $rc -eq 4 ]] || { cat "$WORK/run4.txt"; fail "expected exit 4, got $rc"; }
echo "ok: ranktune ctl pause, resume, budget, status, stop-experiment"
