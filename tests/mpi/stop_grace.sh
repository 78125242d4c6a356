#!/usr/bin/env bash
# A command that ignores ranktune.should_stop() (tests/data/ignores_stop.py, stopped by ASHA
# while it sleeps 30 s) is ended with SIGTERM once [trainable] stop_grace_s (1 s) has passed:
# not before, and long before its sleep would end; the results file gets a warning event
# that says SIGTERM was needed, and the trial ends TERMINATED. The same script checking
# should_stop() (obey = 1) exits by itself: no warning.
source "$(dirname "$0")/lib.sh"
run() {  # run RESULTS [--set ...]
  local results=$1
  shift
  timeout 100 mpirun -np 2 --bind-to none "$RANKTUNE" run "$SRC/tests/data/ignores_stop.toml" --results "$results" \
    --set "trainable.command=[\"$PY\", \"ignores_stop.py\"]" "$@" > "$WORK/out.txt" 2>&1 \
    || { rc=$?; cat "$WORK/out.txt"; fail "run exited $rc"; }
}
start=$SECONDS
run "$WORK/ignore.h5"
(( SECONDS - start < 25 )) || fail "the run took $((SECONDS - start)) s: the stopped trial's 30 s sleep was waited out"
run "$WORK/obey.h5" --set 'search.space.obey={choice=[1]}'
"$PY" - "$WORK/ignore.h5" "$WORK/obey.h5" <<'PY'
import sys, h5py

def load(path):
    with h5py.File(path, "r") as f:
        t = f["trials"][:]
        ev = [(float(e["time"]), int(e["trial_id"]), e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
    return t, ev

t, ev = load(sys.argv[1])
assert list(t["status"]) == [b"TERMINATED"] * 2 and list(t["iterations"]) == [3, 1], t[["status", "iterations"]]
stops = [time for time, k, kind, _ in ev if kind == "early_stop" and k == 2]
assert len(stops) == 1, ev
warnings = [(time, k, m) for time, k, kind, m in ev if kind == "warning"]
term = [(time, m) for time, k, m in warnings if k == 2 and "SIGTERM" in m]
assert len(term) == 1, f"no warning that trial 2 needed SIGTERM: {warnings}"
assert not [m for _, k, m in warnings if k == 1], warnings
# The warning is logged when the SIGTERM is sent: the grace, then some slack for a busy machine.
after = term[0][0] - stops[0]
assert 1.0 <= after < 10, f"SIGTERM came {after:.2f} s after the stop, not after the 1 s grace"
log = open(f"{sys.argv[1]}.logs/trial_2_attempt_0.log").read()
assert "iteration 1: working 30 s" in log, log
print(f"ok: ignoring should_stop, trial 2 got SIGTERM {after:.2f} s after its stop: {term[0][1]}")

t, ev = load(sys.argv[2])
assert list(t["status"]) == [b"TERMINATED"] * 2 and list(t["iterations"]) == [3, 1], t[["status", "iterations"]]
assert not [m for _, _, kind, m in ev if kind == "warning"], ev
log = open(f"{sys.argv[2]}.logs/trial_2_attempt_0.log").read()
assert "should_stop() after iteration 1: ending" in log, log
print("ok: checking should_stop, trial 2 ended by itself")
PY
