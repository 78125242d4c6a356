#!/usr/bin/env bash
# A command-trainable gang across hosts, as a DDP script runs it: ranks_per_trial = 2 with one
# worker on each of node2 and node3 (the driver alone on node1), so every gang spans two
# hosts. Each process gets torchrun's variables with MASTER_ADDR = the leader's interface
# address (not 127.0.0.1), NODE_RANK 0 and 1, LOCAL_RANK 0, and the two meet through
# torch.distributed with gloo over the namespaces' network (tests/data/command_gang.py).
source "$(dirname "$0")/lib.sh"
if ! torch_error=$("$PY" -c "import torch.distributed" 2>&1); then
  skip "PyTorch is not importable by $PY (apt install python3-torch): ${torch_error##*$'\n'}"
fi
start_cluster 3
export GANG_OUT=$WORK/out
mkdir -p "$GANG_OUT"
# A copy: mpi.command_gang (maybe running alongside) looks for leftover processes of
# tests/data/command_gang.py by name.
cp "$SRC/tests/data/command_gang.py" "$WORK/gang_member.py"
cat > "$WORK/ddp.toml" <<TOML
[experiment]
name = "ddp_across_hosts"
metric = "loss"
mode = "min"
num_samples = 2
[search]
algorithm = "random"
[search.space]
x = { uniform = [0.0, 1.0] }
mode = { choice = ["env"] }
[stop]
max_t = 3
[trainable]
kind = "command"
command = ["$PY", "$WORK/gang_member.py"]
checkpoint = true
[resources]
ranks_per_trial = 2
TOML
cluster_mpirun 1,1,1 120 -np 3 "$RANKTUNE" run "$WORK/ddp.toml" --results "$WORK/ddp.h5" > "$WORK/out.txt" 2>&1 \
  || { rc=$?; cat "$WORK/out.txt"; tail -n 12 "$WORK"/ddp.h5.logs/*; fail "DDP gang across hosts exited $rc"; }
"$PY" - "$WORK/ddp.h5" "$GANG_OUT" <<'PY'
import json, os, sys, h5py
results, out = sys.argv[1], sys.argv[2]
with h5py.File(results, "r") as f:
    t, r = f["trials"][:], f["results"][:]
    ev = [(int(e["trial_id"]), e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert len(t) == 2 and set(t["status"]) == {b"TERMINATED"}, t[["trial_id", "status"]]
assert len(r) == 6 and (r["loss"] < 1000).all(), r["loss"]  # the leader's reports only
places = {tid: json.loads(m) for tid, k, m in ev if k == "placement"}
for trial in (1, 2):
    hosts = places[trial]["hosts"]
    assert sorted(hosts) == ["node2", "node3"], places[trial]
    leader_addr = "10.213.0." + hosts[0][len("node"):]
    seen = [json.load(open(os.path.join(out, f"t{trial}_a0_r{k}.json"))) for k in (0, 1)]
    for k, s in enumerate(seen):
        e = s["env"]
        assert e["RANK"] == str(k) and e["WORLD_SIZE"] == "2", e
        assert e["LOCAL_RANK"] == "0" and e["LOCAL_WORLD_SIZE"] == "1", e  # alone on its host
        assert e["NODE_RANK"] == str(k) and e["GROUP_RANK"] == str(k), e
        assert e["MASTER_ADDR"] == leader_addr, (e["MASTER_ADDR"], leader_addr)
        assert e["MASTER_PORT"] == seen[0]["env"]["MASTER_PORT"], e
        assert s["how"] == "gloo" and s["sum"] == 3, s  # both met in a gloo all_reduce
print(f"ok: 2 DDP gangs across node2 and node3 met through gloo at "
      f"{seen[0]['env']['MASTER_ADDR']}:{seen[0]['env']['MASTER_PORT']}")
PY
