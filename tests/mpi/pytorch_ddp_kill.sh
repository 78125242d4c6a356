#!/usr/bin/env bash
# A member of a PyTorch DDP gang (examples/pytorch_ddp.py, 2 ranks, gloo) is killed with
# SIGKILL mid-epoch 3, after the checkpoint of iteration 2: the gang's other process is gone
# within a few seconds (ps), the trial is retried as a unit from its newest checkpoint (both
# ranks of the new attempt log the restore), and it ends TERMINATED with every iteration
# recorded, no (trial, attempt, iteration) twice.
source "$(dirname "$0")/torch_lib.sh"
log0=$WORK/k.h5.logs/trial_1_attempt_0_rank_0.log
log1=$WORK/k.h5.logs/trial_1_attempt_0_rank_1.log
# 16,000 images per epoch (8,000 per rank), so that an epoch lasts long enough to be cut even
# on a fast, idle machine (6,000 took under 0.4 s on CI's, and the kill came after epoch 3).
timeout 200 mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/pytorch_ddp.toml" --results "$WORK/k.h5" \
  --set "$(torch_command pytorch_ddp.py)" --set experiment.num_samples=1 --set experiment.max_failures=1 \
  --set checkpoint.every=1 --set 'search.space.train_samples={choice=[16000]}' --set stop.max_t=4 \
  --set 'search.space.epochs={choice=[4]}' > "$WORK/out.txt" 2>&1 &
launcher=$!

# member ATTEMPT RANK: the pid of trial 1's process of that attempt and gang rank, a child of
# this run's workers (other tests may run the same script at the same time).
member() {
  local pid env
  for pid in $(pgrep -f "pytorch_ddp.py" || true); do
    env=$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null || true)
    if grep -qx "RANK=$2" <<<"$env" && grep -qx "RANKTUNE_ATTEMPT=$1" <<<"$env" \
       && tr '\0' ' ' < "/proc/$(ps -o ppid= -p "$pid" | tr -d ' ')/cmdline" 2>/dev/null | grep -qF "$WORK/k.h5"; then
      echo "$pid"
      return
    fi
  done
}
for _ in $(seq 3000); do
  grep -q "^epoch 2:" "$log1" 2>/dev/null && break
  kill -0 "$launcher" 2>/dev/null || { cat "$WORK/out.txt"; fail "the run ended before epoch 2"; }
  sleep 0.02
done
grep -q "^epoch 2:" "$log1" || { kill "$launcher"; cat "$WORK/out.txt"; fail "no epoch 2 in $log1"; }
sleep 0.1  # past report 2 and its checkpoint's hand-shake, into epoch 3
victim=$(member 0 1) other=$(member 0 0)
[[ -n $victim && -n $other ]] || { kill "$launcher"; fail "gang members not found (rank 1: '$victim', rank 0: '$other')"; }
grep -q "^epoch 3:" "$log1" && { kill "$launcher"; fail "epoch 3 ended before the kill: not mid-epoch"; }
kill -9 "$victim"
echo "killed rank 1 (pid $victim) mid-epoch 3; rank 0 is pid $other"
gone=""
for i in $(seq 50); do  # 5 s
  state=$(ps -o stat= -p "$other" 2>/dev/null || true)
  if [[ -z $state || $state == Z* ]]; then gone=$i; break; fi
  sleep 0.1
done
[[ -n $gone ]] || { ps -o pid,stat,etime,args -p "$other"; kill "$launcher"; fail "rank 0 (pid $other) outlived its gang by 5 s"; }
echo "ok: the gang's other process was gone $((gone * 100)) ms after the kill"
wait "$launcher" || { rc=$?; cat "$WORK/out.txt"; fail "run exited $rc"; }

"$PY" - "$WORK/k.h5" <<'PY'
import re, sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
    ck = f["checkpoints"][:]
assert len(t) == 1 and t["status"][0] == b"TERMINATED" and t["attempt"][0] == 1, t[["status", "attempt"]]
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)), "a (trial, attempt, iteration) was recorded twice"
first = sorted(i for (_, a, i) in keys if a == 0)
second = sorted(i for (_, a, i) in keys if a == 1)
assert first == [1, 2], first  # killed in epoch 3
errors = [m for k, m in ev if k == "error"]
assert len(errors) == 1 and "SIGKILL" in errors[0], errors
# The retry restored attempt 0's newest checkpoint (iteration 2, unless the kill came before
# its save reached rank 0) on both ranks and went on from the iteration after it.
c = int(ck[ck["attempt"] == 0]["iteration"].max())
assert c in (1, 2), c
assert second == list(range(c + 1, 5)), (c, second)
for k in (0, 1):
    log = open(f"{path}.logs/trial_1_attempt_1_rank_{k}.log").read()
    assert re.search(rf"^restored from .*: trained {c} epochs", log, re.M), (k, c, log[:300])
print(f"ok: retried from its iteration-{c} checkpoint; attempt 0 recorded {first}, attempt 1 {second}; "
      f"error: {errors[0][:120]}")
PY
