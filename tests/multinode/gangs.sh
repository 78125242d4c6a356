#!/usr/bin/env bash
# Gang trials across hosts (network namespaces, TCP between them):
#  1. ranks_per_trial = 2 with 2 workers on each of 3 hosts, the ranks spread round-robin
#     (mpirun --map-by node, so consecutive ranks are on different hosts): every gang stays
#     on one host (controller/gang_placement.h: one node when possible).
#  2. A data-parallel gang of 4 (tests/mpi/gang_mlp.cc) on 2 hosts x 2 ranks: its MPI
#     allreduce goes over TCP between the hosts (Open MPI's own log says so) and all 4 ranks
#     end with bit-identical weights, equal to one rank's within tolerance.
#  3. `ranktune run` of the mlp with ranks_per_trial = 4 on 2 workers per host: each gang
#     spans the fewest hosts (2, with 2 ranks on each), the placement events say so, and the
#     results are bit-identical to the same run with every rank on one host.
source "$(dirname "$0")/lib.sh"
gang_mlp=$1
start_cluster 3

# 1.
cluster_mpirun 3,2,2 60 -np 7 --map-by node "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/g2.h5" \
  --set experiment.num_samples=9 --set trainable.seconds_per_step=0.005 --set resources.ranks_per_trial=2 \
  > "$WORK/g2.txt" 2>&1 || { rc=$?; cat "$WORK/g2.txt"; fail "gangs of 2 exited $rc"; }
"$PY" - "$WORK/g2.h5" <<'PY'
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
    w = {int(x["rank"]): x["host"].decode() for x in f["workers"][:]}
    t = f["trials"][:]
# --map-by node: rank r on node (r mod 3) + 1, so no two consecutive workers share a host.
assert w == {1: "node2", 2: "node3", 3: "node1", 4: "node2", 5: "node3", 6: "node1"}, w
assert len(t) == 9 and set(t["status"]) == {b"TERMINATED"}, t["status"]
places = [json.loads(m) for k, m in ev if k == "placement"]
assert len(places) == 9, places
for p in places:
    assert len(set(p["hosts"])) == 1 and [w[r] for r in p["ranks"]] == p["hosts"], p
used = sorted({p["hosts"][0] for p in places})
assert used == ["node1", "node2", "node3"], used
print(f"ok: 9 gangs of 2, each on one host ({', '.join(used)}), ranks spread round-robin")
PY

# 2. rank 0 on node1, the gang's ranks 1-2 on node2 and 3-4 on node3.
cluster_mpirun 1,2,2 100 -np 5 --mca btl_base_verbose 30 "$gang_mlp" 4 > "$WORK/mlp.txt" 2>&1 \
  || { rc=$?; cat "$WORK/mlp.txt"; fail "gang_mlp across hosts exited $rc"; }
grep -v '^\[node' "$WORK/mlp.txt"
grep -q "^ok: weights identical on all 4 gang ranks" "$WORK/mlp.txt" || fail "no ok line from gang_mlp"
# Open MPI logs each TCP connection it opens: the gang's members on node2 and node3 talk over TCP.
grep -Eq '^\[node[23]:[0-9]+\] btl:tcp: now connected to 10\.213\.0\.[23],' "$WORK/mlp.txt" \
  || { grep 'btl:tcp' "$WORK/mlp.txt" | head -20; fail "no TCP connection between node2 and node3 in Open MPI's log"; }
echo "ok: the gang's allreduce crossed TCP: $(grep -Eo 'node[23]:[0-9]+\] btl:tcp: now connected to 10\.213\.0\.[23]' "$WORK/mlp.txt" | head -1)"

# 3.
mlp=(--set experiment.num_samples=2 --set stop.max_t=2 --set trainable.batches_per_step=8 --set trainable.train_samples=1000
  --set trainable.val_samples=300 --set resources.ranks_per_trial=4)
cluster_mpirun 3,2,2 100 -np 7 "$RANKTUNE" run "$SRC/configs/fashion_mlp_gang.toml" --results "$WORK/m4.h5" "${mlp[@]}" \
  > "$WORK/m4.txt" 2>&1 || { rc=$?; cat "$WORK/m4.txt"; fail "mlp gang of 4 across hosts exited $rc"; }
cluster_mpirun 7,0,0 100 -np 7 "$RANKTUNE" run "$SRC/configs/fashion_mlp_gang.toml" --results "$WORK/m1.h5" "${mlp[@]}" \
  > "$WORK/m1.txt" 2>&1 || { rc=$?; cat "$WORK/m1.txt"; fail "mlp gang of 4 on one host exited $rc"; }
"$PY" - "$WORK/m4.h5" "$WORK/m1.h5" <<'PY'
import collections, json, sys, h5py
def load(path):
    with h5py.File(path, "r") as f:
        ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
        return f["trials"][:], f["results"][:], [json.loads(m) for k, m in ev if k == "placement"]
t, r, places = load(sys.argv[1])
_, r1, places1 = load(sys.argv[2])
assert len(t) == 2 and set(t["status"]) == {b"TERMINATED"}, t["status"]
assert len(places) == 2, places
for p in places:
    per_host = collections.Counter(p["hosts"])
    assert len(p["ranks"]) == 4 and sorted(per_host.values()) == [2, 2], p  # 2 hosts, not 3
    assert p["collective"] == "mpi" and p["path"] == "cpu", p
assert all(set(p["hosts"]) == {"node1"} for p in places1), places1
for m in ("train_loss", "val_loss", "val_accuracy"):
    assert list(r[m]) == list(r1[m]), (m, list(r[m]), list(r1[m]))
print(f"ok: mlp gangs of 4 on {[sorted(set(p['hosts'])) for p in places]}, results bit-identical to one host "
      f"(val_accuracy {[round(float(x), 3) for x in r['val_accuracy']]})")
PY
