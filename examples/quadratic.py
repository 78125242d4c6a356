#!/usr/bin/env python3
"""A toy "training" run for ranktune's command trainable.

Gradient descent with learning rate `lr` on a noisy quadratic whose curvature depends on
`width`; it reports `loss` once per epoch. Too large an `lr` diverges (loss grows), too small
a one converges slowly, so there is something to tune.

Config keys (all optional): lr (default 0.1), width (default 64), epochs (default 10).
Standalone:  RANKTUNE_CONFIG='{"lr": 0.3, "width": 32}' python3 examples/quadratic.py
"""

import math
import os
import random
import sys
import time

try:
    import ranktune
except ImportError:  # running from a checkout: use the repository's python/ folder
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import ranktune


def main():
    cfg = ranktune.config() if "RANKTUNE_CONFIG" in os.environ else {}
    lr = float(cfg.get("lr", 0.1))
    width = int(cfg.get("width", 64))
    epochs = int(cfg.get("epochs", 10))
    rng = random.Random(f"{os.environ.get('RANKTUNE_SEED', 0)}/{ranktune.trial_id()}")

    # Curvature 1 + width/64: wider "models" are stiffer, so they tolerate smaller lr.
    curvature = 1.0 + width / 64.0
    w = 5.0
    for epoch in range(1, epochs + 1):
        grad = curvature * w + rng.gauss(0.0, 0.1)
        w -= lr * grad
        loss = 0.5 * curvature * w * w + 0.01 * rng.random()
        if not math.isfinite(loss):
            loss = float("inf")
        ranktune.report(loss=loss, epoch=epoch)
        print(f"epoch {epoch}: loss {loss:.6g}", file=sys.stderr)
        time.sleep(0.01)


if __name__ == "__main__":
    main()
