#!/usr/bin/env bash
# Command trainables under protocol 2 (tests/data/command_gang.py): gangs of processes with
# torchrun's variables, a member killed mid-trial, and cooperative stopping.
#  1. Two gang trials of 2 ranks at once (5 ranks): every process gets RANK, WORLD_SIZE,
#     LOCAL_RANK, ..., MASTER_ADDR:MASTER_PORT and the ranks meet there (gloo when torch is
#     installed); only the leader's reports are results; one log per member; each process
#     exits by itself when the trial ends (should_stop), and none is left.
#  2. Rank 1 of a gang is SIGKILLed while rank 0 waits for it: rank 0's process is ended
#     within seconds, the trial is retried from its checkpoint on both members, no
#     (trial, attempt, iteration) is recorded twice, and the error names member 1.
#  3. ASHA: every stopped trial exits by itself, no SIGTERM needed; a script that ignores
#     should_stop gets SIGTERM after stop_grace_s, with a warning event saying so.
source "$(dirname "$0")/lib.sh"
export GANG_OUT="$WORK/out"
mkdir -p "$GANG_OUT"

# gang_config FILE NAME SAMPLES MAX_T MODE EXPERIMENT_LINES TRAINABLE_LINES [MORE_TABLES] > FILE: prints
# a config of trials of tests/data/command_gang.py in MODE (Debian's python3, which may have torch), with checkpoints; the LINES are added to
# [experiment] and [trainable] (\n-separated), MORE_TABLES after them.
gang_config() {
  printf '[experiment]\nname = "%s"\nmetric = "loss"\nmode = "min"\nnum_samples = %s\n%b\n' "$2" "$3" "$6"
  printf '[search]\nalgorithm = "random"\n[search.space]\nx = { uniform = [0.0, 1.0] }\nmode = { choice = ["%s"] }\n' "$5"
  printf '[stop]\nmax_t = %s\n[trainable]\nkind = "command"\ncommand = ["/usr/bin/python3", "%s"]\ncheckpoint = true\n%b\n%b\n' \
    "$4" "$SRC/tests/data/command_gang.py" "$7" "${8:-}"
}
leftovers() { pgrep -f "tests/data/command_gang.py" || true; }

# 1.
gang_config "$WORK/env.toml" gang_env 2 4 env "" "" '[resources]\nranks_per_trial = 2' > "$WORK/env.toml"
timeout 120 mpirun -np 5 --bind-to none "$RANKTUNE" run "$WORK/env.toml" --results "$WORK/env.h5" \
  > "$WORK/env.txt" 2>&1 || { rc=$?; cat "$WORK/env.txt"; fail "gang run exited $rc"; }
