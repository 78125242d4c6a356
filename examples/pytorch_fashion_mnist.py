#!/usr/bin/env python3
"""A small CNN on Fashion-MNIST in plain PyTorch, as a ranktune command trainable.

The lines marked `# ranktune` are all that ranktune needs; without them this is an ordinary
training script. Each iteration is one epoch over `train_samples` training images, then a
validation pass over the `val_samples` images that follow them in the 60k training file
(the search never sees the t10k test file). It reports `val_accuracy`, `val_loss` and
`train_loss`; it stops early when the scheduler says so (`ranktune.should_stop()`), saves
the model and the optimizer when ranktune asks (`on_save`), restores them at start, and
evaluates the restored model on the first `test_samples` t10k images for `ranktune eval`
(`on_evaluate`, with its inference timed by `ranktune.time_inference`).

Config keys (all optional): lr (0.05), momentum (0.9), batch_size (64), channels (8),
epochs (10; ranktune's `[stop] max_t` usually ends the trial first), train_samples (2000),
val_samples (1000), test_samples (2000), data_dir (/usr/share/datasets/fashion-mnist, or
$RANKTUNE_DATA_DIR). Runs are deterministic: the weights and the data order are seeded by
RANKTUNE_SEED and the trial id, one thread (torch.set_num_threads(1)).

Standalone (reports are printed to stdout; no checkpoint):
  RANKTUNE_CONFIG='{"lr": 0.05, "epochs": 3}' python3 examples/pytorch_fashion_mnist.py
Under ranktune: configs/pytorch_asha.toml (ASHA) and configs/pytorch_pbt.toml (PBT).
examples/pytorch_ddp.py imports the model and the data from here.
"""

import gzip
import hashlib
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    import ranktune
except ImportError:  # running from a checkout: use the repository's python/ folder
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import ranktune

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST's pixel statistics


