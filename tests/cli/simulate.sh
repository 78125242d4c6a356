#!/usr/bin/env bash
# ranktune simulate: the quickstart on 4 virtual workers writes a results file that
# check_results and `ranktune report` accept; a non-synthetic config is refused with 2.
source "$(dirname "$0")/../mpi/lib.sh"
"$RANKTUNE" simulate "$SRC/tests/data/quickstart_branin.toml" --workers 4 --results "$WORK/q.sim.h5" \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "simulate exited $?"; }
cat "$WORK/out.txt"
# 24 trials of 20 steps of 0.02 s on 4 workers: 6 waves of 0.4 s.
grep -q "completed after 2.4 virtual s: 24 trials (24 terminated, 0 error), 480 results" "$WORK/out.txt" \
  || fail "unexpected virtual end time or counts"
grep -q "results: $WORK/q.sim.h5" "$WORK/out.txt" || fail "the results path was not printed"
grep -q "peak RSS" "$WORK/out.txt" || fail "no peak RSS line"
check_results "$WORK/q.sim.h5" 24 20
"$RANKTUNE" report "$WORK/q.sim.h5" > "$WORK/report.txt" || fail "report exited $?"
grep -q "simulated mode, 4 workers" "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "report does not say simulated"; }
"$PY" - "$WORK/q.sim.h5" <<'PY' || fail "stack or workers not recorded as simulated"
import sys, h5py
with h5py.File(sys.argv[1], "r", swmr=True) as f:
    s = f["stack"].attrs
    assert s["device_mode"] == b"simulated", s["device_mode"]
    assert s["workers"] == b"4" and s["sim_seed"] == b"1" and "sim_jitter" in s
    w = f["workers"][:]
    assert list(w["rank"]) == [1, 2, 3, 4] and set(w["device"]) == {b"sim"} and set(w["host"]) == {b"simulated"}
PY
# Same seed, same file contents (the trials table and the result times).
"$RANKTUNE" simulate "$SRC/tests/data/quickstart_branin.toml" --workers 4 --jitter 0.2 --speed-spread 0.3 --seed 5 \
  --results "$WORK/a.h5" > /dev/null || fail "jittered simulate failed"
"$RANKTUNE" simulate "$SRC/tests/data/quickstart_branin.toml" --workers 4 --jitter 0.2 --speed-spread 0.3 --seed 5 \
  --results "$WORK/b.h5" > /dev/null || fail "jittered simulate failed"
"$PY" - "$WORK/a.h5" "$WORK/b.h5" <<'PY' || fail "same seed gave different runs"
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r", swmr=True) for p in sys.argv[1:])
assert np.array_equal(a["results"]["time"], b["results"]["time"])
assert np.array_equal(a["trials"]["end_time"], b["trials"]["end_time"])
PY
# Default results path: [experiment] results with .h5 -> .sim.h5 (quickstart.h5 in the cwd).
(cd "$WORK" && "$RANKTUNE" simulate "$SRC/tests/data/quickstart_branin.toml" --workers 2 > /dev/null) || fail "default path run failed"
[[ -s "$WORK/quickstart.sim.h5" ]] || fail "default results path is not quickstart.sim.h5"
# An existing file is never overwritten.
rc=0; "$RANKTUNE" simulate "$SRC/tests/data/quickstart_branin.toml" --workers 4 --results "$WORK/q.sim.h5" > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "already exists" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "existing file not refused"; }
# A command trainable cannot be simulated: exit 2, naming the key, no file.
rc=0; "$RANKTUNE" simulate "$SRC/tests/data/python_command.toml" --workers 4 --results "$WORK/cmd.h5" \
  > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || { cat "$WORK/out.txt"; fail "expected exit code 2 for a command trainable, got $rc"; }
grep -q "trainable.kind" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "the refusal does not name trainable.kind"; }
[[ ! -e "$WORK/cmd.h5" ]] || fail "a results file was created for a refused config"
# --workers is required.
rc=0; "$RANKTUNE" simulate "$SRC/tests/data/quickstart_branin.toml" > /dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "missing --workers: expected 2, got $rc"
echo "ok: simulate"
