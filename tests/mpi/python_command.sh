#!/usr/bin/env bash
# A Python command trainable (examples/quadratic.py through python/ranktune) under mpirun.
source "$(dirname "$0")/lib.sh"
mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/tests/data/python_command.toml" --results "$WORK/p.h5" \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "run exited $?"; }
check_results "$WORK/p.h5" 6 8
# The trials' own output is kept beside the results file.
ls "$WORK"/p.h5.logs/trial_*_attempt_0.log >/dev/null || fail "no trial logs kept"
grep -q "epoch 8: loss" "$WORK"/p.h5.logs/trial_1_attempt_0.log || fail "trial log lacks the script's output"
"$PY" - "$WORK/p.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    r = f["results"][:]
    assert list(r.dtype.names)[4:] == ["loss", "epoch"], r.dtype.names
    assert sorted(set(r["epoch"].astype(int))) == list(range(1, 9))
    cfg = f["trials"][:]
    assert set(cfg["width"]) == {32, 64} and cfg["lr"].min() >= 0.01 and cfg["lr"].max() <= 0.3
PY