class Net(nn.Module):
    """Two 3x3 conv layers with max pooling, then one linear layer: 28x28 -> 10 classes."""

    def __init__(self, channels=8):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.fc = nn.Linear(2 * channels * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def read_idx(path, count, skip=0):
    """Items skip .. skip+count of an IDX file (gzipped or not) as a uint8 numpy array.
    Only the bytes up to the last item are read (and decompressed), so a few thousand
    images cost milliseconds, not the whole 26 MB file."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        dims = struct.unpack(">" + "I" * ((magic & 0xFF) - 1), f.read(4 * ((magic & 0xFF) - 1)))
        if skip + count > n:
            raise ValueError(f"{path} holds {n} items; asked for items {skip} to {skip + count}")
        size = int(np.prod(dims)) if dims else 1
        f.read(skip * size)
        data = f.read(count * size)
    return np.frombuffer(data, dtype=np.uint8).reshape((count,) + dims)


def split_files(data_dir, split):
    """The (images, labels) IDX files of a split ("train", or "test": t10k), gzipped or not."""
    prefix = "train" if split == "train" else "t10k"
    suffix = ".gz" if os.path.exists(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz")) else ""
    return (os.path.join(data_dir, f"{prefix}-images-idx3-ubyte{suffix}"),
            os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte{suffix}"))


def load_split(data_dir, split, count, skip=0):
    """(images as float32 N x 1 x 28 x 28, normalised; labels as int64) of a split."""
    image_file, label_file = split_files(data_dir, split)
    images = read_idx(image_file, count, skip)
    labels = read_idx(label_file, count, skip)
    x = (torch.from_numpy(images.astype(np.float32) / 255.0) - MEAN) / STD
    return x.unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


def settings(cfg):
    """The script's settings: the trial's config over the defaults."""
    return {
        "lr": float(cfg.get("lr", 0.05)),
        "momentum": float(cfg.get("momentum", 0.9)),
        "batch_size": int(cfg.get("batch_size", 64)),
        "channels": int(cfg.get("channels", 8)),
        "epochs": int(cfg.get("epochs", 10)),
        "train_samples": int(cfg.get("train_samples", 2000)),
        "val_samples": int(cfg.get("val_samples", 1000)),
        "test_samples": int(cfg.get("test_samples", 2000)),
        "data_dir": str(cfg.get("data_dir", os.environ.get("RANKTUNE_DATA_DIR", DATA_DIR))),
    }


def seed_of(name):
    """A seed for one stream (the weights, an epoch's order) of this trial: RANKTUNE_SEED and
    the trial id, so that trials differ and a rerun of a trial is the same."""
    base = int(os.environ.get("RANKTUNE_SEED", "0")) * 1_000_003 + (ranktune.trial_id() or 0)
    return (base * 7919 + sum(ord(c) * 31 ** i for i, c in enumerate(name))) % (2 ** 63)


def state_sha256(model):
    """SHA-256 of the model's state_dict (names, shapes and bytes, in order): equal only for
    bit-identical weights."""
    h = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype};".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def evaluate(model, x, y, batch_size=1000):
    """(mean cross-entropy, accuracy) of the model on (x, y)."""
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(x), batch_size):
            logits = model(x[i:i + batch_size])
            loss += F.cross_entropy(logits, y[i:i + batch_size], reduction="sum").item()
            correct += (logits.argmax(1) == y[i:i + batch_size]).sum().item()
    model.train()
    return loss / len(x), correct / len(x)


def held_out_evaluation(model, s, device):
    """The function for ranktune.on_evaluate: the test split's metrics and inference latency."""

    def run(split, batch_size):
        x, y = load_split(s["data_dir"], "test", s["test_samples"])
        x, y = x.to(device), y.to(device)
        loss, accuracy = evaluate(model, x, y, batch_size)
        model.eval()
        start = [0]

        def sync():  # a part's time is the device's work, not the launch of its kernels
            if device.type == "cuda":
                torch.cuda.synchronize(device)

        def batches(size):  # the indices of the next test images, wrapping around (not timed)
            idx = torch.arange(start[0], start[0] + size) % len(x)
            start[0] = (start[0] + size) % len(x)
            return idx

        def preprocess(idx):  # the batch's images gathered on the device
            batch = x[idx.to(device)]
            sync()
            return batch

        def predict(batch):  # one forward pass
            with torch.no_grad():
                logits = model(batch)
            sync()
            return logits

        def postprocess(logits):  # softmax and argmax; .cpu() waits until the labels are on the host
            return logits.softmax(1).argmax(1).cpu()

        ranktune.time_inference(predict, batches, preprocess=preprocess, postprocess=postprocess)  # ranktune
        # "files" go into the evaluation's manifest (with their sizes and CRC-32C).
        return {"test_loss": loss, "test_accuracy": accuracy, "samples": len(x),
                "files": list(split_files(s["data_dir"], "test")), "device": str(device),
                "threads": torch.get_num_threads()}

    return run


def device_of():
    """ranktune's device for this worker (cuda:0 when it bound one), else the CPU."""
    name = os.environ.get("RANKTUNE_DEVICE", "cuda:0" if torch.cuda.is_available() else "cpu")
    return torch.device(name if name.startswith("cuda") and torch.cuda.is_available() else "cpu")


def main():
    torch.set_num_threads(1)
    cfg = ranktune.config() if "RANKTUNE_CONFIG" in os.environ else {}  # ranktune
    s = settings(cfg)
    device = device_of()
    torch.manual_seed(seed_of("weights"))
    model = Net(s["channels"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=s["lr"], momentum=s["momentum"])

    folder = ranktune.checkpoint_dir()  # ranktune
    if ranktune.restored():  # ranktune: this trial's checkpoint, or a PBT donor's
        state = torch.load(os.path.join(folder, "model.pt"), map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        # The optimizer's state (momentum buffers) is the donor's, its hyperparameters ours:
        # after a PBT exploit the config holds the new, perturbed lr.
        for group in optimizer.param_groups:
            group["lr"], group["momentum"] = s["lr"], s["momentum"]
        print(f"restored from {folder}: trained {state['epochs_trained']} epochs, "
              f"model sha256 {state_sha256(model)}", flush=True)
        epochs_trained = state["epochs_trained"]
    else:
        epochs_trained = 0

    def save(into):  # ranktune calls it inside report() when it wants a checkpoint
        tmp = os.path.join(into, "model.pt.tmp")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "epochs_trained": epochs_trained}, tmp)
        os.replace(tmp, os.path.join(into, "model.pt"))  # never a half-written model.pt

    ranktune.on_save(save)  # ranktune
    ranktune.on_evaluate(held_out_evaluation(model, s, device))  # ranktune: in eval mode, exits here

    x_train, y_train = load_split(s["data_dir"], "train", s["train_samples"])
    x_val, y_val = load_split(s["data_dir"], "train", s["val_samples"], skip=s["train_samples"])
    x_train, y_train, x_val, y_val = (t.to(device) for t in (x_train, y_train, x_val, y_val))
    model.train()
    for epoch in range(ranktune.iteration() or 1, s["epochs"] + 1):  # ranktune counts the epochs
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(seed_of(f"epoch {epoch}")))
        total = 0.0
        for i in range(0, len(order), s["batch_size"]):
            batch = order[i:i + s["batch_size"]].to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x_train[batch]), y_train[batch])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        epochs_trained += 1
        val_loss, val_accuracy = evaluate(model, x_val, y_val)
        print(f"epoch {epoch}: train_loss {total / len(order):.4f} val_loss {val_loss:.4f} "
              f"val_accuracy {val_accuracy:.4f}", flush=True)
        ranktune.report(val_accuracy=val_accuracy, val_loss=val_loss,  # ranktune
                        train_loss=total / len(order), epoch=epoch)
        if ranktune.should_stop():  # ranktune: stopped or paused by the scheduler
            print(f"should_stop() after epoch {epoch}: ending", flush=True)
            break


if __name__ == "__main__":
    main()
