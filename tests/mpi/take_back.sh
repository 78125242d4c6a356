#!/usr/bin/env bash
# Taking back a Start that a busy worker holds (start-ahead, search/controller_ahead.cc), in
# the three cases that do it. Each is deterministic: trials of one 4 s step, so that the
# Start sent ahead is held for seconds before its worker could begin it, and
# RANKTUNE_TRACE=trials tells which rank each Start went to ("driver: Start to rank R,
# trial T") and which rank began which trial ("worker: Start in T").
#   1. ctl, one worker: `ctl stop 2` takes back the held trial 2, which never runs (no
#      result, no "start" event, never begun); `ctl set 3 x1=1.5` takes back trial 3, sent
#      next, which runs once, later, with the new x1 (its noiseless objective is
#      branin(1.5, x2)). Before the worker's look at waiting messages was fixed, it began
#      trial 2 once and trial 3 twice (the driver's run numbers kept the file right).
#   2. The experiment ends (SIGTERM to rank 0) while the one worker holds trial 2: exit 4,
#      trial 2 is PENDING with no "start" event and never begun, and `--resume` runs trials
#      2 and 3 once each, with every trial one result.
#   3. An idle worker with nothing else to do: two workers, three trials. The trial on the
#      worker that does not hold trial 3 is stopped with ctl; trial 3 is taken back from
#      its holder, which never begins it, and runs on the idle worker.
source "$(dirname "$0")/lib.sh"
run_args=(--set stop.max_t=1 --set trainable.seconds_per_step=4 --set trainable.noise=0.0)
launcher=""
trace=""
sent() {  # TRIAL COUNT: waits (10 s at most) until the driver has sent TRIAL's Start COUNT times
  for _ in $(seq 100); do
    (( $(grep -c " driver: Start out $1\$" "$trace" || true) >= $2 )) && return 0
    sleep 0.1
  done
  kill "$launcher"; cat "$trace"; fail "trial $1's Start was not sent $2 times"
}
ctl_ok() {  # TEXT ARGS...
  local text=$1; shift
  "$RANKTUNE" ctl "$@" > "$WORK/ctl.txt" 2>&1 && grep -q -- "$text" "$WORK/ctl.txt" \
    || { cat "$WORK/ctl.txt"; kill "$launcher"; fail "ctl $*: expected '$text'"; }
}
began() {  # TRIAL [RANK]: how many times a worker (RANK, if given) began TRIAL
  grep -c "^ranktune-trace ${2:-[0-9]*} [0-9.]* worker: Start in $1\$" "$trace" || true
}
sent_to() {  # TRIAL: the ranks the driver sent TRIAL's Start to, in order
  sed -n "s/.* driver: Start to rank \([0-9]*\), trial $1\$/\1/p" "$trace" | tr '\n' ' '
}
# check_file FILE [ARG...] < PYTHON: runs the Python checks on stdin after a prelude that reads
# FILE: `trials` by id, `results`, `events`, and per trial `per_trial` (results) and
# `starts` ("start" events).
prelude=$(cat <<'PY'
import collections, math, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    trials = {int(t["trial_id"]): t for t in f["trials"][:] if t["trial_id"] > 0}
    results = f["results"][:]
    events = f["events"][:]
per_trial = collections.Counter(int(r["trial_id"]) for r in results)
starts = collections.Counter(int(e["trial_id"]) for e in events if e["kind"] == b"start")
PY
)
check_file() { "$PY" - "$@" < <(printf '%s\n' "$prelude"; cat); }

# 1. ctl.
trace=$WORK/b_trace.txt
RANKTUNE_TRACE=trials mpirun -np 2 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/b.h5" \
    --set experiment.num_samples=4 "${run_args[@]}" > "$WORK/b_out.txt" 2> "$trace" &
launcher=$!
wait_for_rank0 "$WORK/b.h5" "$launcher" > /dev/null
sent 2 1   # trial 1 runs its 4 s step (ctl needs well under 1 s per call); trial 2's Start waits on the worker
ctl_ok "applied: trial 2 stopped at iteration 0 (it was PENDING)" stop "$WORK/b.h5" 2
sent 3 1   # taken back, so the worker was sent trial 3 instead
ctl_ok "applied: trial 3: x1 .* -> 1.5; it starts with them" set "$WORK/b.h5" 3 x1=1.5
wait "$launcher" || { cat "$WORK/b_out.txt" "$trace"; fail "the ctl run exited $?"; }
[[ $(began 1) == 1 && $(began 2) == 0 && $(began 3) == 1 ]] \
  || fail "the worker began trial 1 $(began 1) times, trial 2 (stopped while held) $(began 2), trial 3 (changed while held) $(began 3)"
