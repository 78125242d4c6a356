#!/usr/bin/env python3
"""The CNN of pytorch_fashion_mnist.py trained data-parallel under DistributedDataParallel,
as a ranktune gang trial (configs/pytorch_ddp.toml: `[resources] ranks_per_trial = 2`).

ranktune starts one process per rank of the gang, as torchrun would, with RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT, ... set (`ranktune.distributed_env()`), so
`init_process_group` needs nothing else: gloo on the CPU, nccl when the worker has a GPU
(ranktune narrows CUDA_VISIBLE_DEVICES to it, so it is cuda:0). Each step takes a global batch
of `batch_size` images from the same seeded order on every rank and splits it between the
ranks; DDP averages the gradients, so W ranks train as one rank would on the same batches
(up to the order of float sums). Every rank reports (ranktune records the leader's lines);
only the leader saves a checkpoint, and every rank of a restored gang loads it.

With PYTORCH_DDP_HASH_DIR set, each rank writes at its end
`trial_<id>_attempt_<k>_rank_<r>.json` there: the SHA-256 of its state_dict, the last
iteration and the world size; the leader also writes its weights as `..._rank_0.pt`
(tests/mpi/pytorch_ddp.sh compares the ranks, and 2 ranks against 1).

Config keys: those of pytorch_fashion_mnist.py. Standalone, one rank (the variables default
to a world of 1 on 127.0.0.1):
  RANKTUNE_CONFIG='{"epochs": 2}' python3 examples/pytorch_ddp.py
"""

import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import pytorch_fashion_mnist as fm  # this folder: the model, the data, the seeds
from pytorch_fashion_mnist import ranktune


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_hash(model, rank, world, iteration):
    """The test hook: this rank's weights' hash (and the leader's weights) into
    $PYTORCH_DDP_HASH_DIR."""
    folder = os.environ.get("PYTORCH_DDP_HASH_DIR")
    if not folder:
        return
    name = os.path.join(folder, f"trial_{ranktune.trial_id() or 0}_attempt_{ranktune.attempt() or 0}_rank_{rank}")
    if rank == 0:
        torch.save({k: v.cpu() for k, v in model.state_dict().items()}, name + ".pt")
    with open(name + ".json.tmp", "w") as f:
        json.dump({"sha256": fm.state_sha256(model), "iteration": iteration, "world_size": world}, f)
    os.replace(name + ".json.tmp", name + ".json")


def main():
    torch.set_num_threads(1)
    cfg = ranktune.config() if "RANKTUNE_CONFIG" in os.environ else {}  # ranktune
    s = fm.settings(cfg)
    device = fm.device_of()
    torch.manual_seed(fm.seed_of("weights"))  # the same on every rank (DDP broadcasts rank 0's anyway)
    model = fm.Net(s["channels"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=s["lr"], momentum=s["momentum"])

    folder = ranktune.checkpoint_dir()  # ranktune
    epochs_trained = 0
    if ranktune.restored():  # ranktune: every rank of a restored gang gets the folder
        state = torch.load(os.path.join(folder, "model.pt"), map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        for group in optimizer.param_groups:  # a PBT exploit's perturbed values are ours
            group["lr"], group["momentum"] = s["lr"], s["momentum"]
        epochs_trained = state["epochs_trained"]
        print(f"restored from {folder}: trained {epochs_trained} epochs, "
              f"model sha256 {fm.state_sha256(model)}", flush=True)

    def save(into):  # ranktune asks the leader only
        if ranktune.is_leader():  # ranktune: as DDP scripts do, rank 0 writes the checkpoint
            tmp = os.path.join(into, "model.pt.tmp")
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "epochs_trained": epochs_trained}, tmp)
            os.replace(tmp, os.path.join(into, "model.pt"))

    ranktune.on_save(save)  # ranktune
    # Evaluation needs no process group: in eval mode this runs one process and exits here.
    ranktune.on_evaluate(fm.held_out_evaluation(model, s, device))  # ranktune

    # Outside ranktune (no variables), a world of one rank.
    env = ranktune.distributed_env()  # ranktune: RANK, WORLD_SIZE, MASTER_ADDR, ...
    for key, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")):
        os.environ.setdefault(key, env.get(key, value))
    if "MASTER_PORT" not in os.environ:
        os.environ["MASTER_PORT"] = str(free_port())
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend)  # env://
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank} of {world}: backend {backend} on {device}", flush=True)
    ddp = DistributedDataParallel(model, device_ids=[device.index or 0] if device.type == "cuda" else None)

    x_train, y_train = fm.load_split(s["data_dir"], "train", s["train_samples"])
    x_val, y_val = fm.load_split(s["data_dir"], "train", s["val_samples"], skip=s["train_samples"])
    x_train, y_train, x_val, y_val = (t.to(device) for t in (x_train, y_train, x_val, y_val))
    b = s["batch_size"]
    iteration = (ranktune.iteration() or 1) - 1
    ddp.train()
    for epoch in range(ranktune.iteration() or 1, s["epochs"] + 1):  # ranktune counts the epochs
        # The same order on every rank; rank r takes its share of each global batch.
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(fm.seed_of(f"epoch {epoch}")))
        total = torch.zeros((), dtype=torch.float64, device=device)
        for i in range(0, len(order), b):
            mine = torch.tensor_split(order[i:i + b], world)[rank].to(device)
            optimizer.zero_grad()
            # The sum over this rank's share divided by the global batch, times W: DDP's mean
            # over W ranks is then the global batch's mean loss, however the shares split.
            loss_sum = F.cross_entropy(ddp(x_train[mine]), y_train[mine], reduction="sum")
            (loss_sum * world / len(order[i:i + b])).backward()
            optimizer.step()
            total += loss_sum.detach().double()
        dist.all_reduce(total)  # every rank reports the same train_loss
        epochs_trained += 1
        iteration = epoch
        val_loss, val_accuracy = fm.evaluate(model, x_val, y_val)
        print(f"epoch {epoch}: train_loss {total.item() / len(order):.4f} val_loss {val_loss:.4f} "
              f"val_accuracy {val_accuracy:.4f}", flush=True)
        ranktune.report(val_accuracy=val_accuracy, val_loss=val_loss,  # ranktune: every rank reports
                        train_loss=total.item() / len(order), epoch=epoch)
        if ranktune.should_stop():  # ranktune: the same answer on every rank
            print(f"should_stop() after epoch {epoch}: ending", flush=True)
            break
    write_hash(model, rank, world, iteration)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
