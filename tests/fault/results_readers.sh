#!/usr/bin/env bash
# A reader is not a writer (issue 27, item 3). A program that has a results file open for
# reading keeps HDF5's writers out: h5py.File(path, "r") holds HDF5's file lock (flock,
# shared) for as long as the file is open, with swmr=True too (HDF5 1.10), and any process
# that may read the file (another user's, the file being 0644) can take a read lock on it.
# `run --resume` and `eval` used to call that "another process is writing it" or "mending it
# failed: h5clear failed". Now each must exit 5 saying that a reader has it open, which process
# (pid, program, uid), and what to do, leaving the file byte for byte as it was:
#   - the user's own h5py reader, without and with SWMR: "close it", or read with locking=False;
#   - with locking=False (as the message advises) the same resume goes ahead;
#   - another user's h5py reader, and another user's fcntl read lock: "another user's
#     program", and `chmod go-r`.
# A live run's own writer lock is still told as "another process is writing it" (tests/cli/eval.sh,
# tests/fault/kill_loop.sh). Skipped (exit 77) where no second user can be made.
source "$(dirname "$0")/../mpi/lib.sh"
source "$(dirname "$0")/second_user.sh"
second_user_or_skip
R="$RANKTUNE"
shared_folder "$WORK/shared"  # where the other user's holder says it is ready
SHORT=(--set experiment.num_samples=2 --set stop.max_t=3 --set trainable.seconds_per_step=0.0)

failures=0
bad() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
sum() { sha256sum "$1" | cut -d' ' -f1; }

"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 1 --results "$WORK/q.h5" "${SHORT[@]}" > "$WORK/run.txt" 2>&1 ||
  fail "the run failed: $(tail -3 "$WORK/run.txt")"
gunzip -c "$SRC/tests/data/old_results/asha_mlp_interrupted.h5.gz" > "$WORK/e.h5"
chmod 0644 "$WORK/q.h5" "$WORK/e.h5"

# hold WHO KIND FILE: starts a process (as root, or as the other user with WHO=other) that
# keeps FILE open: KIND h5py, swmr (h5py, swmr=True), nolock (h5py, locking=False) or lockf
# (an fcntl read lock). Sets holder to its pid once FILE is open.
hold() {
  local who=$1 kind=$2 file=$3 ready="$WORK/shared/ready.$RANDOM"
  local run=()
  [[ $who == other ]] && run=(as_other)
  "${run[@]}" "$PY" - "$kind" "$file" "$ready" 2> "$WORK/holder.err" << 'PY' &
import fcntl, os, sys, time
kind, path, ready = sys.argv[1:]
if kind == "lockf":
    f = open(path, "rb")
    fcntl.lockf(f, fcntl.LOCK_SH)
else:
    import h5py
    f = h5py.File(path, "r", swmr=(kind == "swmr"), locking=(kind != "nolock"))
with open(ready + ".tmp", "w") as out:
    out.write(str(os.getpid()))
os.rename(ready + ".tmp", ready)
time.sleep(120)
PY
  for _ in $(seq 100); do [[ -e $ready ]] && break; sleep 0.1; done
  [[ -e $ready ]] || fail "the $kind holder of $file did not start: $(cat "$WORK/holder.err")"
  holder=$(cat "$ready")
}
release() {
  kill "$holder" 2> /dev/null || true
  for _ in $(seq 50); do kill -0 "$holder" 2> /dev/null || break; sleep 0.1; done
  wait 2> /dev/null || true
}
# busy NAME TEXT... -- COMMAND...: COMMAND must exit 5 within 60 s, saying every TEXT, and
# leave the file of the current holder ($file) unchanged.
busy() {
  local name=$1 rc=0 texts=()
  shift
  while [[ $1 != -- ]]; do texts+=("$1"); shift; done
  shift
  local before
  before=$(sum "$file")
  timeout -k 5 60 "$@" > "$WORK/$name.txt" 2>&1 || rc=$?
  local missing=""
  for t in "${texts[@]}"; do grep -qF -- "$t" "$WORK/$name.txt" || missing+=" '$t'"; done
  if [[ $rc -ne 5 || -n $missing ]]; then
    bad "$name: expected exit 5 saying$missing, got $rc: $(grep -v '^\[ranktune' "$WORK/$name.txt" | tail -3)"
  else
    echo "ok: $name: $(grep -F -- "${texts[0]}" "$WORK/$name.txt" | head -1 | cut -c1-300)"
  fi
  [[ $(sum "$file") == "$before" ]] || bad "$name: the file was written into"
}

file="$WORK/q.h5"
for kind in h5py swmr; do
  hold self $kind "$file"
  busy own_$kind "h5py or another program has it open for reading (pid $holder (python3, uid 0 root))" \
    "close it (h5py: f.close()" 'h5py.File(path, "r", locking=False)' \
    -- "$R" run "$SRC/tests/data/quickstart_branin.toml" --np 1 --results "$file" --resume "${SHORT[@]}"
  release
done

file="$WORK/e.h5"
hold self h5py "$file"
busy own_reader_eval "open for reading (pid $holder" "or pass --no-record" \
  -- "$R" eval "$file" --top 1 --device cpu --latency-s 0.05
release

# As the message advises: a reader without HDF5's lock keeps no writer out.
file="$WORK/q.h5"
hold self nolock "$file"
rc=0
"$R" run "$SRC/tests/data/quickstart_branin.toml" --np 1 --results "$file" --resume "${SHORT[@]}" > "$WORK/nolock.txt" 2>&1 || rc=$?
if [[ $rc -ne 0 ]] || ! grep -q "resuming" "$WORK/nolock.txt"; then
  bad "nolock: the resume beside a reader without HDF5's lock failed (exit $rc): $(tail -3 "$WORK/nolock.txt")"
else
  echo "ok: nolock: resumed beside a reader that opened it with locking=False"
fi
release

hold other h5py "$file"
busy other_reader "pid $holder (python3, uid $OTHER_UID $OTHER)" "another user's program" "chmod go-r $file" \
  -- "$R" run "$SRC/tests/data/quickstart_branin.toml" --np 1 --results "$file" --resume "${SHORT[@]}"
release

hold other lockf "$file"
busy other_lock "another program holds a read lock on it (pid $holder (python3, uid $OTHER_UID $OTHER))" \
  "another user's program" -- "$R" run "$SRC/tests/data/quickstart_branin.toml" --np 1 --results "$file" --resume "${SHORT[@]}"
busy other_lock_mpirun "another user's program" \
  -- mpirun -np 2 --bind-to none "$R" run "$SRC/tests/data/quickstart_branin.toml" --results "$file" --resume "${SHORT[@]}"
release

if [[ $failures -gt 0 ]]; then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "ok: every reader was told apart from a writer"
