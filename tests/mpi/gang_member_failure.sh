#!/usr/bin/env bash
# One member of a gang fails: rank 2 runs in its own mount namespace where the Fashion-MNIST
# files are garbage (a tmpfs over the folder), so the mlp's setup fails there (a corrupt
# IDX file) and only there. The gang must stop as a unit (rank 1 is not left waiting in a collective), retry
# once, and end as ERROR with rank 2's reason; the job ends with exit code 3 (failed).
# Then a worker that cannot even start (no data on its node) aborts the job, not hang it.
# Needs a mount namespace (root with CAP_SYS_ADMIN); without one it is skipped (exit 77).
source "$(dirname "$0")/lib.sh"
data=/usr/share/datasets/fashion-mnist
unshare -m sh -c "mount -t tmpfs none $data" 2>/dev/null || { echo "SKIP: no mount namespace here"; exit 77; }
run=(run "$SRC/configs/fashion_mlp_gang.toml" --results "$WORK/f.h5" --set experiment.num_samples=1
     --set stop.max_t=2 --set trainable.batches_per_step=5 --set experiment.max_failures=1)
set +e
timeout 120 mpirun --bind-to none -np 2 "$RANKTUNE" "${run[@]}" : \
  -np 1 unshare -m sh -c 'mount -t tmpfs none "$0" && for f in train-images-idx3-ubyte train-labels-idx1-ubyte \
    t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do echo garbage > "$0/$f.gz"; done && exec "$@"' \
  "$data" "$RANKTUNE" "${run[@]}" > "$WORK/out.txt" 2>&1
rc=$?
set -e
[ "$rc" -ne 124 ] || { cat "$WORK/out.txt"; fail "a gang with a failed member hung"; }
[ "$rc" -eq 3 ] || { cat "$WORK/out.txt"; fail "expected exit code 3 (failed experiment), got $rc"; }
"$PY" - "$WORK/f.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert len(t) == 1 and t["status"][0] == b"ERROR" and t["attempt"][0] == 1, t[["status", "attempt"]]
errors = [m for k, m in ev if k == "error"]
assert len(errors) == 2, errors
for m in errors:
    assert m.startswith("gang member 1 (rank 2) failed: ") and "idx3-ubyte" in m, m
print(f"ok: a failed member stopped its gang: {errors[0][:160]}")
PY

# A worker whose node lacks what the driver's node has (here: no data files at all, which
# the worker's own config check finds before any trial) ends the job at once with a clear
# message instead of leaving the other ranks waiting for it.
set +e
timeout 120 mpirun --bind-to none -np 2 "$RANKTUNE" run "$SRC/configs/fashion_mlp_gang.toml" --results "$WORK/g.h5" : \
  -np 1 unshare -m sh -c 'mount -t tmpfs none "$0" && exec "$@"' "$data" \
  "$RANKTUNE" run "$SRC/configs/fashion_mlp_gang.toml" --results "$WORK/g.h5" > "$WORK/abort.txt" 2>&1
rc=$?
set -e
[ "$rc" -ne 124 ] || { cat "$WORK/abort.txt"; fail "a worker that failed its config check hung the job"; }
[ "$rc" -ne 0 ] || { cat "$WORK/abort.txt"; fail "the job succeeded without the data on rank 2"; }
grep -q "ranktune: worker rank 2 on .* failed: .*no such file.*Aborting the job" "$WORK/abort.txt" \
  || { cat "$WORK/abort.txt"; fail "no clear message from the failed worker"; }
echo "ok: a worker missing its data aborted the job (exit $rc)"
