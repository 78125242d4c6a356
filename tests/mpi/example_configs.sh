#!/usr/bin/env bash
# Every example config with a scheduler or searcher of its own runs to completion under real
# mpirun: trials end TERMINATED within max_t, every iteration is recorded once, and the
# early-stopping schedulers really stop trials early. Each runs 40 trials of 1 ms steps,
# except the grid, which runs its 16 points twice (repeat) with at most 3 trials live.
source "$(dirname "$0")/lib.sh"
for cfg in hartmann6_asha branin_median branin_tpe hartmann6_bohb rosenbrock_grid; do
  n=40 sets=(--set experiment.num_samples=40)
  [[ $cfg == rosenbrock_grid ]] && n=32 sets=()
  mpirun -np 4 --bind-to none "$RANKTUNE" run "$SRC/configs/$cfg.toml" --results "$WORK/$cfg.h5" \
    --set trainable.seconds_per_step=0.001 "${sets[@]}" > "$WORK/$cfg.txt" 2>&1 \
    || { cat "$WORK/$cfg.txt"; fail "$cfg exited $?"; }
  "$PY" - "$WORK/$cfg.h5" "$cfg" "$n" <<'PY'
import collections, re, sys, h5py
path, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with h5py.File(path, "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
    ev = [e["kind"].decode() for e in f["events"][:]]
    max_t = int(re.search(r"max_t\s*=\s*(\d+)", f.attrs["config"].decode()).group(1))
assert len(t) == n, (name, len(t))
assert all(s == b"TERMINATED" for s in t["status"]), (name, set(t["status"]))
for row in t:
    mine = r[(r["trial_id"] == row["trial_id"]) & (r["attempt"] == row["attempt"])]
    assert list(mine["iteration"]) == list(range(1, row["iterations"] + 1)), (name, row["trial_id"])
    assert 1 <= row["iterations"] <= max_t
stopped = ev.count("early_stop")
full = int((t["iterations"] == max_t).sum())
if name == "hartmann6_bohb":
    # HyperBand, R = 27, eta = 3: 40 trials fill the brackets (27 from 1 iteration) and
    # (12 from 3), and the last one opens (6 from 9). Trials end at rungs only; losers that
    # pause at a rung end there without an early_stop event.
    assert set(t["iterations"]) <= {1, 3, 9, 27}, (name, set(t["iterations"]))
    assert 0 < full < 40 and "pause" in ev and "unpause" in ev, (name, full)
elif name == "branin_tpe":
    assert stopped == 0 and full == 40, (name, stopped, full)
elif name == "rosenbrock_grid":
    # Every point of the 4 x 4 grid, each exactly twice (repeat = 2), all to max_t.
    points = collections.Counter((float(a), float(b)) for a, b in zip(t["x1"], t["x2"]))
    grid = [-1.0, 0.0, 1.0, 2.0]
    assert points == {(a, b): 2 for a in grid for b in grid}, points
    assert stopped == 0 and full == n, (name, stopped, full)
    # max_concurrent = 3: never more than 3 trials between their start and end.
    spans = sorted([(s, 1) for s in t["start_time"]] + [(e, -1) for e in t["end_time"]])
    live = peak = 0
    for _, d in spans:
        live += d
        peak = max(peak, live)
    assert peak <= 3, (name, peak)
else:
    assert stopped > 0 and full < 40 and full + stopped == 40, (name, stopped, full)
print(f"ok: {name}: {len(t)} trials, {stopped} stopped early, {full} ran to max_t = {max_t}")
PY
done
