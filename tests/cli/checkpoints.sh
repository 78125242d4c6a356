#!/usr/bin/env bash
# `ranktune compact` and `ranktune export-checkpoint` on a real run of the synthetic
# trainable with retention (checkpoints every 2 iterations, the newest kept per trial).
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/q.h5" --set experiment.num_samples=4 \
  --set checkpoint.every=2 --set checkpoint.keep_last=1 --set trainable.seconds_per_step=0.0 > "$WORK/run.txt" 2>&1 \
  || { cat "$WORK/run.txt"; fail "run failed"; }

# export: a built-in trainable's checkpoint is checkpoint.bin plus checkpoint.json.
"$R" export-checkpoint "$WORK/q.h5" --trial 2 "$WORK/e2" > "$WORK/out.txt" || fail "export exited $?"
grep -q "trial 2, iteration 18" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "the default is not the newest checkpoint"; }
"$PY" - "$WORK/q.h5" "$WORK/e2" <<'PY' || fail "export wrote the wrong files"
import sys, json, os, h5py
meta = json.load(open(os.path.join(sys.argv[2], "checkpoint.json")))
data = open(os.path.join(sys.argv[2], "checkpoint.bin"), "rb").read()
with h5py.File(sys.argv[1], "r") as f:
    row = [r for r in f["checkpoints"][:] if r["trial_id"] == 2 and r["iteration"] == 18 and not r["dropped"]][0]
    stored = bytes(f["checkpoint_data"][row["offset"]:row["offset"] + row["size"]])
    trial = f["trials"][1]
assert data == stored and meta["size"] == len(data), (meta, len(data))
assert meta["trial"] == 2 and meta["iteration"] == 18 and meta["attempt"] == 0, meta
assert meta["crc32c"] == "%08x" % row["crc32c"], (meta["crc32c"], row["crc32c"])
assert abs(meta["config"]["x1"] - trial["x1"]) < 1e-12 and meta["metric"] == "loss", meta
PY
# Errors: exit 2 with what is there.
expect_error() {  # CODE TEXT COMMAND...
  local code=$1 text=$2; shift 2
  local rc=0; "$@" > "$WORK/err.txt" 2>&1 || rc=$?
  [[ $rc -eq $code ]] && grep -q -- "$text" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "$* : expected exit $code and '$text', got $rc"; }
}
expect_error 2 "was dropped" "$R" export-checkpoint "$WORK/q.h5" --trial 2 --iteration 4 "$WORK/e4"
grep -q "Its checkpoints: 18 (dropped: 2, 4, 6, 8, 10, 12, 14, 16)" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "the stored iterations are not listed"; }
expect_error 2 "no trial 9 (the file has 4 trials" "$R" export-checkpoint "$WORK/q.h5" --trial 9 "$WORK/e9"
expect_error 2 "is not empty" "$R" export-checkpoint "$WORK/q.h5" --trial 2 "$WORK/e2"
[[ ! -e "$WORK/e4" && ! -e "$WORK/e9" ]] || fail "a refused export left a folder"

# compact -o: everything but the dropped bytes is copied faithfully.
"$R" compact "$WORK/q.h5" -o "$WORK/c.h5" > "$WORK/out.txt" || fail "compact exited $?"
# 4: each trial's newest (the experiment state, counted here while it was a trial 0 row of
# /checkpoints, has /state of its own since issue 14).
grep -Eq "4 checkpoints kept, [0-9]+ dropped rows without bytes" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "no summary"; }
"$PY" - "$WORK/q.h5" "$WORK/c.h5" <<'PY' || fail "compact changed the file's contents"
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:])
assert dict(a.attrs) == dict(b.attrs), (dict(a.attrs), dict(b.attrs))
assert dict(a["stack"].attrs) == dict(b["stack"].attrs)
for t in ("trials", "results", "events", "workers", "state", "state_data"):
    assert np.array_equal(a[t][:], b[t][:]), t
ca, cb = a["checkpoints"][:], b["checkpoints"][:]
assert len(ca) == len(cb) and np.array_equal(ca["dropped"], cb["dropped"]) and np.array_equal(ca["crc32c"], cb["crc32c"])
live = ca["dropped"] == 0
assert (cb["offset"][~live] == -1).all()
for x, y in zip(ca[live], cb[live]):
    assert bytes(a["checkpoint_data"][x["offset"]:x["offset"] + x["size"]]) == bytes(b["checkpoint_data"][y["offset"]:y["offset"] + y["size"]])
assert b["checkpoint_data"].shape[0] == cb["size"][live].sum(), "the compacted data holds more than the live checkpoints"
PY
expect_error 5 "already exists" "$R" compact "$WORK/q.h5" -o "$WORK/c.h5"
# In place, atomically: the same path, the export still works and gives the same bytes.
"$R" compact "$WORK/q.h5" > /dev/null || fail "in-place compact exited $?"
"$R" export-checkpoint "$WORK/q.h5" --trial 2 "$WORK/e2b" > /dev/null || fail "export after compact failed"
cmp "$WORK/e2/checkpoint.bin" "$WORK/e2b/checkpoint.bin" || fail "compact changed a checkpoint"
ls -a "$WORK" | grep -q compact && fail "a temporary file was left behind"
# Foreign, truncated and open files are refused with the reader's errors.
echo "not a results file" > "$WORK/text.h5"
expect_error 5 "not an HDF5 file" "$R" compact "$WORK/text.h5"
head -c 3000 "$WORK/c.h5" > "$WORK/cut.h5"
expect_error 5 "truncated" "$R" compact "$WORK/cut.h5"
expect_error 5 "truncated" "$R" export-checkpoint "$WORK/cut.h5" --trial 1 "$WORK/ecut"
cp "$WORK/c.h5" "$WORK/held.h5"
"$PY" - "$WORK/held.h5" <<'PY'
import os, sys, h5py
f = h5py.File(sys.argv[1], "r+", libver="latest")
f.swmr_mode = True   # the superblock now says a writer holds the file
f.flush()
os._exit(0)          # as a killed run would: without closing it
PY
expect_error 5 "a writer holds it" "$R" compact "$WORK/held.h5"
echo "ok: checkpoints cli"
