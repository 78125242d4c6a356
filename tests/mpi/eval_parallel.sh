#!/usr/bin/env bash
# Parallel `ranktune eval` (issue 31, docs/guide/evaluation.md "Parallel evaluation"): a small
# mlp search with checkpoints, then its leaders evaluated serially, under `mpirun -np 3 ...
# --parallel` and self-launched (--np 2), which must give the same figures bit for bit on
# the CPU; the parallel evaluation is recorded once, by rank 0, and `report` reads it; with
# exclusive latency no timed phase overlaps other work on the node (RANKTUNE_TRACE stamps);
# idle ranks sleep; failures (a damaged checkpoint, an unusable device, no leader, one rank,
# a plain launch) end with a clear message and the serial exit code, never a hang.
source "$(dirname "$0")/lib.sh"
R="$RANKTUNE"
mlp_search "$WORK/m.h5" 4

# Every command runs under a time limit: a hang is a failure (exit 124), not a stuck test.
run() {  # run NAME COMMAND...: stdout in NAME.json, stderr in NAME.err, the exit code in $code
  local name=$1
  shift
  code=0
  timeout 120 "$@" > "$WORK/$name.json" 2> "$WORK/$name.err" || code=$?
  [[ $code != 124 ]] || { cat "$WORK/$name.err"; fail "$name: hung (killed after 120 s)"; }
}
EVAL=(eval "$WORK/m.h5" --top 3 --device cpu --latency-s 0.05 --format json)
run serial "$R" "${EVAL[@]}" --no-record
[[ $code == 0 ]] || { cat "$WORK/serial.err"; fail "serial eval exited $code"; }
run mpirun env RANKTUNE_TRACE=1 mpirun -np 3 "$R" "${EVAL[@]}" --no-record --parallel
[[ $code == 0 ]] || { cat "$WORK/mpirun.err"; fail "mpirun -np 3 eval --parallel exited $code"; }
run shared env RANKTUNE_TRACE=1 mpirun -np 3 "$R" "${EVAL[@]}" --no-record --parallel --no-exclusive-latency
[[ $code == 0 ]] || { cat "$WORK/shared.err"; fail "eval --parallel --no-exclusive-latency exited $code"; }
run launched "$R" "${EVAL[@]}" --np 2  # self-launched, and recorded
[[ $code == 0 ]] || { cat "$WORK/launched.err"; fail "self-launched eval --np 2 exited $code"; }
grep -q "recorded as evaluation 1 in" "$WORK/launched.err" || { cat "$WORK/launched.err"; fail "not recorded"; }
[[ $(grep -c "recorded as evaluation" "$WORK/launched.err") == 1 ]] || fail "recorded more than once"
for w in 1 2; do
  grep -q "on worker $w (" "$WORK/launched.err" || { cat "$WORK/launched.err"; fail "worker $w evaluated nothing"; }
done

"$PY" - "$WORK" <<'PY' || fail "the parallel evaluations differ from the serial one"
import json, sys
work = sys.argv[1]
def load(name):
    # Numbers as the text printed: equal text is equal bits (shortest round-trip form).
    return json.load(open(f"{work}/{name}.json"), parse_float=str, parse_int=str)
def figures(d):
    return [(e["trial"], e["iteration"], e["metrics"], e["samples"], e["path"], e["threads"],
             [(l["batch_size"], int(l["batches"]) >= 20) for l in e["latency"]]) for e in d["evaluations"]]
serial = figures(load("serial"))
assert len(serial) == 3 and all(len(f[2]) == 2 for f in serial), serial
assert all(f[4] == "cpu" for f in serial), serial
for name in ("mpirun", "shared", "launched"):
    d = load(name)
    assert figures(d) == serial, (name, figures(d), serial)
    workers = [e["manifest"]["worker"] for e in d["evaluations"]]
    assert all(w["rank"] in ("1", "2") and w["device"] == "cpu" for w in workers), (name, workers)
    assert all(w["exclusive_latency"] == (name != "shared") for w in workers), (name, workers)
print("ok: serial, mpirun -np 3 and --np 2 give the same figures:",
      [(f[0], f[2]["test_accuracy"]) for f in serial])
PY

# A manifest with several pipelines, top-k and the confusion matrix: the work is every leader
# through every pipeline, spread the same way, with the same figures.
MAN=(eval "$WORK/m.h5" --top 2 --device cpu --batch-sizes 0 --format json --no-record
     --manifest "$SRC/configs/eval_sensitivity.toml")
run man_serial "$R" "${MAN[@]}"
[[ $code == 0 ]] || { cat "$WORK/man_serial.err"; fail "serial eval --manifest exited $code"; }
run man_parallel mpirun -np 3 "$R" "${MAN[@]}" --parallel
[[ $code == 0 ]] || { cat "$WORK/man_parallel.err"; fail "eval --manifest --parallel exited $code"; }
"$PY" - "$WORK" <<'PY' || fail "the parallel pipelines differ from the serial ones"
import json, sys
load = lambda n: json.load(open(f"{sys.argv[1]}/{n}.json"), parse_float=str, parse_int=str)
fig = lambda d: [(e["trial"], e["pipeline"]["name"], e["metrics"], e["confusion"]) for e in d["evaluations"]]
serial, parallel = fig(load("man_serial")), fig(load("man_parallel"))
assert len(serial) == 8 and [f[1] for f in serial[::2]] == ["reference", "no_normalization", "float16", "bfloat16"], serial
assert all("test_top3_accuracy" in f[2] and len(f[3]) == 10 for f in serial), serial
assert parallel == serial, (parallel, serial)
PY

