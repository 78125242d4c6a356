"""A checkpointing command trainable whose state has a shape: `channels` (a layer's width).

Like a PyTorch model whose weights are [channels, ...], its checkpoint records the
channels it was saved with, and loading it into a model of other channels fails
(`size mismatch`), as torch's load_state_dict does. It reports loss = 1/n and step = n,
plus `extra`, a metric the test's config does not declare (it is dropped, with a
warning). `sleep` (seconds per step) gives a test time to send `ranktune ctl set`."""
import json
import os
import sys
import time

import ranktune

cfg = ranktune.config()
folder = ranktune.checkpoint_dir()
n = 0
if ranktune.restored():
    with open(os.path.join(folder, "state.json")) as f:
        state = json.load(f)
    if state["channels"] != cfg["channels"]:
        sys.exit(f"RuntimeError: size mismatch for c1.weight: copying a param with shape "
                 f"[{state['channels']}, 1, 3, 3] from checkpoint, the shape in current model is "
                 f"[{cfg['channels']}, 1, 3, 3]")
    n = state["n"]


def save(into):
    with open(os.path.join(into, "state.json"), "w") as f:
        json.dump({"n": n, "channels": cfg["channels"]}, f)


ranktune.on_save(save)
while n < int(cfg.get("steps", 12)):
    n += 1
    time.sleep(float(cfg.get("sleep", 0.0)))
    ranktune.report(loss=1.0 / n, step=n, extra=float(cfg["channels"]))
