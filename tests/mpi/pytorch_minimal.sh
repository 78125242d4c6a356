#!/usr/bin/env bash
# The README's PyTorch example: the script it shows is examples/pytorch_minimal.py (everything
# below the docstring, line for line), and configs/pytorch_minimal.toml runs it under ASHA with
# real mpirun and Debian's python3-torch: every trial ends TERMINATED, ASHA stops some early,
# and the stopped scripts end by themselves (no SIGTERM/SIGKILL warning event).
source "$(dirname "$0")/torch_lib.sh"
"$PY" - "$SRC/README.md" "$SRC/examples/pytorch_minimal.py" <<'PY' || fail "the README does not show examples/pytorch_minimal.py"
import re, sys
readme, script = (open(p).read() for p in sys.argv[1:3])
blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
body = script.split('"""', 2)[2].lstrip("\n")  # below the module docstring
assert body in blocks, "no python block of the README equals the script below its docstring"
print("ok: the README shows examples/pytorch_minimal.py")
PY
timeout 200 mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/pytorch_minimal.toml" --results "$WORK/m.h5" \
  --set "$(torch_command pytorch_minimal.py)" > "$WORK/out.txt" 2>&1 || { rc=$?; cat "$WORK/out.txt"; fail "run exited $rc"; }
"$PY" - "$WORK/m.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    ev = [(int(e["trial_id"]), e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert len(t) == 8 and all(s == b"TERMINATED" for s in t["status"]), t[["trial_id", "status"]]
assert all(1 <= n <= 4 for n in t["iterations"]), t["iterations"]
stopped = {k for k, kind, _ in ev if kind == "early_stop"}
assert stopped, "ASHA stopped no trial"
signals = [m for _, kind, m in ev if kind == "warning" and ("SIGTERM" in m or "SIGKILL" in m)]
assert not signals, f"stopped trials needed signals: {signals}"
best = max(float(b) for b in t["best"])
assert 0.5 < best <= 1.0, best  # 4 epochs over 2,000 images reach about 0.75-0.8
print(f"ok: {len(t)} trials, {len(stopped)} stopped by ASHA, best val_accuracy {best:.3f}")
PY
