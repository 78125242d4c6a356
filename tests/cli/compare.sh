#!/usr/bin/env bash
# `ranktune compare` end to end (issue 31): a small mlp search with checkpoints, evaluated
# twice on the same file at 1 and at 2 threads; comparing the two lists compute.threads as
# the one differing stack field, with latency ratios and metric differences that follow
# from the recorded figures; every format parses; models in one input only are listed as
# unmatched; bad inputs get clear errors.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
mlp_search "$WORK/m.h5" 3
cp "$WORK/m.h5" "$WORK/none.h5"  # no evaluation recorded
for t in 1 2; do
  "$R" eval "$WORK/m.h5" --top 2 --device cpu --threads $t --batch-sizes 1,32 --latency-s 0.1 --warmup 2 \
    > "$WORK/eval$t.txt" 2>&1 || { cat "$WORK/eval$t.txt"; fail "eval --threads $t failed"; }
done

"$R" compare "$WORK/m.h5@1" "$WORK/m.h5@2" > "$WORK/cmp.txt" 2> "$WORK/cmp.err" || { cat "$WORK/cmp.txt" "$WORK/cmp.err"; fail "compare failed"; }
grep -q "^stack fields that differ: 1$" "$WORK/cmp.txt" && grep -Eq "^compute\.threads +1 +2 *$" "$WORK/cmp.txt" \
  || { cat "$WORK/cmp.txt"; fail "the table does not list compute.threads (1, 2) as the one differing field"; }
grep -q "models: 2 matched by trial config and checkpoint CRC-32C, 0 unmatched" "$WORK/cmp.txt" \
  && grep -q "samples_per_s ratio" "$WORK/cmp.txt" || { cat "$WORK/cmp.txt"; fail "the table lacks the models or ratios"; }

# JSON: the figures are the recorded ones, ratios and differences follow from them.
"$R" compare "$WORK/m.h5@1" "$WORK/m.h5@2" --format json > "$WORK/cmp.json" || fail "compare --format json failed"
"$PY" - "$WORK/cmp.json" "$WORK/m.h5" <<'PY' || fail "the JSON comparison is wrong"
import json, sys, h5py
import pandas as pd
d = json.load(open(sys.argv[1]))
assert [f["key"] for f in d["differing_fields"]] == ["compute.threads"], d["differing_fields"]
assert d["differing_fields"][0]["values"] == ["1", "2"], d["differing_fields"]
assert [i["evaluation"] for i in d["inputs"]] == [1, 2] and [i["threads"] for i in d["inputs"]] == [1, 2], d["inputs"]
assert len(d["models"]) == 2 and d["unmatched"] == [], d
with h5py.File(sys.argv[2], "r") as f:
    lat = pd.DataFrame(f["evaluations/latency"][:])
    met = pd.DataFrame(f["evaluations/metrics"][:])
for m in d["models"]:
    (a, b) = m["inputs"]
    assert a["trial"] == b["trial"] and len(m["checkpoint_crc32c"]) == 8, m
    acc = m["metrics"]["test_accuracy"]
    want = [met[(met.eval_id == e) & (met.trial_id == a["trial"]) & (met.metric == b"test_accuracy")]["value"].iloc[0] for e in (1, 2)]
    assert acc["values"] == want and acc["difference"] == [0.0, want[1] - want[0]], (acc, want)
    assert [l["batch_size"] for l in m["latency"]] == [1, 32], m["latency"]
    for l in m["latency"]:
        rows = [lat[(lat.eval_id == e) & (lat.trial_id == a["trial"]) & (lat.batch_size == l["batch_size"])].iloc[0] for e in (1, 2)]
        for k in ("p50_ms", "p99_ms", "mean_ms", "samples_per_s"):
            assert l[k] == [r[k] for r in rows], (k, l[k])
            assert l["ratio"][k][0] == 1.0 and abs(l["ratio"][k][1] - rows[1][k] / rows[0][k]) < 1e-12, (k, l["ratio"])
print("ok: json")
PY

# CSV (one row per model, input and measure), Markdown and the HTML page.
"$R" compare "$WORK/m.h5@1" "$WORK/m.h5@2" --format csv > "$WORK/cmp.csv" || fail "compare --format csv failed"
"$PY" -c "
import sys, pandas as pd
c = pd.read_csv(sys.argv[1])
# 2 models x 2 inputs x (2 metrics + 2 batch sizes x 4 measures)
assert len(c) == 40 and set(c['measure']) == {'test_accuracy', 'test_loss', 'p50_ms', 'p99_ms', 'mean_ms', 'samples_per_s'}, c
assert (c[c.input == 1]['ratio'].dropna() == 1).all() and c[c.input == 2]['ratio'].notna().all(), c
" "$WORK/cmp.csv" || fail "the CSV comparison is wrong"
"$R" compare "$WORK/m.h5@1" "$WORK/m.h5@2" --format markdown > "$WORK/cmp.md" || fail "compare --format markdown failed"
grep -Eq '^\| compute\.threads +\| 1 +\| 2 +\|$' "$WORK/cmp.md" || { cat "$WORK/cmp.md"; fail "the Markdown lacks compute.threads"; }
"$R" compare "$WORK/m.h5@1" "$WORK/m.h5@2" --format html > "$WORK/cmp.html" || fail "compare --format html failed"
"$PY" "$SRC/tests/cli/check_html.py" "$WORK/cmp.html" --section "Comparison of evaluations (ranktune compare)" --svgs 0 \
  || fail "the HTML comparison is wrong"
