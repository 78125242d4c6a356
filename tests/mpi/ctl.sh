#!/usr/bin/env bash
# `ranktune ctl` against a real run under mpirun (1 driver + 2 workers, branin at 0.2 s a
# step): stop a running trial, change a running trial's x1 (it checkpoints and goes on from
# there at once with the new value, which the noiseless objective of its later results shows), add
# a trial with a config and two more from the searcher, and the refusals. Then the run finishes normally, the
# file records every answer, and ctl on a finished run, or on one killed with kill -9, is refused
# without waiting.
source "$(dirname "$0")/lib.sh"
R="$RANKTUNE"
mpirun -np 3 --bind-to none "$R" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/q.h5" \
  --set experiment.num_samples=6 --set trainable.seconds_per_step=0.2 --set trainable.noise=0.0 \
  > "$WORK/run.txt" 2>&1 &
launcher=$!
wait_for_rank0 "$WORK/q.h5" "$launcher" > /dev/null
sleep 1.5   # trials 1 and 2 are a few iterations in
ctl() {  # EXPECTED_RC TEXT ARGS...
  local want=$1 text=$2; shift 2
  local rc=0; "$R" ctl "$@" > "$WORK/ctl.txt" 2>&1 || rc=$?
  [[ $rc -eq $want ]] && grep -q -- "$text" "$WORK/ctl.txt" || { cat "$WORK/ctl.txt"; kill "$launcher"; fail "ctl $*: expected exit $want and '$text', got $rc"; }
}
ctl 0 "applied: trial 1 stopped at iteration" stop "$WORK/q.h5" 1
# Not applied yet (issue 12 item 1): it says when it will be.
ctl 0 "pending: trial 2 takes x1 .* -> 1.5 when it resumes from its next checkpoint (pausing it at iteration" set "$WORK/q.h5" 2 x1=1.5
ctl 2 "refused: trial 1 already ended (TERMINATED)" stop "$WORK/q.h5" 1
ctl 2 "refused: no trial 99" set "$WORK/q.h5" 99 x1=1
ctl 0 "applied: added trial" add "$WORK/q.h5" x1=2.5 x2=3
ctl 0 "applied: the search algorithm proposes 2 more trials (9 in all)" add "$WORK/q.h5" --count 2
ctl 2 "give either a whole config" add "$WORK/q.h5" --count 2 x1=1 x2=1
ctl 2 "outside its domain (in \[-5, 10\]); pass --force" set "$WORK/q.h5" 3 x1=11
ctl 2 "'x2' is missing" add "$WORK/q.h5" x1=2.5
ctl 2 "'lr' is not a parameter of the search space; valid: x1, x2" set "$WORK/q.h5" 3 lr=0.1
# Issue 27 items 17b and 17c: an id past int64 was echoed as 9223372036854775807, and a
# parameter given twice was taken silently (the last value won).
ctl 2 "trial: '99999999999999999999' is out of range: a trial id is at most 9223372036854775807" \
  stop "$WORK/q.h5" 99999999999999999999
ctl 2 "'x1' is given twice (x1=0.1 and x1=0.2): give each parameter once" add "$WORK/q.h5" x1=0.1 x1=0.2 x2=3
ctl 2 "'x1' is given twice" set "$WORK/q.h5" 3 x1=0.1 x1=0.2
wait "$launcher" || { cat "$WORK/run.txt"; fail "the run exited $?"; }

"$PY" - "$WORK/q.h5" <<'PY' || fail "the file does not show the controls"
import math, sys, h5py
def branin(x1, x2):
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10
with h5py.File(sys.argv[1], "r") as f:
    trials = f["trials"][:]
    res = f["results"][:]
    ev = f["events"][:]
