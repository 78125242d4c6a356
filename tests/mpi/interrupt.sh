#!/usr/bin/env bash
# SIGTERM to rank 0 mid-run: trials are stopped, the file is flushed and readable, and the
# run exits 4 (interrupted).
source "$(dirname "$0")/lib.sh"
mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/i.h5" \
  --set experiment.num_samples=200 > "$WORK/out.txt" 2>&1 &
launcher=$!
rank0=$(wait_for_rank0 "$WORK/i.h5" "$launcher")
sleep 1.5
kill -TERM "$rank0"
rc=0; wait "$launcher" || rc=$?
[[ $rc -eq 4 ]] || { cat "$WORK/out.txt"; fail "expected exit code 4 after SIGTERM, got $rc"; }
grep -q "signal 15 received" "$WORK/out.txt" || fail "no interruption message"
"$PY" - "$WORK/i.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    t = f["trials"][:]
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
    status = [s.decode() for s in t["status"]]
assert ("end", "interrupted") in ev, ev[-5:]
assert "RUNNING" not in status, status
assert 0 < status.count("TERMINATED") < 200, status.count("TERMINATED")
assert len(t) < 200
PY

# Ctrl-C on a self-launched run: the terminal's SIGINT reaches the launcher and mpirun (one
# process group); mpirun turns it into SIGTERM for the ranks. The workers wait for the
# driver, the driver stops gracefully, and the launcher returns rank 0's code 4, not
# mpirun's 1. Then the same with SIGTERM sent to the launcher alone (a batch system), and
# with SIGUSR1 sent to every process of the job at once (Slurm's time-limit warning to all
# tasks of a step): workers must ignore it and rank 0 stop gracefully.
unset OMPI_MCA_rmaps_base_oversubscribe
for how in ctrl-c term-launcher usr1-all; do
  rm -f "$WORK/c.h5"
  setsid "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/c.h5" \
    --set experiment.num_samples=200 > "$WORK/c.txt" 2>&1 &
  launcher=$!
  for _ in $(seq 100); do [[ -e "$WORK/c.h5" ]] && break; sleep 0.1; done
  sleep 1.5
  case $how in
    ctrl-c) kill -INT -- "-$launcher" ;;
    term-launcher) kill -TERM "$launcher" ;;
    usr1-all) kill -USR1 -- "-$launcher" ;;
  esac
  rc=0; wait "$launcher" || rc=$?
  [[ $rc -eq 4 ]] || { cat "$WORK/c.txt"; fail "$how: expected exit code 4, got $rc"; }
  "$PY" - "$WORK/c.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:   # opens without h5clear: the writer closed cleanly
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
    status = {s.decode() for s in f["trials"]["status"]}
assert ("end", "interrupted") in ev, ev[-3:]
assert "RUNNING" not in status, status
PY
done
