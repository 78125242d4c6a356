#!/usr/bin/env bash
# `ranktune eval` on a command trainable (issue 15): a short search of a pure-Python
# checkpointing script (tests/data/eval_logreg.py), then the held-out evaluation of its
# leaders in evaluation mode (RANKTUNE_MODE=eval, ranktune.on_evaluate and
# ranktune.time_inference). /evaluations is read with h5py and the test metrics recomputed
# from the exported state; the manifest's files are fingerprinted independently. Then the
# refusals: no checkpoint = true (before any leader is chosen), a script that never calls
# on_evaluate, and one whose evaluation crashes. First, the helper's timing on a fake clock.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"

# ranktune.time_inference: warm-up, min/max batches, the budget and nearest-rank
# percentiles (as eval/latency.cc), on a fake clock that only predict() advances.
PYTHONPATH="$SRC/python" RANKTUNE_EVAL_BATCH_SIZES=1,4 RANKTUNE_EVAL_WARMUP=3 RANKTUNE_EVAL_MIN_BATCHES=10 \
  RANKTUNE_EVAL_MAX_BATCHES=12 RANKTUNE_EVAL_LATENCY_S=1000 "$PY" - <<'PY' || fail "time_inference's figures are wrong"
import os
import ranktune, ranktune.evaluation as ev
assert not ranktune.evaluating() and "RANKTUNE_REPORT_FD" not in os.environ
now = [0.0]
ev._clock = lambda: now[0]
calls, sizes = {}, []
def predict(batch):  # per batch size: warm-up batches take 1 s each, then timed batch k takes k ms
    k = calls[len(batch)] = calls.get(len(batch), 0) + 1
    warmup = int(os.environ["RANKTUNE_EVAL_WARMUP"])
    now[0] += 1.0 if k <= warmup else (k - warmup) * 1e-3
def batches(n):
    sizes.append(n)
    return list(range(n))
out = ranktune.time_inference(predict, batches)
assert sorted(out) == [1, 4] and sizes == [1] * 15 + [4] * 15, (out.keys(), sizes)
one = out[1]
# 12 timed batches of 1..12 ms (max_batches stops a 1000 s budget); nearest rank of 12:
# p50 = 6th, p90 = ceil(10.8) = 11th, p99 = 12th.
assert one["batches"] == 12 and abs(one["p50_s"] - 6e-3) < 1e-9 and abs(one["p90_s"] - 11e-3) < 1e-9, one
assert abs(one["p99_s"] - 12e-3) < 1e-9 and abs(one["max_s"] - 12e-3) < 1e-9, one
assert abs(one["mean_s"] - 6.5e-3) < 1e-9 and abs(one["samples_per_s"] - 1 / 6.5e-3) < 1e-4, one
assert abs(out[4]["samples_per_s"] - 4 / 6.5e-3) < 1e-4, out[4]
# A small budget: min_batches still timed, then the budget ends it.
os.environ.update(RANKTUNE_EVAL_BATCH_SIZES="2", RANKTUNE_EVAL_WARMUP="0", RANKTUNE_EVAL_LATENCY_S="0.0105")
calls.clear()
two = ranktune.time_inference(predict, batches)[2]
assert two["batches"] == 10, two  # 1..10 ms sum to 55 ms, past 10.5 ms after batch 4, but min is 10
os.environ["RANKTUNE_EVAL_MIN_BATCHES"] = "2"
calls.clear()
assert ranktune.time_inference(predict, batches)[2]["batches"] == 5  # 1+2+3+4 = 10 < 10.5 ms, +5 = 15
print("ok: time_inference")
PY
# The split: preprocess, predict and postprocess timed apart on the fake clock, predict
# given what preprocess made; without them, pre and post are not measured (None); and a
# trace of more than 1000 batches thinned as eval/latency.cc thins it, keeping the slowest.
PYTHONPATH="$SRC/python" RANKTUNE_EVAL_BATCH_SIZES=3 RANKTUNE_EVAL_WARMUP=2 RANKTUNE_EVAL_MIN_BATCHES=10 \
  RANKTUNE_EVAL_MAX_BATCHES=10 RANKTUNE_EVAL_LATENCY_S=1000 "$PY" - <<'PY' || fail "time_inference's split is wrong"
