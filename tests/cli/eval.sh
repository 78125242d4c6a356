#!/usr/bin/env bash
# `ranktune eval` end to end: a real (small) ASHA search of the mlp on Fashion-MNIST, then
# the held-out evaluation of its leaders from their stored checkpoints, checked against
# an independent numpy forward pass over the 10k test images; /evaluations read with
# h5py and pandas, with the split of each batch's latency and its trace; the report shows
# them; resume and compact keep it; a file from before the split reads and takes new
# evaluations; bad requests get clear errors.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
mlp_search "$WORK/m.h5" 3

"$R" eval "$WORK/m.h5" --top 2 --device cpu --latency-s 0.2 > "$WORK/eval.txt" 2> "$WORK/eval.err" \
  || { cat "$WORK/eval.txt" "$WORK/eval.err"; fail "eval exited $?"; }
grep -q "recorded as evaluation 1 in" "$WORK/eval.err" || { cat "$WORK/eval.err"; fail "not recorded"; }
grep -q "test_accuracy" "$WORK/eval.txt" || { cat "$WORK/eval.txt"; fail "no test_accuracy column"; }

# What was recorded, checked against the file and against numpy on the exported weights.
trial=$("$PY" - "$WORK/m.h5" <<'PY'
import json, os, sys, h5py, pandas as pd
with h5py.File(sys.argv[1], "r") as f:
    runs = f["evaluations/runs"][:]
    m = pd.DataFrame(f["evaluations/metrics"][:])
    lat = pd.DataFrame(f["evaluations/latency"][:])
    ck = f["checkpoints"][:]
    f_split = f["evaluations/latency_split"][:]
    f_trace = f["evaluations/trace"][:]
    trials = f["trials"][:]
    r = runs[0]
    manifest = json.loads(bytes(f["evaluations/manifests"][r["manifest_offset"]:r["manifest_offset"] + r["manifest_size"]]))
assert len(runs) == 1 and r["eval_id"] == 1 and r["trials"] == 2 and r["device"] == b"cpu", runs
assert set(m["metric"]) == {b"test_accuracy", b"test_loss"} and len(m) == 4, m
assert sorted(lat["batch_size"]) == [1, 1, 128, 128] and (lat["samples_per_s"] > 0).all(), lat
assert (lat["p50_ms"] <= lat["p99_ms"]).all() and (lat["p99_ms"] <= lat["max_ms"]).all(), lat
assert (lat["batches"] >= 20).all(), lat
# The split of each batch size's latency: p50 <= p90 <= p99 of each part, all measured.
split = pd.DataFrame(f_split)
assert len(split) == 4 and list(split["eval_id"]) == [1] * 4, split
for part in ("pre", "inference", "post"):
    assert (split[part + "_p50_ms"] > 0).all() and (split[part + "_p50_ms"] <= split[part + "_p90_ms"]).all(), split
    assert (split[part + "_p90_ms"] <= split[part + "_p99_ms"]).all(), split
# The trace: every timed batch (fewer than 1000 at batch size 128 in 0.2 s of the CPU), at
# most 1000 per (trial, batch size) kept with the slowest; the parts within each batch's time.
tr = pd.DataFrame(f_trace)
assert len(tr) and sorted(set(zip(tr["trial_id"], tr["batch_size"]))) == sorted(zip(lat["trial_id"], lat["batch_size"])), tr
for (t, b), g in tr.groupby(["trial_id", "batch_size"]):
    l = lat[(lat["trial_id"] == t) & (lat["batch_size"] == b)].iloc[0]
    assert len(g) <= 1000 and (len(g) == l["batches"] or l["batches"] > 1000), (t, b, len(g), l["batches"])
    assert g["batch"].is_monotonic_increasing and g["batch"].iloc[0] == 0 and g["batch"].max() < l["batches"], g
    assert abs(g["total_ms"].max() - l["max_ms"]) < 1e-9, (g["total_ms"].max(), l["max_ms"])
    assert (g["start_ms"].diff().dropna() > 0).all(), g
    parts = g["pre_ms"] + g["inference_ms"] + g["post_ms"]
    assert (g[["pre_ms", "inference_ms", "post_ms"]] > 0).all().all() and (parts <= g["total_ms"] + 1e-9).all(), g
    assert parts.sum() >= 0.8 * g["total_ms"].sum(), (parts.sum(), g["total_ms"].sum())
evs = manifest["evaluations"]
assert len(evs) == 2 and manifest["stack"]["cpu_model"], manifest.keys()
for e in evs:
    row = [c for c in ck if c["trial_id"] == e["trial"] and c["iteration"] == e["checkpoint"]["iteration"] and not c["dropped"]]
    assert len(row) == 1 and e["checkpoint"]["crc32c"] == "%08x" % row[0]["crc32c"], (e, row)
    for d in e["held_out"]["files"]:
        assert os.path.getsize(d["path"]) == d["bytes"], d
    t = trials[trials["trial_id"] == e["trial"]][0]
    assert e["config"]["hidden"] == t["hidden"].decode() and abs(e["config"]["lr"] - t["lr"]) < 1e-12, (e["config"], t)
first = evs[0]
assert first["leaderboard_rank"] == 1
print(first["trial"], first["checkpoint"]["iteration"], m[(m["trial_id"] == first["trial"]) & (m["metric"] == b"test_accuracy")]["value"].iloc[0],
      m[(m["trial_id"] == first["trial"]) & (m["metric"] == b"test_loss")]["value"].iloc[0])
PY
) || fail "the recorded evaluation is wrong"
read -r id iteration accuracy loss <<<"$trial"
"$R" export-checkpoint "$WORK/m.h5" --trial "$id" --iteration "$iteration" "$WORK/ck" > /dev/null || fail "export failed"
PYTHONPATH="$SRC/tests/data" "$PY" - "$WORK/ck/checkpoint.bin" "$accuracy" "$loss" <<'PY' || fail "numpy disagrees with ranktune eval"
# A forward pass in numpy over the 10k test images must give the same figures.
import sys
import numpy as np
from mlp_numpy import forward, load_checkpoint, mean_cross_entropy, test_set
x, y = test_set()
h = forward(load_checkpoint(sys.argv[1]), x.astype(np.float32) / np.float32(255))
acc = float((h.argmax(axis=1) == y).mean())
nll = mean_cross_entropy(h, y)
want_acc, want_loss = float(sys.argv[2]), float(sys.argv[3])
# float32 summation order differs (OpenBLAS vs numpy): a near-tie may flip, nothing more.
assert abs(acc - want_acc) <= 2e-4, (acc, want_acc)
assert abs(nll - want_loss) <= 1e-4 * max(1.0, want_loss), (nll, want_loss)
print(f"ok: numpy test_accuracy {acc:.4f} (ranktune {want_acc:.4f}), test_loss {nll:.5f} ({want_loss:.5f})")
PY

