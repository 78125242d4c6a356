#!/usr/bin/env bash
# GPU binding by node-local index across 3 hosts, without GPUs: RANKTUNE_FAKE_CUDA=1 (a test
# hook of mpi/placement.cc) makes each worker act as if the CUDA runtime saw the devices of
# its CUDA_VISIBLE_DEVICES, binding none. A command trainable records what it was given.
#  1. --gpus-per-node style: CUDA_VISIBLE_DEVICES=0,1 on every host, 2 workers per host: on
#     each host the workers bind cuda:0 and cuda:1 (not all the same device), and each
#     trial's program sees only its worker's device (CUDA_VISIBLE_DEVICES=0 or 1, cuda:0).
#  2. --gpus-per-task style: every rank sees one device of its own (ids 4, 5, 6 by local
#     rank, SLURM_GPUS_PER_TASK=1): every worker binds cuda:0, /workers names its id.
source "$(dirname "$0")/lib.sh"
start_cluster 3
cat > "$WORK/seen.py" <<'PY'
"""Records the device this trial was given, then reports once."""
import json, os, socket, sys
import ranktune
with open(os.path.join(sys.argv[1], f"t{ranktune.trial_id()}.json"), "w") as f:
    json.dump({"host": socket.gethostname(), "device": os.environ.get("RANKTUNE_DEVICE"),
               "visible": os.environ.get("CUDA_VISIBLE_DEVICES")}, f)
ranktune.report(loss=float(ranktune.config()["x"]))
PY
# run NAME MPIRUN_ARGS...: 12 one-iteration trials of seen.py over 3 hosts x 2 workers.
run() {
  local name=$1
  shift
  mkdir -p "$WORK/$name"
  command_config "$WORK/$name.toml" "$name" 12 1 seen.py
  sed -i "s|^command = .*|command = [\"$PY\", \"$WORK/seen.py\", \"$WORK/$name\"]|" "$WORK/$name.toml"
  cluster_mpirun 3,2,2 60 -np 7 -x RANKTUNE_FAKE_CUDA=1 "$@" --results "$WORK/$name.h5" > "$WORK/$name.txt" 2>&1 \
    || { rc=$?; cat "$WORK/$name.txt"; fail "$name exited $rc"; }
}
run per_node -x CUDA_VISIBLE_DEVICES=0,1 "$RANKTUNE" run "$WORK/per_node.toml"
run per_task -x SLURM_GPUS_PER_TASK=1 bash -c 'CUDA_VISIBLE_DEVICES=$((4 + OMPI_COMM_WORLD_LOCAL_RANK)) exec "$@"' _ \
  "$RANKTUNE" run "$WORK/per_task.toml"
"$PY" - "$WORK" <<'PY'
import json, sys, h5py
work = sys.argv[1]
def load(name):
    with h5py.File(f"{work}/{name}.h5", "r") as f:
        w = {int(x["rank"]): {k: (x[k].decode() if isinstance(x[k], bytes) else int(x[k])) for k in x.dtype.names}
             for x in f["workers"][:]}
        t = f["trials"][:]
        mode = f["stack"].attrs["device_mode"].decode()
    seen = {int(row["trial_id"]): (int(row["workers"]), json.load(open(f"{work}/{name}/t{int(row['trial_id'])}.json")))
            for row in t}
    return w, seen, mode

w, seen, mode = load("per_node")
assert mode == "gpu", mode
by_host = {}
for r, x in w.items():
    by_host.setdefault(x["host"], {})[x["local_index"]] = x["device"]
    assert x["device_name"] == f"fake GPU (id {x['local_index']}, per-node)", x
assert by_host == {h: {0: "cuda:0", 1: "cuda:1"} for h in ("node1", "node2", "node3")}, by_host
for trial, (rank, s) in seen.items():
    assert s["host"] == w[rank]["host"], (trial, rank, s)
    assert s["visible"] == str(w[rank]["local_index"]) and s["device"] == "cuda:0", (trial, rank, s)
print(f"ok: per node, the workers of every host bind {sorted(set(d for h in by_host.values() for d in h.values()))}; "
      f"each program sees only its worker's device")

w, seen, _ = load("per_task")
for r, x in w.items():
    # Local ranks count the driver on node1: its workers are local ranks 1, 2, the others 0, 1.
    lr = x["local_index"] + (1 if x["host"] == "node1" else 0)
    assert x["device"] == "cuda:0" and x["device_name"] == f"fake GPU (id {4 + lr}, per-task)", x
for trial, (rank, s) in seen.items():
    assert s["device"] == "cuda:0" and s["visible"] == w[rank]["device_name"].split("id ")[1].split(",")[0], (trial, s)
print(f"ok: per task, every worker binds cuda:0 of its own device: "
      f"{sorted(x['device_name'] for x in w.values())}")
PY
