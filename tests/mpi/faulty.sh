#!/usr/bin/env bash
# Trials that segfault, exit non-zero, print garbage or report NaN end as ERROR after one
# retry, with the reason and the stderr tail recorded; the good trial still finishes.
source "$(dirname "$0")/lib.sh"
rc=0
mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/tests/data/faulty.toml" --results "$WORK/f.h5" \
  > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/out.txt"; fail "run exited $rc; a partly failed experiment exits 0"; }
check_results "$WORK/f.h5" 5 4 terminated=1 error=4
"$PY" - "$WORK/f.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = {row["fault"].decode(): row for row in f["trials"][:]}
    texts = {int(x["trial_id"]): x for x in f["trial_texts"][:]}  # a trial's last row: its error, log_tail
    ev = [(e["trial_id"], e["kind"].decode()) for e in f["events"][:]]
want = {"segv": "SIGSEGV", "exit": "code 3", "garbage": "malformed", "nan": "nan"}
for fault, words in want.items():
    row = t[fault]
    assert row["status"] == b"ERROR", (fault, row["status"])
    assert row["attempt"] == 1, (fault, "expected one retry", row["attempt"])
    error = texts[int(row["trial_id"])]["error"].decode()
    assert words in error, (fault, error)
    assert (row["trial_id"], "retry") in ev, (fault, "no retry event")
tail = {fault: texts[int(row["trial_id"])]["log_tail"] for fault, row in t.items() if int(row["trial_id"]) in texts}
assert b"about to crash" in tail["segv"], tail["segv"]
assert b"exit code 3" in tail["exit"], tail["exit"]
assert t["ok"]["status"] == b"TERMINATED"
PY
# A command that never reports the metric fails, and with no trial left the run exits 3.
rc=0
mpirun -np 2 --bind-to none "$RANKTUNE" run "$SRC/tests/data/never_reports.toml" --results "$WORK/n.h5" \
  > "$WORK/out2.txt" 2>&1 || rc=$?
[[ $rc -eq 3 ]] || { cat "$WORK/out2.txt"; fail "expected exit code 3 (experiment failed), got $rc"; }
check_results "$WORK/n.h5" 1 3 terminated=0 error=1
