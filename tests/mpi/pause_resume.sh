#!/usr/bin/env bash
# Checkpoint correctness under real mpirun: HyperBand pauses trials at rung boundaries and
# resumes them from checkpoints stored in the results file, on any free worker. The
# synthetic trainable's report at step t depends only on (config, trial, attempt, t), so a
# resumed trial must report exactly what an unpaused one would: every (trial, iteration)
# value of the real run must equal the virtual-time simulation of the same experiment,
# which never leaves the process. A resume that restarted the step count, or restored the
# wrong trial's checkpoint, changes the values. Then PBT: exploits must restore a donor's
# checkpoint and record the lineage.
source "$(dirname "$0")/lib.sh"
mpirun -np 5 --bind-to none "$RANKTUNE" run "$SRC/configs/branin_hyperband.toml" --results "$WORK/hb.h5" \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "hyperband run exited $?"; }
"$RANKTUNE" simulate "$SRC/configs/branin_hyperband.toml" --workers 4 --results "$WORK/sim.h5" \
  > "$WORK/sim.txt" 2>&1 || { cat "$WORK/sim.txt"; fail "simulate exited $?"; }
"$PY" - "$WORK/hb.h5" "$WORK/sim.h5" <<'PY'
import sys, h5py, numpy as np
def load(path):
    with h5py.File(path, "r") as f:
        r = f["results"][:]
        ev = [(int(e["trial_id"]), e["kind"].decode()) for e in f["events"][:]]
        ck = f["checkpoints"][:] if "checkpoints" in f else None
        t = f["trials"][:]
    return {(int(x["trial_id"]), int(x["iteration"])): float(x["loss"]) for x in r}, ev, ck, t, r
real, ev, ck, trials, rows = load(sys.argv[1])
sim, _, _, _, _ = load(sys.argv[2])
assert len(rows) == len(real), "a (trial, iteration) was recorded twice"
assert set(real) == set(sim), (sorted(set(real) ^ set(sim)))[:10]
bad = [(k, real[k], sim[k]) for k in real if real[k] != sim[k]]
assert not bad, bad[:5]
resumed = {t for t, k in ev if k == "unpause"}
paused = {t for t, k in ev if k == "pause"}
assert resumed and resumed <= paused, (resumed, paused)
assert ck is not None, "no checkpoints table"
ck = ck[ck["trial_id"] > 0]  # rows of trial 0 hold the searcher and scheduler state
assert len(ck) >= len(resumed), "fewer checkpoints than unpaused trials"
assert all(s.decode() == "TERMINATED" for s in trials["status"]), set(trials["status"])
# Hand-computed brackets for R = 27, eta = 3: (27 trials from 1 iteration), (12 from 3),
# (6 from 9), (4 from 27); a third of each rung goes on. Trials ending at 1, 3, 9, 27:
# 18, 6 + 8, 2 + 3 + 4, 1 + 1 + 2 + 4.
ends = {int(n): int((trials["iterations"] == n).sum()) for n in set(trials["iterations"])}
assert ends == {1: 18, 3: 14, 9: 9, 27: 8}, ends
print(f"hyperband: {len(real)} results match the simulation; {len(paused)} trials paused, "
      f"{len(resumed)} resumed from {len(ck)} stored checkpoints")
PY
mpirun -np 5 --bind-to none "$RANKTUNE" run "$SRC/configs/rosenbrock_pbt.toml" --results "$WORK/pbt.h5" \
  > "$WORK/pbt.txt" 2>&1 || { cat "$WORK/pbt.txt"; fail "pbt run exited $?"; }
check_results "$WORK/pbt.h5" 8 40
"$PY" - "$WORK/pbt.h5" <<'PY'
import sys, json, h5py
with h5py.File(sys.argv[1], "r") as f:
    ev = [e for e in f["events"][:] if e["kind"].decode() == "exploit"]
    ck = {(int(c["trial_id"]), int(c["iteration"])) for c in f["checkpoints"][:]}
    r = f["results"][:]
assert ev, "PBT never exploited"
for e in ev:
    lin = json.loads(e["message"].decode())
    assert (lin["donor"], lin["donor_iteration"]) in ck, lin
    # (before may equal after: a trial that exploits the same donor checkpoint twice and
    # draws the same x0.8/x1.2 factors gets the same config again.)
    assert lin["iteration"] % 4 == 0 and set(lin["after"]) == {"x1", "x2"}, lin
    assert -1.5 <= lin["after"]["x1"] <= 1.5, lin
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "duplicate iterations"
print(f"pbt: {len(ev)} exploits, lineage recorded, every donor checkpoint stored")
PY

