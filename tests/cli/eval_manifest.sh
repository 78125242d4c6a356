#!/usr/bin/env bash
# `ranktune eval --manifest`: a real (small) mlp search, then its leaders evaluated through
# configs/eval_sensitivity.toml (four pipelines: the training one, raw pixels, float16 and
# bfloat16 inputs) with top-3 accuracy and the confusion matrix. Every figure is checked
# against an independent numpy forward pass through the same pipeline; the validation
# split reproduces the search's own val_accuracy; the report shows the sensitivity; bad
# manifests get file:line:key errors.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
mlp_search "$WORK/m.h5" 3

# The flags override the manifest's latency settings (and are recorded in the command line).
"$R" eval "$WORK/m.h5" --top 2 --device cpu --manifest "$SRC/configs/eval_sensitivity.toml" --batch-sizes 4 \
  --latency-s 0 > "$WORK/eval.txt" 2> "$WORK/eval.err" || { cat "$WORK/eval.txt" "$WORK/eval.err"; fail "eval failed"; }
grep -q "recorded as evaluation 4 in" "$WORK/eval.err" || { cat "$WORK/eval.err"; fail "not four evaluations"; }
grep -q "pipeline sensitivity" "$WORK/eval.txt" || { cat "$WORK/eval.txt"; fail "no sensitivity table"; }

"$PY" - "$WORK/m.h5" "$SRC/configs/eval_sensitivity.toml" > "$WORK/leader.txt" <<'PY' || fail "the recorded evaluations are wrong"
import json, sys, h5py, pandas as pd, zlib
with h5py.File(sys.argv[1], "r") as f:
    runs = f["evaluations/runs"][:]
    m = pd.DataFrame(f["evaluations/metrics"][:])
    lat = pd.DataFrame(f["evaluations/latency"][:])
    con = pd.DataFrame(f["evaluations/confusion"][:])
    blob = f["evaluations/manifests"][:]
manifests = [json.loads(bytes(blob[r["manifest_offset"]:r["manifest_offset"] + r["manifest_size"]])) for r in runs]
assert list(runs["eval_id"]) == [1, 2, 3, 4], runs
text = open(sys.argv[2]).read()
names = []
for i, man in enumerate(manifests):
    s = man["sensitivity"]
    assert s["index"] == i and s["count"] == 4 and s["reference"] == "reference", s
    assert s["group"] == manifests[0]["sensitivity"]["group"], s
    assert man["eval_manifest"]["text"] == text and man["eval_manifest"]["version"] == 1, man["eval_manifest"]
    assert "--batch-sizes 4" in man["command_line"], man["command_line"]
    names.append(man["pipeline"]["name"])
    for e in man["evaluations"]:
        assert e["pipeline"] == man["pipeline"] and e["metrics_asked"]["top_k"] == [3], e
        assert e["latency"]["batch_sizes"] == [4] and e["latency"]["budget_s"] == 0, e["latency"]
assert names == ["reference", "no_normalization", "float16", "bfloat16"], names
assert set(m["metric"]) == {b"test_accuracy", b"test_loss", b"test_top3_accuracy"}, set(m["metric"])
assert len(m) == 4 * 2 * 3 and list(lat["batch_size"].unique()) == [4], lat
# Every cell of every matrix, rows summing to the 10k test images.
assert len(con) == 4 * 2 * 100, len(con)
for (e, t), g in con.groupby(["eval_id", "trial_id"]):
    assert g["count"].sum() == 10000, g
    acc = g[g["true_label"] == g["predicted"]]["count"].sum() / 10000
    rec = m[(m["eval_id"] == e) & (m["trial_id"] == t) & (m["metric"] == b"test_accuracy")]["value"].iloc[0]
    assert abs(acc - rec) < 1e-12, (acc, rec)
first = manifests[0]["evaluations"][0]
print(first["trial"], first["checkpoint"]["iteration"])
PY
read -r id iteration < "$WORK/leader.txt"
"$R" export-checkpoint "$WORK/m.h5" --trial "$id" --iteration "$iteration" "$WORK/ck" > /dev/null || fail "export failed"
PYTHONPATH="$SRC/tests/data" "$PY" - "$WORK/ck/checkpoint.bin" "$WORK/m.h5" "$id" <<'PY' || fail "numpy disagrees with ranktune eval"
# The exported checkpoint through each pipeline in numpy (tests/data/mlp_numpy.py).
import sys
import h5py, numpy as np, pandas as pd
from mlp_numpy import forward as forward_of, load_checkpoint, mean_cross_entropy, test_set
x, y = test_set()
checkpoint = load_checkpoint(sys.argv[1])
forward = lambda inputs: forward_of(checkpoint, inputs)

def bfloat16(a):  # round to nearest even on the upper 16 bits
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)

pipelines = {1: x.astype(np.float32) / np.float32(255), 2: x.astype(np.float32)}
pipelines[3] = pipelines[1].astype(np.float16).astype(np.float32)
pipelines[4] = bfloat16(pipelines[1])
with h5py.File(sys.argv[2], "r") as f:
    m = pd.DataFrame(f["evaluations/metrics"][:])
    con = pd.DataFrame(f["evaluations/confusion"][:])
