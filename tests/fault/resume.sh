#!/usr/bin/env bash
# Resume after a graceful stop and after kill -9 of the whole job (rank 0 included), with
# HyperBand so that paused trials, stored checkpoints and the scheduler's state all have to
# come back from the file. After every kill the file must open and keep every result it had
# at the last read before the kill; the final resume must finish the experiment with
# exactly num_samples trials, no (trial, attempt, iteration) twice, and the same trials
# ending at the same hand-computed rungs as an uninterrupted run.
source "$SRC/tests/mpi/lib.sh"
cfg="$SRC/configs/branin_hyperband.toml"
out="$WORK/r.h5"
run=(--np 4 --results "$out" --set trainable.seconds_per_step=0.1)
seed=${FAULT_SEED:-$RANDOM}
echo "resume.sh: FAULT_SEED=$seed"
RANDOM=$seed

# 1. A graceful SIGTERM mid-run: exit 4, then resume.
"$RANKTUNE" run "$cfg" "${run[@]}" > "$WORK/1.txt" 2>&1 &
pid=$!
sleep 3
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
[[ $rc -eq 4 ]] || { cat "$WORK/1.txt"; fail "SIGTERM: expected exit 4, got $rc"; }

# 2. kill -9 of every process of the job at random moments, resuming each time.
rows() { "$PY" -c "import h5py,sys; f=h5py.File(sys.argv[1],'r',swmr=True); print(len(f['results']))" "$1" 2>/dev/null || echo 0; }
for k in 1 2 3 4; do
  setsid "$RANKTUNE" run "$cfg" "${run[@]}" > "$WORK/k$k.txt" 2>&1 &
  pid=$!
  sleep "$(( RANDOM % 3 + 1 )).$(( RANDOM % 10 ))"
  before=$(rows "$out")
  kill -9 -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pkill -9 -f "ranktune run $cfg" 2>/dev/null || true
  sleep 0.5
  # The file opens (the report mends nothing: it reads) and lost no committed row.
  "$RANKTUNE" report "$out" > "$WORK/rep$k.txt" 2>&1 || { cat "$WORK/rep$k.txt"; fail "kill $k: report failed"; }
  after=$(rows "$out")
  (( after >= before )) || fail "kill $k: $before rows before the kill, $after after"
done

"$RANKTUNE" run "$cfg" "${run[@]}" --resume > "$WORK/final.txt" 2>&1 || { cat "$WORK/final.txt"; fail "final resume failed"; }
"$RANKTUNE" report "$out" > "$WORK/report.txt" 2>&1 || { cat "$WORK/report.txt"; fail "report failed"; }
"$PY" - "$out" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert len(t) == 49 and sorted(t["trial_id"]) == list(range(1, 50)), len(t)
assert all(s == b"TERMINATED" for s in t["status"]), set(t["status"])
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "an iteration was recorded twice"
ends = {int(n): int((t["iterations"] == n).sum()) for n in set(t["iterations"])}
assert ends == {1: 18, 3: 14, 9: 9, 27: 8}, ends
resumes = [m for k, m in ev if k == "resume"]
assert len(resumes) >= 2, resumes
print(f"ok: {len(t)} trials after {len(resumes)} resumes ({sum('crash' in m for m in resumes)} after a crash)")
PY
