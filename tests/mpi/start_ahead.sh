#!/usr/bin/env bash
# Start-ahead dispatch (search/controller_ahead.cc): a worker on the lease that ends at
# max_t holds its next trial's Start, and goes on to it after reporting the last result,
# without waiting for the driver. 42 one-step trials on 4 workers (two left over for the
# last round, so that two workers hold nothing), RANKTUNE_TRACE=trials
# (mpi/trace.h stamps "worker: goes on ahead" each time). Checked:
#   - most trials' workers went on by themselves (the old protocol never does);
#   - every trial ran once, with one result, one "start" and one "placement" event: a Start
#     sent ahead is never run twice nor lost;
#   - on each worker the trials do not overlap in the file: a trial sent ahead stays PENDING
#     until its worker has moved on to it, and its start_time is that moment, not the
#     moment its Start was sent;
#   - each worker's trace line "between trials", at its end, counts the runs it began after
#     another and, of those, the ones whose Start it held: one per "goes on ahead";
#   - a config whose trials checkpoint at their end (the worker must wait for the Pause)
#     never goes ahead;
#   - `ranktune ctl` takes back a Start that its worker holds, deterministically: one worker,
#     trials of one 4 s step, so that trial 2 is held while trial 1 runs. `ctl stop 2` takes
#     it back and it never runs (no result, no "start" event, the worker never begins it);
#     `ctl set 3 x1=1.5` takes back the Start of trial 3 sent next, and trial 3 runs once,
#     with the new x1 (its noiseless objective is branin(1.5, x2)). The worker's trace
#     tells which runs it began: before the fix of its look at waiting messages it began
#     trial 2 once and trial 3 twice (the driver's run numbers kept the file right).
source "$(dirname "$0")/lib.sh"
trials=42
RANKTUNE_TRACE=trials mpirun -np 5 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/a.h5" \
    --set experiment.num_samples=$trials --set stop.max_t=1 --set trainable.seconds_per_step=0.02 \
    > "$WORK/out.txt" 2> "$WORK/trace.txt" || { cat "$WORK/out.txt" "$WORK/trace.txt"; fail "run failed"; }
check_results "$WORK/a.h5" $trials 1
went_on=$(grep -c " worker: goes on ahead " "$WORK/trace.txt" || true)
((went_on >= trials / 2)) || fail "workers went on by themselves after only $went_on of $trials trials"
# Trials whose Start went out twice were taken back from the worker that held them, by a
# worker idle with nothing else; whether it happens depends on the order the last Results
# arrive in (search/controller_ahead.cc's rules are start_ahead_test's), so it is only told.
taken_back=$(sed -n 's/.* driver: Start out \([0-9]*\)$/\1/p' "$WORK/trace.txt" | sort | uniq -d | wc -l)
echo "info: $taken_back trials taken back and started on another worker"
"$PY" - "$WORK/a.h5" $trials "$WORK/trace.txt" $went_on <<'PY'
import collections, re, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    trials = f["trials"][:]
    events = f["events"][:]
    results = f["results"][:]
n = int(sys.argv[2])
trials = trials[trials["trial_id"] > 0]
assert len(trials) == n, f"{len(trials)} trials"
per_trial = collections.Counter(int(r["trial_id"]) for r in results)
assert all(per_trial[t] == 1 for t in range(1, n + 1)), f"results per trial: {dict(per_trial)}"
for kind in ("start", "placement"):
    c = collections.Counter(int(e["trial_id"]) for e in events if e["kind"].decode() == kind)
    assert all(c[t] == 1 for t in range(1, n + 1)), f"'{kind}' events per trial: {dict(c)}"
assert all(t["attempt"] == 0 for t in trials), "a trial had a second attempt"
by_worker = collections.defaultdict(list)
for t in trials:
    by_worker[int(t["workers"][0])].append((float(t["start_time"]), float(t["end_time"]), int(t["trial_id"])))
for w, spans in by_worker.items():
    spans.sort()
    for (s0, e0, a), (s1, e1, b) in zip(spans, spans[1:]):
        assert s0 < e0 <= s1 < e1, f"worker {w}: trial {a} ran {s0:.6f}-{e0:.6f}, trial {b} {s1:.6f}-{e1:.6f}"
# A run taken back after its worker began it (a race: its Stop came late) is not in the
# file, but it is one of its worker's trials: count the runs each worker began.
followed = held = byes = 0
began = collections.Counter()
for line in open(sys.argv[3], errors="replace"):
    if m := re.search(r"worker: between trials; (\d+) trials followed one another \((\d+) with their Start held\)", line):
        followed, held, byes = followed + int(m[1]), held + int(m[2]), byes + 1
    if m := re.match(r"ranktune-trace (\d+) \S+ worker: Start in ", line):
        began[m[1]] += 1
