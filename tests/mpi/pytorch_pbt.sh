#!/usr/bin/env bash
# configs/pytorch_pbt.toml end to end with real mpirun and Debian's python3-torch: every trial
# runs its 12 epochs, each recorded once, and PBT exploits at least once; each exploit restarts
# the script from the donor's checkpoint: the weights it loads (their SHA-256, which the
# script logs) are those of the donor's checkpoint at the donor's iteration, exported here
# with `ranktune export-checkpoint`, and the trial goes on with the explored config.
# Retention is off here so that every donor checkpoint can still be exported.
source "$(dirname "$0")/torch_lib.sh"
timeout 200 mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/pytorch_pbt.toml" --results "$WORK/p.h5" \
  --set "$(torch_command pytorch_fashion_mnist.py)" --set checkpoint.keep_last=0 --set checkpoint.keep_best=0 \
  > "$WORK/out.txt" 2>&1 || { rc=$?; cat "$WORK/out.txt"; fail "run exited $rc"; }
check_results "$WORK/p.h5" 2 12
PYTHONPATH="$TORCH_PYTHONPATH" "$PY" - "$WORK" "$RANKTUNE" <<'PY'
import json, re, subprocess, sys
import h5py, torch
import pytorch_fashion_mnist as fm
work, ranktune = sys.argv[1], sys.argv[2]
with h5py.File(f"{work}/p.h5", "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [(int(e["trial_id"]), e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "a (trial, attempt, iteration) was recorded twice"
exploits = [(k, json.loads(m)) for k, kind, m in ev if kind == "exploit"]
assert exploits, "PBT never exploited: no restore of another trial's checkpoint was tested"
for tid in {k for k, _ in exploits}:
    mine = sorted((lin for k, lin in exploits if k == tid), key=lambda lin: lin["iteration"])
    log = open(f"{work}/p.h5.logs/trial_{tid}_attempt_0.log").read()
    loaded = re.findall(r"^restored from .*: trained \d+ epochs, model sha256 ([0-9a-f]{64})$", log, re.M)
    assert len(loaded) == len(mine), (tid, len(loaded), len(mine))
    for lin, sha in zip(mine, loaded):
        out = f"{work}/donor_{tid}_{lin['iteration']}"
        subprocess.run([ranktune, "export-checkpoint", f"{work}/p.h5", "--trial", str(lin["donor"]),
                        "--iteration", str(lin["donor_iteration"]), out], check=True, capture_output=True)
        model = fm.Net(fm.settings(lin["after"])["channels"])
        model.load_state_dict(torch.load(f"{out}/model.pt")["model"])
        assert fm.state_sha256(model) == sha, (tid, lin, "restored weights are not the donor's checkpoint")
    row = t[t["trial_id"] == tid][0]
    assert abs(float(row["lr"]) - mine[-1]["after"]["lr"]) <= 1e-12 * mine[-1]["after"]["lr"], (tid, row["lr"], mine[-1])
    # The epochs after an exploit are the trial's own count, not the donor's.
    its = [i for (k, a, i) in keys if k == tid]
    assert its == list(range(1, 13)), (tid, its)
print(f"ok: {len(exploits)} exploits restored their donor's checkpoint (SHA-256 of the weights checked)")
PY
