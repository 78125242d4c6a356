#!/usr/bin/env bash
# Hyperparameter importance (`ranktune report --importance`) against Optuna's fANOVA on the
# same trials. A random search of the 6-d Hartmann function where x5 and x6 range over
# [0, 1] and x1..x4 over narrower and narrower intervals around the optimum, so that two
# parameters dominate by construction and the other four come in a graded order. Both of
# our methods, and auto (which picks PED-ANOVA at 600 trials), must rank the six as Optuna's
# FanovaImportanceEvaluator does (Spearman >= 0.8) with x5 and x6 first; ranktune's fANOVA,
# the same method, must also match its shares. At 60 trials auto picks fANOVA, and x5 and
# x6 still lead as in Optuna's. Each share has its interval, and the floor is stated.
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
"$R" simulate "$SRC/tests/data/importance_hartmann6.toml" --workers 4 --results "$WORK/h60.h5" \
  --set experiment.num_samples=60 > "$WORK/sim60.txt" 2>&1 || { cat "$WORK/sim60.txt"; fail "simulate (60) failed"; }
for m in ped-anova fanova auto; do
  "$R" report "$WORK/h.h5" --importance "$m" --format json --top 1 > "$WORK/$m.json" 2>"$WORK/$m.err" \
    || { cat "$WORK/$m.err"; fail "report --importance $m failed"; }
done
# --importance with no value is auto.
"$R" report "$WORK/h60.h5" --format json --top 1 --importance > "$WORK/auto60.json" 2>"$WORK/auto60.err" \
  || { cat "$WORK/auto60.err"; fail "report --importance (no value) failed"; }
"$PY" - "$WORK/h.h5" "$SRC/tests/data/importance_hartmann6.toml" "$WORK/ped-anova.json" "$WORK/fanova.json" \
  "$WORK/auto.json" "$WORK/h60.h5" "$WORK/auto60.json" <<'PY'
import json, sys, tomllib
import h5py, optuna
from optuna.distributions import FloatDistribution
optuna.logging.set_verbosity(optuna.logging.ERROR)
path, toml, ped, fan, auto, path60, auto60 = sys.argv[1:]
space = tomllib.load(open(toml, "rb"))["search"]["space"]
names = sorted(space)
def optuna_fanova(path, count):
    with h5py.File(path, "r") as f:
        rows = f["trials"][:]
    rows = rows[rows["trial_id"] > 0]
    assert len(rows) == count, len(rows)
    study = optuna.create_study(direction="minimize")
    dists = {n: FloatDistribution(*space[n]["uniform"]) for n in names}
    for r in rows:
        study.add_trial(optuna.trial.create_trial(params={n: float(r[n]) for n in names}, distributions=dists, value=float(r["best"])))
    return optuna.importance.get_param_importances(study, evaluator=optuna.importance.FanovaImportanceEvaluator(n_trees=32, seed=0))
def ranks(shares):
    return {n: i for i, n in enumerate(sorted(names, key=lambda n: -shares[n]))}
def spearman(a, b):
    ra, rb, k = ranks(a), ranks(b), len(names)
    return 1 - 6 * sum((ra[n] - rb[n]) ** 2 for n in names) / (k * (k * k - 1))
def check(label, imp, method, count):
    assert imp["method"] == method and imp["trials"] == count, imp
    assert imp["reason"] and imp["budget"] and 0 <= imp["noise_floor"] < 1 and imp["level"] == 0.9 and imp["resamples"] >= 100, imp
    listed = [s["name"] for s in imp["scores"]]
    ours = {s["name"]: s["share"] for s in imp["scores"]}
    assert sorted(listed) == names and abs(sum(ours.values()) - 1) < 1e-9, imp
    assert [s["share"] for s in imp["scores"]] == sorted(ours.values(), reverse=True), "not most important first"
    for s in imp["scores"]:
        assert 0 <= s["low"] <= s["share"] <= s["high"] <= 1, s
        assert s["below_noise"] == (s["low"] <= imp["noise_floor"]), (s, imp["noise_floor"])
    return listed, ours
