#!/usr/bin/env bash
# A results file written before /trial_texts (schema 2: tests/data/old_results/README.md),
# whose failed trials hold an error and a log tail in /trials and whose warnings span
# /events rows of kind "continued", reads, reports, resumes and compacts with this ranktune:
# ranktune.results gives the same error and log_tail per trial as /trials holds, and the
# resume writes the texts of its own failures into the old layout (no /trial_texts).
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
DATA="$SRC/tests/data/old_results"
cp "$DATA/failing_attempts.py" "$DATA/failed_attempts.toml" "$WORK/"
cd "$WORK"
gunzip -c "$DATA/failed_attempts.h5.gz" > old.h5

"$R" report old.h5 > report.txt 2>&1 || { cat report.txt; fail "report of the old file failed"; }
grep -q "trials      4 (TERMINATED 2, ERROR 2)" report.txt || { cat report.txt; fail "report: not the old file's 4 trials"; }
grep -q "to record them)" report.txt || { cat report.txt; fail "report: the long warning is not whole"; }
echo "ok: the old file reports"

check() {  # FILE TRIALS: ranktune.results agrees with the raw /trials columns
  PYTHONPATH="$SRC/python" "$PY" - "$@" <<'PY'
import sys, h5py
import ranktune.results
path, n = sys.argv[1], int(sys.argv[2])
with h5py.File(path, "r") as f:
    assert "trial_texts" not in f, "the old layout got a /trial_texts table"
    raw = {int(t["trial_id"]): (t["error"].decode(), t["log_tail"].decode()) for t in f["trials"][:]}
r = ranktune.results.load(path)
assert len(r.trials) == n, (len(r.trials), n)
got = {int(t.trial_id): (t.error, t.log_tail) for t in r.trials.itertuples()}
assert got == raw, "ranktune.results and /trials disagree"
failed = [t for t in r.trials.itertuples() if t.status == "ERROR"]
assert failed and all(t.error.startswith("exited with code 1: RuntimeError: the model diverged") for t in failed)
assert all("(raise)\n" in t.log_tail and "Traceback" in t.log_tail for t in failed), failed[0].log_tail
warnings = r.events[r.events["kind"] == "warning"]["message"]
assert len(warnings) >= 2 and all(len(m) > 700 and m.endswith("to record them)") for m in warnings), list(warnings)
print(f"ok: {len(failed)} failed trials' texts and {len(warnings)} long warnings read the same in pandas")
PY
}
check old.h5 4 || fail "the old file reads wrong"

"$R" run failed_attempts.toml --np 3 --results old.h5 --resume --force --set experiment.num_samples=2 \
  > resume.txt 2>&1 || { tail -20 resume.txt; fail "the resume of the old file failed"; }
grep -q "resuming $WORK/old.h5: 4 trials recorded" resume.txt || { cat resume.txt; fail "not resumed"; }
check old.h5 8 || fail "the resumed old file reads wrong"

"$R" compact old.h5 > compact.txt 2>&1 || { cat compact.txt; fail "compact of the old file failed"; }
check old.h5 8 || fail "the compacted old file reads wrong"
"$R" report old.h5 > report2.txt 2>&1 && grep -q "trials      8 (TERMINATED 4, ERROR 4)" report2.txt ||
  { cat report2.txt; fail "report after the resume and compact"; }
echo "PASS"