control = [e for e in ev if e["kind"] == b"control"]
# The refusals caught by ctl itself never reach the run; the set is answered twice: pending,
# then applied when it took effect.
assert len(control) == 7, [e["message"] for e in control]
words = [e["message"].split()[1] for e in control]
assert words.count(b"applied:") == 4 and words.count(b"pending:") == 1, [e["message"] for e in control]
# 6 from the searcher, 1 added with a config, 2 more asked of the searcher.
assert len(trials) == 9 and all(s == b"TERMINATED" for s in trials["status"]), trials["status"]
t1, t2 = trials[0], trials[1]
assert t1["iterations"] < 20, t1["iterations"]  # stopped early
assert t2["x1"] == 1.5 and t2["iterations"] == 20, (t2["x1"], t2["iterations"])
r2 = res[res["trial_id"] == 2]
# Every iteration once, in one attempt: the change is a restart from its own checkpoint.
assert sorted(r2["iteration"]) == list(range(1, 21)) and set(r2["attempt"]) == {0}, r2[["iteration", "attempt"]]
# The objective switches to branin(1.5, x2) at the pause and stays there.
new = branin(1.5, t2["x2"])
changed = [abs(o - new) < 1e-9 for o in r2[r2["iteration"].argsort()]["objective"]]
k = changed.index(True)
assert k >= 1 and all(changed[k:]) and not any(changed[:k]), changed
# The second answer names the iteration it went on from: the last one with the old value.
took = [e["message"].decode() for e in control if e["trial_id"] == 2 and b" applied: " in e["message"]]
assert len(took) == 1 and f"goes on from iteration {k} (its checkpoint)" in took[0], (took, k)
# It went on at once, on the worker it paused on (issue 27 item 4): that worker went to trial
# 4 instead, and trial 2 waited, PENDING, until some trial ended (4 s of 20 steps here).
asked, went_on = ([e["time"] for e in control if e["trial_id"] == 2 and word in e["message"]][0]
                  for word in (b" pending: ", b" applied: "))
assert went_on - asked < 2.0, f"trial 2 went on {went_on - asked:.1f} s after the set"
# /trials.workers keeps the ranks that ran each trial's last attempt (issue 12 item 4).
assert all(w.decode() in ("1", "2") for w in trials["workers"]), trials["workers"]
# ... and /trials.hosts the hosts of those ranks, which /workers maps them to here.
with h5py.File(sys.argv[1], "r") as f:
    host_of = {int(w["rank"]): w["host"] for w in f["workers"][:]}
assert all(h == host_of[int(w)] for h, w in zip(trials["hosts"], trials["workers"])), trials[["workers", "hosts"]]
added = [t for t in trials if t["x1"] == 2.5 and t["x2"] == 3.0]
assert len(added) == 1 and added[0]["iterations"] == 20, trials
print(f"ok: trial 2 ran iterations 1-{k} at the old x1 and {k + 1}-20 at 1.5; trial {added[0]['trial_id']} was added")
PY
"$R" report "$WORK/q.h5" --html "$WORK/q.html" > /dev/null || fail "report --html failed"
"$PY" "$SRC/tests/cli/check_html.py" "$WORK/q.html" --section "Live control" --section Leaderboard \
  || fail "the HTML report lacks the live control section"
[[ $(grep -c "applied: \|refused: \|pending: " "$WORK/q.html") -eq 7 ]] || fail "the HTML report does not list the 7 answers"
# On a finished run: refused at once, nothing to control.
ctl 2 "no run is writing it" stop "$WORK/q.h5" 3

# On a run killed with kill -9 (issue 27 item 14): its HDF5 header still says it is open, but
# no process holds its writer lock: refused at once (exit 2), not after --wait's 30 s (exit 6).
mpirun -np 3 --bind-to none "$R" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/k.h5" \
  --set experiment.num_samples=6 --set trainable.seconds_per_step=0.2 > "$WORK/k_run.txt" 2>&1 &
launcher=$!
rank0=$(wait_for_rank0 "$WORK/k.h5" "$launcher")
sleep 1
kill -9 "$rank0"
wait "$launcher" || true
start=$SECONDS
ctl 2 "no run is writing it: its writer was killed" stop "$WORK/k.h5" 1
((SECONDS - start < 10)) || fail "ctl on a killed run took $((SECONDS - start)) s to answer"
# A malformed line in the control file is answered (refused), not fatal: see the unit
# tests for the parser; here, ctl without waiting just appends.