trial = int(sys.argv[3])
for e, inputs in pipelines.items():
    z = forward(inputs).astype(np.float64)
    order = np.argsort(-z, axis=1, kind="stable")  # ties to the lower class, as ranktune
    pred = order[:, 0]
    top3 = float((order[:, :3] == y[:, None]).any(axis=1).mean())
    nll = mean_cross_entropy(z, y)
    cm = np.zeros((10, 10), np.int64)
    np.add.at(cm, (y, pred), 1)
    got = lambda name: m[(m["eval_id"] == e) & (m["trial_id"] == trial) & (m["metric"] == name)]["value"].iloc[0]
    mine = con[(con["eval_id"] == e) & (con["trial_id"] == trial)]
    rcm = np.zeros((10, 10), np.int64)
    rcm[mine["true_label"], mine["predicted"]] = mine["count"]
    # float32 summation order differs (OpenBLAS vs numpy): a near-tie may flip, nothing more.
    assert abs(float((pred == y).mean()) - got(b"test_accuracy")) <= 2e-4, (e, got(b"test_accuracy"))
    assert abs(top3 - got(b"test_top3_accuracy")) <= 2e-4, (e, top3, got(b"test_top3_accuracy"))
    assert abs(nll - got(b"test_loss")) <= 1e-4 * max(1.0, got(b"test_loss")), (e, nll, got(b"test_loss"))
    assert np.abs(cm - rcm).sum() <= 4, (e, cm, rcm)
    print(f"ok: pipeline {e}: accuracy {got(b'test_accuracy'):.4f}, top-3 {top3:.4f}, loss {nll:.4f}")
PY

# The pandas loader has the matrices; a file without any has an empty frame with the columns.
PYTHONPATH="$SRC/python" "$PY" - "$WORK/m.h5" "$WORK/none.h5" <<'PY' || fail "ranktune.results lacks the confusion matrices"
import shutil, sys, h5py, ranktune.results
r = ranktune.results.load(sys.argv[1])
assert len(r.confusion) == 800 and r.confusion["count"].sum() == 8 * 10000, r.confusion
assert list(r.confusion.columns) == ["eval_id", "trial_id", "iteration", "true_label", "predicted", "count"]
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "a") as f:
    del f["evaluations/confusion"]
e = ranktune.results.load(sys.argv[2]).confusion
assert len(e) == 0 and "true_label" in e.columns, e
PY

# The report shows the sensitivity under the newest evaluation, in text and HTML.
"$R" report "$WORK/m.h5" > "$WORK/report.txt" || fail "report failed"
grep -q "pipeline sensitivity (the change of each pipeline against the first)" "$WORK/report.txt" \
  || { cat "$WORK/report.txt"; fail "no sensitivity in the report"; }
grep -q "no_normalization" "$WORK/report.txt" || fail "the report lacks a pipeline"
"$R" report "$WORK/m.h5" --html "$WORK/report.html" > /dev/null || fail "report --html failed"
grep -q "Pipeline sensitivity" "$WORK/report.html" || fail "the HTML report lacks the sensitivity section"

# The validation split reproduces what the search measured at that checkpoint, exactly.
printf 'version = 1\n[data]\nsplit = "validation"\n[latency]\nbatch_sizes = []\n' > "$WORK/val.toml"
"$R" eval "$WORK/m.h5" --top 1 --device cpu --manifest "$WORK/val.toml" --format json --no-record > "$WORK/val.json" \
  2> "$WORK/val.err" || { cat "$WORK/val.err"; fail "validation eval failed"; }
"$PY" - "$WORK/val.json" "$WORK/m.h5" <<'PY' || fail "the validation split does not reproduce val_accuracy"
import json, sys, h5py
e = json.load(open(sys.argv[1]))["evaluations"][0]
with h5py.File(sys.argv[2], "r") as f:
    ck = [c for c in f["checkpoints"][:] if c["trial_id"] == e["trial"] and c["iteration"] == e["iteration"] and not c["dropped"]]
assert e["pipeline"]["name"] == "reference" and e["manifest"]["held_out"]["split"] == "validation", e["manifest"]
assert abs(e["metrics"]["validation_accuracy"] - ck[0]["score"]) < 1e-12, (e["metrics"], ck[0]["score"])
PY

# Bad manifests: exit 2 with file:line:key.
expect_error() {  # CODE TEXT COMMAND...
  local code=$1 text=$2; shift 2
  local rc=0; "$@" > "$WORK/err.txt" 2>&1 || rc=$?
  [[ $rc -eq $code ]] && grep -q -- "$text" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "$* : expected exit $code and '$text', got $rc"; }
}
printf 'version = 1\n[metrics]\ntop_k = [3]\nconfussion = true\n' > "$WORK/bad.toml"
expect_error 2 "bad.toml:4: metrics.confussion: unknown key. Did you mean 'confusion'?" \
  "$R" eval "$WORK/m.h5" --manifest "$WORK/bad.toml" --no-record
printf '[data]\nsplit = "test"\n' > "$WORK/bad.toml"
expect_error 2 "version: missing required key" "$R" eval "$WORK/m.h5" --manifest "$WORK/bad.toml" --no-record
printf 'version = 1\n[[pipeline]]\ninput_dtype = "half"\n' > "$WORK/bad.toml"
expect_error 2 "bad.toml:3: pipeline\[1\].input_dtype: unknown value \"half\"" \
  "$R" eval "$WORK/m.h5" --manifest "$WORK/bad.toml" --no-record
expect_error 2 "no such file\|does not exist" "$R" eval "$WORK/m.h5" --manifest "$WORK/none.toml" --no-record
printf 'version = 1\n[data]\ndir = "nowhere"\n[latency]\nbatch_sizes = []\n' > "$WORK/bad.toml"
expect_error 2 "nowhere" "$R" eval "$WORK/m.h5" --top 1 --device cpu --manifest "$WORK/bad.toml" --no-record
echo "PASS"
