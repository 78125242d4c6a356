"""A checkpointing command trainable (RANKTUNE_CHECKPOINT_DIR) for the fault tests.

Its state is the step count n, saved as the file `n`. With fault = "fifo", the first
attempt also leaves a FIFO in the folder when it saves at step 4: a checkpoint ranktune
refuses to pack. It reports loss = 1/n and step = n, so a test can see where a restored
attempt went on from. `sleep` (seconds per step) gives a test time to interrupt it."""
import os
import time

import ranktune

cfg = ranktune.config()
folder = ranktune.checkpoint_dir()
n = int(open(os.path.join(folder, "n")).read()) if ranktune.restored() else 0


def save(into):
    with open(os.path.join(into, "n"), "w") as f:
        f.write(str(n))
    if cfg["fault"] == "fifo" and ranktune.attempt() == 0 and n == 4:
        os.mkfifo(os.path.join(into, "pipe"))


ranktune.on_save(save)
while n < 8:
    n += 1
    time.sleep(float(cfg.get("sleep", 0.0)))
    ranktune.report(loss=1.0 / n, step=n)