grep -q "<td>compute.threads</td>" "$WORK/cmp.html" || fail "the HTML page lacks compute.threads"
# The report's own page: its newest evaluation (2, the baseline) against evaluation 1.
"$R" report "$WORK/m.h5" --html "$WORK/report.html" --compare "$WORK/m.h5@1" > /dev/null || fail "report --compare failed"
"$PY" "$SRC/tests/cli/check_html.py" "$WORK/report.html" --section "Comparison of evaluations (ranktune compare)" \
  --section Leaderboard || fail "the report's comparison section is wrong"
grep -q "<td>compute.threads</td>" "$WORK/report.html" || fail "the report's page lacks compute.threads"
grep -q "m.h5@2" "$WORK/report.html" || fail "the report's comparison does not name its baseline m.h5@2"

# A file alone is its newest evaluation; a model in one input only is listed as unmatched.
read -r t1 t2 t3 <<<"$("$PY" -c "
import json, sys
d = json.load(open(sys.argv[1]))
top = [m['inputs'][0]['trial'] for m in d['models']]
print(*top, next(t for t in (1, 2, 3) if t not in top))
" "$WORK/cmp.json")"
"$R" eval "$WORK/m.h5" --trial "$t1" --trial "$t3" --device cpu --batch-sizes 0 > "$WORK/eval3.txt" 2>&1 \
  || { cat "$WORK/eval3.txt"; fail "eval 3 failed"; }
"$R" compare "$WORK/m.h5@1" "$WORK/m.h5" --format json > "$WORK/cmp3.json" || fail "compare with eval 3 failed"
"$PY" - "$WORK/cmp3.json" "$t1" "$t2" "$t3" <<'PY' || fail "the unmatched models are wrong"
import json, sys
d = json.load(open(sys.argv[1]))
t1, t2, t3 = map(int, sys.argv[2:])
assert [i["evaluation"] for i in d["inputs"]] == [1, 3], d["inputs"]
assert [m["inputs"][0]["trial"] for m in d["models"]] == [t1], d["models"]
assert sorted((u["inputs"][0]["input"], u["inputs"][0]["trial"]) for u in d["unmatched"]) == [(1, t2), (2, t3)], d["unmatched"]
assert d["models"][0]["latency"] == [] or all(v[1] is None for l in d["models"][0]["latency"] for v in l["ratio"].values())
keys = [f["key"] for f in d["differing_fields"]]
assert "latency.batch_sizes" in keys and "compute.threads" not in keys, keys  # eval 3 ran at the experiment's 1 thread
PY

# Errors: exit 2 (usage) or 5 (no file), each saying what to do.
expect_error() {  # CODE TEXT COMMAND...
  local code=$1 text=$2; shift 2
  local rc=0; "$@" > "$WORK/err.txt" 2>&1 || rc=$?
  [[ $rc -eq $code ]] && grep -q -- "$text" "$WORK/err.txt" || { cat "$WORK/err.txt"; fail "$* : expected exit $code and '$text', got $rc"; }
}
expect_error 2 "compare needs 2 or more evaluations" "$R" compare "$WORK/m.h5"
expect_error 2 "\-\-compare adds a section to the page of --html" "$R" report "$WORK/m.h5" --compare "$WORK/m.h5@1"
expect_error 2 "no evaluation 9" "$R" report "$WORK/m.h5" --html "$WORK/bad.html" --compare "$WORK/m.h5@9"
expect_error 5 "missing.h5: no such file" "$R" compare "$WORK/m.h5" "$WORK/missing.h5@1"
expect_error 2 "no evaluation 9; it has evaluations 1, 2, 3" "$R" compare "$WORK/m.h5@1" "$WORK/m.h5@9"
expect_error 2 "none.h5: no evaluation is recorded in it .*run \`ranktune eval" "$R" compare "$WORK/m.h5" "$WORK/none.h5"
expect_error 2 "unknown --format 'xml'" "$R" compare "$WORK/m.h5@1" "$WORK/m.h5@2" --format xml
"$R" eval "$WORK/m.h5" --trial "$t3" --device cpu --batch-sizes 0 > "$WORK/eval4.txt" 2>&1 || { cat "$WORK/eval4.txt"; fail "eval 4 failed"; }
expect_error 2 "no model was evaluated in every input.*trials $t1 (checkpoint" "$R" compare "$WORK/m.h5@2" "$WORK/m.h5@4"
echo "ok: ranktune compare"
