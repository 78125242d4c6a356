#!/usr/bin/env bash
# The reports of a multi-objective experiment against h5py's read of /trials: a real run
# (mpirun) of ZDT1 under a constraint, MOTPE and MO-ASHA. `report --format csv`
# gives every trial's pareto_rank and objectives as /trials holds them, in Pareto order
# (rank, then crowding distance, which numpy recomputes); the front (pareto_rank 0) is
# non-dominated among itself and dominates every other feasible finished trial (an
# independent numpy check); the reference point and the hypervolume of the JSON report are
# numpy's, by default and with --reference; the text and markdown reports list the front. The
# HTML page (without a browser: tests/cli/pareto_html.sh opens it in chromium) has the front's
# scatter with a dot per front trial and a cross per infeasible one, and the hypervolume
# against wall time. Bad --reference values and a --reference for a single-objective file are
# refused, and that file's reports have none of it. A resumed run ranks its earlier trials too,
# and the run's live page ([report] html) shows the front. `ranktune simulate` ranks its trials
# the same way (its front non-dominated, as numpy checks).
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"

"$R" run "$SRC/tests/data/pareto_zdt1.toml" --np 3 --results "$WORK/mo.h5" --set "report.html=\"$WORK/live.html\"" \
  > "$WORK/run.txt" 2>&1 || { cat "$WORK/run.txt"; fail "the multi-objective run failed"; }
# The run's own live page (rank 0 writes it) has the front too.
"$PY" "$SRC/tests/cli/check_html.py" "$WORK/live.html" --section Leaderboard --section "Pareto front" \
  --section "Hypervolume against wall time" || fail "the live page of a multi-objective run has no front"
"$R" report "$WORK/mo.h5" --format csv > "$WORK/mo.csv" || fail "report --format csv failed"
"$R" report "$WORK/mo.h5" --format json > "$WORK/mo.json" || fail "report --format json failed"
"$R" report "$WORK/mo.h5" --format json --reference 3,6 > "$WORK/ref.json" || fail "report --reference failed"
"$R" report "$WORK/mo.h5" --top 0 > "$WORK/mo.txt" || fail "report failed"
"$R" report "$WORK/mo.h5" --format markdown > "$WORK/mo.md" || fail "report --format markdown failed"
"$R" report "$WORK/mo.h5" --html "$WORK/mo.html" > /dev/null || fail "report --html failed"

"$PY" - "$WORK" <<'PY' || fail "the reports disagree with /trials"
import csv, json, re, sys
import h5py, numpy as np
work = sys.argv[1]
with h5py.File(f"{work}/mo.h5", "r") as f:
    t = f["trials"][()]
ids, rank = t["trial_id"].astype(int), t["pareto_rank"].astype(int)
f1, f2 = t["objective:f1"], t["objective:f2"]
by_id = {int(i): k for k, i in enumerate(ids)}
ranked = rank >= 0
assert ranked.sum() >= 30, f"only {ranked.sum()} trials ranked"
front = set(ids[rank == 0].tolist())
feasible = ranked & np.isfinite(f1) & np.isfinite(f2) & (f2 <= 5)   # constraints = ["f2 <= 5"]
assert 0 < (ranked & ~feasible).sum(), "no finished trial broke the constraint: the test needs some that do"

# The front, checked without ranktune: its feasible points do not dominate each other, and each
# other feasible finished trial is dominated by one of them (Deb: all of the front is feasible then).
P = np.column_stack([f1, f2])
def dominates(a, b):
    return bool(np.all(P[a] <= P[b]) and np.any(P[a] < P[b]))
fr = [by_id[i] for i in sorted(front)]
assert all(feasible[k] for k in fr), "an infeasible trial on the front while feasible ones exist"
for a in fr:
    for b in fr:
        assert not dominates(a, b), f"front trial {ids[a]} dominates front trial {ids[b]}"
for k in np.flatnonzero(feasible):
    if ids[k] not in front:
        assert any(dominates(a, k) for a in fr), f"trial {ids[k]} is dominated by no front trial"

