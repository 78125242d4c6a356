#!/usr/bin/env bash
# Command-trainable checkpoints that go bad never take the run down:
#  1. a trainable leaves a FIFO in RANKTUNE_CHECKPOINT_DIR: that save fails its attempt,
#     the retry restores the checkpoint before it, every trial finishes;
#  2. a stored checkpoint's bytes are damaged in the file between an interrupted run and its
#     resume: the restore fails its CRC-32C, the attempt is recorded as failed, the bad
#     checkpoint is dropped, the retry restores the one before it, the run finishes.
source "$(dirname "$0")/../mpi/lib.sh"
CFG="$SRC/tests/data/corrupt_checkpoint.toml"

rc=0
mpirun -np 3 --bind-to none "$RANKTUNE" run "$CFG" --results "$WORK/f.h5" > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/out.txt"; fail "run exited $rc"; }
"$PY" - "$WORK/f.h5" <<'PY' || fail "FIFO checkpoint run"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    trials, results, events = f["trials"][:], f["results"][:], f["events"][:]
assert len(trials) == 4 and all(t["status"] == b"TERMINATED" for t in trials), trials["status"]
for t in trials:
    tid, fault = t["trial_id"], t["fault"].decode()
    errors = [e["message"].decode() for e in events if e["trial_id"] == tid and e["kind"] == b"error"]
    rows = sorted((r["attempt"], r["iteration"], r["step"]) for r in results if r["trial_id"] == tid)
    assert all(i == s for _, i, s in rows), (tid, "step != iteration: a restore went wrong", rows)
    if fault == "ok":
        assert t["attempt"] == 0 and not errors, (tid, t["attempt"], errors)
        continue
    assert t["attempt"] == 1, (tid, "expected one retry", t["attempt"])
    assert len(errors) == 1 and "cannot pack its checkpoint directory" in errors[0] and "FIFO" in errors[0].upper(), errors
    retried = [i for a, i, _ in rows if a == 1]
    assert retried == list(range(3, 9)), ("the retry must restore iteration 2 and go on from 3", retried)
PY

# 2. Interrupt a slower run (every trial pauses and saves), damage one checkpoint, resume.
rm -f "$WORK/r.h5"
mpirun -np 3 --bind-to none "$RANKTUNE" run "$CFG" --results "$WORK/r.h5" --set 'search.space.sleep={grid=[0.5]}' \
  --set 'search.space.fault={grid=["ok"]}' > "$WORK/out2.txt" 2>&1 &
launcher=$!
rank0=$(wait_for_rank0 "$WORK/r.h5" "$launcher")
sleep 2
kill -TERM "$rank0"
rc=0; wait "$launcher" || rc=$?
[[ $rc -eq 4 ]] || { cat "$WORK/out2.txt"; fail "expected exit code 4 after SIGTERM, got $rc"; }
bad=$("$PY" - "$WORK/r.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    c = f["checkpoints"][:]
    pending = {int(t["trial_id"]) for t in f["trials"][:] if t["status"] != b"TERMINATED"}
    live = [i for i, r in enumerate(c) if r["trial_id"] in pending and not r["dropped"]]
    row = max(live, key=lambda i: (c[i]["iteration"], -c[i]["trial_id"]))
    victim = c[row]
    tid, it = int(victim["trial_id"]), int(victim["iteration"])
    before = [int(r["iteration"]) for r in (c[i] for i in live) if r["trial_id"] == tid and r["iteration"] < it]
    off = int(victim["offset"]) + int(victim["size"]) // 2
    f["checkpoint_data"][off] ^= 0xFF
    print(tid, it, max(before, default=0), row)
PY
) || fail "could not damage a checkpoint"
read -r tid it prev row <<< "$bad"
echo "damaged the checkpoint of trial $tid at iteration $it (the one before: $prev)"
rc=0
mpirun -np 3 --bind-to none "$RANKTUNE" run "$CFG" --results "$WORK/r.h5" --set 'search.space.sleep={grid=[0.5]}' \
  --set 'search.space.fault={grid=["ok"]}' > "$WORK/out3.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/out3.txt"; fail "the resumed run exited $rc"; }
"$PY" - "$WORK/r.h5" "$tid" "$it" "$prev" "$row" <<'PY' || { cat "$WORK/out3.txt"; fail "damaged checkpoint run"; }
import sys, h5py
tid, it, prev, row = map(int, sys.argv[2:])
with h5py.File(sys.argv[1], "r") as f:
    trials, results, events, ck = f["trials"][:], f["results"][:], f["events"][:], f["checkpoints"][:]
assert len(trials) == 2 and all(t["status"] == b"TERMINATED" for t in trials), trials["status"]
errors = [e["message"].decode() for e in events if e["trial_id"] == tid and e["kind"] == b"error"]
assert any("fails its checksum" in m for m in errors), errors
assert ck[row]["dropped"], "the bad checkpoint is still live"
t = trials[trials["trial_id"] == tid][0]
rows = sorted((r["attempt"], r["iteration"], r["step"]) for r in results if r["trial_id"] == tid)
last = [(i, s) for a, i, s in rows if a == t["attempt"]]
assert last[0][0] == prev + 1, ("the retry must go on from the checkpoint before the bad one", prev, last)
assert all(i == s for i, s in last), last
PY
echo "ok: checkpoints"
