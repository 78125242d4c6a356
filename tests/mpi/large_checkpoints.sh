#!/usr/bin/env bash
# Checkpoints of 64 MiB stream through rank 0 in chunks (mpi/wire.h): promotion ASHA pauses
# every trial at each rung and resumes the best half from its checkpoint, on 2 workers, so
# several 64 MiB checkpoints are in flight at once both ways. Checks:
#  - every byte round-trips: the trainable (tests/data/large_state.py) verifies each MiB of
#    the state it restores and fails the trial otherwise, and every reported value is the
#    one an unpaused run reports (loss = 1 / (lr * iteration), step = iteration);
#  - rank 0 never holds a checkpoint whole: its peak RSS (the "driver" event) exceeds that
#    of the same run with 1 MiB checkpoints by less than one 64 MiB checkpoint. A driver
#    that received (or sent) a checkpoint in one message would hold it at least twice
#    (the packed message and the unpacked bytes).
source "$(dirname "$0")/lib.sh"
CFG="$SRC/tests/data/large_checkpoints.toml"
for mib in 64 1; do
  mpirun -np 3 --bind-to none "$RANKTUNE" run "$CFG" --results "$WORK/s$mib.h5" \
    --set "search.space.state_mib={grid=[$mib]}" > "$WORK/s$mib.txt" 2>&1 \
    || { cat "$WORK/s$mib.txt"; fail "run with $mib MiB checkpoints exited $?"; }
done
"$PY" - "$WORK/s64.h5" "$WORK/s1.h5" <<'PY'
import sys, h5py, re
MIB = 1 << 20
def load(path):
    with h5py.File(path, "r") as f:
        return f["trials"][:], f["results"][:], f["events"][:], f["checkpoints"][:]
def peak_kib(events):
    m = [re.fullmatch(r"peak RSS (\d+) KiB", e["message"].decode()) for e in events if e["kind"] == b"driver"]
    assert len(m) == 1 and m[0], "no driver event with the peak RSS"
    return int(m[0].group(1))
trials, results, events, ck = load(sys.argv[1])
errors = [e["message"].decode() for e in events if e["kind"] == b"error"]
assert not errors, errors
assert len(trials) == 4 and all(s == b"TERMINATED" for s in trials["status"]), trials["status"]
lr = {int(t["trial_id"]): float(t["lr"]) for t in trials}
for r in results:
    n = int(r["iteration"])
    assert r["step"] == n, ("a restore went back or forward", r)
    assert r["loss"] == 1.0 / (lr[int(r["trial_id"])] * n), ("not what an unpaused run reports", r)
keys = [(int(r["trial_id"]), int(r["iteration"])) for r in results]
assert len(keys) == len(set(keys)), "an iteration was recorded twice"
unpaused = [e for e in events if e["kind"] == b"unpause"]
assert len(unpaused) >= 2, "fewer than two resumes: the restore path was not exercised"
big = ck[(ck["trial_id"] > 0)]
assert len(big) >= 6 and all(int(s) > 64 * MIB for s in big["size"]), big["size"]
peak, base = peak_kib(events), peak_kib(load(sys.argv[2])[2])
print(f"{len(big)} checkpoints of {int(big['size'][0]) / MIB:.1f} MiB stored, {len(unpaused)} resumed, "
      f"every byte verified; rank 0 peak RSS {peak / 1024:.1f} MiB (with 1 MiB checkpoints: {base / 1024:.1f} MiB)")
assert peak - base < 64 * 1024, f"rank 0 grew by {(peak - base) / 1024:.1f} MiB: a checkpoint sat in it whole"
PY
echo "ok: large checkpoints"