# Crowding distance within each front, as Deb et al. (2002) define it.
def crowding(members):
    d = {m: 0.0 for m in members}
    if len(members) <= 2:
        return {m: np.inf for m in members}
    for c in range(2):
        order = sorted(members, key=lambda m: (P[m, c], ids[m]))
        lo, hi = P[order[0], c], P[order[-1], c]
        if hi == lo:
            continue
        d[order[0]] = d[order[-1]] = np.inf
        for j in range(1, len(order) - 1):
            d[order[j]] += (P[order[j + 1], c] - P[order[j - 1], c]) / (hi - lo)
    return d
crowd = {}
for r in set(rank[ranked].tolist()):
    members = list(np.flatnonzero(rank == r))
    # Failed points (a missing objective) get 0 and stay out of the others' distances.
    finite = [m for m in members if np.isfinite(P[m]).all()]
    crowd.update({m: 0.0 for m in members})
    crowd.update(crowding(finite))

# CSV: every trial, Pareto order, the file's ranks and objectives.
rows = list(csv.DictReader(open(f"{work}/mo.csv")))
assert len(rows) == len(ids), (len(rows), len(ids))
assert list(rows[0].keys())[4:9] == ["pareto_rank", "crowding", "f1", "f2", "feasible"], list(rows[0].keys())
seen = []
for row in rows:
    k = by_id[int(row["trial_id"])]
    want = "" if rank[k] < 0 else str(rank[k])
    assert row["pareto_rank"] == want, (row["trial_id"], row["pareto_rank"], rank[k])
    if rank[k] >= 0:
        assert abs(float(row["f1"]) - f1[k]) <= 1e-9 * max(1, abs(f1[k])), (row, f1[k])
        assert abs(float(row["f2"]) - f2[k]) <= 1e-9 * max(1, abs(f2[k])), (row, f2[k])
        assert row["feasible"] == ("yes" if feasible[k] else "no"), (row, f2[k])
        want_c = crowd[k]
        got_c = float(row["crowding"])
        assert (np.isinf(want_c) and np.isinf(got_c)) or abs(got_c - want_c) < 1e-9, (row["trial_id"], got_c, want_c)
        seen.append((rank[k], -got_c, ids[k]))
assert seen == sorted(seen), "the CSV is not in Pareto order (rank, then crowding, then id)"
assert [int(r["trial_id"]) for r in rows[:len(front)]] and {int(r["trial_id"]) for r in rows[:len(front)]} == front

# JSON: the front, the reference point and the hypervolume, computed here.
def hv2(points, ref):
    pts = sorted(p for p in points if p[0] < ref[0] and p[1] < ref[1])
    total, best = 0.0, ref[1]
    for x, y in pts:
        if y < best:
            total += (ref[0] - x) * (best - y)
            best = y
    return total
doc = json.load(open(f"{work}/mo.json"))
assert set(doc["pareto"]["front"]) == front, (doc["pareto"]["front"], front)
assert [o["metric"] for o in doc["objectives"]] == ["f1", "f2"] and doc["constraints"][0]["bound"] == 5
F = P[feasible]
ref = F.max(axis=0) + 0.1 * (F.max(axis=0) - F.min(axis=0))
assert np.allclose(doc["pareto"]["reference"], ref, rtol=1e-12), (doc["pareto"]["reference"], ref)
front_pts = [tuple(P[k]) for k in fr]
assert abs(doc["pareto"]["hypervolume"] - hv2(front_pts, ref)) < 1e-9, (doc["pareto"]["hypervolume"], hv2(front_pts, ref))
given = json.load(open(f"{work}/ref.json"))["pareto"]
assert given["reference"] == [3, 6] and given["reference_given"] and "as given" in given["reference_rule"]
assert abs(given["hypervolume"] - hv2(front_pts, (3, 6))) < 1e-9, given
for row in doc["trials"]:
    k = by_id[row["trial_id"]]
    assert (row["pareto_rank"] if row["pareto_rank"] is not None else -1) == rank[k], row