import os
import ranktune, ranktune.evaluation as ev
now, calls, seen = [0.0], [0], []
ev._clock = lambda: now[0]
def pre(batch):
    now[0] += 2e-3
    return [x * 2 for x in batch]
def predict(x):  # timed call k takes k ms (the two warm-up calls 1 s)
    seen.append(x)
    calls[0] += 1
    now[0] += 1.0 if calls[0] <= 2 else (calls[0] - 2) * 1e-3
    return x
def post(y):
    now[0] += 5e-4
batches = lambda n: list(range(n))
s = ranktune.time_inference(predict, batches, preprocess=pre, postprocess=post)[3]
assert seen[0] == [0, 2, 4], seen[0]  # predict got preprocess's output
close = lambda a, b: abs(a - b) < 1e-9
assert close(s["pre_p50_s"], 2e-3) and close(s["pre_p99_s"], 2e-3), s
assert close(s["inference_p50_s"], 5e-3) and close(s["inference_p90_s"], 9e-3) and close(s["inference_p99_s"], 10e-3), s
assert close(s["post_p50_s"], 5e-4) and close(s["post_p99_s"], 5e-4), s
assert close(s["p50_s"], 7.5e-3) and close(s["max_s"], 12.5e-3), s  # the whole batch: all three parts
assert len(s["trace"]) == 10 and [r[0] for r in s["trace"]] == list(range(10)), s["trace"]
b, start, total, p, i, q = s["trace"][3]
assert close(total, 6.5e-3) and close(p, 2e-3) and close(i, 4e-3) and close(q, 5e-4), s["trace"][3]
assert all(s["trace"][k][1] < s["trace"][k + 1][1] for k in range(9)), s["trace"]
# Without preprocess and postprocess: the old call; the whole time is inference.
calls[0] = 0
o = ranktune.time_inference(predict, batches)[3]
assert o["pre_p50_s"] is None and o["post_p99_s"] is None and close(o["inference_p50_s"], o["p50_s"]), o
assert all(r[3] is None and r[5] is None and close(r[4], r[2]) for r in o["trace"]), o["trace"][:3]
# 2500 timed batches, batch 1001 the slowest: every 3rd (834) and it, as trace_keep keeps them.
os.environ.update(RANKTUNE_EVAL_WARMUP="0", RANKTUNE_EVAL_MIN_BATCHES="2500", RANKTUNE_EVAL_MAX_BATCHES="2500")
calls[0] = 0
def spiky(x):
    calls[0] += 1
    now[0] += 0.05 if calls[0] == 1002 else 1e-3
t = ranktune.time_inference(spiky, batches)[3]["trace"]
kept = [r[0] for r in t]
assert len(kept) == 835 and 1001 in kept and kept[:3] == [0, 3, 6] and kept[-1] == 2499, (len(kept), kept[:5])
print("ok: time_inference's split")
PY

# Data: points of two Gaussian clouds, fixed by a seed; train, validation and test files.
mkdir -p "$WORK/data"
"$PY" - "$WORK/data" <<'PY'
import os, random, sys
rng = random.Random(7)
for name, n in (("train", 200), ("val", 100), ("test", 300)):
    with open(os.path.join(sys.argv[1], name + ".csv"), "w") as f:
        for i in range(n):
            y = i % 2
            f.write("%.6f,%.6f,%d\n" % (rng.gauss(1.0 if y else -1.0, 1.2), rng.gauss(0.5 if y else -0.5, 1.0), y))
