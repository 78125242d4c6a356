#!/usr/bin/env bash
# Gang trials ([resources] ranks_per_trial = 2) under real mpirun:
#  1. HyperBand over the synthetic trainable on 4 workers = 2 gangs: trials pause at rungs
#     and resume from checkpoints on whichever pair is free. Every (trial, iteration) value
#     must equal the virtual-time simulation of the same gang experiment, every trial's
#     workers are 2 ranks, and each attempt's "placement" event names its 2 ranks, hosts and
#     the MPI collective.
#  2. The mlp trainable data-parallel on one gang of 2 (a subset of Fashion-MNIST): it
#     learns, and its placement says cpu, 1 thread, ranks [1, 2].
#  3. Too few workers for one gang is refused before anything runs, naming the key.
# (A member's failure: gang_member_failure.sh.)
source "$(dirname "$0")/lib.sh"
gang=(--set resources.ranks_per_trial=2 --set experiment.num_samples=20 --set trainable.seconds_per_step=0.002)
timeout 200 mpirun -np 5 --bind-to none "$RANKTUNE" run "$SRC/configs/branin_hyperband.toml" --results "$WORK/hb.h5" \
  "${gang[@]}" > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "gang hyperband run exited $?"; }
"$RANKTUNE" simulate "$SRC/configs/branin_hyperband.toml" --workers 4 --results "$WORK/sim.h5" "${gang[@]}" \
  > "$WORK/sim.txt" 2>&1 || { cat "$WORK/sim.txt"; fail "simulate exited $?"; }
"$PY" - "$WORK/hb.h5" "$WORK/sim.h5" <<'PY'
import json, sys, h5py
def load(path):
    with h5py.File(path, "r") as f:
        r = f["results"][:]
        ev = [(int(e["trial_id"]), e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
        t = f["trials"][:]
    return {(int(x["trial_id"]), int(x["iteration"])): float(x["loss"]) for x in r}, ev, t, r
real, ev, trials, rows = load(sys.argv[1])
sim, _, _, _ = load(sys.argv[2])
assert len(trials) == 20, len(trials)
assert len(rows) == len(real), "a (trial, iteration) was recorded twice"
assert set(real) == set(sim), sorted(set(real) ^ set(sim))[:10]
bad = [(k, real[k], sim[k]) for k in real if real[k] != sim[k]]
assert not bad, bad[:5]
assert all(s == b"TERMINATED" for s in trials["status"]), set(trials["status"])
assert any(k == "unpause" for _, k, _ in ev), "no trial was paused and resumed"
starts = sum(1 for _, k, _ in ev if k == "start")
placements = [(t, json.loads(m)) for t, k, m in ev if k == "placement"]
assert len(placements) == starts, (len(placements), starts)
for t, p in placements:
    assert len(p["ranks"]) == 2 and len(set(p["ranks"])) == 2 and all(1 <= r <= 4 for r in p["ranks"]), p
    assert len(p["hosts"]) == 2 and p["collective"] == "mpi" and p["path"] == "cpu", p
for row in trials:
    assert len(row["workers"].decode().split(",")) == 2 or row["workers"] == b"", row
print(f"ok: {len(trials)} gang trials of 2 ranks, {len(real)} results equal to the simulation, "
      f"{sum(1 for _, k, _ in ev if k == 'unpause')} resumes")
PY

timeout 200 mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/fashion_mlp_gang.toml" --results "$WORK/m.h5" \
  --set experiment.num_samples=2 --set stop.max_t=3 --set trainable.batches_per_step=20 \
  --set trainable.train_samples=4000 --set trainable.val_samples=500 \
  > "$WORK/mlp.txt" 2>&1 || { cat "$WORK/mlp.txt"; fail "mlp gang run exited $?"; }
"$PY" - "$WORK/m.h5" <<'PY'
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert len(t) == 2 and all(s == b"TERMINATED" for s in t["status"]), t["status"]
assert len(r) == 6, len(r)
assert max(r["val_accuracy"]) > 0.5, max(r["val_accuracy"])
places = [json.loads(m) for k, m in ev if k == "placement"]
assert len(places) == 2, places
for p in places:
    assert p["ranks"] == [1, 2] and p["path"] == "cpu" and p["threads"] == 1 and p["collective"] == "mpi", p
print(f"ok: mlp gang trials, best val_accuracy {max(r['val_accuracy']):.3f}")
PY

if "$RANKTUNE" run "$SRC/configs/fashion_mlp_gang.toml" --np 1 --results "$WORK/x.h5" > "$WORK/few.txt" 2>&1; then
  fail "a gang of 2 on 1 worker was accepted"
fi
grep -q "fashion_mlp_gang.toml:.*resources.ranks_per_trial: a gang of 2 ranks needs --np 2" "$WORK/few.txt" \
  || { cat "$WORK/few.txt"; fail "no clear error for too few workers"; }
[ ! -e "$WORK/x.h5" ] || fail "a refused run created its results file"
echo "ok: gang runs"
