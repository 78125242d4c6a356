#!/usr/bin/env bash
# `ranktune run --resume` of a damaged results file (issue 13, items 1-3 and 18): a real
# run is stopped with SIGTERM, copies of its file are damaged (make_resume_damage.py:
# truncated, a /trials id one bit off, a trial row twice, a result twice, zeroed results,
# a flipped bit in the newest experiment state), and each must be refused with exit 5 and
# its reason, within seconds, leaving the copy byte for byte as it was; refused again on a
# second try (nothing was mended into a healthy-looking file). Self-launched (refused
# before mpirun starts, or by rank 0), and three cases under a real `mpirun -np 3`, where
# rank 0 must print the reason and end the job (MPI_Abort) instead of hanging in
# MPI_Finalize. The intact copy must resume to the end. Truncated copies of an `mlp` results
# file are refused too. FAULT_SEED=N replays a run.
source "$(dirname "$0")/../mpi/lib.sh"
SEED=${FAULT_SEED:-$RANDOM}
echo "resume_damaged: FAULT_SEED=$SEED"
cfg="$SRC/tests/data/quickstart_branin.toml"
sets=(--set experiment.num_samples=12 --set trainable.seconds_per_step=0.05)

# Each copy is resumed at the path it was written to: the path is part of the stored config.
exp="$WORK/exp.h5"
good="$WORK/good.h5"
# run_and_stop TABLE N: runs $cfg with $sets into $exp and stops it with SIGTERM (exit 4)
# once /TABLE has N rows.
run_and_stop() {
  local pid rc=0 n
  "$RANKTUNE" run "$cfg" --np 2 --results "$exp" "${sets[@]}" > "$WORK/run.txt" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    n=$("$PY" -c "import h5py,sys; print(len(h5py.File(sys.argv[1],'r',swmr=True)[sys.argv[2]]))" "$exp" "$1" 2>/dev/null || echo 0)
    ((n >= $2)) && break
    sleep 0.1
  done
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  ((rc == 4)) || { cat "$WORK/run.txt"; fail "$exp: SIGTERM: expected exit 4, got $rc"; }
}
# Stop it once at least 9 trials exist (the damage needs /trials rows 6 to 8).
run_and_stop trials 9
cp "$exp" "$good"
"$PY" "$SRC/tests/fault/make_resume_damage.py" "$good" "$WORK/bad" "$SEED" > "$WORK/cases.txt" || fail "make_resume_damage.py failed"

# refused LAUNCHER COPY WORDS: with COPY at the results path, the resume exits 5 within 30 s,
# stderr says WORDS about the file, and the file is unchanged.
refused() {
  local how=$1 file=$exp words=${3//+/ } before rc=0 start=$SECONDS
  [[ $2 == "$exp" ]] || cp "$2" "$exp"
  before=$(sha256sum < "$file")
  if [[ $how == mpirun ]]; then
    timeout -s KILL 30 mpirun -np 3 "$RANKTUNE" run "$cfg" --results "$file" "${sets[@]}" --resume \
      > "$WORK/out.txt" 2> "$WORK/err.txt" || rc=$?
  else
    timeout -s KILL 30 "$RANKTUNE" run "$cfg" --np 2 --results "$file" "${sets[@]}" --resume \
      > "$WORK/out.txt" 2> "$WORK/err.txt" || rc=$?
  fi
  local name; name="$how $(basename "$2")"
  ((rc != 137)) || fail "$name: hung (killed after 30 s): $(head -c 600 "$WORK/err.txt")"
  ((rc == 5)) || fail "$name: expected exit 5, got $rc: $(head -c 600 "$WORK/err.txt")"
  grep -F "ranktune: $file: " "$WORK/err.txt" | grep -qF "$words" ||
    fail "$name: stderr does not say '$words' about the file: $(head -c 600 "$WORK/err.txt")"
  [[ $(sha256sum < "$file") == "$before" ]] || fail "$name: the refused file was changed"
  echo "ok: $name refused in $((SECONDS - start)) s: $(grep -F "ranktune: $file: " "$WORK/err.txt" | head -1 | cut -c1-160)"
}

while read -r name words; do
  refused self "$WORK/bad/$name.h5" "$words"
  refused self "$exp" "$words"  # still refused: nothing was mended
done < "$WORK/cases.txt"
# Under a real mpirun rank 0 finds each (no self-launcher checks first).
for name in truncated-75 trial-id-8-to-0 state-bit; do
  refused mpirun "$WORK/bad/$name.h5" "$(awk -v n="$name" '$1 == n {print $2}' "$WORK/cases.txt")"
done

# Item 18: report refuses a /trials row that is there twice (it printed the trial twice).
rc=0
"$RANKTUNE" report "$WORK/bad/trial-row-twice.h5" > "$WORK/out.txt" 2> "$WORK/err.txt" || rc=$?
((rc == 5)) || fail "report of a trial row twice: expected exit 5, got $rc: $(cat "$WORK/out.txt" "$WORK/err.txt" | head -c 600)"
grep -qF "holds trial_id 7" "$WORK/err.txt" && [[ ! -s "$WORK/out.txt" ]] ||
  fail "report of a trial row twice: no reason naming the row, or a report printed: $(cat "$WORK/out.txt" "$WORK/err.txt" | head -c 600)"

# The intact file resumes to the end: 12 trials, each iteration once.
cp "$good" "$exp"
"$RANKTUNE" run "$cfg" --np 2 --results "$exp" "${sets[@]}" --resume > "$WORK/final.txt" 2>&1 ||
  { cat "$WORK/final.txt"; fail "the intact file did not resume"; }
"$PY" - "$exp" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t, r = f["trials"][:], f["results"][:]
assert sorted(t["trial_id"]) == list(range(1, 13)), t["trial_id"]
keys = [(int(x["trial_id"]), int(x["attempt"]), int(x["iteration"])) for x in r]
assert len(keys) == len(set(keys)) and min(k[0] for k in keys) >= 1, "a result twice, or of trial 0"
PY
# The same for an mlp results file (the issue's second corpus): its checkpoints are whole
# networks, so most of the file is /checkpoint_data. Truncated copies must be refused too.
# 400 trials so that the run is still going when the SIGTERM comes (40 finished in about a
# second once checkpoints streamed raw, before the poll below saw its 20 results).
cfg="$SRC/configs/fashion_mlp_asha.toml"
sets=(--set experiment.num_samples=400 --set stop.max_t=6 --set trainable.batches_per_step=4
      --set trainable.train_samples=2000 --set trainable.val_samples=300 --set checkpoint.every=1)
exp="$WORK/mlp.h5"
run_and_stop results 20
cp "$exp" "$WORK/mlp-good.h5"
size=$(stat -c %s "$exp")
for p in 50 90 99; do
  head -c $((size * p / 100)) "$WORK/mlp-good.h5" > "$WORK/bad/mlp-truncated-$p.h5"
  refused self "$WORK/bad/mlp-truncated-$p.h5" truncated
done
refused mpirun "$WORK/bad/mlp-truncated-90.h5" truncated
echo "PASS"