PY
config() {  # FILE SCRIPT EXTRA_TRAINABLE_LINE...
  local file=$1 script=$2; shift 2
  {
    printf '[experiment]\nname = "logreg"\nmetric = "loss"\nmode = "min"\nnum_samples = 3\nseed = 5\n'
    printf '[search]\nalgorithm = "random"\n[search.space]\nlr = { uniform = [0.05, 2.0] }\n[stop]\nmax_t = 3\n'
    printf '[checkpoint]\nat_end = true\n[trainable]\nkind = "command"\n'
    printf 'command = ["python3", "%s"]\nenv = { EVAL_DATA = "%s" }\n' "$script" "$WORK/data"
    if (($# > 0)); then printf '%s\n' "$@"; fi
  } > "$file"
}
config "$WORK/logreg.toml" "$SRC/tests/data/eval_logreg.py" "checkpoint = true"
RANKTUNE_MODE=eval "$R" run "$WORK/logreg.toml" --np 2 --results "$WORK/s.h5" > "$WORK/run.txt" 2>&1 \
  || { cat "$WORK/run.txt"; fail "run failed"; }

rc=0; "$R" eval "$WORK/s.h5" --top 2 --latency-s 0.05 --warmup 2 > "$WORK/eval.txt" 2> "$WORK/eval.err" || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/eval.txt" "$WORK/eval.err"; fail "eval exited $rc"; }
grep -q "recorded as evaluation 1 in" "$WORK/eval.err" || { cat "$WORK/eval.err"; fail "not recorded"; }
grep -q "test_accuracy" "$WORK/eval.txt" || { cat "$WORK/eval.txt"; fail "no test_accuracy column"; }

# What was recorded: two leaders' metrics and latency, and a manifest that names the script
# and the test file it read (sizes and CRC-32C recomputed here).
"$PY" - "$WORK/s.h5" "$SRC/tests/data/eval_logreg.py" "$WORK/data/test.csv" > "$WORK/leaders.txt" <<'PY' \
  || fail "the recorded evaluation is wrong"
import json, os, sys, h5py, pandas as pd
sys.path.insert(0, os.path.join(os.environ["SRC"], "tests"))
from crc32c import crc32c as crc_of_bytes
def crc32c(path):
    return "%08x" % crc_of_bytes(open(path, "rb").read())
results, script, test = sys.argv[1:]
with h5py.File(results, "r") as f:
    runs = f["evaluations/runs"][:]
    m = pd.DataFrame(f["evaluations/metrics"][:])
    lat = pd.DataFrame(f["evaluations/latency"][:])
    split = pd.DataFrame(f["evaluations/latency_split"][:])
    tr = pd.DataFrame(f["evaluations/trace"][:])
    r = runs[0]
    manifest = json.loads(bytes(f["evaluations/manifests"][r["manifest_offset"]:r["manifest_offset"] + r["manifest_size"]]))
assert len(runs) == 1 and r["trials"] == 2 and r["device"] == b"cpu" and r["threads"] == 1, runs
assert sorted(set(m["metric"])) == [b"test_accuracy", b"test_loss"] and len(m) == 4, m
assert sorted(lat["batch_size"]) == [1, 1, 128, 128] and (lat["batches"] >= 20).all(), lat
assert (lat["p50_ms"] <= lat["p90_ms"]).all() and (lat["p99_ms"] <= lat["max_ms"]).all(), lat
assert (lat["samples_per_s"] > 0).all() and (abs(lat["samples_per_s"] * lat["mean_ms"] / 1e3 - lat["batch_size"]) < 1e-6).all(), lat
# time_inference(predict, batches), the call without the split: inference is the whole
# batch, preprocessing and postprocessing are NaN (not measured), in the split and the trace.
assert len(split) == 4 and split["pre_p50_ms"].isna().all() and split["post_p99_ms"].isna().all(), split
assert (split["inference_p50_ms"] > 0).all(), split
assert len(tr) > 0 and tr["pre_ms"].isna().all() and (tr["inference_ms"] == tr["total_ms"]).all(), tr
for e in manifest["evaluations"]:
    t = e["trainable"]
    assert t["kind"] == "command" and t["command"] == ["python3", script], t
    files = {p["path"]: p for p in t["program_files"]}
    assert files[script]["bytes"] == os.path.getsize(script) and files[script]["crc32c"] == crc32c(script), files
    assert e["held_out"]["samples"] == 300 and e["held_out"]["split"] == "test", e["held_out"]
    [d] = e["held_out"]["files"]
    assert d["path"] == test and d["bytes"] == os.path.getsize(test) and d["crc32c"] == crc32c(test), d
    assert e["compute"] == {"device_requested": "auto", "path": "cpu", "threads": 1}, e["compute"]
    assert "time_inference" in e["latency"]["timed"] and e["latency"]["batch_sizes"] == [1, 128], e["latency"]
    got = m[m["trial_id"] == e["trial"]].set_index("metric")["value"]
    print(e["trial"], e["checkpoint"]["iteration"], e["config"]["lr"], repr(got[b"test_loss"]), repr(got[b"test_accuracy"]))
assert [e["leaderboard_rank"] for e in manifest["evaluations"]] == [1, 2]
PY
# The test figures again, from each leader's exported state.json, by this test's own code.
while read -r id iteration lr loss accuracy; do
  "$R" export-checkpoint "$WORK/s.h5" --trial "$id" --iteration "$iteration" "$WORK/ck$id" > /dev/null || fail "export failed"
  "$PY" - "$WORK/ck$id/state.json" "$WORK/data/test.csv" "$loss" "$accuracy" <<'PY' || fail "trial $id: recomputed test figures differ"
import json, math, sys
s = json.load(open(sys.argv[1]))
pts = [tuple(map(float, l.split(","))) for l in open(sys.argv[2]) if l.strip()]
p = [1 / (1 + math.exp(-(s["w0"] * a + s["w1"] * b + s["b"]))) for a, b, _ in pts]
loss = -sum(math.log(q if y else 1 - q) for q, (_, _, y) in zip(p, pts)) / len(pts)
acc = sum((q >= 0.5) == (y == 1) for q, (_, _, y) in zip(p, pts)) / len(pts)
assert abs(loss - float(sys.argv[3])) < 1e-9 and abs(acc - float(sys.argv[4])) < 1e-12, (loss, acc, sys.argv[3:])
assert 0.6 < acc < 1.0, acc  # it learned something, from a state it did not start with
PY
  # Its output's file (empty: the script printed nothing), beside the trials' logs.
  [[ -f "$WORK/s.h5.logs/eval/trial_${id}_attempt_0.log" ]] || { ls -R "$WORK/s.h5.logs"; fail "no evaluation log for trial $id"; }
done < "$WORK/leaders.txt"
[[ $(wc -l < "$WORK/leaders.txt") -eq 2 ]] || fail "expected two leaders"
# In parallel (self-launched, one script per worker, each timed alone): the same figures.
rc=0; timeout 120 "$R" eval "$WORK/s.h5" --top 2 --latency-s 0.05 --warmup 2 --np 2 --format json --no-record \
  > "$WORK/parallel.json" 2> "$WORK/parallel.err" || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/parallel.err"; fail "eval --np 2 exited $rc"; }
"$PY" - "$WORK/parallel.json" "$WORK/leaders.txt" <<'PY' || fail "the parallel evaluation of the script differs"
import json, sys
got = [(e["trial"], repr(e["metrics"]["test_loss"]), repr(e["metrics"]["test_accuracy"]),
        e["manifest"]["worker"]["rank"])
       for e in json.load(open(sys.argv[1]))["evaluations"]]
want = [l.split() for l in open(sys.argv[2])]
assert [(g[0], g[1], g[2]) for g in got] == [(int(w[0]), w[3], w[4]) for w in want], (got, want)
assert sorted(g[3] for g in got) == [1, 2], got  # one leader per worker
PY

# A script that gives time_inference a preprocess and a postprocess: all three parts
# measured and recorded, each within its batch's time, and shown by eval and the report.
EVAL_BEHAVIOUR=split "$R" eval "$WORK/s.h5" --top 1 --latency-s 0.05 --warmup 2 > "$WORK/split.txt" 2> "$WORK/split.err" \
  || { cat "$WORK/split.txt" "$WORK/split.err"; fail "eval with the split failed"; }
grep -q "recorded as evaluation 2 in" "$WORK/split.err" || { cat "$WORK/split.err"; fail "the split was not recorded"; }
grep -q "latency split (preprocessing, inference, postprocessing" "$WORK/split.txt" || { cat "$WORK/split.txt"; fail "eval prints no split"; }
PYTHONPATH="$SRC/python" "$PY" - "$WORK/s.h5" <<'PY' || fail "the recorded split is wrong"
import sys, h5py, pandas as pd
import ranktune.results
with h5py.File(sys.argv[1], "r") as f:
    split = pd.DataFrame(f["evaluations/latency_split"][:])
    tr = pd.DataFrame(f["evaluations/trace"][:])
    lat = pd.DataFrame(f["evaluations/latency"][:])
with ranktune.results.load(sys.argv[1]) as r:  # the Python reader has them too
    assert len(r.trace) == len(tr) and len(r.latency_split) == len(split), (len(r.trace), len(tr))
    assert r.latency_split["post_p99_ms"].tolist()[-2:] == split["post_p99_ms"].tolist()[-2:], r.latency_split
split, tr, lat = split[split["eval_id"] == 2], tr[tr["eval_id"] == 2], lat[lat["eval_id"] == 2]
assert sorted(split["batch_size"]) == [1, 128], split
for part in ("pre", "inference", "post"):
    assert (split[part + "_p50_ms"] > 0).all() and (split[part + "_p50_ms"] <= split[part + "_p99_ms"]).all(), split
assert sorted(set(zip(tr["trial_id"], tr["batch_size"]))) == sorted(zip(lat["trial_id"], lat["batch_size"])), tr
parts = tr["pre_ms"] + tr["inference_ms"] + tr["post_ms"]
assert (tr[["pre_ms", "inference_ms", "post_ms"]] > 0).all().all() and (parts <= tr["total_ms"] + 1e-9).all(), tr
assert parts.sum() >= 0.8 * tr["total_ms"].sum(), (parts.sum(), tr["total_ms"].sum())
for (t, b), g in tr.groupby(["trial_id", "batch_size"]):
    l = lat[lat["batch_size"] == b].iloc[0]
    assert len(g) == min(l["batches"], len(g)) and len(g) <= 1000 and abs(g["total_ms"].max() - l["max_ms"]) < 1e-9, (g, l)
PY
"$R" report "$WORK/s.h5" --html "$WORK/s.html" > /dev/null || fail "report --html failed"
grep -q 'aria-label="latency split into preprocessing, inference and postprocessing"' "$WORK/s.html" \
  && grep -q 'aria-label="latency trace of the timed batches"' "$WORK/s.html" || fail "the HTML report lacks the latency charts"

expect_error() {  # CODE TEXT COMMAND...
  local code=$1 text=$2; shift 2
  local rc=0; "$@" > "$WORK/err.txt" 2>&1 || rc=$?
  [[ $rc -eq $code ]] && grep -q -- "$text" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "$* : expected exit $code and '$text', got $rc"; }
}
# A script that never calls on_evaluate (it starts training instead): exit 2, said so.
expect_error 2 "trial [0-9]* (checkpoint at iteration [0-9]*): it never called ranktune.on_evaluate() (it reported '{\"loss\"" \
  env EVAL_BEHAVIOUR=no_on_evaluate "$R" eval "$WORK/s.h5" --top 1 --no-record
grep -q "its output is in .*s.h5.logs/eval/trial_.*_attempt_0.log" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "no log named"; }
# An evaluation that raises: its exit and last line, and the tail of its output.
expect_error 1 "evaluation failed: exited with code 1: ValueError: evaluation of split test went wrong on purpose" \
  env EVAL_BEHAVIOUR=crash "$R" eval "$WORK/s.h5" --top 1 --no-record
