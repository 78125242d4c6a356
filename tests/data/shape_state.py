"""The checkpointed state of a command trainable whose model has a shape, `channels` (a
layer's width), shared by shape_check.py and spaces_probe.py.

Like a PyTorch model whose weights are [channels, ...], the checkpoint records the channels
it was saved with, and restoring it into a trial of other channels fails (`size mismatch`),
with the message torch's load_state_dict gives."""
import json
import os
import sys

import ranktune


def restore(cfg):
    """The step count the trial goes on from: its checkpoint's, or 0 on a fresh start."""
    if not ranktune.restored():
        return 0
    with open(os.path.join(ranktune.checkpoint_dir(), "state.json")) as f:
        state = json.load(f)
    if state["channels"] != cfg["channels"]:
        sys.exit(f"RuntimeError: size mismatch for c1.weight: copying a param with shape "
                 f"[{state['channels']}, 1, 3, 3] from checkpoint, the shape in current model is "
                 f"[{cfg['channels']}, 1, 3, 3]")
    return state["n"]


def keep(cfg, steps):
    """Saves the step count, steps(), and the channels at every checkpoint."""
    def save(into):
        with open(os.path.join(into, "state.json"), "w") as f:
            json.dump({"n": steps(), "channels": cfg["channels"]}, f)
    ranktune.on_save(save)