# Exclusive latency: on this one node, a worker's timing turn overlaps no other turn.
"$PY" - "$WORK/mpirun.err" "$WORK/shared.err" <<'PY' || fail "timed phases overlapped other work"
import sys
turns, open_turn = [], {}
for line in open(sys.argv[1]):
    p = line.split(maxsplit=3)
    if len(p) < 4 or p[0] != "ranktune-trace" or not p[3].startswith("eval: "):
        continue
    rank, t, what = p[1], float(p[2]), p[3].strip()
    if what == "eval: turn given back":
        kind, start = open_turn.pop(rank)
        turns.append((kind, rank, start, t))
    else:
        assert rank not in open_turn, ("two turns at once", line)
        open_turn[rank] = ("timing" if what == "eval: timing turn" else "compute", t)
assert not open_turn, open_turn
timing = [u for u in turns if u[0] == "timing"]
assert len(timing) == 3 and len(turns) >= 6, turns  # each leader timed once, computed at least once
for k, r, a, b in timing:
    for k2, r2, a2, b2 in turns:
        if (k2, r2, a2) != (k, r, a):
            assert b2 <= a or b <= a2, ("a timed phase overlaps", (k, r, a, b), (k2, r2, a2, b2))
assert not any("eval: " in l for l in open(sys.argv[2]) if l.startswith("ranktune-trace")), "turns without exclusive latency"
print(f"ok: {len(timing)} timed phases, each alone among {len(turns)} turns")
PY

# The recorded evaluation: one, of 3 trials, with the serial figures, readable by report.
"$PY" - "$WORK/m.h5" "$WORK/serial.json" <<'PY' || fail "the recorded parallel evaluation is wrong"
import json, sys, h5py
serial = json.load(open(sys.argv[2]))
with h5py.File(sys.argv[1], "r") as f:
    runs = f["evaluations/runs"][:]
    metrics = f["evaluations/metrics"][:]
    r = runs[0]
    manifest = json.loads(bytes(f["evaluations/manifests"][r["manifest_offset"]:r["manifest_offset"] + r["manifest_size"]]))
assert len(runs) == 1 and r["trials"] == 3 and r["device"] == b"cpu", runs
assert manifest["parallel"] == {"workers": 2, "exclusive_latency": True}, manifest.get("parallel")
assert len(manifest["evaluations"]) == 3
got = {(int(m["trial_id"]), m["metric"].decode()): float(m["value"]) for m in metrics}
want = {(e["trial"], k): v for e in serial["evaluations"] for k, v in e["metrics"].items()}
assert got == want, (got, want)  # exact: the same doubles
PY
"$R" report "$WORK/m.h5" > "$WORK/report.txt" || fail "report failed"
grep -q "held-out evaluation 1 (test split" "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "report lacks it"; }

# Idle ranks sleep: one leader on 3 workers leaves rank 0 and two workers waiting ~3 s.
mkdir "$WORK/cpu"
mpirun -np 4 sh -c 'exec /usr/bin/time -o "$0/$OMPI_COMM_WORLD_RANK" -f "%U %S %e" "$@"' "$WORK/cpu" \
  "$R" eval "$WORK/m.h5" --top 1 --device cpu --latency-s 1 --no-record --parallel > /dev/null 2> "$WORK/idle.err" \
  || { cat "$WORK/idle.err"; fail "the idle-rank evaluation failed"; }
"$PY" - "$WORK/cpu" <<'PY' || { cat "$WORK/idle.err"; fail "idle ranks are spinning"; }
import os, sys
ranks = {}
for r in range(4):  # each rank's user and system CPU seconds and wall seconds
    user, system, wall = map(float, open(os.path.join(sys.argv[1], str(r))).read().split()[-3:])
    ranks[r] = (user + system, wall)
busy = max(ranks, key=lambda r: ranks[r][0])
assert busy != 0, ranks  # rank 0 evaluates nothing
for r, (cpu, wall) in ranks.items():
    # A sleeping rank uses ~0.1 s (MPI_Init, the placement, reading the file, its polls) of
    # the ~3.5 s; a spinning one over 1 s, even on 2 busy cores that it shares with the
    # evaluating worker.
    assert r == busy or wall >= 2.0 and cpu < 0.12 * wall, (r, cpu, wall, ranks)
print("ok: idle ranks used", {r: round(c, 2) for r, (c, w) in ranks.items() if r != busy}, "s of CPU")
PY

