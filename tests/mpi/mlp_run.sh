#!/usr/bin/env bash
# `ranktune run` of configs/fashion_mlp_asha.toml cut down to a subset of Fashion-MNIST
# (4 trials, 3 steps of 8 batches, 500 validation images) under real mpirun: every trial
# ends TERMINATED, the file holds the mlp's metrics with sensible values, and the report
# reads it.
source "$(dirname "$0")/lib.sh"
timeout 120 mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/fashion_mlp_asha.toml" \
  --results "$WORK/m.h5" --set experiment.num_samples=4 --set stop.max_t=3 \
  --set trainable.batches_per_step=8 --set trainable.train_samples=4000 --set trainable.val_samples=500 \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "mpirun exited $?"; }
"$PY" - "$WORK/m.h5" <<'PY'
import math, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
assert len(t) == 4, len(t)
assert all(s == b"TERMINATED" for s in t["status"]), set(t["status"])
for col in ("train_loss", "val_loss", "val_accuracy", "samples_per_s", "step_time_s"):
    assert col in r.dtype.names, (col, r.dtype.names)
for row in t:
    mine = r[(r["trial_id"] == row["trial_id"]) & (r["attempt"] == row["attempt"])]
    assert list(mine["iteration"]) == list(range(1, row["iterations"] + 1)), row["trial_id"]
    assert 1 <= row["iterations"] <= 3
ok = r[~(r["val_accuracy"] != r["val_accuracy"])]  # NaN only for a diverged trial
assert len(ok) > 0
assert (ok["val_accuracy"] >= 0).all() and (ok["val_accuracy"] <= 1).all()
assert max(ok["val_accuracy"]) > 0.5, max(ok["val_accuracy"])
assert (r["samples_per_s"] > 0).all() and (r["step_time_s"] > 0).all()
assert (t["iterations"] == 3).any(), "ASHA let no trial reach max_t"
print(f"ok: {len(t)} mlp trials, best val_accuracy {max(ok['val_accuracy']):.3f}")
PY
"$RANKTUNE" report "$WORK/m.h5" > "$WORK/report.txt" || fail "report failed"
grep -q val_accuracy "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "the report does not show val_accuracy"; }
