#!/usr/bin/env bash
# When rank 0 commits the results file (experiment/recorder.h, commits_soon): at each
# lifecycle change (a trial's end, the next one's start), but not for a trial's `placement`
# event, which waits for the next commit. 16 one-step trials on one worker: each trial's end
# and the next start are one commit; committing each placement too made two per trial.
# RANKTUNE_TRACE=trials stamps each flush of rank 0.
source "$(dirname "$0")/lib.sh"
trials=16
RANKTUNE_TRACE=trials mpirun -np 2 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/c.h5" \
    --set experiment.num_samples=$trials --set stop.max_t=1 --set trainable.seconds_per_step=0.02 \
    > "$WORK/out.txt" 2> "$WORK/trace.txt" || { cat "$WORK/out.txt" "$WORK/trace.txt"; fail "run failed"; }
check_results "$WORK/c.h5" $trials 1
flushes=$(grep -c " driver: flush begins" "$WORK/trace.txt" || true)
# The trial ends, the interval flushes of a 0.4 s run (every 200 ms) and the final one.
((flushes > 0 && flushes <= trials + 4)) || fail "$flushes commits for $trials one-step trials (at most $((trials + 4)))"
"$PY" - "$WORK/c.h5" $trials <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    kinds = [e["kind"].decode() for e in f["events"][:]]
n = int(sys.argv[2])
assert kinds.count("placement") == n, f"{kinds.count('placement')} placement events for {n} trials"
PY
echo "ok: $flushes commits for $trials trials, every placement event recorded"