theirs = optuna_fanova(path, 600)
print("optuna fANOVA:", {n: round(v, 3) for n, v in theirs.items()})
for label, doc, method in (("ped-anova", json.load(open(ped)), "ped-anova"), ("fanova", json.load(open(fan)), "fanova"),
                           ("auto", json.load(open(auto)), "ped-anova")):
    imp = doc["importance"]
    listed, ours = check(label, imp, method, 600)
    rho = spearman(ours, theirs)
    print(f"ours {label}: {dict((n, round(v, 3)) for n, v in ours.items())}, Spearman {rho:.3f}, floor {imp['noise_floor']:.3f}")
    assert set(listed[:2]) == {"x5", "x6"}, f"{label}: x5 and x6 should lead, got {listed}"
    assert not any(s["below_noise"] for s in imp["scores"][:2]), f"{label}: x5 and x6 are above the noise floor"
    assert rho >= 0.8, f"{label}: Spearman {rho:.3f} against Optuna's fANOVA"
    if label == "fanova":
        for n in names:
            assert abs(ours[n] - theirs[n]) < 0.05, f"fANOVA share of {n}: ours {ours[n]:.3f}, Optuna's {theirs[n]:.3f}"
assert "PED-ANOVA: its top 10% holds 60 trials" in json.load(open(auto))["importance"]["reason"]
# 60 trials: auto picks fANOVA, and the two that dominate lead as in Optuna's.
theirs60 = optuna_fanova(path60, 60)
imp = json.load(open(auto60))["importance"]
listed, ours = check("auto60", imp, "fanova", 60)
assert "fANOVA: PED-ANOVA's top 10% would hold 6 trials" in imp["reason"], imp["reason"]
print(f"60 trials: ours auto (fanova) {dict((n, round(v, 3)) for n, v in ours.items())}, "
      f"Optuna's {dict((n, round(v, 3)) for n, v in theirs60.items())}, Spearman {spearman(ours, theirs60):.3f}")
assert set(listed[:2]) == {"x5", "x6"} == set(list(theirs60)[:2]), (listed, theirs60)
PY
# For people: a bar per parameter under the leaderboard, and a table in Markdown.
"$R" report "$WORK/h.h5" --importance ped-anova --top 3 > "$WORK/table.txt" || fail "report --importance failed"
grep -q "^Hyperparameter importance (PED-ANOVA over 600 trials: what set the top 10% apart)" "$WORK/table.txt" \
  || { cat "$WORK/table.txt"; fail "no importance section in the table report"; }
grep -Eq "^  x[56] +[0-9.]+%  \[[0-9.]+%, [0-9.]+%\] +#+$" "$WORK/table.txt" || { cat "$WORK/table.txt"; fail "no bars with intervals"; }
grep -q "^  noise floor: [0-9.]*% (90% intervals from 100 bootstrap resamples)" "$WORK/table.txt" \
  || { cat "$WORK/table.txt"; fail "no noise floor"; }
"$R" report "$WORK/h.h5" --importance fanova --format markdown > "$WORK/md.txt" || fail "markdown report failed"
grep -q "^| hyperparameter | share | 90% interval | |" "$WORK/md.txt" || { cat "$WORK/md.txt"; fail "no Markdown importance table"; }
# Too few trials for any method: it says so, and prints no shares.
"$R" simulate "$SRC/tests/data/importance_hartmann6.toml" --workers 2 --results "$WORK/h5.h5" \
  --set experiment.num_samples=5 > "$WORK/sim5.txt" 2>&1 || { cat "$WORK/sim5.txt"; fail "simulate (5) failed"; }
"$R" report "$WORK/h5.h5" --importance > "$WORK/few.txt" || fail "report of 5 trials failed"
grep -q "^Hyperparameter importance (no shares)" "$WORK/few.txt" && grep -q "5 trials with a value, under the 10 any method needs" "$WORK/few.txt" \
  || { cat "$WORK/few.txt"; fail "too few trials not said"; }
sed -n '/^Hyperparameter importance/,$p' "$WORK/few.txt" | grep -q "%" && { cat "$WORK/few.txt"; fail "shares printed for 5 trials"; }
# Refusals say what was wrong and what to do, with exit code 2.
expect_exit 2 "$WORK/bad.txt" "$R" report "$WORK/h.h5" --importance shap
grep -q "unknown --importance 'shap'; valid: auto, ped-anova, fanova" "$WORK/bad.txt" || { cat "$WORK/bad.txt"; fail "unclear refusal"; }
expect_exit 2 "$WORK/csv.txt" "$R" report "$WORK/h.h5" --importance fanova --format csv
grep -q "use table, markdown or json" "$WORK/csv.txt" || { cat "$WORK/csv.txt"; fail "unclear refusal of csv"; }
echo "ok: importance agrees with Optuna's fANOVA"
