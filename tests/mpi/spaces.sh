#!/usr/bin/env bash
# Search spaces as users write them (issue 32), end to end under mpirun with a command
# trainable: fixed values, conditional parameters and points to evaluate under the searchers
# (checked in the results file and in the config each program received), warm start, a PBT mutation scope that keeps a
# shape-changing parameter from being mutated, and the refusals with file:line:key.
source "$(dirname "$0")/lib.sh"
cp "$SRC/tests/data/spaces_probe.py" "$SRC/tests/data/shape_state.py" "$WORK/"
export PYTHONPATH="$SRC/python${PYTHONPATH:+:$PYTHONPATH}"

space() {  # the [search.space] of the probe, with $1 as its algorithm
  cat <<TOML
[experiment]
name = "spaces"
metric = "loss"
mode = "min"
num_samples = 8
seed = 3

[search]
algorithm = "$1"
points_to_evaluate = [ { optimizer = "sgd", momentum = 0.5, lr = 0.01 }, { optimizer = "adam", layers = 2, lr = 0.001 } ]

[search.space]
optimizer = { choice = ["sgd", "adam"] }
momentum = { uniform = [0.0, 0.99], when = "optimizer == 'sgd'" }
lr = { loguniform = [1e-4, 1e-1] }
layers = { randint = [1, 4], when = "optimizer in ['adam']" }
epochs = 2

[stop]
max_t = 2

[trainable]
kind = "command"
command = ["python3", "spaces_probe.py"]
TOML
}

for algorithm in random tpe cmaes gp; do  # bohb shares tpe's model (unit-tested)
  space "$algorithm" > "$WORK/$algorithm.toml"
  printf 'env = { SPACES_LOG = "%s" }\n' "$WORK/$algorithm.jsonl" >> "$WORK/$algorithm.toml"
  mpirun -np 3 --bind-to none "$RANKTUNE" run "$WORK/$algorithm.toml" --results "$WORK/$algorithm.h5" \
    > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "the $algorithm run exited $?"; }
  PYTHONPATH="$SRC/python" "$PY" - "$WORK/$algorithm.h5" "$WORK/$algorithm.jsonl" "$algorithm" <<'PY'
import json, math, sys, h5py
import ranktune.results
path, log, algorithm = sys.argv[1:]
with h5py.File(path, "r") as f:
    t = f["trials"][:]
assert len(t) == 8, (algorithm, len(t))  # the points count in num_samples
assert set(t["status"].astype(str)) == {"TERMINATED"}, (algorithm, t["status"])
for row in t:
    sgd = row["optimizer"].decode() == "sgd"
    # Inactive: missing (NaN) in /trials.
    assert sgd != math.isnan(row["momentum"]), (algorithm, row)
    assert sgd == (row["layers"] == -2**63), (algorithm, row)  # an integer's missing value
    assert row["epochs"] == 2, (algorithm, row)  # a fixed value, in every row
by_id = {int(r["trial_id"]): r for r in t}
assert by_id[1]["optimizer"] == b"sgd" and by_id[1]["momentum"] == 0.5 and by_id[1]["lr"] == 0.01, by_id[1]
assert by_id[2]["optimizer"] == b"adam" and by_id[2]["layers"] == 2 and by_id[2]["lr"] == 0.001, by_id[2]
r = ranktune.results.load(path)
sgd = r.trials["optimizer"] == "sgd"
assert (r.trials["momentum"].isna() == ~sgd).all() and (r.trials["layers"].isna() == sgd).all(), r.trials
seen = {}
for line in open(log):
    entry = json.loads(line)
    seen[entry["trial"]] = entry["config"]
assert sorted(seen) == list(range(1, 9)), (algorithm, sorted(seen))
for trial, cfg in seen.items():
    # The program gets exactly the active parameters and the fixed value.
    want = {"optimizer", "lr", "epochs"} | ({"momentum"} if cfg["optimizer"] == "sgd" else {"layers"})
    assert set(cfg) == want, (algorithm, trial, cfg)
    assert cfg["epochs"] == 2
assert seen[1] == {"optimizer": "sgd", "momentum": 0.5, "lr": 0.01, "epochs": 2}, seen[1]
assert seen[2] == {"optimizer": "adam", "layers": 2, "lr": 0.001, "epochs": 2}, seen[2]
assert {c["optimizer"] for c in seen.values()} == {"sgd", "adam"}, algorithm
PY
done

