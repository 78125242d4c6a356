#!/usr/bin/env bash
# A results file on a full disk (issue 13, items 3 and 8): a run on a 20 MiB tmpfs, nearly
# filled, with a checkpoint at every iteration, must stop within seconds saying "the file
# system of PATH is full (N bytes free", with exit 4 (it could commit) or 1, and leave a file
# that reads with every committed row whole: no zero rows, /trials ids 1..N, every live
# checkpoint's bytes passing their CRC-32C. A resume while the disk is still full must say
# so and end the job (self-launched and under mpirun), never hang; once space is freed,
# report, compact and export-checkpoint read the file and it resumes to the end. Needs root and tmpfs (mount -t tmpfs); skipped (exit 77) without.
source "$(dirname "$0")/../mpi/lib.sh"
disk="$WORK/disk"
mkdir -p "$disk"
if ! mount -t tmpfs -o size=20m ranktune-test "$disk" 2> "$WORK/mount.txt"; then
  echo "SKIP: cannot mount a tmpfs at $disk ($(head -c 200 "$WORK/mount.txt")); needs root in a system that allows mount"
  exit 77
fi
trap 'umount "$disk" 2>/dev/null; rm -rf "$WORK"' EXIT
cfg="$SRC/tests/data/quickstart_branin.toml"
exp="$disk/exp.h5"
sets=(--set checkpoint.every=1 --set experiment.num_samples=300 --set trainable.seconds_per_step=0.001)
# About 3 MiB left: the run writes a few hundred KiB of rows and checkpoints before it stops.
head -c $((17 * 1024 * 1024)) /dev/zero > "$disk/filler"

# check_file: the file reads (as a live reader would, SWMR) and holds only whole rows.
check_file() {
  "$PY" - "$exp" "$1" <<'PY'
import os, sys, h5py, numpy as np
path, when = sys.argv[1], sys.argv[2]

sys.path.insert(0, os.path.join(os.environ["SRC"], "tests"))
from crc32c import crc32c

with h5py.File(path, "r", swmr=True) as f:
    t, r, ck = f["trials"][:], f["results"][:], f["checkpoints"][:]
    data = f["checkpoint_data"][:].tobytes()
ids = list(t["trial_id"])
assert ids == list(range(1, len(ids) + 1)), f"{when}: /trials ids are not 1..N: {ids}"
assert len(r) == 0 or r["trial_id"].min() >= 1, f"{when}: /results has rows of trial 0 (zero rows)"
keys = {(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r}
assert len(keys) == len(r), f"{when}: a (trial, attempt, iteration) twice"
live = [c for c in ck if not c["dropped"]]
bad = [(int(c["trial_id"]), int(c["iteration"])) for c in live
       if c["offset"] + c["size"] > len(data) or crc32c(data[c["offset"]:c["offset"] + c["size"]]) != c["crc32c"]]
assert not bad, f"{when}: {len(bad)} of {len(live)} live checkpoints fail their CRC-32C: {bad[:5]}"
print(f"ok: {when}: {len(ids)} trials, {len(r)} results, {len(live)} live checkpoints, all whole")
PY
}

# stops HOW WHAT: the run (or resume) ends within 60 s with exit 4 or 1, saying the disk is full.
stops() {
  local how=$1 what=$2 rc=0 start=$SECONDS
  if [[ $how == mpirun ]]; then
    timeout -s KILL 60 mpirun -np 3 "$RANKTUNE" run "$cfg" --results "$exp" "${sets[@]}" --resume > "$WORK/out.txt" 2>&1 || rc=$?
  else
    timeout -s KILL 60 "$RANKTUNE" run "$cfg" --np 2 --results "$exp" "${sets[@]}" --resume > "$WORK/out.txt" 2>&1 || rc=$?
  fi
  ((rc != 137)) || fail "$what: hung (killed after 60 s): $(grep -v '^\[ranktune' "$WORK/out.txt" | head -c 800)"
  ((rc == 4 || rc == 1)) || fail "$what: expected exit 4 or 1, got $rc: $(grep -v '^\[ranktune' "$WORK/out.txt" | head -c 800)"
  # The message names the free bytes too (issue 13 item 8: "(N bytes free)").
  local said
  said=$(grep -F "the file system of $exp is full (" "$WORK/out.txt" || true)
  [[ $said =~ is\ full\ \([0-9]+\ bytes\ free ]] ||
    fail "$what: no word of a full disk and its free bytes: $(grep -v '^\[ranktune' "$WORK/out.txt" | head -c 800)"
  echo "ok: $what stopped in $((SECONDS - start)) s with exit $rc: $(grep -F "is full (" "$WORK/out.txt" | head -1 | cut -c1-200)"
}

stops self "the run on a full disk"
check_file "after the full disk"
stops self "a resume on the still full disk"
check_file "after the resume on a full disk"
stops mpirun "a resume under mpirun on the still full disk"
check_file "after the mpirun resume on a full disk"

rm "$disk/filler"
# The file the full disk left is a closed, whole file: the readers take it (the issue found
# `compact` refusing it, writer flag set, and `export-checkpoint` exiting 5).
"$RANKTUNE" report "$exp" > "$WORK/report.txt" 2>&1 || { cat "$WORK/report.txt"; fail "report of the file the full disk left failed"; }
"$RANKTUNE" compact "$exp" -o "$WORK/compact.h5" > "$WORK/compact.txt" 2>&1 ||
  { cat "$WORK/compact.txt"; fail "compact of the file the full disk left failed"; }
"$RANKTUNE" export-checkpoint "$exp" --trial 1 "$WORK/ck1" > "$WORK/export.txt" 2>&1 && [[ -s "$WORK/ck1/checkpoint.bin" ]] ||
  { cat "$WORK/export.txt"; fail "export-checkpoint of the file the full disk left failed"; }
echo "ok: report, compact and export-checkpoint read the file the full disk left"
"$RANKTUNE" run "$cfg" --np 2 --results "$exp" "${sets[@]}" --resume > "$WORK/final.txt" 2>&1 ||
  { tail -20 "$WORK/final.txt"; fail "the resume after freeing space failed"; }
check_file "after freeing space and resuming"
"$PY" -c "
import sys, h5py
t = h5py.File(sys.argv[1], 'r')['trials'][:]
assert len(t) == 300 and all(s == b'TERMINATED' for s in t['status']), (len(t), set(t['status']))
" "$exp" || fail "the resumed run did not finish its 300 trials"
echo "PASS"