check_file "$WORK/b.h5" <<'PY'
def branin(x1, x2):
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10
assert sorted(trials) == [1, 2, 3, 4], sorted(trials)
assert all(t["status"] == b"TERMINATED" for t in trials.values()), {i: t["status"] for i, t in trials.items()}
assert per_trial == {1: 1, 3: 1, 4: 1} and starts == {1: 1, 3: 1, 4: 1}, (dict(per_trial), dict(starts))
t3 = trials[3]
r3 = results[results["trial_id"] == 3][0]
assert t3["x1"] == 1.5 and abs(r3["objective"] - branin(1.5, t3["x2"])) < 1e-9, (t3["x1"], r3["objective"])
print("ok: a held Start stopped with ctl never ran; one changed with ctl ran once, with the new value")
PY

# 2. The experiment ends while a Start is held.
trace=$WORK/e_trace.txt
RANKTUNE_TRACE=trials mpirun -np 2 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/e.h5" \
    --set experiment.num_samples=3 "${run_args[@]}" > "$WORK/e_out.txt" 2> "$trace" &
launcher=$!
rank0=$(wait_for_rank0 "$WORK/e.h5" "$launcher")
sent 2 1
kill -TERM "$rank0"
rc=0; wait "$launcher" || rc=$?
[[ $rc -eq 4 ]] || { cat "$WORK/e_out.txt" "$trace"; fail "expected exit 4 after SIGTERM with a Start held, got $rc"; }
[[ $(began 2) == 0 ]] || fail "the worker began trial 2, held when the experiment ended"
check_file "$WORK/e.h5" <<'PY'
assert trials[2]["status"] == b"PENDING", trials[2]["status"]
assert not any(e["kind"] == b"start" and e["trial_id"] == 2 for e in events), "trial 2 has a 'start' event"
assert not any(t["status"] == b"RUNNING" for t in trials.values()), {i: t["status"] for i, t in trials.items()}
print(f"ok: stopped with trial 2 held: {dict((i, t['status'].decode()) for i, t in trials.items())}")
PY
mpirun -np 2 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/e.h5" --resume \
    --set experiment.num_samples=3 "${run_args[@]}" > "$WORK/e2_out.txt" 2>&1 \
  || { cat "$WORK/e2_out.txt"; fail "the resumed run exited $?"; }
check_file "$WORK/e.h5" <<'PY'
assert sorted(trials) == [1, 2, 3] and all(t["status"] == b"TERMINATED" for t in trials.values()), \
    {i: t["status"] for i, t in trials.items()}
assert per_trial == {1: 1, 2: 1, 3: 1}, dict(per_trial)
assert starts[2] == 1 and starts[3] == 1, dict(starts)
print("ok: the resume ran the trial that was held once, and every trial has its one result")
PY

# 3. An idle worker takes a held Start from a busy one.
trace=$WORK/s_trace.txt
RANKTUNE_TRACE=trials mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/s.h5" \
    --set experiment.num_samples=3 "${run_args[@]}" > "$WORK/s_out.txt" 2> "$trace" &
launcher=$!
wait_for_rank0 "$WORK/s.h5" "$launcher" > /dev/null
sent 3 1
holder=$(sent_to 3 | awk '{ print $1 }')
other=$(( holder == 1 ? 2 : 1 ))
victim=$(sed -n "s/.* driver: Start to rank $other, trial \([0-9]*\)\$/\1/p" "$trace" | head -1)
[[ -n $victim && $victim != 3 ]] || { kill "$launcher"; cat "$trace"; fail "no trial on rank $other, which does not hold trial 3"; }
ctl_ok "applied: trial $victim stopped at iteration 0 (it was RUNNING)" stop "$WORK/s.h5" "$victim"
wait "$launcher" || { cat "$WORK/s_out.txt" "$trace"; fail "the take-back run exited $?"; }
[[ $(sent_to 3) == "$holder $other " ]] || fail "trial 3's Start went to ranks $(sent_to 3), not $holder then $other"
[[ $(began 3 "$holder") == 0 && $(began 3 "$other") == 1 ]] \
  || fail "trial 3 begun $(began 3 "$holder") times on rank $holder (its holder) and $(began 3 "$other") on rank $other"
check_file "$WORK/s.h5" "$victim" <<'PY'
victim = int(sys.argv[2])
assert all(t["status"] == b"TERMINATED" for t in trials.values()), {i: t["status"] for i, t in trials.items()}
assert per_trial[3] == 1 and per_trial[6 - victim - 3] == 1, dict(per_trial)
PY
echo "ok: trial $victim stopped on rank $other, which then took trial 3 back from rank $holder"