# The report shows the newest evaluation under the leaderboard.
"$R" eval "$WORK/m.h5" --trial "$id" --device cpu --batch-sizes 0 --format json > "$WORK/e2.json" 2> "$WORK/e2.err" \
  || { cat "$WORK/e2.err"; fail "second eval failed"; }
grep -q "recorded as evaluation 2" "$WORK/e2.err" || { cat "$WORK/e2.err"; fail "second eval not numbered 2"; }
"$PY" -c "
import json, sys
d = json.load(open(sys.argv[1]))
e = d['evaluations'][0]
assert e['latency'] == [] and abs(e['metrics']['test_accuracy'] - float(sys.argv[2])) < 1e-12, e
" "$WORK/e2.json" "$accuracy" || fail "the JSON output is wrong"
"$R" report "$WORK/m.h5" > "$WORK/report.txt" || fail "report failed"
grep -q "held-out evaluation 2 (test split" "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "no evaluation in the report"; }
# The split's percentiles in the eval's table and in the report's JSON of evaluation 1.
grep -q "latency split (preprocessing, inference, postprocessing" "$WORK/eval.txt" || { cat "$WORK/eval.txt"; fail "eval prints no split"; }
grep -q "pre p50_ms .*inf p99_ms .*post p99_ms" "$WORK/eval.txt" || { cat "$WORK/eval.txt"; fail "the split's columns are missing"; }
grep -q "2 evaluations recorded" "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "the count is missing"; }
"$R" report "$WORK/m.h5" --html "$WORK/report.html" > /dev/null || fail "report --html failed"
# Seven charts: curves, best so far, parallel coordinates, scatter, timeline (the curves
# alone, 1, before the page grew the others), and evaluation 1's latency split and trace
# (evaluation 2 timed nothing: none of its own); importance says in a line that 3 trials are
# too few (a chart of equal shares before issue 34, hence 6 once).
"$PY" "$SRC/tests/cli/check_html.py" "$WORK/report.html" --section Leaderboard --section "Learning curves" \
  --section "Held-out evaluations" --section Workers --section "Hardware and software stack" --svgs 7 \
  || fail "the HTML report is wrong"
