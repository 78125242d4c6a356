#!/usr/bin/env bash
# A results file written by ranktune before /state (issue 14): tests/data/old_state.h5.gz is
# a run of tests/data/old_state.toml by that code, stopped by SIGTERM with 2 of its 6 trials
# begun, its experiment states stored as /checkpoints rows of trial 0. It was made with
#   cd DIR && ranktune run old_state.toml --np 2 --results old_state.h5   (SIGTERM after
#   12 /results rows) && ranktune compact old_state.h5 && gzip -9 old_state.h5
# (the path is relative: it is part of the stored overrides, so it resumes in any folder).
# Resumed by this code, it must finish with exactly the 6 trials, whose configs are those of
# an uninterrupted run with the same seed (a lost state would restart the searcher: trial 3
# would repeat trial 1), and its states then go to /state. A new file has /state and no
# trial 0 rows. About 15 s.
source "$(dirname "$0")/../mpi/lib.sh"
cfg="$SRC/tests/data/old_state.toml"
cd "$WORK"
gzip -dc "$SRC/tests/data/old_state.h5.gz" > old_state.h5
"$PY" - <<'PY' || fail "the fixture is not a file from before /state"
import h5py
f = h5py.File("old_state.h5", "r")
assert "state" not in f, list(f)
assert (f["checkpoints"]["trial_id"] == 0).sum() > 0
assert len(f["trials"]) == 2, len(f["trials"])
PY
"$RANKTUNE" run "$cfg" --np 2 --results old_state.h5 --resume > resume.txt 2>&1 || { cat resume.txt; fail "resume failed"; }
# The reference: the same experiment uninterrupted, fast (the speed does not change the samples).
"$RANKTUNE" run "$cfg" --np 2 --results ref.h5 --set trainable.seconds_per_step=0.001 > ref.txt 2>&1 ||
  { cat ref.txt; fail "reference run failed"; }
check_results old_state.h5 6 20
"$PY" - <<'PY' || fail "the resumed old file is wrong"
import h5py, numpy as np
f, ref = h5py.File("old_state.h5", "r"), h5py.File("ref.h5", "r")
t, r = f["trials"][:], ref["trials"][:]
assert len(t) == 6, f"{len(t)} trials, expected exactly 6"
for name in ("x1", "x2"):
    assert np.array_equal(t[name], r[name]), f"{name}: resumed {t[name]}, uninterrupted {r[name]}"
assert len(f["state"]) > 0, "the resumed run stored no state in /state"
c = f["checkpoints"][:]
assert not np.any((c["trial_id"] == 0) & (c["dropped"] == 0)), "live trial 0 rows after states went to /state"
# A new file: its states in /state, none in /checkpoints.
assert len(ref["state"]) > 0 and ref["state_data"].shape[0] > 0
assert not np.any(ref["checkpoints"]["trial_id"] == 0), "a new file has trial 0 rows"
PY
"$RANKTUNE" report old_state.h5 > report.txt 2>&1 || { cat report.txt; fail "report of the resumed file failed"; }
grep -q "trial 0\b" report.txt && fail "the report shows trial 0: $(cat report.txt)"
echo "ok: the file from before /state resumed to its 6 trials"