# A shape-changing parameter (issue 12 item 12): tests/data/shape_check.py refuses to load a
# checkpoint saved with other channels, as torch's load_state_dict does. `ctl set 1
# channels=4` then fails the restarted attempt before its first result: the trial goes back
# to its own checkpoint with channels = 8 and finishes, and the file names the change. The
# script also reports `extra`, which the config does not declare (item 6).
mpirun -np 3 --bind-to none "$R" run "$SRC/tests/data/shape_check.toml" --results "$WORK/s.h5" \
  > "$WORK/s_out.txt" 2> "$WORK/s_err.txt" &
launcher=$!
wait_for_rank0 "$WORK/s.h5" "$launcher" > /dev/null
sleep 1
ctl 0 "pending: trial 1 takes channels 8 -> 4 when it resumes from its next checkpoint" set "$WORK/s.h5" 1 channels=4 --force
wait "$launcher" || { cat "$WORK/s_out.txt" "$WORK/s_err.txt"; fail "the shape_check run exited $?"; }
"$PY" - "$WORK/s.h5" <<'PY' || { cat "$WORK/s_err.txt"; fail "the file does not show the reverted change"; }
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    trials = f["trials"][:]
    res = f["results"][:]
    ev = [(int(e["trial_id"]), e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
t1 = trials[trials["trial_id"] == 1][0]
assert t1["status"] == b"TERMINATED" and t1["channels"] == 8 and t1["iterations"] == 12, t1
texts = {int(x["trial_id"]): x for x in h5py.File(sys.argv[1], "r")["trial_texts"][:]}  # last row: error, log_tail
x1 = texts[1]
assert b"(after ctl set channels 8 -> 4)" in x1["error"], x1["error"]
assert b"size mismatch" in x1["log_tail"], x1["log_tail"]
reverts = [m for t, k, m in ev if k == "revert"]
assert len(reverts) == 1 and "after ctl set channels 8 -> 4" in reverts[0] and "own checkpoint" in reverts[0], ev
r1 = res[res["trial_id"] == 1]
assert sorted(r1["iteration"]) == list(range(1, 13)) and set(r1["attempt"]) == {0}, r1[["iteration", "attempt"]]
print("ok: trial 1 went back to channels 8 after the set failed to load, and finished")
PY
# Undeclared metrics: once per trial on rank 0's stderr, with the names, and in the report.
[[ $(grep -c "ranktune: warning: trial [12] reported metrics .* dropped: extra" "$WORK/s_err.txt") -eq 2 ]] \
  || { cat "$WORK/s_err.txt"; fail "rank 0 did not say once per trial that 'extra' was dropped"; }
"$R" report "$WORK/s.h5" > "$WORK/s_report.txt" || fail "report failed"
grep -q "^warnings " "$WORK/s_report.txt" && grep -q "dropped: extra" "$WORK/s_report.txt" \
  || { cat "$WORK/s_report.txt"; fail "the report lacks the warnings"; }
# eval on this checkpointing command experiment (issue 15: no longer refused before any
# leader, as issue 12 item 8 had every command; tests/cli/script_eval.sh tests that for
# commands without checkpoint = true): shape_check.py never calls ranktune.on_evaluate(),
# so its leader is refused with exit 2, saying so. (--config: the script lies beside the
# config, not beside the results file.)
rc=0; "$R" eval "$WORK/s.h5" --no-record --config "$SRC/tests/data/shape_check.toml" > "$WORK/eval.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "it never called ranktune.on_evaluate()" "$WORK/eval.txt" \
  || { cat "$WORK/eval.txt"; fail "eval of a script without on_evaluate was not refused with exit 2 (exit $rc)"; }
echo "ok: ranktune ctl"
