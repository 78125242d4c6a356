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
import shape_state

cfg = ranktune.config()
with open(os.environ["SPACES_LOG"], "a") as f:
    f.write(json.dumps({"trial": ranktune.trial_id(), "config": cfg}) + "\n")

if "channels" not in cfg:
    loss = (math.log10(cfg["lr"]) + 2) ** 2
    loss += abs(cfg["momentum"] - 0.9) if "momentum" in cfg else 0.5
    for _ in range(int(cfg["epochs"])):
        ranktune.report(loss=loss)
    sys.exit(0)

n = shape_state.restore(cfg)
shape_state.keep(cfg, lambda: n)
while n < int(cfg["steps"]):
    n += 1
    time.sleep(float(cfg["sleep"]))
    ranktune.report(loss=(1 + 10 * abs(cfg["lr"] - 0.05)) / n)
