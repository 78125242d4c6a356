"""A command trainable for tests/mpi/command_gang.sh: gangs of processes (protocol 2) and
cooperative stopping, without PyTorch (its gloo rendezvous is checked too when torch is
there). `mode` picks the behaviour:

- "env": every rank writes what ranktune told it (torchrun's variables, the device, the
  checkpoint folder's files) into $GANG_OUT/t<trial>_a<attempt>_r<rank>.json, meets the
  other ranks through MASTER_ADDR:MASTER_PORT (torch.distributed with gloo when it imports,
  else a plain TCP hand-shake), and reports loss = x + 1000 * rank, so that only the
  leader's values may reach the results;
- "kill": as "env", but in attempt 0 rank 1 kills itself with SIGKILL after its third report,
  while rank 0 waits for it, as a DDP rank blocked in an all-reduce would;
- "stop": reports until should_stop() turns True, then writes stopped_<trial>_<rank> into
  $GANG_OUT and exits 0 by itself;
- "deaf": ignores should_stop: after the stop it sleeps, so ranktune must SIGTERM it.
Each iteration sleeps `sleep` seconds (a config value)."""
import json
import os
import signal
import socket
import sys
import time

import ranktune

cfg = ranktune.config()
mode = cfg.get("mode", "env")
out = os.environ.get("GANG_OUT", ".")
env = ranktune.distributed_env()
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
trial, attempt = ranktune.trial_id(), ranktune.attempt()
folder = ranktune.checkpoint_dir()
n = int(open(os.path.join(folder, "n")).read()) if ranktune.restored() else 0


def meet():
    """All ranks meet at the master: returns the sum of (rank + 1) over the gang."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        torch = None
    if torch is not None:
        dist.init_process_group("gloo")  # env:// from ranktune's variables, nothing else
        t = torch.tensor([float(rank + 1)])
        dist.all_reduce(t)
        return int(t.item()), "gloo"
    addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    if rank == 0:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", port))
        s.listen(world)
        total = 1
        peers = []
        for _ in range(world - 1):
            c, _ = s.accept()
            total += int(c.recv(16))
            peers.append(c)
        for c in peers:
            c.sendall(str(total).encode())
        return total, "tcp"
    for _ in range(200):
        try:
            c = socket.create_connection((addr, port))
            break
        except OSError:
            time.sleep(0.05)
    c.sendall(str(rank + 1).encode())
    return int(c.recv(16)), "tcp"


if mode in ("env", "kill"):
    total, how = meet()
    seen = {"env": env, "device": os.environ.get("RANKTUNE_DEVICE"), "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "restored_n": n, "sum": total, "how": how, "pid": os.getpid(), "leader": ranktune.is_leader(),
            "first_iteration": ranktune.iteration()}
    with open(os.path.join(out, f"t{trial}_a{attempt}_r{rank}.json"), "w") as f:
        json.dump(seen, f)

state = {"n": n}
ranktune.on_save(lambda d: open(os.path.join(d, "n"), "w").write(str(state["n"])))
x = float(cfg["x"])
while True:
    state["n"] += 1
    time.sleep(float(cfg.get("sleep", 0.05)))
    if mode == "kill" and attempt == 0 and state["n"] == 4:
        if rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(3600)  # rank 0: blocked on its dead peer
    print(f"rank {rank} iteration {ranktune.iteration()}", flush=True)
    ranktune.report(loss=x + 1000 * rank + 1.0 / state["n"])
    if ranktune.should_stop():
        if mode == "deaf":
            time.sleep(3600)
        open(os.path.join(out, f"stopped_{trial}_{rank}"), "w").write(str(state["n"]))
        sys.exit(0)