assert byes == 4, f"{byes} workers' 'between trials' lines"
after = sum(c - 1 for c in began.values())
assert followed == after, f"the 'between trials' lines count {followed} trials after another, the trace {after} ({dict(began)})"
assert sum(began.values()) >= n, f"the workers began {sum(began.values())} runs for {n} trials"
assert held == int(sys.argv[4]), f"the 'between trials' lines count {held} Starts held, the trace {sys.argv[4]} went on ahead"
print(f"ok: {n} trials once each, on {len(by_worker)} workers without overlap; {held} of {followed} gaps with the Start held")
PY

RANKTUNE_TRACE=trials mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/end.h5" \
    --set experiment.num_samples=8 --set stop.max_t=1 --set trainable.seconds_per_step=0.02 --set checkpoint.at_end=true \
    > "$WORK/end_out.txt" 2> "$WORK/end_trace.txt" || { cat "$WORK/end_out.txt" "$WORK/end_trace.txt"; fail "at_end run failed"; }
check_results "$WORK/end.h5" 8 1
! grep -q " worker: goes on ahead " "$WORK/end_trace.txt" || fail "a worker went on ahead of a checkpoint at the end"
echo "ok: workers went on by themselves after $went_on of $trials trials; none with checkpoints at the end"

# Taking back a held Start with ctl.
RANKTUNE_TRACE=trials mpirun -np 2 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/b.h5" \
    --set experiment.num_samples=4 --set stop.max_t=1 --set trainable.seconds_per_step=4 --set trainable.noise=0.0 \
    > "$WORK/b_out.txt" 2> "$WORK/b_trace.txt" &
launcher=$!
wait_for_rank0 "$WORK/b.h5" "$launcher" > /dev/null
sent() {  # TRIAL COUNT: waits (10 s at most) until the driver has sent TRIAL's Start COUNT times
  for _ in $(seq 100); do
    (( $(grep -c " driver: Start out $1\$" "$WORK/b_trace.txt" || true) >= $2 )) && return 0
    sleep 0.1
  done
  kill "$launcher"; cat "$WORK/b_trace.txt"; fail "trial $1's Start was not sent $2 times"
}
ctl_ok() {  # TEXT ARGS...
  local text=$1; shift
  "$RANKTUNE" ctl "$@" > "$WORK/ctl.txt" 2>&1 && grep -q -- "$text" "$WORK/ctl.txt" \
    || { cat "$WORK/ctl.txt"; kill "$launcher"; fail "ctl $*: expected '$text'"; }
}
sent 2 1   # trial 1 runs its 4 s step (ctl needs well under 1 s per call); trial 2's Start waits on the worker
ctl_ok "applied: trial 2 stopped at iteration 0 (it was PENDING)" stop "$WORK/b.h5" 2
sent 3 1   # taken back, so the worker was sent trial 3 instead
ctl_ok "applied: trial 3: x1 .* -> 1.5; it starts with them" set "$WORK/b.h5" 3 x1=1.5
wait "$launcher" || { cat "$WORK/b_out.txt" "$WORK/b_trace.txt"; fail "the take-back run exited $?"; }
grep -q " driver: first Starts sent" "$WORK/b_trace.txt" || fail "no trace of the take-back run"
began_1=$(grep -c " worker: Start in 1\$" "$WORK/b_trace.txt" || true)
began_2=$(grep -c " worker: Start in 2\$" "$WORK/b_trace.txt" || true)
began_3=$(grep -c " worker: Start in 3\$" "$WORK/b_trace.txt" || true)
[[ $began_1 == 1 && $began_2 == 0 && $began_3 == 1 ]] \
  || fail "the worker began trial 1 $began_1 times, trial 2 (stopped while held) $began_2, trial 3 (changed while held) $began_3"
"$PY" - "$WORK/b.h5" <<'PY'
import collections, math, sys, h5py
def branin(x1, x2):
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10
with h5py.File(sys.argv[1], "r") as f:
    trials = {int(t["trial_id"]): t for t in f["trials"][:] if t["trial_id"] > 0}
    results = f["results"][:]
    events = f["events"][:]
per_trial = collections.Counter(int(r["trial_id"]) for r in results)
starts = collections.Counter(int(e["trial_id"]) for e in events if e["kind"] == b"start")
assert sorted(trials) == [1, 2, 3, 4], sorted(trials)
assert all(t["status"] == b"TERMINATED" for t in trials.values()), {i: t["status"] for i, t in trials.items()}
assert per_trial == {1: 1, 3: 1, 4: 1} and starts == {1: 1, 3: 1, 4: 1}, (dict(per_trial), dict(starts))
t3 = trials[3]
r3 = results[results["trial_id"] == 3][0]
assert t3["x1"] == 1.5 and abs(r3["objective"] - branin(1.5, t3["x2"])) < 1e-9, (t3["x1"], r3["objective"])
print("ok: a held Start stopped with ctl never ran; one changed with ctl ran once, with the new value")
PY
