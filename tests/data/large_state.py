"""A checkpointing command trainable with a large state whose every byte can be checked, for
tests/mpi/large_checkpoints.sh (checkpoints that stream through rank 0 in chunks).

Its state is the step count n (file `n`) and `state_mib` MiB in `state.bin`, where MiB block i
is the SHA-256 of "trial/n/i" repeated: a chunk that is lost, repeated or put at the wrong
place on its way through rank 0 changes some block. On restore it checks every block against
the step it restored and exits 1 naming the first wrong one, so the trial fails. It reports
loss = 1 / (lr * n) and step = n: what an unpaused run reports, whatever the pauses."""
import hashlib
import os
import sys

import ranktune

MIB = 1 << 20


def block(n, i):
    return hashlib.sha256(f"{ranktune.trial_id()}/{n}/{i}".encode()).digest() * (MIB // 32)


cfg = ranktune.config()
lr = float(cfg["lr"])
size = int(cfg["state_mib"])
folder = ranktune.checkpoint_dir()
n = 0
if ranktune.restored():
    n = int(open(os.path.join(folder, "n")).read())
    with open(os.path.join(folder, "state.bin"), "rb") as f:
        for i in range(size):
            if f.read(MIB) != block(n, i):
                sys.exit(f"large_state.py: MiB {i} of the restored state (step {n}) is not what was saved")
        if f.read(1):
            sys.exit("large_state.py: the restored state is longer than what was saved")


def save(into):
    with open(os.path.join(into, "state.bin"), "wb") as f:
        for i in range(size):
            f.write(block(n, i))
    with open(os.path.join(into, "n"), "w") as f:
        f.write(str(n))


ranktune.on_save(save)
while n < int(cfg.get("steps", 4)):
    n += 1
    ranktune.report(loss=1.0 / (lr * n), step=n)
