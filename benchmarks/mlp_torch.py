"""PyTorch twin of bench_mlp: the identical MLP (Linear-ReLU stack, PyTorch's default init),
trained with SGD+momentum on Fashion-MNIST's training split, same batch size and thread
count. Prints the BLAS library PyTorch actually loaded, then one line per epoch in the
format of bench_mlp: "epoch N samples_per_s X train_loss X".

With --infer B1,B2,...: instead, the inference latency that `ranktune eval` measures, with
its protocol: the 10k test images as uint8, for each batch size B `--warmup` untimed
batches, then batches timed one by one (at least 20, as many as --latency-s allows) walking
through the test set; a batch is the uint8-to-float conversion, the forward pass, softmax
and argmax, until the predictions are a numpy array. One line per batch size:
"infer batch B batches N p50_ms X p99_ms X samples_per_s X" (samples/s = B / mean).

usage: mlp_torch.py [--hidden 256-128] [--batch 128] [--threads 1] [--epochs 1] [--lr 0.05]
                    [--data /usr/share/datasets/fashion-mnist] [--val-fraction 0.1]
                    [--infer 1,128 [--latency-s 1] [--warmup 10]]
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


def make_model(features, hidden):
    sizes = [features] + [int(h) for h in hidden.split("-") if h] + [10]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return sizes, torch.nn.Sequential(*layers)


def infer(a):
    images = read_idx(os.path.join(a.data, "t10k-images-idx3-ubyte.gz"))
    x_all = torch.from_numpy(images.reshape(len(images), -1).copy())
    n = len(x_all)
    sizes, model = make_model(x_all.shape[1], a.hidden)
    model.eval()
    model(x_all[:2].float())
    print(f"blas: torch {torch.__version__} loaded {loaded_blas()}; threads {torch.get_num_threads()}; "
          f"model {'-'.join(map(str, sizes))} relu, inference", flush=True)
    with torch.no_grad():
        for batch in [int(b) for b in a.infer.split(",")]:
            first = 0

            def predict():
                nonlocal first
                if first + batch > n:
                    first = 0
                x = x_all[first:first + batch].float().mul_(1.0 / 255.0)
                first += batch
                return torch.softmax(model(x), dim=1).argmax(dim=1).numpy()

            for _ in range(a.warmup):
                predict()
            times = []
            start = time.perf_counter()
            while len(times) < 100000 and (len(times) < 20 or time.perf_counter() - start < a.latency_s):
                t0 = time.perf_counter()
                predict()
                times.append(time.perf_counter() - t0)
            times.sort()
            rank = lambda q: times[max(1, min(len(times), int(np.ceil(q / 100 * len(times) - 1e-9)))) - 1]
            mean = sum(times) / len(times)
            print(f"infer batch {batch} batches {len(times)} p50_ms {rank(50) * 1e3:.4f} p99_ms {rank(99) * 1e3:.4f} "
                  f"samples_per_s {batch / mean:.0f}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hidden", default="256-128")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--val-fraction", type=float, default=0.1)
    p.add_argument("--infer", default="")
    p.add_argument("--latency-s", type=float, default=1.0)
    p.add_argument("--warmup", type=int, default=10)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.infer:
        return infer(a)
    images = read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz"))
    n_train = len(images) - round(len(images) * a.val_fraction)
    rng = np.random.default_rng(1)
    rows = rng.permutation(len(images))[:n_train]
    # uint8 on the host, converted per batch, as ranktune does.
    x_all = torch.from_numpy(images.reshape(len(images), -1)[rows].copy())
    y_all = torch.from_numpy(labels[rows].astype(np.int64))

    sizes, model = make_model(x_all.shape[1], a.hidden)
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
