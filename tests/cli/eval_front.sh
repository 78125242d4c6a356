#!/usr/bin/env bash
# `ranktune eval --front` end to end: a real (small) multi-objective search of the mlp (mpirun),
# validation accuracy against throughput, a checkpoint at each trial's end. --front evaluates
# exactly the trials whose pareto_rank is 0 in h5py's /trials, each from its latest checkpoint,
# and the table shows their pareto_rank. The page shows the held-out front (test accuracy
# against p50 latency per sample at each batch size, numpy's non-dominated set of /evaluations)
# beside the validation front, the evaluated trials ringed. --top N takes the Pareto
# leaderboard's first N. A single-objective file is refused, and --front with --top or --trial.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"

"$R" run "$SRC/tests/data/pareto_mlp.toml" --np 2 --results "$WORK/mo.h5" > "$WORK/run.txt" 2>&1 \
  || { cat "$WORK/run.txt"; fail "the multi-objective mlp search failed"; }
"$R" eval "$WORK/mo.h5" --front --device cpu --latency-s 0.1 --batch-sizes 1,32 > "$WORK/eval.txt" 2> "$WORK/eval.err" \
  || { cat "$WORK/eval.txt" "$WORK/eval.err"; fail "eval --front failed"; }
grep -q "recorded as evaluation 1 in" "$WORK/eval.err" || { cat "$WORK/eval.err"; fail "not recorded"; }
"$R" report "$WORK/mo.h5" --html "$WORK/mo.html" > /dev/null || fail "report --html failed"

"$PY" - "$WORK" <<'PY' || fail "eval --front did not evaluate the front"
import re, sys, h5py, numpy as np
work = sys.argv[1]
with h5py.File(f"{work}/mo.h5", "r") as f:
    t = f["trials"][()]
    ck = f["checkpoints"][()]
    runs = f["evaluations/runs"][()]
    m = f["evaluations/metrics"][()]
    lat = f["evaluations/latency"][()]
front = sorted(t["trial_id"][t["pareto_rank"] == 0].tolist())
assert front and len(front) < len(t), (front, len(t))
# The front, checked without ranktune: none of its points dominates another (both maximized).
P = {int(i): (a, s) for i, a, s in zip(t["trial_id"], t["objective:val_accuracy"], t["objective:samples_per_s"])}
for a in front:
    for b in front:
        assert not (P[b][0] >= P[a][0] and P[b][1] >= P[a][1] and P[b] != P[a]), (a, b)
assert len(runs) == 1 and runs[0]["trials"] == len(front), runs
assert sorted(set(m["trial_id"].tolist())) == front, (m["trial_id"], front)
# Each from its latest live checkpoint.
for i in front:
    live = ck[(ck["trial_id"] == i) & (ck["dropped"] == 0)]
    got = set(m["iteration"][m["trial_id"] == i].tolist())
    assert got == {int(live["iteration"].max())}, (i, got, live["iteration"])
# The table: a pareto_rank column of zeros, a row per front trial.
text = open(f"{work}/eval.txt").read().splitlines()
head = text[0].split()
assert head[:3] == ["rank", "pareto_rank", "trial_id"], head
rows = [line.split() for line in text[2:2 + len(front)]]
assert sorted(int(r[2]) for r in rows) == front and all(r[1] == "0" for r in rows), rows
# The page: the held-out front beside the validation front.
page = open(f"{work}/mo.html").read()
svg = page[page.index('aria-label="held-out front beside the validation front"'):]
svg = svg[:svg.index("</svg>")]
assert "validation front" in svg and "held out, batch size 1" in svg and "held out, batch size 32" in svg
ringed = re.findall(r"<title>trial (\d+): evaluated \(", svg)
assert sorted(map(int, ringed)) == front, ringed
acc = {(int(r["trial_id"]), int(r["iteration"])): r["value"] for r in m if r["metric"] == b"test_accuracy"}
for b in (1, 32):
    rows = [(int(l["trial_id"]), acc[(int(l["trial_id"]), int(l["iteration"]))], l["p50_ms"] / b) for l in lat if l["batch_size"] == b]
    assert sorted(r[0] for r in rows) == front, rows
    # numpy's held-out front: not dominated in (test_accuracy max, ms per sample min).
    want = sorted(i for i, a, s in rows
                  if not any(a2 >= a and s2 <= s and (a2, s2) != (a, s) for _, a2, s2 in rows))
    shown = re.findall(r"<title>trial (\d+) \(iteration \d+\)(, on the held-out front)?: test_accuracy [^<]* at batch size %d " % b, svg)
    assert sorted(int(i) for i, _ in shown) == front, shown
    assert sorted(int(i) for i, on in shown if on) == want, (shown, want)
print(f"ok: eval --front evaluated the front {front}")
PY

# --top N on a multi-objective file: the first N of the report's Pareto leaderboard (those
# with a live checkpoint), not the best of the first objective.
"$R" eval "$WORK/mo.h5" --top 2 --no-record --device cpu --latency-s 0.05 --batch-sizes 1 > "$WORK/top.txt" 2> "$WORK/top.err" \
  || { cat "$WORK/top.txt" "$WORK/top.err"; fail "eval --top 2 failed"; }
"$R" report "$WORK/mo.h5" --format csv > "$WORK/board.csv" || fail "report --format csv failed"
"$PY" - "$WORK" <<'PY' || fail "eval --top 2 did not take the Pareto leaderboard's leaders"
import csv, sys, h5py
work = sys.argv[1]
with h5py.File(f"{work}/mo.h5", "r") as f:
    ck = f["checkpoints"][()]
live = {int(i) for i, d in zip(ck["trial_id"], ck["dropped"]) if i > 0 and d == 0}
board = [int(r["trial_id"]) for r in csv.DictReader(open(f"{work}/board.csv")) if r["pareto_rank"] not in ("", "-1")]
want = [i for i in board if i in live][:2]
rows = [line.split() for line in open(f"{work}/top.txt").read().splitlines()[2:4]]
got = [int(r[2]) for r in rows]
assert got == want, (got, want, board)
print(f"ok: eval --top 2 took {got}, the Pareto leaderboard's first two")
PY

expect_refused() {  # WANT ARGS...: `ranktune eval ARGS` fails with exit 2 and says WANT
  local want=$1 rc=0
  shift
  "$R" eval "$@" > "$WORK/bad.txt" 2>&1 || rc=$?
  [[ $rc == 2 ]] || { cat "$WORK/bad.txt"; fail "eval $* exited $rc, not 2"; }
  grep -qF -- "$want" "$WORK/bad.txt" || { cat "$WORK/bad.txt"; fail "eval $* did not say '$want'"; }
}
gunzip -c "$SRC/tests/data/old_results/asha_mlp_interrupted.h5.gz" > "$WORK/one.h5"
expect_refused "--front: $WORK/one.h5 is a single-objective experiment (metric val_accuracy, max): it has no Pareto front" \
  "$WORK/one.h5" --front --device cpu
expect_refused "--top excludes --front" "$WORK/mo.h5" --front --top 2
expect_refused "--trial excludes --front" "$WORK/mo.h5" --front --trial 1
echo "ok: eval --front"
