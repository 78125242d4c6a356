#!/usr/bin/env bash
# Hyperparameter importance (`ranktune report --importance`) against Optuna's fANOVA on the
# same trials. A random search of the 6-d Hartmann function where x5 and x6 range over
# [0, 1] and x1..x4 over narrower and narrower intervals around the optimum, so that two
# parameters dominate by construction and the other four come in a graded order. Both of
# our methods must rank the six as Optuna's FanovaImportanceEvaluator does (Spearman >= 0.8)
# with x5 and x6 first; ranktune's fANOVA, the same method, must also match its shares.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
# expect_exit CODE OUT CMD...: CMD exits with CODE, its stdout and stderr in OUT.
expect_exit() {
  local code=$1 out=$2 rc=0
  shift 2
  "$@" > "$out" 2>&1 || rc=$?
  [[ $rc == "$code" ]] || { cat "$out"; fail "$* exited $rc, expected $code"; }
}
"$PY" -c 'import optuna, sklearn' 2>/dev/null || { echo "SKIP: Debian's python3-optuna and python3-sklearn are not installed (scripts/setup.sh installs them)"; exit 77; }
"$R" simulate "$SRC/tests/data/importance_hartmann6.toml" --workers 4 --results "$WORK/h.h5" \
  --set experiment.num_samples=600 > "$WORK/sim.txt" 2>&1 || { cat "$WORK/sim.txt"; fail "simulate failed"; }
for m in ped-anova fanova; do
  "$R" report "$WORK/h.h5" --importance "$m" --format json --top 1 > "$WORK/$m.json" 2>"$WORK/$m.err" \
    || { cat "$WORK/$m.err"; fail "report --importance $m failed"; }
done
"$PY" - "$WORK/h.h5" "$SRC/tests/data/importance_hartmann6.toml" "$WORK/ped-anova.json" "$WORK/fanova.json" <<'PY'
import json, sys, tomllib
import h5py, optuna
from optuna.distributions import FloatDistribution
optuna.logging.set_verbosity(optuna.logging.ERROR)
path, toml, ped, fan = sys.argv[1:]
space = tomllib.load(open(toml, "rb"))["search"]["space"]
names = sorted(space)
with h5py.File(path, "r") as f:
    rows = f["trials"][:]
rows = rows[rows["trial_id"] > 0]
assert len(rows) == 600, len(rows)
study = optuna.create_study(direction="minimize")
dists = {n: FloatDistribution(*space[n]["uniform"]) for n in names}
for r in rows:
    study.add_trial(optuna.trial.create_trial(params={n: float(r[n]) for n in names}, distributions=dists, value=float(r["best"])))
theirs = optuna.importance.get_param_importances(study, evaluator=optuna.importance.FanovaImportanceEvaluator(n_trees=32, seed=0))
def ranks(shares):
    return {n: i for i, n in enumerate(sorted(names, key=lambda n: -shares[n]))}
def spearman(a, b):
    ra, rb, k = ranks(a), ranks(b), len(names)
    return 1 - 6 * sum((ra[n] - rb[n]) ** 2 for n in names) / (k * (k * k - 1))
print("optuna fANOVA:", {n: round(v, 3) for n, v in theirs.items()})
for label, doc in (("ped-anova", json.load(open(ped))), ("fanova", json.load(open(fan)))):
    imp = doc["importance"]
    assert imp["method"] == label and imp["trials"] == 600, imp
    listed = [s["name"] for s in imp["scores"]]
    ours = {s["name"]: s["share"] for s in imp["scores"]}
    assert sorted(listed) == names and abs(sum(ours.values()) - 1) < 1e-9, imp
    assert [s["share"] for s in imp["scores"]] == sorted(ours.values(), reverse=True), "not most important first"
    rho = spearman(ours, theirs)
    print(f"ours {label}: {dict((n, round(v, 3)) for n, v in ours.items())}, Spearman {rho:.3f}")
    assert set(listed[:2]) == {"x5", "x6"}, f"{label}: x5 and x6 should lead, got {listed}"
    assert rho >= 0.8, f"{label}: Spearman {rho:.3f} against Optuna's fANOVA"
    if label == "fanova":
        for n in names:
            assert abs(ours[n] - theirs[n]) < 0.05, f"fANOVA share of {n}: ours {ours[n]:.3f}, Optuna's {theirs[n]:.3f}"
PY
# For people: a bar per parameter under the leaderboard, and a table in Markdown.
"$R" report "$WORK/h.h5" --importance ped-anova --top 3 > "$WORK/table.txt" || fail "report --importance failed"
grep -q "^Hyperparameter importance (PED-ANOVA: what set the top 10% of 600 trials apart)" "$WORK/table.txt" \
  || { cat "$WORK/table.txt"; fail "no importance section in the table report"; }
grep -Eq "^  x[56] +[0-9.]+% +#+$" "$WORK/table.txt" || { cat "$WORK/table.txt"; fail "no bars"; }
"$R" report "$WORK/h.h5" --importance fanova --format markdown > "$WORK/md.txt" || fail "markdown report failed"
grep -q "^| hyperparameter | share |" "$WORK/md.txt" || { cat "$WORK/md.txt"; fail "no Markdown importance table"; }
# Refusals say what was wrong and what to do, with exit code 2.
expect_exit 2 "$WORK/bad.txt" "$R" report "$WORK/h.h5" --importance shap
grep -q "unknown --importance 'shap'; valid: ped-anova, fanova" "$WORK/bad.txt" || { cat "$WORK/bad.txt"; fail "unclear refusal"; }
expect_exit 2 "$WORK/csv.txt" "$R" report "$WORK/h.h5" --importance fanova --format csv
grep -q "use table, markdown or json" "$WORK/csv.txt" || { cat "$WORK/csv.txt"; fail "unclear refusal of csv"; }
echo "ok: importance agrees with Optuna's fANOVA"