# [checkpoint] every = 5 and at_end: each trial of 12 iterations stores iterations 5, 10, 12.
mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/ck.h5" \
  --set experiment.num_samples=4 --set stop.max_t=12 --set trainable.seconds_per_step=0 \
  --set checkpoint.every=5 --set checkpoint.at_end=true > "$WORK/ck.txt" 2>&1 \
  || { cat "$WORK/ck.txt"; fail "checkpoint run exited $?"; }
check_results "$WORK/ck.h5" 4 12
"$PY" - "$WORK/ck.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    ck = f["checkpoints"][:]
got = sorted((int(c["trial_id"]), int(c["iteration"])) for c in ck if c["trial_id"] > 0)
assert got == [(t, i) for t in range(1, 5) for i in (5, 10, 12)], got
print("checkpoint.every/at_end: every trial stored iterations 5, 10 and 12")
PY

# ASHA's promotion variant: trials pause at every rung and the best resume; the ones never
# promoted end with the experiment, so every trial ends TERMINATED at a rung or max_t.
mpirun -np 4 --bind-to none "$RANKTUNE" run "$SRC/configs/hartmann6_asha_promotion.toml" --results "$WORK/ap.h5" \
  --set trainable.seconds_per_step=0.001 > "$WORK/ap.txt" 2>&1 || { cat "$WORK/ap.txt"; fail "asha promotion run exited $?"; }
"$PY" - "$WORK/ap.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [(int(e["trial_id"]), e["kind"].decode()) for e in f["events"][:]]
assert len(t) == 40 and all(s == b"TERMINATED" for s in t["status"]), set(t["status"])
assert set(int(n) for n in t["iterations"]) <= {1, 3, 9, 27, 81}, set(t["iterations"])
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "duplicate iterations"
for row in t:  # every iteration 1..n of each trial is recorded once, across its pauses
    its = sorted(int(x["iteration"]) for x in r if x["trial_id"] == row["trial_id"])
    assert its == list(range(1, int(row["iterations"]) + 1)), (row["trial_id"], its)
unpaused = {i for i, k in ev if k == "unpause"}
assert unpaused, "no trial was promoted"
print(f"asha promotion: {len(unpaused)} trials promoted at least once; ends at "
      f"{sorted(set(int(n) for n in t['iterations']))}")
PY

# Times over the experiment's life (issue 12 item 3): a run stopped by a signal and resumed
# goes on from the largest time in the file, so a trial that spans the stop has its rows in
# time order, and the file has its creation time as ISO 8601 and as epoch seconds.
mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/t.h5" \
  --set experiment.num_samples=6 --set trainable.seconds_per_step=0.05 > "$WORK/t1.txt" 2>&1 &
launcher=$!
rank0=$(wait_for_rank0 "$WORK/t.h5" "$launcher")
sleep 1.5
kill -TERM "$rank0"
rc=0; wait "$launcher" || rc=$?
[[ $rc -eq 4 ]] || { cat "$WORK/t1.txt"; fail "expected exit 4 after SIGTERM, got $rc"; }
mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/t.h5" --resume \
  --set experiment.num_samples=6 --set trainable.seconds_per_step=0.05 > "$WORK/t2.txt" 2>&1 \
  || { cat "$WORK/t2.txt"; fail "the resumed run exited $?"; }
"$PY" - "$WORK/t.h5" <<'PY'
import calendar, sys, time, h5py
with h5py.File(sys.argv[1], "r") as f:
    r = f["results"][:]
    ev = f["events"][:]
    created = f.attrs["created"].decode()
    unix = f.attrs.get("created_unix")
resume = [i for i, e in enumerate(ev) if e["kind"] == b"resume"]
assert len(resume) == 1, [e["kind"] for e in ev]
before = max(e["time"] for e in ev[:resume[0]])
assert ev[resume[0]]["time"] >= before, (ev[resume[0]]["time"], before)
spanning = 0
for trial in set(r["trial_id"]):
    rows = sorted((int(x["attempt"]), int(x["iteration"]), float(x["time"])) for x in r[r["trial_id"] == trial])
    times = [t for _, _, t in rows]
    assert times == sorted(times), (trial, rows)
    spanning += min(times) < ev[resume[0]]["time"] < max(times)
assert spanning >= 1, "no trial ran both before and after the resume"
assert unix is not None, "no created_unix attribute"
assert int(unix) == calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")), (created, unix)
assert abs(time.time() - int(unix)) < 600, unix
print(f"times: monotonic across the resume for every trial ({spanning} spanned it); created_unix {unix}")
PY
