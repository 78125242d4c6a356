#!/usr/bin/env bash
# A program that ignores SIGTERM is killed with SIGKILL after [trainable] kill_grace_s (here
# 0.5 s, not the default 2 s), and the results file records a warning that names the trial
# and the grace. Bad values of kill_grace_s are refused by `ranktune check`.
source "$(dirname "$0")/../mpi/lib.sh"
cat > "$WORK/stubborn.sh" <<'SH'
#!/usr/bin/env bash
trap '' TERM   # ignored, and so for its children too
for i in $(seq 1000); do echo "{\"loss\": $i}" >&3; sleep 0.05; done
SH
chmod +x "$WORK/stubborn.sh"
command_config "$WORK/exp.toml" kill_grace 3 3 ./stubborn.sh "kill_grace_s = 0.5"

rc=0
# One worker: the trials run one after another, so each stop delays the next start.
mpirun -np 2 --bind-to none "$RANKTUNE" run "$WORK/exp.toml" --results "$WORK/g.h5" > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/out.txt"; fail "run exited $rc"; }
"$PY" - "$WORK/g.h5" <<'PY' || { cat "$WORK/out.txt"; fail "kill_grace_s"; }
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    trials, results, events = f["trials"][:], f["results"][:], f["events"][:]
assert len(trials) == 3 and all(t["status"] == b"TERMINATED" for t in trials), trials["status"]
warnings = {e["trial_id"]: e["message"].decode() for e in events if e["kind"] == b"warning"}
for tid in (1, 2, 3):
    w = warnings.get(tid, "")
    assert f"trial {tid} " in w and "kill_grace_s" in w and "0.5 s" in w and "SIGKILL" in w, (tid, warnings)
# The worker spends the grace, not 2 s, between a trial's stop and the next one's first
# report (which also takes a program start and a 50 ms step).
def time_of(tid, it):
    return max(r["time"] for r in results if r["trial_id"] == tid and r["iteration"] == it)
for a, b in ((1, 2), (2, 3)):
    gap = time_of(b, 1) - time_of(a, 3)
    assert 0.45 < gap < 1.9, (a, b, gap)
PY

# Without the key the grace is 2 s, and the warning says so.
sed -e '/^kill_grace_s/d' -e 's/^num_samples = .*/num_samples = 1/' "$WORK/exp.toml" > "$WORK/default.toml"
rc=0
mpirun -np 2 --bind-to none "$RANKTUNE" run "$WORK/default.toml" --results "$WORK/d.h5" > "$WORK/out.txt" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { cat "$WORK/out.txt"; fail "default run exited $rc"; }
"$PY" - "$WORK/d.h5" <<'PY' || fail "default kill_grace_s"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    w = [e["message"].decode() for e in f["events"][:] if e["kind"] == b"warning"]
assert len(w) == 1 and "trial 1 " in w[0] and "within 2 s of SIGTERM" in w[0], w
PY

# Out of bounds, not a number: a clear error naming the key.
for bad in "-1" "601" "nan" '"2"'; do
  sed "s/^kill_grace_s = .*/kill_grace_s = $bad/" "$WORK/exp.toml" > "$WORK/bad.toml"
  rc=0
  "$RANKTUNE" check "$WORK/bad.toml" > "$WORK/check.txt" 2>&1 || rc=$?
  [[ $rc -ne 0 ]] || { cat "$WORK/check.txt"; fail "kill_grace_s = $bad was accepted"; }
  grep -q "bad.toml:[0-9]*:.*trainable.kill_grace_s" "$WORK/check.txt" || { cat "$WORK/check.txt"; fail "kill_grace_s = $bad: no file:line:key"; }
done
echo "OK"
