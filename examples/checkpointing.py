#!/usr/bin/env python3
"""A command trainable that checkpoints through RANKTUNE_CHECKPOINT_DIR (see docs/guide/checkpoints.md,
"Checkpoints of command trainables", and examples/checkpointing.toml).

Gradient descent with learning rate `lr` on f(x) = sum((x_i - 1)^2) from a seeded start;
it reports `loss` once per step. Its state is the step count and x, saved as state.json,
plus `state_kib` KiB of model-like bytes in weights.bin (to make checkpoints as large as a
small network's; 0 by default). With PBT, a trial that exploits another restarts from the
donor's files with its own new `lr`.

Standalone:  RANKTUNE_CONFIG='{"lr": 0.1}' python3 examples/checkpointing.py
"""

import json
import os
import random
import sys

try:
    import ranktune
except ImportError:  # running from a checkout: use the repository's python/ folder
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import ranktune


def main():
    cfg = ranktune.config() if "RANKTUNE_CONFIG" in os.environ else {}
    lr = float(cfg.get("lr", 0.1))
    steps = int(cfg.get("steps", 50))
    state_kib = int(cfg.get("state_kib", 0))
    folder = ranktune.checkpoint_dir()

    if ranktune.restored():
        with open(os.path.join(folder, "state.json")) as f:
            state = json.load(f)
    else:
        rng = random.Random(f"{os.environ.get('RANKTUNE_SEED', 0)}/{ranktune.trial_id()}")
        state = {"step": 0, "x": [rng.uniform(-3, 3) for _ in range(4)]}

    def save(into):
        # Write then rename, so a crash mid-save never leaves a half-written state.json.
        tmp = os.path.join(into, "state.json.tmp")
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, os.path.join(into, "state.json"))
        if state_kib > 0:
            with open(os.path.join(into, "weights.bin"), "wb") as f:
                f.write(os.urandom(state_kib * 1024))

    ranktune.on_save(save)
    while state["step"] < steps:
        state["x"] = [xi - lr * 2 * (xi - 1) for xi in state["x"]]
        state["step"] += 1
        ranktune.report(loss=sum((xi - 1) ** 2 for xi in state["x"]), step=state["step"])


if __name__ == "__main__":
    main()
