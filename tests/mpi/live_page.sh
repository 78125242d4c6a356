#!/usr/bin/env bash
# The live page ([report] html): rank 0 rewrites it while the run goes (each version a whole
# page with a refresh tag, read here mid-run), and writes it a last time at the end without
# the tag and with every trial; a "live_page" event says what the pages cost. A page in a
# folder that does not exist is a config error before anything runs.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
"$RANKTUNE" run "$SRC/configs/hartmann6_asha.toml" --np 3 --results live.h5 \
  --set trainable.seconds_per_step=0.03 --set report.html="$WORK/live.html" --set report.html_interval_s=1 > run.txt 2>&1 &
run=$!
seen=0
for _ in $(seq 300); do
  if [[ -s live.html ]] && grep -q 'http-equiv="refresh" content="1"' live.html; then
    cp live.html mid.html
    if grep -q "</html>" mid.html; then seen=1; break; fi
  fi
  sleep 0.1
done
[[ $seen == 1 ]] || { kill $run; cat run.txt; fail "no live page with a refresh tag while the run went"; }
"$PY" "$SRC/tests/cli/check_html.py" mid.html --section Leaderboard --section "Learning curves" || fail "the live page is not a whole page"
wait $run || { cat run.txt; fail "the run failed"; }
grep -q 'http-equiv="refresh"' live.html && fail "the final page still refreshes"
grep -q "40 (TERMINATED 40)" live.html || fail "the final page lacks the finished trials"
ls .live.html.tmp.* 2>/dev/null && fail "a temporary page was left"
"$PY" - live.h5 <<'PY'
import re, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    msgs = [e["message"].decode() for e in f["events"][:] if e["kind"] == b"live_page"]
assert len(msgs) == 1, msgs
m = re.match(r"(\d+) pages to .*live\.html; rank 0's loop ([0-9.]+) ms per page \(the copy\), the render thread ([0-9.]+) ms per page$", msgs[0])
assert m and int(m.group(1)) >= 2, msgs[0]
print("ok:", msgs[0])
PY
rc=0; "$RANKTUNE" check "$SRC/configs/hartmann6_asha.toml" --set report.html="$WORK/no/such/live.html" > bad.txt 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "report.html: the folder $WORK/no/such does not exist" bad.txt || { cat bad.txt; fail "a page in a missing folder: exit $rc"; }
echo "ok: the live page"