[[ -z $(leftovers) ]] || { ps -ef | grep command_gang; fail "gang processes outlived their trials"; }
"$PY" - "$WORK/env.h5" "$GANG_OUT" <<'PY'
import glob, json, os, sys, h5py
results, out = sys.argv[1], sys.argv[2]
with h5py.File(results, "r") as f:
    r, t = f["results"][:], f["trials"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert len(t) == 2 and set(t["status"]) == {b"TERMINATED"}, t[["trial_id", "status"]]
assert len(r) == 8 and (r["loss"] < 1000).all(), r["loss"]  # the leader's reports only
for trial in (1, 2):
    seen = [json.load(open(os.path.join(out, f"t{trial}_a0_r{k}.json"))) for k in (0, 1)]
    for k, s in enumerate(seen):
        e = s["env"]
        assert e["RANK"] == str(k) and e["WORLD_SIZE"] == "2", e
        assert e["LOCAL_RANK"] == str(k) and e["LOCAL_WORLD_SIZE"] == "2", e  # one host
        assert e["NODE_RANK"] == "0" and e["GROUP_RANK"] == "0" and e["MASTER_ADDR"] == "127.0.0.1", e
        assert int(e["MASTER_PORT"]) > 0 and e["MASTER_PORT"] == seen[0]["env"]["MASTER_PORT"], e
        assert s["sum"] == 3, s  # both ranks met at the leader's port
        assert s["leader"] == (k == 0) and s["device"] == "cpu" and s["visible"] is None, s
        assert os.path.exists(os.path.join(out, f"stopped_{trial}_{k}")), f"trial {trial} rank {k} did not stop by itself"
assert not [m for k, m in ev if "SIGTERM" in m or "SIGKILL" in m], ev
print("ok: 2 gangs of 2 met through", seen[0]["how"], "at port", seen[0]["env"]["MASTER_PORT"])
PY
for k in 0 1; do
  grep -q "rank $k iteration 4" "$WORK/env.h5.logs/trial_1_attempt_0_rank_$k.log" || fail "no log of member $k"
done

# 2.
gang_config "$WORK/kill.toml" gang_kill 1 6 kill 'max_failures = 1' "" \
  '[resources]\nranks_per_trial = 2\n[checkpoint]\nevery = 1' > "$WORK/kill.toml"
start=$SECONDS
timeout 120 mpirun -np 3 --bind-to none "$RANKTUNE" run "$WORK/kill.toml" --results "$WORK/kill.h5" \
  > "$WORK/kill.txt" 2>&1 || { rc=$?; cat "$WORK/kill.txt"; fail "run with a killed member exited $rc"; }
took=$((SECONDS - start))
((took < 40)) || fail "a gang whose member died took ${took}s: its leader was left waiting"
[[ -z $(leftovers) ]] || { ps -ef | grep command_gang; fail "gang processes outlived the failure"; }
"$PY" - "$WORK/kill.h5" "$GANG_OUT" <<'PY'
import json, os, sys, h5py
results, out = sys.argv[1], sys.argv[2]
with h5py.File(results, "r") as f:
    r, t = f["results"][:], f["trials"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
assert len(t) == 1 and t["status"][0] == b"TERMINATED" and t["attempt"][0] == 1, t[["status", "attempt"]]
keys = [(int(a), int(b), int(c)) for a, b, c in zip(r["trial_id"], r["attempt"], r["iteration"])]
assert len(keys) == len(set(keys)), keys
assert sorted(k[2] for k in keys) == [1, 2, 3, 4, 5, 6], keys  # 1-3 in attempt 0, 4-6 in attempt 1
errors = [m for k, m in ev if k == "error"]
assert len(errors) == 1 and errors[0].startswith("gang member 1 (rank 2) failed: killed by signal SIGKILL"), errors
for k in (0, 1):
    s = json.load(open(os.path.join(out, f"t1_a1_r{k}.json")))
    assert s["restored_n"] == 3 and s["first_iteration"] == 4, s  # every member got the checkpoint
print("ok: a killed member failed its gang as a unit:", errors[0][:100])
PY
grep -q "rank 1 iteration 3" "$WORK/kill.h5.logs/trial_1_attempt_0_rank_1.log" || fail "no log of the killed member"

# 3.
gang_config "$WORK/asha.toml" stop_asha 6 9 stop "" "" \
  '[scheduler]\nkind = "asha"\ngrace_period = 1\nreduction_factor = 3' > "$WORK/asha.toml"
timeout 120 mpirun -np 3 --bind-to none "$RANKTUNE" run "$WORK/asha.toml" --results "$WORK/asha.h5" \
  > "$WORK/asha.txt" 2>&1 || { rc=$?; cat "$WORK/asha.txt"; fail "ASHA run exited $rc"; }
gang_config "$WORK/deaf.toml" stop_deaf 2 2 deaf "" 'stop_grace_s = 1' > "$WORK/deaf.toml"
timeout 120 mpirun -np 3 --bind-to none "$RANKTUNE" run "$WORK/deaf.toml" --results "$WORK/deaf.h5" \
  > "$WORK/deaf.txt" 2>&1 || { rc=$?; cat "$WORK/deaf.txt"; fail "run of deaf scripts exited $rc"; }
[[ -z $(leftovers) ]] || fail "stopped processes were left"
"$PY" - "$WORK/asha.h5" "$WORK/deaf.h5" "$GANG_OUT" <<'PY'
import glob, os, sys, h5py
asha, deaf, out = sys.argv[1:]
def events(p):
    with h5py.File(p, "r") as f:
        return f["trials"][:], [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
t, ev = events(asha)
assert len(t) == 6 and set(t["status"]) == {b"TERMINATED"}, t["status"]
assert (t["iterations"] < 9).any(), t["iterations"]  # ASHA stopped some early
stopped = glob.glob(os.path.join(out, "stopped_*_0"))
assert len(stopped) >= 6, stopped  # every trial's process exited by itself
assert not [m for k, m in ev if "SIGTERM" in m or "SIGKILL" in m], ev
t, ev = events(deaf)
warned = [m for k, m in ev if k == "warning" and "did not exit within 1 s of the stop request" in m]
assert len(warned) == 2, ev
print("ok: ASHA's stopped trials exited by themselves; deaf ones got SIGTERM:", warned[0])
PY
