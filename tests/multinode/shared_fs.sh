#!/usr/bin/env bash
# The results file on the shared file system: the driver writes it on node1 (all of its
# workers on node2) while readers on node3 follow it: h5py with swmr=True sees it grow and
# stay consistent, and `ranktune report` reads it mid-run; both see the finished file whole.
source "$(dirname "$0")/lib.sh"
start_cluster 3
cluster_mpirun 1,2,0 90 -np 3 "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/live.h5" \
  --set experiment.num_samples=30 --set trainable.seconds_per_step=0.03 > "$WORK/out.txt" 2>&1 &
run=$!
for _ in $(seq 100); do [[ -e $WORK/live.h5 ]] && break; sleep 0.1; done
sleep 1
on node3 "$PY" - "$WORK/live.h5" <<'PY' || { kill "$run"; fail "the reader on node3"; }
import socket, sys, time, h5py
assert socket.gethostname() == "node3"
counts = []
with h5py.File(sys.argv[1], "r", libver="latest", swmr=True) as f:
    for _ in range(3):
        for name in ("trials", "results", "events"):
            f[name].refresh()
        t, r = f["trials"][:], f["results"][:]
        counts.append(len(r))
        assert set(r["trial_id"]) <= set(t["trial_id"]), "a result for an unlisted trial"
        time.sleep(0.6)
    host = f["stack"].attrs["driver_host"].decode()
assert host == "node1", host
assert counts[0] > 0 and counts[-1] > counts[0], f"no growth seen while running: {counts}"
print(f"ok: h5py (swmr=True) on node3 saw the file that node1 writes grow: {counts} results")
PY
on node3 "$RANKTUNE" report "$WORK/live.h5" --format json --top 0 > "$WORK/mid.json" 2> "$WORK/mid.err" \
  || { kill "$run"; cat "$WORK/mid.err"; fail "ranktune report on node3 failed mid-run"; }
"$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); assert d['counts'], d" "$WORK/mid.json"
kill -0 "$run" 2> /dev/null || fail "the run ended before the mid-run reads; make it longer"
wait "$run" || { cat "$WORK/out.txt"; fail "run exited $?"; }
on node3 "$PY" "$SRC/tests/mpi/check_results.py" "$RANKTUNE" "$WORK/live.h5" 30 20 || fail "the finished file, read on node3"
echo "ok: ranktune report on node3 read it mid-run and at the end"
