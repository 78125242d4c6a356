#!/usr/bin/env bash
# Leases: with FIFO a worker runs up to 64 iterations without waiting for decisions. Every
# iteration must still be recorded exactly once, leases must renew past 64, and a Stop
# (here: the target is reached) must reach workers that are running on a lease.
source "$(dirname "$0")/lib.sh"
mpirun -np 5 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/l.h5" \
  --set experiment.num_samples=8 --set stop.max_t=150 --set trainable.seconds_per_step=0 \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "run exited $?"; }
check_results "$WORK/l.h5" 8 150

rc=0
mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/t.h5" \
  --set experiment.num_samples=400 --set stop.max_t=200 --set trainable.seconds_per_step=0.001 \
  --set stop.target=2.0 > "$WORK/out2.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/out2.txt"; fail "target run exited $rc"; }
"$PY" - "$WORK/t.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert ("end", "target reached") in ev, ev[-3:]
status = {s.decode() for s in t["status"]}
assert "RUNNING" not in status, status
assert len(t) < 400, "the target did not stop the experiment early"
assert (t["best"] <= 2.0).any()
# Results past the stop are dropped: no trial has more results than its iterations.
for row in t:
    n = ((r["trial_id"] == row["trial_id"]) & (r["attempt"] == row["attempt"])).sum()
    assert n == row["iterations"], (row["trial_id"], n, row["iterations"])
PY

# Issue 29: [stop] max_total_steps is exact through MPI too, though workers run ahead on
# leases: 3 workers, FIFO leases of up to 64 iterations, ASHA's shorter ones, a budget that
# is no multiple of either.
for kind in fifo asha; do
  mpirun -np 4 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/b-$kind.h5" \
    --set experiment.num_samples=1000 --set stop.max_t=100 --set trainable.seconds_per_step=0 \
    --set stop.max_total_steps=777 --set scheduler.kind=\"$kind\" > "$WORK/out3.txt" 2>&1 ||
    { cat "$WORK/out3.txt"; fail "step budget run ($kind) exited $?"; }
  "$PY" - "$WORK/b-$kind.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert len(r) == 777, f"{len(r)} results, not max_total_steps 777"
assert ("end", "step budget spent") in ev, ev[-3:]
assert {s.decode() for s in t["status"]} <= {"TERMINATED", "PAUSED"}, set(t["status"])
PY
done
