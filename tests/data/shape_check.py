"""A checkpointing command trainable whose state has a shape: `channels` (a layer's width).

Like a PyTorch model whose weights are [channels, ...], its checkpoint records the
channels it was saved with, and loading it into a model of other channels fails
(`size mismatch`), as torch's load_state_dict does. It reports loss = 1/n and step = n,
plus `extra`, a metric the test's config does not declare (it is dropped, with a
warning). `sleep` (seconds per step) gives a test time to send `ranktune ctl set`."""
import time

import ranktune
import shape_state

cfg = ranktune.config()
n = shape_state.restore(cfg)
shape_state.keep(cfg, lambda: n)
while n < int(cfg.get("steps", 12)):
    n += 1
    time.sleep(float(cfg.get("sleep", 0.0)))
    ranktune.report(loss=1.0 / n, step=n, extra=float(cfg["channels"]))
