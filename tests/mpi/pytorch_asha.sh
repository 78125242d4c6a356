#!/usr/bin/env bash
# configs/pytorch_asha.toml end to end with real mpirun and Debian's python3-torch: ASHA stops
# trials early, and the stopped scripts end by themselves (they saw ranktune.should_stop()
# and exited 0: no "SIGTERM"/"SIGKILL" warning event); every iteration is recorded once.
# Then `ranktune eval` restores the leaders' checkpoints in the script (on_evaluate), records
# /evaluations with latency and its split, and its test figures agree with a forward pass of the exported
# state_dict written here with torch.nn.functional on t10k images read here.
source "$(dirname "$0")/torch_lib.sh"
timeout 200 mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/pytorch_asha.toml" --results "$WORK/a.h5" \
  --set "$(torch_command pytorch_fashion_mnist.py)" > "$WORK/out.txt" 2>&1 || { rc=$?; cat "$WORK/out.txt"; fail "run exited $rc"; }
"$PY" - "$WORK/a.h5" <<'PY'
import sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [(int(e["trial_id"]), e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert len(t) == 6 and all(s == b"TERMINATED" for s in t["status"]), t[["trial_id", "status"]]
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "a (trial, attempt, iteration) was recorded twice"
for row in t:
    its = sorted(i for (k, a, i) in keys if k == row["trial_id"])
    assert its == list(range(1, row["iterations"] + 1)), (row["trial_id"], its)
stopped = {k for k, kind, _ in ev if kind == "early_stop"}
assert stopped, "ASHA stopped no trial: should_stop was not exercised"
signals = [m for _, kind, m in ev if kind == "warning" and ("SIGTERM" in m or "SIGKILL" in m)]
assert not signals, f"stopped trials needed signals: {signals}"
for k in stopped:
    row = t[t["trial_id"] == k][0]
    assert row["iterations"] < 4, (k, row["iterations"])
    log = open(f"{path}.logs/trial_{k}_attempt_0.log").read()
    want = f"should_stop() after epoch {row['iterations']}: ending"
    assert want in log, (k, want, log[-400:])
print(f"ok: {len(stopped)} of {len(t)} trials stopped by ASHA ended by themselves, no signal needed")
PY

# Held-out evaluation of the leaders (the 3 best trials' best checkpoints, stored at_end); --config:
# the stored config's relative paths (the script's) resolve as in the run.
"$RANKTUNE" eval "$WORK/a.h5" --config "$SRC/configs/pytorch_asha.toml" --batch-sizes 1,64 --latency-s 0.2 --format json > "$WORK/eval.json" 2> "$WORK/eval.err" \
  || { rc=$?; cat "$WORK/eval.err"; fail "ranktune eval exited $rc"; }
"$PY" - "$WORK" "$RANKTUNE" <<'PY'
import gzip, json, os, subprocess, sys
import h5py, numpy as np, torch, torch.nn.functional as F
work, ranktune = sys.argv[1], sys.argv[2]
evals = json.load(open(f"{work}/eval.json"))["evaluations"]
assert len(evals) == 3, len(evals)
with h5py.File(f"{work}/a.h5", "r") as f:  # recorded as for the mlp
    recorded = {(int(r["trial_id"]), int(r["iteration"]), r["metric"].decode()): float(r["value"])
                for r in f["evaluations/metrics"][:]}
    latency = {(int(r["trial_id"]), int(r["batch_size"])) for r in f["evaluations/latency"][:]}
    # The example splits each batch (preprocess, predict, postprocess): all three measured.
    split = f["evaluations/latency_split"][:]
    assert {(int(r["trial_id"]), int(r["batch_size"])) for r in split} == latency, split
    for part in ("pre", "inference", "post"):
        assert (split[part + "_p50_ms"] > 0).all() and (split[part + "_p50_ms"] <= split[part + "_p99_ms"]).all(), split

def idx(name, count):  # the first `count` items of an IDX file, read without the examples' code
    with gzip.open(f"/usr/share/datasets/fashion-mnist/{name}.gz", "rb") as f:
        data = f.read()
    off = 16 if "images" in name else 8
    return np.frombuffer(data, np.uint8, count * (784 if off == 16 else 1), off)

n = 2000  # the script's test_samples
x = torch.from_numpy(idx("t10k-images-idx3-ubyte", n).reshape(n, 1, 28, 28).astype(np.float32) / 255)
x = (x - 0.2860) / 0.3530
y = torch.from_numpy(idx("t10k-labels-idx1-ubyte", n).astype(np.int64))
torch.set_num_threads(1)
for e in evals:
    tid, it = e["trial"], e["iteration"]
    m = e["metrics"]
    assert e["samples"] == n, e["samples"]
    assert {l["batch_size"] for l in e["latency"]} == {1, 64}, e["latency"]
    assert all(l["p50_ms"] > 0 and l["samples_per_s"] > 0 and l["p50_ms"] <= l["p99_ms"] for l in e["latency"]), e["latency"]
    assert recorded[(tid, it, "test_accuracy")] == m["test_accuracy"], (tid, recorded)
    held_out = [f["path"] for f in e["manifest"]["held_out"]["files"]]  # the files the script named
    assert any(p.endswith("/t10k-images-idx3-ubyte.gz") for p in held_out), held_out
    assert {(tid, 1), (tid, 64)} <= latency, (tid, latency)
    out = f"{work}/ck_{tid}"
    subprocess.run([ranktune, "export-checkpoint", f"{work}/a.h5", "--trial", str(tid), "--iteration", str(it), out],
                   check=True, capture_output=True)
    w = torch.load(f"{out}/model.pt", map_location="cpu")["model"]
    with torch.no_grad():
        h = F.max_pool2d(F.relu(F.conv2d(x, w["conv1.weight"], w["conv1.bias"], padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, w["conv2.weight"], w["conv2.bias"], padding=1)), 2)
        logits = F.linear(h.flatten(1), w["fc.weight"], w["fc.bias"])
        loss = F.cross_entropy(logits, y).item()
        acc = (logits.argmax(1) == y).double().mean().item()
    print(f"trial {tid} iteration {it}: eval test_accuracy {m['test_accuracy']:.4f} test_loss {m['test_loss']:.5f}; "
          f"here {acc:.4f} {loss:.5f}")
    assert abs(acc - m["test_accuracy"]) <= 1.0 / n, (tid, acc, m["test_accuracy"])
    assert abs(loss - m["test_loss"]) <= 1e-4 * max(1.0, loss), (tid, loss, m["test_loss"])
    assert acc > 0.5, f"trial {tid}: a trained CNN should beat 50% ({acc})"
print(f"ok: ranktune eval of {len(evals)} leaders agrees with an independent forward pass")
PY
"$RANKTUNE" report "$WORK/a.h5" > "$WORK/report.txt" || fail "report exited $?"
grep -q "test_accuracy" "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "report does not show the evaluation"; }
