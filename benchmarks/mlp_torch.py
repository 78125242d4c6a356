"""PyTorch twin of bench_mlp: the identical MLP (Linear-ReLU stack, PyTorch's default init),
trained with SGD+momentum on Fashion-MNIST's training split, same batch size and thread
count. Prints the BLAS library PyTorch actually loaded, then one line per epoch in the
format of bench_mlp: "epoch N samples_per_s X train_loss X".

usage: mlp_torch.py [--hidden 256-128] [--batch 128] [--threads 1] [--epochs 1] [--lr 0.05]
                    [--data /usr/share/datasets/fashion-mnist] [--val-fraction 0.1]
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def loaded_blas():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in os.path.basename(path) or "mkl" in os.path.basename(path):
                libs.add(os.path.realpath(path))
    return ", ".join(sorted(libs)) or "none found in /proc/self/maps (statically linked?)"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hidden", default="256-128")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--val-fraction", type=float, default=0.1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    images = read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz"))
    n_train = len(images) - round(len(images) * a.val_fraction)
    rng = np.random.default_rng(1)
    rows = rng.permutation(len(images))[:n_train]
    # uint8 on the host, converted per batch, as ranktune does.
    x_all = torch.from_numpy(images.reshape(len(images), -1)[rows].copy())
    y_all = torch.from_numpy(labels[rows].astype(np.int64))

    sizes = [x_all.shape[1]] + [int(h) for h in a.hidden.split("-") if h] + [10]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    model(x_all[:2].float())  # loads the BLAS before we report it
    print(f"blas: torch {torch.__version__} loaded {loaded_blas()}; threads {torch.get_num_threads()}; "
          f"model {'-'.join(map(str, sizes))} relu, batch {a.batch}", flush=True)
    for epoch in range(1, a.epochs + 1):
        order = torch.randperm(n_train)
        total, seen = 0.0, 0
        t0 = time.perf_counter()
        for b in range(0, n_train, a.batch):
            idx = order[b:b + a.batch]
            x = x_all[idx].float().mul_(1.0 / 255.0)
            y = y_all[idx]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            seen += len(idx)
        dt = time.perf_counter() - t0
        print(f"epoch {epoch} samples_per_s {seen / dt:.0f} train_loss {total / seen:.4f}", flush=True)


if __name__ == "__main__":
    main()