grep -q "^Traceback" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "the error lacks the output's tail"; }
# An evaluation that times nothing: refused unless no latency was asked for.
expect_error 2 "it did not call ranktune.time_inference() in its evaluation function, so no latency was measured at batch sizes 1,128" \
  env EVAL_BEHAVIOUR=no_latency "$R" eval "$WORK/s.h5" --top 1 --no-record
expect_error 0 "test_accuracy" env EVAL_BEHAVIOUR=no_latency "$R" eval "$WORK/s.h5" --top 1 --no-record --batch-sizes 0
expect_error 2 "batch-sizes: -4 is not a batch size" "$R" eval "$WORK/s.h5" --no-record --batch-sizes 1,-4
# A manifest: the split reaches the script; what only ranktune's own trainables can do is refused.
printf 'version = 1\n[data]\nsplit = "validation"\n' > "$WORK/split.toml"
expect_error 1 "evaluation of split validation went wrong on purpose" \
  env EVAL_BEHAVIOUR=crash "$R" eval "$WORK/s.h5" --top 1 --no-record --batch-sizes 0 --manifest "$WORK/split.toml"
printf 'version = 1\n[metrics]\ntop_k = [3]\n' > "$WORK/topk.toml"
expect_error 2 "evaluates itself (its on_evaluate function), so ranktune cannot apply top-k accuracy to it" \
  "$R" eval "$WORK/s.h5" --top 1 --no-record --manifest "$WORK/topk.toml"
