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
#     never goes ahead.
# Taking a held Start back is tests/mpi/take_back.sh.
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