# Text and markdown: the front's section lists exactly the front.
text = open(f"{work}/mo.txt").read()
m = re.search(r"^Pareto front: (\d+) trials? on the front \(pareto_rank 0\) of (\d+) ranked; hypervolume ([0-9.e+-]+)", text, re.M)
assert m and int(m.group(1)) == len(front) and int(m.group(2)) == ranked.sum(), text[:600]
assert abs(float(m.group(3)) - hv2(front_pts, ref)) < 1e-5 * hv2(front_pts, ref), m.group(3)
assert "objectives  f1 (min), f2 (min)\nconstraints f2 <= 5\n" in text and "\nmetric " not in text
section = text[m.end():].split("\n\n")[0].splitlines()[3:]
assert {int(line.split()[0]) for line in section} == front, section
md = open(f"{work}/mo.md").read()
assert "### Pareto front" in md and "- objectives: f1 (min), f2 (min)" in md, md[:400]

# The page: a dot per front trial, a cross per infeasible ranked trial with both values.
page = open(f"{work}/mo.html").read()
svg = page[page.index('aria-label="Pareto front"'):]
svg = svg[:svg.index("</svg>")]
dots = set(int(x) for x in re.findall(r"<title>trial (\d+), pareto_rank 0 \(front\): ", svg))
assert dots == front, (dots, front)
crosses = set(int(x) for x in re.findall(r"<polyline [^>]*><title>trial (\d+), pareto_rank \d+(?: \(front\))?, infeasible", svg))
want_x = {int(ids[k]) for k in np.flatnonzero(ranked & ~feasible & np.isfinite(f1) & np.isfinite(f2))}
assert crosses == want_x, (crosses, want_x)
assert "infeasible (a constraint violated)" in svg and "<title>the front's step line" in svg
assert 'aria-label="hypervolume against wall time"' in page
print(f"ok: {len(rows)} trials, front {sorted(front)}, hypervolume {doc['pareto']['hypervolume']:.6g}")
PY
"$PY" "$SRC/tests/cli/check_html.py" "$WORK/mo.html" --section Leaderboard --section "Pareto front" \
  --section "Hypervolume against wall time" || fail "the page of a multi-objective run is wrong"
grep -qF "By Pareto rank (0: the front), then crowding distance" "$WORK/mo.html" || fail "the page's leaderboard does not say its order"

# A resumed run ranks the trials of its earlier runs with its own (by their last results,
# which /trials does not hold whole): every finished trial has a rank, each as Deb's
# constrained non-dominated sort of all of them gives it (numpy), and the report's front is it.
"$R" run "$SRC/tests/data/pareto_zdt1.toml" --np 3 --results "$WORK/res.h5" --set experiment.num_samples=12 \
  > "$WORK/run1.txt" 2>&1 || { cat "$WORK/run1.txt"; fail "the first run failed"; }
"$R" run "$SRC/tests/data/pareto_zdt1.toml" --np 3 --results "$WORK/res.h5" --set experiment.num_samples=20 --resume \
  --force > "$WORK/run2.txt" 2>&1 || { cat "$WORK/run2.txt"; fail "the resumed run failed"; }
"$R" report "$WORK/res.h5" --format json > "$WORK/res.json" || fail "report of the resumed file failed"
"$PY" - "$WORK/res.h5" "$WORK/res.json" "$WORK/mo.h5" <<'PY' || fail "the ranks of a resumed run are wrong"
import json, sys, h5py, numpy as np
def deb_ranks(P, violation):
    def dom(a, b):
        if violation[a] == 0 and violation[b] > 0:
            return True
        if violation[a] > 0:
            return violation[b] > 0 and violation[a] < violation[b]
        return bool(np.all(P[a] <= P[b]) and np.any(P[a] < P[b]))
    rank, left, r = {}, set(range(len(P))), 0
    while left:
        front = {a for a in left if not any(dom(b, a) for b in left if b != a)}
        rank.update({a: r for a in front})
        left -= front
        r += 1
    return [rank[a] for a in range(len(P))]