# Failures: the serial exit code, what failed and where, nothing recorded, no hang.
expect_error() {  # NAME CODE TEXT COMMAND...
  local name=$1 want=$2 text=$3
  shift 3
  run "$name" "$@"
  [[ $code == "$want" ]] && grep -q -- "$text" "$WORK/$name.err" ||
    { cat "$WORK/$name.err"; fail "$name: expected exit $want and '$text', got $code"; }
}
cp "$WORK/m.h5" "$WORK/bad.h5"
first=$("$PY" - "$WORK/bad.h5" "$WORK/serial.json" <<'PY'
import json, sys, h5py
e = json.load(open(sys.argv[2]))["evaluations"][0]  # the best leader's checkpoint goes bad
with h5py.File(sys.argv[1], "r+") as f:
    row = [c for c in f["checkpoints"][:] if c["trial_id"] == e["trial"] and c["iteration"] == e["iteration"] and not c["dropped"]][0]
    d = f["checkpoint_data"]
    d[row["offset"] + 100] = d[row["offset"] + 100] ^ 0xFF
print(e["trial"])
PY
)
expect_error damaged 5 "checkpoint of trial $first at iteration .* fails its checksum" \
  mpirun -np 3 "$R" eval "$WORK/bad.h5" --top 3 --device cpu --latency-s 0.05 --parallel
grep -q "(trial $first was evaluated by worker [12] (" "$WORK/damaged.err" || { cat "$WORK/damaged.err"; fail "the worker is not named"; }
expect_error damaged_launched 5 "fails its checksum" "$R" eval "$WORK/bad.h5" --top 3 --device cpu --latency-s 0.05 --np 2
"$PY" -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r') as f:
    assert len(f['evaluations/runs']) == 1, 'a failed parallel evaluation was recorded'
" "$WORK/bad.h5" || fail "a failed evaluation was recorded"
if ! nvidia-smi -L > /dev/null 2>&1; then
  expect_error device 2 "cannot be set up: .*cuda:0 cannot be used" \
    mpirun -np 3 "$R" eval "$WORK/m.h5" --top 2 --device cuda:0 --no-record --parallel
  grep -q "was evaluated by worker" "$WORK/device.err" || { cat "$WORK/device.err"; fail "the worker is not named"; }
  # Each worker its own GPU, as a run's workers bind them (RANKTUNE_FAKE_CUDA: two devices
  # seen, none bound): --device auto takes it, and says so when it cannot be used.
  expect_error fake_gpus 2 "cuda:1 cannot be used" env RANKTUNE_FAKE_CUDA=1 CUDA_VISIBLE_DEVICES=0,1 \
    mpirun -np 3 "$R" eval "$WORK/m.h5" --top 2 --no-record --parallel
  grep -q "cuda:0 cannot be used" "$WORK/fake_gpus.err" && grep -q "on worker 1 (.*, cuda:0)" "$WORK/fake_gpus.err" &&
    grep -q "on worker 2 (.*, cuda:1)" "$WORK/fake_gpus.err" || { cat "$WORK/fake_gpus.err"; fail "workers share a GPU"; }
  run fake_cpu env RANKTUNE_FAKE_CUDA=1 CUDA_VISIBLE_DEVICES=0,1 mpirun -np 3 "$R" eval "$WORK/m.h5" --top 2 \
    --device cpu --batch-sizes 0 --no-record --parallel  # --device cpu: the CPU whatever the workers bound
  [[ $code == 0 ]] || { cat "$WORK/fake_cpu.err"; fail "--device cpu beside GPUs exited $code"; }
fi
# A worker killed mid-evaluation ends the job: the launcher names it, nothing is recorded.
timeout 120 "$R" eval "$WORK/m.h5" --top 2 --device cpu --latency-s 5 --np 2 > /dev/null 2> "$WORK/killed.err" &
launcher=$!
victim=""
for _ in $(seq 200); do
  if grep -q "on worker 2 (" "$WORK/killed.err"; then
    for pid in $(pgrep -f "ranktune eval $WORK/m.h5 --top 2" || true); do
      if tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2"; then victim=$pid; fi
    done
  fi
  [[ -z $victim ]] || break
  sleep 0.1
done
[[ -n $victim ]] || { kill "$launcher"; cat "$WORK/killed.err"; fail "worker 2 not found"; }
kill -9 "$victim"
code=0
wait "$launcher" || code=$?
[[ $code == 137 ]] && grep -q "rank 2 (a worker, pid $victim) ended first, killed by signal SIGKILL.*Nothing was recorded" \
  "$WORK/killed.err" || { cat "$WORK/killed.err"; fail "a killed worker: exit $code (124: hung), expected 137"; }
"$PY" -c "
import h5py, sys
with h5py.File(sys.argv[1], 'r') as f:
    assert len(f['evaluations/runs']) == 1
" "$WORK/m.h5" || fail "the killed evaluation was recorded"
expect_error no_trial 2 "no trial 99" mpirun -np 3 "$R" eval "$WORK/m.h5" --trial 99 --parallel
expect_error one_rank 2 "needs at least 2 MPI ranks" mpirun -np 1 "$R" eval "$WORK/m.h5" --parallel
expect_error plain 2 "pass --parallel to spread the leaders over them" mpirun -np 2 "$R" eval "$WORK/m.h5" --no-record
echo "ok: parallel ranktune eval"
