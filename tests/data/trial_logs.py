"""A command trainable for tests/mpi/trial_logs.sh: what its log, its error and its log_tail
must show. `mode` picks the behaviour:

- "ok": checkpoints its step count; prints where each run of it starts (RANKTUNE_ITERATION)
  and one line per iteration, and reports `it` = ranktune.iteration(), so a test can see that
  a resumed trial's log kept the earlier runs and that the two counts agree;
- "raise": dies of an exception (the error must name it);
- "nan": prints a line, reports loss NaN, then exits (log_tail must hold the line);
- "silent": prints a line and exits 0 without ever reporting the metric;
- "string": reports loss as the string "0.5" (a malformed line);
- "flood": prints about 2 MB, then "THE END", then reports (the log is capped)."""
import math
import os
import sys
import time

import ranktune

cfg = ranktune.config()
mode = cfg.get("mode", "ok")
# (getattr: the same script runs under an older ranktune, to show what its tests catch.)
iteration = getattr(ranktune, "iteration", lambda: None)
print(f"run starts at it={iteration()}", flush=True)

if mode == "raise":
    print("loading the donor's weights", flush=True)
    raise RuntimeError("size mismatch for c1.weight: copying a param with shape [8, 1, 3, 3]")
if mode == "nan":
    print("the loss diverged before this report", flush=True)
    ranktune.report(loss=float("nan"))
    time.sleep(1)  # the worker may see the Stop first, or the exit: both must keep the tail
    sys.exit(0)
if mode == "silent":
    print("trained, but reported no loss", flush=True)
    ranktune.report(other=1.0)
    sys.exit(0)
if mode == "string":
    ranktune.report(loss="0.5", it=1)
    time.sleep(60)
    sys.exit(0)
if mode == "flood":
    sys.stdout.write(("x" * 99 + "\n") * 20000)
    print("THE END", flush=True)
    ranktune.report(loss=1.0, it=1)
    sys.exit(0)

folder = ranktune.checkpoint_dir()
n = int(open(os.path.join(folder, "n")).read()) if ranktune.restored() else 0


def save(into):
    with open(os.path.join(into, "n"), "w") as f:
        f.write(str(n))


ranktune.on_save(save)
x = float(cfg["x"])
while True:
    n += 1
    print(f"train n={n} it={iteration()}", flush=True)
    ranktune.report(loss=(x - 0.3) ** 2 + 1.0 / n, it=iteration() or -1)
