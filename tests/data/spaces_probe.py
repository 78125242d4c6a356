"""A command trainable that records the config it received (issue 32's end-to-end test):
each attempt appends {"trial": id, "config": {...}} as one line to $SPACES_LOG.

Without `channels` it reports loss = (log10(lr) + 2)^2, plus |momentum - 0.9| with sgd or 0.5
with adam, for `epochs` iterations. With `channels` it is a checkpointing trainable whose
state has a shape, like shape_check.py: loading a checkpoint saved with other channels fails
("size mismatch"); it reports loss = (1 + 10 |lr - 0.05|) / n for `steps` iterations, sleeping
`sleep` seconds per step so that PBT's trials run side by side."""
import json
import math
import os
import sys
import time

import ranktune

cfg = ranktune.config()
with open(os.environ["SPACES_LOG"], "a") as f:
    f.write(json.dumps({"trial": ranktune.trial_id(), "config": cfg}) + "\n")

if "channels" not in cfg:
    loss = (math.log10(cfg["lr"]) + 2) ** 2
    loss += abs(cfg["momentum"] - 0.9) if "momentum" in cfg else 0.5
    for _ in range(int(cfg["epochs"])):
        ranktune.report(loss=loss)
    sys.exit(0)

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
while n < int(cfg["steps"]):
    n += 1
    time.sleep(float(cfg["sleep"]))
    ranktune.report(loss=(1 + 10 * abs(cfg["lr"] - 0.05)) / n)
