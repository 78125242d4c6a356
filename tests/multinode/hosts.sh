#!/usr/bin/env bash
# mpirun across 3 hosts (network namespaces): a search of 1-rank trials on 6 ranks placed
# 2 on node1 (the driver and one worker), 3 on node2 and 1 on node3. /workers names each
# worker's host with its index among that host's workers (0..k-1 on every host), every host
# ran trials, each trial's `hosts` is its worker's host, and /stack records all three hosts.
source "$(dirname "$0")/lib.sh"
start_cluster 3
cluster_mpirun 2,3,1 60 -np 6 "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/q.h5" \
  --set experiment.num_samples=15 --set trainable.seconds_per_step=0.005 > "$WORK/out.txt" 2>&1 \
  || { rc=$?; cat "$WORK/out.txt"; fail "mpirun over 3 hosts exited $rc"; }
on node1 "$PY" "$SRC/tests/mpi/check_results.py" "$RANKTUNE" "$WORK/q.h5" 15 20 || fail "results of the run"
"$PY" - "$WORK/q.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    w = f["workers"][:]
    t = f["trials"][:]
    s = {k: v.decode() for k, v in f["stack"].attrs.items()}
# mpirun fills the hosts' slots in order: rank 0 and 1 on node1, 2..4 on node2, 5 on node3.
want = {1: "node1", 2: "node2", 3: "node2", 4: "node2", 5: "node3"}
got = {int(x["rank"]): x["host"].decode() for x in w}
assert got == want, got
local = {}
for x in sorted(w, key=lambda x: x["rank"]):
    local.setdefault(x["host"].decode(), []).append(int(x["local_index"]))
assert local == {"node1": [0], "node2": [0, 1, 2], "node3": [0]}, local
assert all(x["device"] == b"cpu" for x in w), w["device"]
hosts_of = {int(x["trial_id"]): x["hosts"].decode() for x in t}
for row in t:
    assert hosts_of[int(row["trial_id"])] == got[int(row["workers"])], (row["trial_id"], row["workers"], row["hosts"])
assert set(hosts_of.values()) == {"node1", "node2", "node3"}, set(hosts_of.values())
assert s["hosts"] == "node1,node2,node3" and s["driver_host"] == "node1", (s["hosts"], s["driver_host"])
assert s["world_size"] == "6" and s["workers"] == "5", s
print(f"ok: 5 workers on 3 hosts, local indices {local}, trials on {sorted(set(hosts_of.values()))}")
PY