for path in (sys.argv[1], sys.argv[3]):
    with h5py.File(path, "r") as f:
        t = f["trials"][()]
    done = t["status"] == b"TERMINATED"
    assert (t["pareto_rank"][done] >= 0).all(), (path, t["pareto_rank"])
    P = np.column_stack([t["objective:f1"], t["objective:f2"]])[done]
    assert np.isfinite(P).all(), (path, P)
    want = deb_ranks(P, np.maximum(0, P[:, 1] - 5))  # constraints = ["f2 <= 5"]
    assert t["pareto_rank"][done].tolist() == want, (path, t["pareto_rank"][done].tolist(), want)
doc = json.load(open(sys.argv[2]))
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][()]
assert len(t) == 20 and set(doc["pareto"]["front"]) == set(t["trial_id"][t["pareto_rank"] == 0].tolist()), doc["pareto"]
print(f"ok: the 20 trials of a resumed run ranked as numpy ranks them; front {sorted(doc['pareto']['front'])}")
PY

# Bad --reference values: clear errors, exit 2.
expect_refused() {  # WANT ARGS...: the command fails with exit 2 and says WANT
  local want=$1 rc=0
  shift
  "$R" report "$@" > "$WORK/bad.txt" 2>&1 || rc=$?
  [[ $rc == 2 ]] || { cat "$WORK/bad.txt"; fail "report $* exited $rc, not 2"; }
  grep -qF -- "$want" "$WORK/bad.txt" || { cat "$WORK/bad.txt"; fail "report $* did not say '$want'"; }
}
expect_refused "--reference: 1 value for 2 objectives; give one per objective (f1, f2)" "$WORK/mo.h5" --reference 3
expect_refused "--reference: 'x' is not a finite number" "$WORK/mo.h5" --reference 3,x

# A single-objective experiment: no Pareto column or section, and --reference is refused.
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/so.h5" --set experiment.num_samples=4 \
  --set trainable.seconds_per_step=0.0 > "$WORK/so_run.txt" 2>&1 || { cat "$WORK/so_run.txt"; fail "the run failed"; }
"$R" report "$WORK/so.h5" --format csv > "$WORK/so.csv" || fail "report of one objective failed"
grep -q "pareto_rank\|crowding" "$WORK/so.csv" && fail "a single-objective CSV has Pareto columns"
"$R" report "$WORK/so.h5" --html "$WORK/so.html" > "$WORK/so.txt" || fail "report --html of one objective failed"
grep -q "Pareto\|objectives  " "$WORK/so.txt" "$WORK/so.html" && fail "a single-objective report mentions a front"
expect_refused "--reference: $WORK/so.h5 is a single-objective experiment" "$WORK/so.h5" --reference 1
# The same experiment in virtual time: `simulate` ranks the trials before its flushes too.
"$R" simulate "$SRC/tests/data/pareto_zdt1.toml" --workers 4 --results "$WORK/sim.h5" > "$WORK/sim.txt" 2>&1 ||
  { cat "$WORK/sim.txt"; fail "simulate of a multi-objective experiment failed"; }
"$PY" - "$WORK/sim.h5" <<'PY' || fail "the simulated run's ranks are not Deb's"
import sys
import h5py, numpy as np
t = h5py.File(sys.argv[1], "r")["trials"][()]
r, f1, f2 = t["pareto_rank"].astype(int), t["objective:f1"], t["objective:f2"]
assert (t["status"] == b"TERMINATED").sum() == len(t) and (r >= 0).all(), "a finished trial is not ranked"
ok = (f2 <= 5) & np.isfinite(f1)
P = np.column_stack([f1, f2])
dom = lambda a, b: bool(np.all(P[a] <= P[b]) and np.any(P[a] < P[b]))
front = np.flatnonzero(r == 0)
assert ok[front].all() and not any(dom(a, b) for a in front for b in front), "the simulated front is dominated"
assert all(any(dom(a, k) for a in front) for k in np.flatnonzero(ok & (r > 0))), "a feasible trial off the front is undominated"
PY
echo "ok: the reports of a multi-objective experiment"
