#!/usr/bin/env bash
# The protocol of docs/command_protocol.md spoken by a POSIX sh script (examples/
# protocol_shell.sh) under PBT (examples/protocol_shell.toml), with real mpirun: every trial
# reports every iteration once and ends TERMINATED, and the script's own state (x and its
# step count, saved into RANKTUNE_CHECKPOINT_DIR on "save") goes on exactly where the
# checkpoint it restored left off: after an exploit, the donor's state at the donor's
# iteration, stepped with the new lr, while the trial keeps its own iteration count
# (RANKTUNE_ITERATION). A restore that lost the file, restored another checkpoint, or
# restarted the count changes the values.
source "$(dirname "$0")/lib.sh"
mpirun -np 5 --bind-to none "$RANKTUNE" run "$SRC/examples/protocol_shell.toml" --results "$WORK/shell.h5" \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "run exited $?"; }
check_results "$WORK/shell.h5" 8 24
"$PY" - "$WORK/shell.h5" <<'PY'
import json, math, sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    trials = f["trials"][:]
    rows = f["results"][:]
    events = f["events"][:]
keys = [(int(r["trial_id"]), int(r["attempt"]), int(r["iteration"])) for r in rows]
assert len(keys) == len(set(keys)), "a (trial, attempt, iteration) was recorded twice"
assert all(s == b"TERMINATED" for s in trials["status"]), set(trials["status"])
row = {(int(r["trial_id"]), int(r["iteration"])): r for r in rows}
for t in trials:
    tid = int(t["trial_id"])
    assert sorted(i for (k, i) in row if k == tid) == list(range(1, 25)), tid
exploits = {}  # (trial, iteration it exploited at) -> lineage
for e in events:
    if e["kind"] == b"exploit":
        lin = json.loads(e["message"].decode())
        exploits[(int(e["trial_id"]), lin["iteration"])] = lin
assert exploits, "PBT never exploited: no restore was tested"
# It says hello (protocol 2): every stop was an answer it carried out, never a signal.
assert not [e for e in events if b"SIGTERM" in e["message"] or b"SIGKILL" in e["message"]], "a stop needed a signal"

def close(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)

restored_lines = 0
for t in trials:
    tid = int(t["trial_id"])
    mine = sorted((it, lin) for (k, it), lin in exploits.items() if k == tid)
    lr = mine[0][1]["before"]["lr"] if mine else float(t["lr"])
    x, step = 3 + tid % 4, 0  # the script's fresh state
    log = open(f"{path}.logs/trial_{tid}_attempt_0.log").read()
    for it in range(1, 25):
        lin = exploits.get((tid, it - 1))
        if lin is not None:  # the script restarted from the donor's folder
            donor = row[(lin["donor"], lin["donor_iteration"])]
            x, step, lr = float(donor["x"]), int(donor["step"]), lin["after"]["lr"]
            want = f"step={step} from "
            assert want in log and f"next iteration {it}\n" in log, (tid, it, want)
            restored_lines += 1
        x = x - lr * 2 * (x - 1)
        step += 1
        r = row[(tid, it)]
        assert int(r["step"]) == step, (tid, it, int(r["step"]), step)
        assert close(float(r["x"]), x), (tid, it, float(r["x"]), x)
        assert close(float(r["loss"]), (x - 1) ** 2), (tid, it)
    assert log.count("restored x=") == len(mine), (tid, log.count("restored x="), len(mine))
print(f"protocol_shell: {len(keys)} results, {len(exploits)} exploits restored the donor's state "
      f"({restored_lines} restores checked against the logs)")
PY
# And it got the stop: every trial's log ends a run with the script's own line.
for log in "$WORK"/shell.h5.logs/trial_*_attempt_0.log; do
  grep -q "asked to stop after step" "$log" || fail "$log: the script was never asked to stop"
done