"$PY" - "$WORK/report.html" <<'PY' || fail "the HTML report lacks the latency charts"
import re, sys
page = open(sys.argv[1]).read()
trace = re.search(r'<svg[^>]*aria-label="latency trace of the timed batches".*?</svg>', page, re.S)
split = re.search(r'<svg[^>]*aria-label="latency split into preprocessing, inference and postprocessing".*?</svg>', page, re.S)
assert trace and split, "no trace or split chart"
# The trace: a line per batch size of each of the two trials; the split: three parts a bar.
assert trace.group(0).count("<polyline") >= 4 and "batch size 128" in trace.group(0), trace.group(0)[:2000]
assert len(re.findall(r"<title>preprocessing p50: ", split.group(0))) == 4, split.group(0)[:2000]
assert len(re.findall(r"<title>postprocessing p50: ", split.group(0))) == 4, split.group(0)[:2000]
PY
grep -q "<h3>Evaluation 2: test split" "$WORK/report.html" || fail "the HTML report lacks evaluation 2"
# --no-record records nothing; --format json has the split's percentiles.
"$R" eval "$WORK/m.h5" --top 1 --device cpu --batch-sizes 1 --latency-s 0 --no-record --format json > "$WORK/e3.json" \
  2> /dev/null || fail "--no-record failed"
"$PY" -c "
import json, sys
[l] = json.load(open(sys.argv[1]))['evaluations'][0]['latency']
for part in ('pre', 'inference', 'post'):
    assert 0 < l[part + '_p50_ms'] <= l[part + '_p90_ms'] <= l[part + '_p99_ms'], l
" "$WORK/e3.json" || fail "eval --format json lacks the split"
# Resuming the finished run and compacting the file keep the evaluations.
mlp_search "$WORK/m.h5" 3 --resume
"$R" compact "$WORK/m.h5" > /dev/null || fail "compact failed"
"$PY" -c "
import h5py, sys
f = h5py.File(sys.argv[1], 'r')
assert list(f['evaluations/runs']['eval_id']) == [1, 2], f['evaluations/runs'][:]
" "$WORK/m.h5" || fail "the evaluations did not survive resume and compact"
# A file from before the split and the trace (their tables removed, as an older ranktune
# wrote it): the report and its HTML read it as not measured, and a new evaluation adds them.
cp "$WORK/m.h5" "$WORK/old.h5"
"$PY" -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    del f['evaluations/latency_split'], f['evaluations/trace']
" "$WORK/old.h5" || fail "could not make the old file"
"$R" report "$WORK/old.h5" > "$WORK/old.txt" || fail "report of the old file failed"
grep -q "held-out evaluation 2 (test split" "$WORK/old.txt" || { cat "$WORK/old.txt"; fail "no evaluation in the old file's report"; }
"$R" report "$WORK/old.h5" --html "$WORK/old.html" > /dev/null || fail "report --html of the old file failed"
grep -q "<h3>Evaluation 1: test split" "$WORK/old.html" || fail "the old file's HTML lacks evaluation 1"
! grep -q "latency trace of the timed batches\|Latency split" "$WORK/old.html" || fail "a split or trace drawn from a file without one"
"$R" eval "$WORK/old.h5" --top 1 --device cpu --batch-sizes 4 --latency-s 0 > /dev/null 2> "$WORK/old.err" \
  || { cat "$WORK/old.err"; fail "eval of the old file failed"; }
