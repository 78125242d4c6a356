#!/usr/bin/env bash
# Issue 27 item 9: trials cut by time_budget_s were recorded TERMINATED with nothing to say so,
# and only the HTML marked the trials a scheduler stopped. Why each trial ended is recorded
# (/trials.end_reason) and shown by every format: the table (a column and an "ended" line),
# CSV, JSON, Markdown, HTML, `report --trial` (and its JSON), `ranktune leaderboard`, and
# ranktune.results. A run cut by its budget (every trial it ran is cut: 1 s each, 0.5 s of
# budget) and one that runs its course (max_t).
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
cd "$WORK"
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 3 --results cut.h5 --set stop.time_budget_s=0.5 \
  --set trainable.seconds_per_step=0.05 > run.txt 2>&1 || { cat run.txt; fail "the budget run failed"; }
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 3 --results full.h5 --set experiment.num_samples=4 \
  --set trainable.seconds_per_step=0 > run2.txt 2>&1 || { cat run2.txt; fail "the full run failed"; }

"$R" report cut.h5 > cut.txt || fail "report failed"
grep -q "^ended       budget [0-9]*$" cut.txt || { cat cut.txt; fail "table: no 'ended budget N' line"; }
grep -q "^   1 .* TERMINATED  budget " cut.txt || { cat cut.txt; fail "table: the leader is not marked budget"; }
"$R" report full.h5 > full.txt && grep -q "^ended       max_t 4$" full.txt || { cat full.txt; fail "table: max_t"; }
"$R" report cut.h5 --format markdown > cut.md && grep -q "^| 1 | [0-9]* | TERMINATED | budget |" cut.md \
  || { cat cut.md; fail "markdown: the leader is not marked budget"; }
"$R" report cut.h5 --format csv > cut.csv || fail "csv failed"
"$R" report cut.h5 --format json > cut.json || fail "json failed"
leader=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["trials"][0]["trial_id"])' cut.json)
"$R" report cut.h5 --trial "$leader" > trial.txt || fail "--trial failed"
grep -q "^trial $leader of quickstart (TERMINATED, budget: cut when the experiment's time budget ran out)$" trial.txt \
  || { head -3 trial.txt; fail "--trial does not say the trial was cut"; }
"$R" report cut.h5 --trial "$leader" --format json > trial.json || fail "--trial --format json failed"
"$R" leaderboard cut.h5 full.h5 --format json > lb.json || fail "leaderboard failed"
"$R" report cut.h5 --html cut.html > /dev/null || fail "--html failed"
grep -q "<td>budget</td>" cut.html && grep -q "<th>end_reason</th>" cut.html || fail "html: no end_reason column"

PYTHONPATH="$SRC/python" "$PY" - <<'PY' || fail "the formats disagree"
import csv, json, h5py
import ranktune.results
board = json.load(open("cut.json"))
rows = list(csv.DictReader(open("cut.csv")))
with h5py.File("cut.h5", "r") as f:
    stored = {int(t["trial_id"]): t["end_reason"].decode() for t in f["trials"][:]}
ended = {t["trial_id"]: t["end_reason"] for t in board["trials"] if t["status"] != "PENDING"}
assert ended and set(ended.values()) == {"budget"}, ended
assert board["end_reasons"] == {"budget": len(ended)}, board["end_reasons"]
assert all(stored[i] == r for i, r in ended.items()), stored
assert {int(r["trial_id"]): r["end_reason"] for r in rows if r["status"] != "PENDING"} == ended, rows[:3]
assert json.load(open("trial.json"))["end_reason"] == "budget"
lb = json.load(open("lb.json"))
assert {(t["file"], t["end_reason"]) for t in lb["trials"] if t["status"] != "PENDING"} == {("cut.h5", "budget"), ("full.h5", "max_t")}
r = ranktune.results.load("cut.h5")
assert dict(zip(r.trials["trial_id"], r.trials["end_reason"])) == {t["trial_id"]: t["end_reason"] or "" for t in board["trials"]}
assert "end_reason" not in r.params
print(f"ok: {len(ended)} trials cut by the budget, marked so in every format")
PY
echo "ok: end reasons"
