#!/usr/bin/env bash
# The results file is readable while the run writes it: h5py with swmr=True (as docs/guide/slurm.md
# shows) and `ranktune report` both see a growing, consistent file mid-run.
source "$(dirname "$0")/lib.sh"
mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/live.h5" \
  --set experiment.num_samples=30 --set stop.max_t=20 --set trainable.seconds_per_step=0.02 \
  > "$WORK/out.txt" 2>&1 &
run=$!
for _ in $(seq 100); do [[ -e "$WORK/live.h5" ]] && break; sleep 0.1; done
sleep 1.5
"$PY" - "$WORK/live.h5" <<'PY'
import sys, time, h5py
counts = []
with h5py.File(sys.argv[1], "r", libver="latest", swmr=True) as f:
    for _ in range(3):
        for name in ("trials", "results", "events"):
            f[name].refresh()
        t, r = f["trials"][:], f["results"][:]
        counts.append(len(r))
        # Consistent as of the last flush: every result belongs to a trial already listed.
        assert set(r["trial_id"]) <= set(t["trial_id"]), "a result for an unlisted trial"
        time.sleep(0.6)
assert counts[0] > 0 and counts[-1] > counts[0], f"no growth seen while running: {counts}"
print("swmr reader saw", counts)
PY
"$RANKTUNE" report "$WORK/live.h5" --format json --top 0 > "$WORK/mid.json" || fail "report failed mid-run"
"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['counts'], d" "$WORK/mid.json"
kill -0 "$run" 2>/dev/null || fail "the run ended before the mid-run reads; make it longer"
wait "$run" || { cat "$WORK/out.txt"; fail "run exited $?"; }
check_results "$WORK/live.h5" 30 20
