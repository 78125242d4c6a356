#!/usr/bin/env python3
"""The README's PyTorch example: a plain training loop that ranktune tunes (configs/pytorch_minimal.toml).

The model and the IDX reader come from pytorch_fashion_mnist.py, beside it. The README shows
everything below this docstring, and tests/mpi/pytorch_minimal.sh checks that it still does.
Standalone: RANKTUNE_CONFIG='{"lr": 0.05, "momentum": 0.9, "batch_size": 64, "channels": 8}' \
  python3 examples/pytorch_minimal.py
"""
import os
import torch
import torch.nn.functional as F
from pytorch_fashion_mnist import DATA_DIR, Net, load_split  # the model and the IDX reader
import ranktune

cfg = ranktune.config()                                   # this trial's hyperparameters
data = os.environ.get("RANKTUNE_DATA_DIR", DATA_DIR)
x, y = load_split(data, "train", 2000)                    # 2,000 images to train on,
xv, yv = load_split(data, "train", 1000, skip=2000)       # the next 1,000 to validate on
torch.manual_seed(ranktune.trial_id() or 0)
model = Net(cfg["channels"])
opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
b = cfg["batch_size"]
for epoch in range(cfg.get("epochs", 10)):
    for i in range(0, len(x), b):
        opt.zero_grad()
        F.cross_entropy(model(x[i:i + b]), y[i:i + b]).backward()
        opt.step()
    with torch.no_grad():
        accuracy = (model(xv).argmax(1) == yv).float().mean().item()
    ranktune.report(val_accuracy=accuracy)                # one result per epoch
    if ranktune.should_stop():                            # ASHA stopped this trial
        break