# Warm start from the tpe run: its trials are observations, not run again, not counted; lr's
# narrower domain here drops those outside it; the file's events and the report name the source.
space tpe | sed 's/lr = { loguniform = \[1e-4, 1e-1\] }/lr = { loguniform = [1e-3, 1e-1] }/' > "$WORK/warm.toml"
printf 'env = { SPACES_LOG = "%s" }\n' "$WORK/warm.jsonl" >> "$WORK/warm.toml"
mpirun -np 3 --bind-to none "$RANKTUNE" run "$WORK/warm.toml" --results "$WORK/warm.h5" --warm-start "$WORK/tpe.h5" \
  --set experiment.num_samples=4 --set search.n_startup=2 > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "the warm run exited $?"; }
"$PY" - "$WORK/warm.h5" "$WORK/warm.jsonl" "$WORK/tpe.h5" <<'PY'
import json, sys, h5py
with h5py.File(sys.argv[3], "r") as f:
    old = f["trials"][:]
outside = sum(1 for r in old if r["lr"] < 1e-3)
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    warm = [e["message"].decode() for e in f["events"][:] if e["kind"] == b"warm_start"]
assert len(t) == 4, len(t)  # warm trials are not run again nor counted in num_samples
assert len(open(sys.argv[2]).readlines()) == 4
assert len(warm) == 1 and warm[0].startswith(f"{8 - outside} trial") and sys.argv[3] in warm[0], (warm, outside)
assert (f"{outside} dropped: values outside this space" in warm[0]) == (outside > 0), warm
PY
"$RANKTUNE" report "$WORK/warm.h5" > "$WORK/report.txt" 2>&1 || { cat "$WORK/report.txt"; fail "report exited $?"; }
grep -q "^warm start  .* trials\? from $WORK/tpe.h5" "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "the report does not name the warm start's file"; }
"$RANKTUNE" report "$WORK/warm.h5" --html "$WORK/warm.html" > /dev/null 2>&1 || fail "report --html exited $?"
"$PY" "$SRC/tests/cli/check_html.py" "$WORK/warm.html" --section "Warm start: the searcher began from these experiments" \
  || fail "the HTML report has no warm start section"
grep -qF "$WORK/tpe.h5" "$WORK/warm.html" || fail "the HTML report does not name the warm start's file"
# A space that differs is refused, showing the difference.
space tpe | sed '/points_to_evaluate/d; s/^epochs = 2$/epochs = 2\nwd = { uniform = [0.0, 0.1] }/; s/^algorithm = "tpe"$/algorithm = "tpe"\nwarm_start = ["tpe.h5"]/' \
  > "$WORK/warm_bad.toml"
rc=0; (cd "$WORK" && "$RANKTUNE" check warm_bad.toml) > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || { cat "$WORK/out.txt"; fail "expected exit code 2 for an incompatible warm start, got $rc"; }
grep -qF "warm_bad.toml:10: search.warm_start: $WORK/tpe.h5 searched another space: + wd (only in this config)" "$WORK/out.txt" \
  || { cat "$WORK/out.txt"; fail "no file:line:key and diff for an incompatible warm start"; }
space tpe | sed '/points_to_evaluate/d; s/^lr = { loguniform/lr = { uniform/; s/^epochs = 2$//; s/^algorithm = "tpe"$/algorithm = "tpe"\nwarm_start = ["tpe.h5"]/' \
  > "$WORK/warm_kind.toml"
rc=0; (cd "$WORK" && "$RANKTUNE" check warm_kind.toml) > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || { cat "$WORK/out.txt"; fail "expected exit code 2 for a warm start of other kinds, got $rc"; }
grep -qF "~ lr: loguniform (float) there, uniform (float) here; - epochs (only in that file)" "$WORK/out.txt" \
  || { cat "$WORK/out.txt"; fail "the diff does not show the changed kind and the missing parameter"; }

