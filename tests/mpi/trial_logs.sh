#!/usr/bin/env bash
# Trial logs of command trainables under real mpirun (issue 12 items 2, 7, 13; issue 13 items
# 4, 14, 15, 16):
# - ASHA's promotion variant pauses trials and resumes them in the same attempt: each log
#   keeps every run, with a separator naming the iteration and the cause, and the command's
#   RANKTUNE_ITERATION agrees with ranktune's count;
# - failures: the error names a Python exception; NaN and never-reported failures keep their
#   log_tail; a string for a metric fails the attempt naming the key and its type;
# - the log of a trial printing 2 MB is capped by max_log_mb, head and tail kept;
# - a symlink planted in the logs folder is not written through, and a logs folder that is
#   a link ends the run before any trial starts (the same planted by a second user:
#   tests/fault/trial_log_links.sh);
# - the NaN of the run's last trial keeps its log_tail too.
# Arguments: the parts to run (default: all), e.g. `trial_logs.sh 2 4`.
source "$(dirname "$0")/lib.sh"
cp "$SRC/tests/data/trial_logs.py" "$SRC/tests/data/trial_logs.toml" "$SRC/tests/data/trial_log_faults.toml" "$WORK/"

# 1. Pauses and resumes append.
part1() {
mpirun -np 4 --bind-to none "$RANKTUNE" run "$WORK/trial_logs.toml" --results "$WORK/asha.h5" \
  > "$WORK/asha.txt" 2>&1 || { cat "$WORK/asha.txt"; fail "asha run exited $?"; }
"$PY" - "$WORK/asha.h5" <<'PY'
import re, sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    r = f["results"][:]
    ev = [(int(e["trial_id"]), e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
unpaused = sorted({t for t, k, _ in ev if k == "unpause"})
assert unpaused, "no trial was promoted"
for t in unpaused:
    attempts = {int(x["attempt"]) for x in r if x["trial_id"] == t}
    assert attempts == {0}, (t, attempts)
    log = open(f"{path}.logs/trial_{t}_attempt_0.log").read()
    its = sorted(int(x["iteration"]) for x in r if x["trial_id"] == t)
    for i in its:  # every iteration's line, from every run of the attempt
        assert f"train n={i} " in log, f"trial {t}: the log lost iteration {i}:\n{log}"
    seps = re.findall(r"^\[ranktune\] ---- trial (\d+) attempt 0 goes on at iteration (\d+) \((.*)\) ----$", log, re.M)
    assert seps, f"trial {t}: no separator line:\n{log}"
    for tt, it, cause in seps:
        assert int(tt) == t and cause == "resume", seps
        assert f"run starts at it={it}" in log, (t, it)
    assert log.count("run starts at it=") == len(seps) + 1, log
bad = [(int(x["trial_id"]), int(x["iteration"]), float(x["it"])) for x in r if float(x["it"]) != int(x["iteration"])]
assert not bad, f"RANKTUNE_ITERATION disagrees with ranktune's iteration: {bad[:5]}"
print(f"asha: {len(unpaused)} resumed trials kept every run in their logs; RANKTUNE_ITERATION matches")
PY
}

# 2. What failures say.
part2() {
mpirun -np 3 --bind-to none "$RANKTUNE" run "$WORK/trial_log_faults.toml" --results "$WORK/faults.h5" \
  > "$WORK/faults.txt" 2>&1 || true
"$PY" - "$WORK/faults.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    texts = {int(x["trial_id"]): x for x in f["trial_texts"][:]}  # a trial's last row: its error, log_tail
rows = {row["mode"].decode(): row for row in t}
def field(mode, name):
    row = rows[mode]
    if name in ("error", "log_tail"):
        return texts[int(row["trial_id"])][name].decode() if int(row["trial_id"]) in texts else ""
    return row[name].decode()
for mode in ("raise", "nan", "silent", "string"):
    assert field(mode, "status") == "ERROR", (mode, field(mode, "status"), field(mode, "error"))
err = field("raise", "error")
assert err.startswith("exited with code 1: RuntimeError: size mismatch for c1.weight"), err
assert "Traceback" in field("raise", "log_tail"), field("raise", "log_tail")
assert "is nan" in field("nan", "error"), field("nan", "error")
assert "the loss diverged before this report" in field("nan", "log_tail"), repr(field("nan", "log_tail"))
assert "without reporting" in field("silent", "error"), field("silent", "error")
assert "trained, but reported no loss" in field("silent", "log_tail"), repr(field("silent", "log_tail"))
err = field("string", "error")
assert "malformed report line 1" in err and "'loss' is a string (\"0.5\")" in err, err
print("faults: the exception is in the error; NaN and silent failures keep their log tail; a string metric is refused")
PY
}

# 3. The log cap: 2 MB of output under max_log_mb = 0.05 (51,200 bytes).
part3() {
mpirun -np 3 --bind-to none "$RANKTUNE" run "$WORK/trial_log_faults.toml" --results "$WORK/cap.h5" \
  --set trainable.max_log_mb=0.05 > "$WORK/cap.txt" 2>&1 || true
grep -q "max_log_mb" "$WORK/cap.txt" && ! [[ -e "$WORK/cap.h5" ]] && { cat "$WORK/cap.txt"; fail "max_log_mb refused"; }
flood=$(grep -l "THE END" "$WORK/cap.h5.logs/"*.log) || fail "no log has the flood's last line"
size=$(stat -c %s "$flood")
(( size <= 60000 )) || fail "the flood's log is $size bytes under max_log_mb = 0.05"
head -1 "$flood" | grep -q "run starts at it=1" || fail "the log lost its head"
grep -Eq '^\[ranktune\] ---- log cut here: +[0-9]+ bytes of output dropped' "$flood" || fail "no cut marker"
echo "cap: a 2 MB output kept as a $size-byte log with its head, a cut marker and its tail"
}

# 4. A symlink planted in the logs folder is not followed.
part4() {
echo "precious" > "$WORK/victim"
mkdir "$WORK/sym.h5.logs"
ln -s "$WORK/victim" "$WORK/sym.h5.logs/trial_1_attempt_0.log"
mpirun -np 2 --bind-to none "$RANKTUNE" run "$WORK/trial_log_faults.toml" --results "$WORK/sym.h5" \
  > "$WORK/sym.txt" 2>&1 || true
[[ $(cat "$WORK/victim") == precious ]] || fail "the run wrote through the planted link: $(head -c 200 "$WORK/victim")"
"$PY" - "$WORK/sym.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = {int(r["trial_id"]): r for r in f["trials"][:]}
    texts = {int(x["trial_id"]): x for x in f["trial_texts"][:]}  # a trial's last row: its error, log_tail
err = texts[1]["error"].decode()
assert "symbolic link" in err, err
PY
echo "symlink: the planted link was refused, its target untouched"
}

# 5. A logs folder that is a link ends the run before any trial starts.
part5() {
mkdir "$WORK/elsewhere"
ln -s "$WORK/elsewhere" "$WORK/link.h5.logs"
rc=0
mpirun -np 2 --bind-to none "$RANKTUNE" run "$WORK/trial_log_faults.toml" --results "$WORK/link.h5" \
  > "$WORK/link.txt" 2>&1 || rc=$?
(( rc == 2 )) || { cat "$WORK/link.txt"; fail "a linked logs folder: exit $rc, expected 2"; }
grep -q "link.h5.logs is a symbolic link" "$WORK/link.txt" || { cat "$WORK/link.txt"; fail "no clear error"; }
[[ -z $(ls -A "$WORK/elsewhere") ]] || fail "logs went through the linked folder: $(ls "$WORK/elsewhere")"
[[ ! -e "$WORK/link.h5" ]] || fail "the run started (it made link.h5)"
echo "linked logs folder: refused with exit 2 before any trial"
}

# 6. The NaN that ends the run: its worker sends the tail after the driver has finished
# (the last trial's tail was lost).
part6() {
mpirun -np 2 --bind-to none "$RANKTUNE" run "$WORK/trial_log_faults.toml" --results "$WORK/last.h5" \
  --set 'search.space.mode={grid=["nan"]}' > "$WORK/last.txt" 2>&1 || true
"$PY" - "$WORK/last.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    (t,) = f["trials"][:]
    texts = {int(x["trial_id"]): x for x in f["trial_texts"][:]}  # a trial's last row: its error, log_tail
x = texts[int(t["trial_id"])]
assert t["status"] == b"ERROR" and b"is nan" in x["error"], (t["status"], x["error"])
assert b"the loss diverged before this report" in x["log_tail"], x["log_tail"]
PY
echo "last NaN: the trial that ended the run keeps its log tail"
}

for part in ${@:-1 2 3 4 5 6}; do "part$part"; done