"$PY" -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r') as f:
    assert set(f['evaluations/trace']['eval_id']) == {3} and set(f['evaluations/latency_split']['batch_size']) == {4}
" "$WORK/old.h5" || fail "the new evaluation of the old file lacks its split or trace"

# Errors: exit 2 (usage) or 5 (bad file), with what to do.
expect_error() {  # CODE TEXT COMMAND...
  local code=$1 text=$2; shift 2
  local rc=0; "$@" > "$WORK/err.txt" 2>&1 || rc=$?
  [[ $rc -eq $code ]] && grep -q -- "$text" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "$* : expected exit $code and '$text', got $rc"; }
}
expect_error 2 "no trial 99" "$R" eval "$WORK/m.h5" --trial 99 --no-record
expect_error 2 "not a choice; valid: best, latest" "$R" eval "$WORK/m.h5" --checkpoint first --no-record
expect_error 2 "not a device; valid: auto, cpu, cuda:N" "$R" eval "$WORK/m.h5" --device gpu --no-record
expect_error 5 "no such file" "$R" eval "$WORK/none.h5"
expect_error 2 "ranktune eval runs as one process, and this is one of 2" env OMPI_COMM_WORLD_SIZE=2 "$R" eval "$WORK/m.h5"
printf 'not hdf5' > "$WORK/foreign.h5"
expect_error 5 "not an HDF5 file" "$R" eval "$WORK/foreign.h5"
if ! nvidia-smi -L > /dev/null 2>&1; then
  expect_error 2 "cannot be set up: .*cuda:0 cannot be used" "$R" eval "$WORK/m.h5" --device cuda:0 --no-record
fi
# A checkpoint whose bytes went bad is named, with exit 5, and nothing is recorded.
cp "$WORK/m.h5" "$WORK/bad.h5"
"$PY" - "$WORK/bad.h5" "$id" "$iteration" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    row = [c for c in f["checkpoints"][:] if c["trial_id"] == int(sys.argv[2]) and c["iteration"] == int(sys.argv[3]) and not c["dropped"]][0]
    d = f["checkpoint_data"]
    d[row["offset"] + 100] = d[row["offset"] + 100] ^ 0xFF
PY
expect_error 5 "fails its checksum" "$R" eval "$WORK/bad.h5" --trial "$id"
# A synthetic experiment has nothing held out.
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/q.h5" --set experiment.num_samples=2 \
  --set checkpoint.at_end=true --set trainable.seconds_per_step=0.0 > "$WORK/q.txt" 2>&1 || { cat "$WORK/q.txt"; fail "run failed"; }
expect_error 2 "the 'synthetic' trainable has no held-out evaluation" "$R" eval "$WORK/q.h5"
# A file that a run is writing: refused before any work, saying what to do.
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/live.h5" --set experiment.num_samples=50 \
  --set trainable.seconds_per_step=0.2 > "$WORK/live.txt" 2>&1 &
launcher=$!
wait_for_rank0 "$WORK/live.h5" "$launcher" > /dev/null
expect_error 5 "another process is writing it.*pass --no-record" "$R" eval "$WORK/live.h5"
kill -TERM "$launcher"; wait "$launcher" || true
# A damaged /evaluations: the reader says so instead of crashing.
"$PY" -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r+') as f:
    r = f['evaluations/runs']
    row = r[0]; row['manifest_size'] = 10**9; r[0] = row
" "$WORK/m.h5"
expect_error 5 "evaluations: evaluation 1: its manifest lies outside" "$R" report "$WORK/m.h5"
echo "ok: ranktune eval"