# PBT with a mutation scope: only lr changes on exploit; channels (shape-changing, declared
# by shape_params) is the donor's, so every restore loads (no "size mismatch", no ERROR).
# Without the scope, PBT perturbed channels and such trials ended in ERROR (issue 32). The
# points make two trials 5 times worse than the others, so that the bottom half exploits
# whatever the order in which the trials reach their perturbation points.
pbt() {
  cat <<TOML
[experiment]
name = "pbt_scope"
metric = "loss"
mode = "min"
num_samples = 4
seed = 1

[search]
algorithm = "random"
points_to_evaluate = [ { channels = 8, lr = 0.05 }, { channels = 16, lr = 0.05 }, { channels = 8, lr = 0.5 }, { channels = 16, lr = 0.5 } ]

[search.space]
channels = { choice = [8, 16] }
lr = { uniform = [0.01, 0.6] }
steps = 12
sleep = 0.3

[scheduler]
kind = "pbt"
perturbation_interval = 2
quantile_fraction = 0.5
$1

[stop]
max_t = 12

[trainable]
kind = "command"
command = ["python3", "spaces_probe.py"]
checkpoint = true
shape_params = ["channels"]
TOML
}
pbt 'mutable = ["lr"]' > "$WORK/pbt.toml"
printf 'env = { SPACES_LOG = "%s" }\n' "$WORK/pbt.jsonl" >> "$WORK/pbt.toml"
mpirun -np 5 --bind-to none "$RANKTUNE" run "$WORK/pbt.toml" --results "$WORK/pbt.h5" \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "the pbt run exited $?"; }
"$PY" - "$WORK/pbt.h5" "$WORK/pbt.jsonl" <<'PY'
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    events = f["events"][:]
assert set(t["status"].astype(str)) == {"TERMINATED"}, t["status"]
exploits = [json.loads(e["message"]) for e in events if e["kind"] == b"exploit"]
assert exploits, "PBT never exploited"
channels = {int(r["trial_id"]): int(r["channels"]) for r in t}
for e in exploits:
    # The donor's channels, as its checkpoint has them; only lr may differ from the donor's.
    assert e["after"]["channels"] == channels[e["donor"]], e
    assert e["after"]["steps"] == 12, e
# Each program started after an exploit got the donor's channels with its explored lr.
configs = [json.loads(line)["config"] for line in open(sys.argv[2])]
assert {c["channels"] for c in configs} <= {8, 16} and all(c["steps"] == 12 for c in configs), configs
assert len(configs) > 4, "no trial was restarted by an exploit"
PY
# Without the scope a restore failed here ("size mismatch"; the trial fell back to its own checkpoint).
! grep -l "size mismatch" "$WORK"/pbt.h5.logs/*.log || fail "a donor's checkpoint did not load"

# Refusals: file:line:key, exit 2, before any rank runs.
refused() {  # refused FILE PATTERN...
  local file=$1 rc=0
  shift
  "$RANKTUNE" check "$file" > "$WORK/out.txt" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || { cat "$WORK/out.txt"; fail "expected exit code 2 from check $file, got $rc"; }
  for pattern in "$@"; do grep -qF -- "$pattern" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "no '$pattern'"; }; done
}
pbt '' > "$WORK/bad_shape.toml"
refused "$WORK/bad_shape.toml" "bad_shape.toml:19: scheduler.kind" "'channels' changes the shape" 'mutable = ["lr"]'
pbt 'mutable = ["lr", "channels"]' > "$WORK/bad_scope.toml"
refused "$WORK/bad_scope.toml" "bad_scope.toml:22: scheduler.mutable" "'channels' changes the shape"
pbt 'mutable = ["lrr"]' > "$WORK/unknown_scope.toml"
refused "$WORK/unknown_scope.toml" "unknown_scope.toml:22: scheduler.mutable" "Did you mean 'lr'?"
space random | sed "s/optimizer == 'sgd'/optimiser == 'sgd'/" > "$WORK/unknown_when.toml"
refused "$WORK/unknown_when.toml" "unknown_when.toml:14: search.space.momentum.when" "did you mean 'optimizer'?"
space random | sed "s/optimizer == 'sgd'/optimizer = 'sgd'/" > "$WORK/bad_when.toml"
refused "$WORK/bad_when.toml" "bad_when.toml:14: search.space.momentum.when" "write '=='"
space random | sed "s/optimizer == 'sgd'/optimizer == 'sgdd'/" > "$WORK/bad_value.toml"
refused "$WORK/bad_value.toml" "bad_value.toml:14: search.space.momentum.when" "'sgdd' is not a value of 'optimizer'"
space random | sed 's/optimizer = "adam", layers = 2, lr/optimizer = "adam", layers = 2, momentum = 0.5, lr/' > "$WORK/bad_point.toml"
refused "$WORK/bad_point.toml" "bad_point.toml:10: search.points_to_evaluate[1].momentum" "inactive in this point"
echo "spaces: ok"
