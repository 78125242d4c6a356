#!/usr/bin/env bash
# Issue 27 item 11: text from a trial reached the terminal raw. A trial reports a metric whose
# name holds an escape sequence (rank 0 warns about it, undeclared), another prints escape
# sequences and fails with one in its error. Rank 0's output, `report` in every text format,
# `report --trial` (error and log tail) and an error message quoting a metric name show them
# as \x1b, \u009b, \xff, never as the raw bytes; the log tail keeps its lines. The file keeps
# what the trial sent.
source "$(dirname "$0")/../mpi/lib.sh"
R="$RANKTUNE"
cp "$SRC/tests/data/escapes.py" "$SRC/tests/data/escapes.toml" "$WORK/"
cd "$WORK"

# No ESC, BEL, CR, C1 control (as UTF-8) or byte that is not UTF-8 in FILE.
raw_controls() { LC_ALL=C grep -c -P '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$1" || true; }
clean() {  # FILE WHAT
  local n
  n=$(raw_controls "$1")
  [[ $n == 0 ]] || { cat -v "$1" | head -40; fail "$2: $n lines with raw control characters"; }
  "$PY" -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$1" 2>/dev/null || fail "$2: bytes that are not UTF-8"
}

rc=0; "$R" run escapes.toml --np 2 > run.txt 2>&1 || rc=$?
clean run.txt "rank 0's output"
grep -qF 'so they are dropped: \x1b]0;pwned\x07red\x1b[31m, c1\u009b2J' run.txt \
  || { cat -v run.txt; fail "rank 0's warning does not show the metric names escaped"; }

"$R" report escapes.h5 > report.txt || fail "report failed"
clean report.txt "report (table)"
grep -qF '\x1b]0;pwned\x07red\x1b[31m' report.txt || { cat report.txt; fail "report: the warning lost the names"; }
for format in markdown csv; do
  "$R" report escapes.h5 --format $format > report.$format || fail "report --format $format failed"
  clean report.$format "report --format $format"
done
"$R" report escapes.h5 --format json > report.json || fail "report --format json failed"
clean report.json "report --format json"

"$R" report escapes.h5 --trial 2 > trial.txt || fail "report --trial 2 failed"
clean trial.txt "report --trial 2"
grep -qF 'RuntimeError: failed with \x1b[1mbold\x1b[0m text' trial.txt || { cat trial.txt; fail "--trial: the traceback is not escaped"; }
grep -qF 'clearing the screen\x1b[2J\x1b[H, then a bell\x07 and a lone \xff byte' trial.txt \
  || { cat trial.txt; fail "--trial: the log tail is not escaped"; }
grep -q '^second line\\x0d\\x1b\[Kover it$' trial.txt || { cat trial.txt; fail "--trial: the log tail lost its lines"; }
"$R" report escapes.h5 --trial 2 --format markdown > trial.md && clean trial.md "report --trial 2 --format markdown"
"$R" report escapes.h5 --trial 1 > trial1.txt && clean trial1.txt "report --trial 1"

# An error message quoting a metric of the file.
rc=0; "$R" leaderboard escapes.h5 --metric $'\e[2Jx' > lb.txt 2>&1 || rc=$?
[[ $rc == 2 ]] || { cat -v lb.txt; fail "leaderboard --metric: exit $rc"; }
clean lb.txt "an error message"

# The file itself keeps what the trial sent.
"$PY" - escapes.h5 <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    messages = b"".join(e["message"] for e in f["events"][:])
    texts = b"".join(t["log_tail"] + t["error"] for t in f["trial_texts"][:])
assert b"\x1b]0;pwned" in messages, messages
assert b"\x1b[2J" in texts and b"\x1b[1mbold" in texts, texts
print("ok: the file keeps the trial's bytes")
PY
echo "ok: terminal escapes from trials are shown, not obeyed"
