#!/usr/bin/env bash
# configs/pytorch_ddp.toml end to end with real mpirun: each trial runs examples/pytorch_ddp.py
# as a 2-rank gang (DistributedDataParallel over gloo, set up from ranktune's RANK,
# WORLD_SIZE, MASTER_ADDR and MASTER_PORT alone). Both ranks of every trial end with
# bit-identical weights (each writes the SHA-256 of its state_dict into PYTORCH_DDP_HASH_DIR),
# each rank has its own log, and trial 1's gang (global batch b split over 2 ranks, gradients
# averaged) matches the same script run here as one rank with batch b on the same samples:
# the same curve and weights within float-summation tolerance. `ranktune eval` of the leaders
# (one process, no process group) scores the gang's final weights.
source "$(dirname "$0")/torch_lib.sh"
export PYTORCH_DDP_HASH_DIR=$WORK/gang
mkdir -p "$WORK/gang" "$WORK/one"
# 512 training images: 8 steps of the global batch 64 per epoch, 24 in all. Over many more
# steps, SGD with momentum at the config's larger lr amplifies the float-order differences
# between 2 ranks and 1 (ReLU and max-pool switch) past any useful tolerance; over 24 they
# stay below 4e-4 of the largest weight, while a gradient scaled wrong (DDP averages over
# the ranks) is off by more than 1.
timeout 200 mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/pytorch_ddp.toml" --results "$WORK/d.h5" \
  --set "$(torch_command pytorch_ddp.py)" --set 'search.space.train_samples={choice=[512]}' \
  > "$WORK/out.txt" 2>&1 || { rc=$?; cat "$WORK/out.txt"; fail "run exited $rc"; }
check_results "$WORK/d.h5" 2 3
"$PY" - "$WORK/d.h5" > "$WORK/trial1.json" <<'PY'
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    row = f["trials"][f["trials"]["trial_id"] == 1][0]
    names = ["lr", "momentum", "batch_size", "channels", "train_samples", "epochs"]
    print(json.dumps({n: row[n].item() for n in names}))
PY
# Trial 1 again, as one rank outside ranktune: same seed, trial id and config.
PYTORCH_DDP_HASH_DIR=$WORK/one RANKTUNE_CONFIG=$(cat "$WORK/trial1.json") RANKTUNE_SEED=13 RANKTUNE_TRIAL_ID=1 \
  RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$SRC/python" OMP_NUM_THREADS=1 \
  timeout 120 "$PY" "$SRC/examples/pytorch_ddp.py" > "$WORK/one.txt" 2>&1 || { rc=$?; cat "$WORK/one.txt"; fail "one rank exited $rc"; }
"$PY" - "$WORK" <<'PY'
import json, sys, h5py, torch
work = sys.argv[1]
with h5py.File(f"{work}/d.h5", "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
for tid in t["trial_id"]:
    ranks = [json.load(open(f"{work}/gang/trial_{tid}_attempt_0_rank_{k}.json")) for k in (0, 1)]
    assert all(x["world_size"] == 2 and x["iteration"] == 3 for x in ranks), ranks
    assert ranks[0]["sha256"] == ranks[1]["sha256"], (tid, "the ranks' weights differ", ranks)
    for k in (0, 1):
        log = open(f"{work}/d.h5.logs/trial_{tid}_attempt_0_rank_{k}.log").read()
        assert f"rank {k} of 2: backend gloo on cpu" in log, (tid, k, log[-300:])
print(f"ok: both ranks of {len(t)} trials end with bit-identical weights")

# One rank with batch b against the 2-rank gang with global batch b.
one = [json.loads(l) for l in open(f"{work}/one.txt") if l.startswith("{")]
gang = r[r["trial_id"] == 1]
assert len(one) == len(gang) == 3, (len(one), len(gang))
for a, g in zip(one, gang):
    for m in ("train_loss", "val_loss"):
        assert abs(a[m] - g[m]) <= 1e-3 * abs(g[m]), (m, a[m], float(g[m]))
    assert abs(a["val_accuracy"] - g["val_accuracy"]) <= 0.005, (a["val_accuracy"], float(g["val_accuracy"]))
w1 = torch.load(f"{work}/one/trial_1_attempt_0_rank_0.pt")
w2 = torch.load(f"{work}/gang/trial_1_attempt_0_rank_0.pt")
assert json.load(open(f"{work}/one/trial_1_attempt_0_rank_0.json"))["world_size"] == 1
worst = 0.0
for name in w2:
    scale = w2[name].abs().max().item()
    diff = (w1[name] - w2[name]).abs().max().item()
    worst = max(worst, diff / scale)
    assert diff <= 1e-3 * scale, (name, diff, scale)
print(f"ok: 2 ranks with global batch b match 1 rank with batch b: losses within 0.1%, weights within "
      f"{worst:.1e} of their largest value")
PY

# ranktune eval of the gang trials: one process per leader, no process group; it restores
# the leader's checkpoint of iteration 3, so its figures are those of the final weights.
"$RANKTUNE" eval "$WORK/d.h5" --config "$SRC/configs/pytorch_ddp.toml" --top 2 --batch-sizes 1 --latency-s 0.1 \
  --format json > "$WORK/eval.json" 2> "$WORK/eval.err" || { rc=$?; cat "$WORK/eval.err"; fail "ranktune eval exited $rc"; }
PYTHONPATH="$TORCH_PYTHONPATH" "$PY" - "$WORK" <<'PY'
import json, sys, torch
import pytorch_fashion_mnist as fm
work = sys.argv[1]
evals = json.load(open(f"{work}/eval.json"))["evaluations"]
assert sorted(e["trial"] for e in evals) == [1, 2] and all(e["iteration"] == 3 for e in evals), evals
x, y = fm.load_split(fm.settings({})["data_dir"], "test", 2000)
for e in evals:
    model = fm.Net(4)
    model.load_state_dict(torch.load(f"{work}/gang/trial_{e['trial']}_attempt_0_rank_0.pt"))
    loss, acc = fm.evaluate(model, x, y)
    assert e["samples"] == 2000 and abs(e["metrics"]["test_accuracy"] - acc) <= 1 / 2000, (e["metrics"], acc)
print("ok: ranktune eval of the gang trials scores their final weights:",
      ", ".join(f"trial {e['trial']} {e['metrics']['test_accuracy']:.4f}" for e in evals))
PY
