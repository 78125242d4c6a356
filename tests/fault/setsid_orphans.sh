#!/usr/bin/env bash
# A trial's program that starts a child in a session of its own (setsid) does not leave it
# running once the trial ends: the worker is a child subreaper, so the orphan becomes its
# child and is killed and reaped with the trial. Trials run one after another on one
# worker, and each looks for the orphans of the ones before it.
source "$(dirname "$0")/../mpi/lib.sh"
cat > "$WORK/daemon.sh" <<'SH'
#!/usr/bin/env bash
# What the trials before this one left: "sleep 1234.75" processes.
n=$(pgrep -fc "sleep 1234.75" || true)
echo "trial $RANKTUNE_TRIAL_ID saw ${n:-0}" >> "$SEEN"
setsid sleep 1234.75 < /dev/null > /dev/null 2>&1 &
# A second one, two forks down and in its own session: the middle process exits at once.
( setsid sleep 1234.75 < /dev/null > /dev/null 2>&1 & ) &
for i in 1 2 3; do echo "{\"loss\": $i}" >&3; sleep 0.05; done
SH
chmod +x "$WORK/daemon.sh"
command_config "$WORK/exp.toml" setsid_orphans 3 3 ./daemon.sh "env = { SEEN = \"$WORK/seen.txt\" }"
cleanup() {  # by pid: only this test's orphans, whatever happened
  local p
  for p in $(pgrep -f "sleep 1234.75" || true); do kill -9 "$p" 2> /dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
rc=0
mpirun -np 2 --bind-to none "$RANKTUNE" run "$WORK/exp.toml" --results "$WORK/o.h5" > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/out.txt"; fail "run exited $rc"; }
cat "$WORK/seen.txt"
[[ $(wc -l < "$WORK/seen.txt") -eq 3 ]] || fail "expected 3 trials"
if grep -v " saw 0$" "$WORK/seen.txt"; then fail "a trial's setsid child outlived its trial"; fi
left=$(pgrep -af "sleep 1234.75" || true)
[[ -z $left ]] || { echo "$left"; fail "setsid children outlived the run"; }
echo "OK"
