#!/usr/bin/env bash
# Event messages longer than a row (256 bytes): a PBT run over 9 hyperparameters, whose
# exploit lineage JSON (before and after configs) is about 600 bytes. The file keeps each
# message whole across rows of kind "continued"; `ranktune report` and `--html` rebuild the
# PBT schedule from it (they failed with "holds no lineage JSON" when the message was cut at
# 256 bytes), and ranktune.results.load gives every lineage as valid JSON. The example's 24
# iterations give PBT five perturbation points: whether a trial exploits depends on the order
# its results arrive in, and with 12 (two points) a fresh-clone CI run once had none.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
cp "$SRC/examples/protocol_shell.sh" "$WORK/"
sed -e 's|^lr = .*|lr = { loguniform = [0.005, 0.2] }\nbeta_one = { uniform = [0.8, 0.999] }\nbeta_two = { uniform = [0.9, 0.9999] }\nweight_decay = { loguniform = [1e-6, 1e-2] }\nwarmup_fraction = { uniform = [0.0, 0.3] }\nlabel_smoothing = { uniform = [0.0, 0.2] }\ndropout_rate = { uniform = [0.0, 0.5] }\ngradient_clip = { uniform = [0.5, 5.0] }\nschedule = { choice = ["cosine", "linear", "constant"] }|' \
  "$SRC/examples/protocol_shell.toml" > "$WORK/pbt.toml"
"$R" run "$WORK/pbt.toml" --np 4 --results "$WORK/pbt.h5" > "$WORK/run.txt" 2>&1 || { cat "$WORK/run.txt"; fail "run failed"; }
"$PY" - "$WORK/pbt.h5" <<'PY'
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    ev = f["events"][:]
kinds = [e["kind"].decode() for e in ev]
assert "exploit" in kinds, "PBT never exploited"
i = kinds.index("exploit")
assert kinds[i + 1] == "continued" and ev[i + 1]["time"] == ev[i]["time"], kinds[i:i + 3]
print("ok: an exploit's lineage spans rows of kind 'continued'")
PY
"$R" report "$WORK/pbt.h5" > "$WORK/report.txt" 2>&1 || { cat "$WORK/report.txt"; fail "report failed"; }
"$R" report "$WORK/pbt.h5" --html "$WORK/pbt.html" > "$WORK/html.txt" 2>&1 || { cat "$WORK/html.txt"; fail "report --html failed"; }
grep -q "weight_decay" "$WORK/pbt.html" || fail "the HTML report lacks the PBT schedule's parameters"
PYTHONPATH="$SRC/python" "$PY" - "$WORK/pbt.h5" <<'PY'
import json, sys
import ranktune.results
r = ranktune.results.load(sys.argv[1])
ex = r.events[r.events["kind"] == "exploit"]
assert len(ex) >= 1 and not (r.events["kind"] == "continued").any(), r.events["kind"].value_counts()
for m in ex["message"]:
    lineage = json.loads(m)
    assert len(m) > 256 and set(lineage["after"]) >= {"lr", "weight_decay", "schedule"}, m
print(f"ok: {len(ex)} lineages of {len(ex['message'].iloc[0])} bytes read whole")
PY