printf 'version = 1\n[pipeline]\nnormalize = false\n' > "$WORK/raw.toml"
expect_error 2 "cannot apply a pipeline other than the training one" \
  "$R" eval "$WORK/s.h5" --top 1 --no-record --manifest "$WORK/raw.toml"
# Without checkpoint = true: refused before any leader is chosen.
config "$WORK/plain.toml" "$SRC/tests/data/eval_logreg.py"
"$R" run "$WORK/plain.toml" --np 2 --results "$WORK/p.h5" --set experiment.num_samples=1 --set stop.max_t=1 \
  > "$WORK/plain.txt" 2>&1 || { cat "$WORK/plain.txt"; fail "run without checkpoints failed"; }
expect_error 2 "the 'command' trainable has no held-out evaluation: .*has no checkpoint = true" "$R" eval "$WORK/p.h5"
! grep -q "passed over\|checkpoint at iteration\|no trial with a finite" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "leaders were chosen first"; }
# A script named relative to its config, which lies elsewhere than the results file: found
# next to the config the run started from (the file's config_path), and once that has moved,
# with --config, while without it the failure says what to do.
mkdir "$WORK/project" "$WORK/out"
cp "$SRC/tests/data/eval_logreg.py" "$WORK/project/"
config "$WORK/project/rel.toml" "eval_logreg.py" "checkpoint = true"
"$R" run "$WORK/project/rel.toml" --np 2 --results "$WORK/out/r.h5" --set experiment.num_samples=1 --set stop.max_t=1 \
  > "$WORK/rel.txt" 2>&1 || { cat "$WORK/rel.txt"; fail "run of the relative script failed"; }
expect_error 0 "test_accuracy" "$R" eval "$WORK/out/r.h5" --no-record --batch-sizes 0
mv "$WORK/project" "$WORK/moved"
expect_error 1 "pass --config with the experiment's config file" "$R" eval "$WORK/out/r.h5" --no-record --batch-sizes 0
grep -q "exited with code 2: .*can't open file '$WORK/out/eval_logreg.py'" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "no exit named"; }
expect_error 0 "test_accuracy" "$R" eval "$WORK/out/r.h5" --no-record --batch-sizes 0 --config "$WORK/moved/rel.toml"
echo "ok: ranktune eval of a command trainable"
