#!/usr/bin/env bash
# Issue 30, a multi-objective synthetic function in a single-objective run: zdt1 over
# x1..x30 optimizing metric = "f1" under mpirun records f1 (first) and f2 as /results
# columns, each on its learning curve towards the function's value at the trial's x, and
# the file and the report agree.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
{
  printf '[experiment]\nname = "zdt1_f1"\nmetric = "f1"\nmode = "min"\nseed = 4\nnum_samples = 8\n'
  printf '[search]\nalgorithm = "random"\n[search.space]\n'
  for i in $(seq 30); do printf 'x%d = { uniform = [0.0, 1.0] }\n' "$i"; done
  printf '[scheduler]\nkind = "fifo"\n[trainable]\nkind = "synthetic"\nfunction = "zdt1"\n[stop]\nmax_t = 6\n'
} > zdt1.toml
mpirun -np 3 --bind-to none "$RANKTUNE" run zdt1.toml --results "$WORK/z.h5" > out.txt 2>&1 \
  || { cat out.txt; fail "mpirun exited $?"; }
check_results "$WORK/z.h5" 8 6
"$PY" - "$WORK/z.h5" <<'PY' || fail "/results does not hold zdt1's f1 and f2 on their curves"
import sys, math, h5py
with h5py.File(sys.argv[1], "r") as f:
    r, t = f["results"][:], f["trials"][:]
    names = r.dtype.names
    assert names[:4] == ("trial_id", "attempt", "iteration", "time"), names
    assert names[4:] == ("f1", "f2"), names  # the experiment's metric first, then the other objective
    assert f.attrs["metric"] == b"f1", f.attrs["metric"]
    assert len(r) == 8 * 6, len(r)
    x = {int(row["trial_id"]): [float(row["x%d" % i]) for i in range(1, 31)] for row in t}
    for row in r:
        xs, it = x[int(row["trial_id"])], int(row["iteration"])
        g = 1 + 9 * sum(xs[1:]) / 29
        final = (xs[0], g * (1 - math.sqrt(xs[0] / g)))  # ZDT1; both optima are 0
        for name, v in zip(("f1", "f2"), final):
            want = v + (1 + v) / math.sqrt(it)
            assert math.isclose(row[name], want, rel_tol=1e-12), (name, int(row["trial_id"]), it, row[name], want)
    # Each trial's best f1 is its last (the curve falls), and /trials' best is that f1.
    for row in t:
        mine = r[r["trial_id"] == row["trial_id"]]
        assert row["best"] == mine["f1"][-1] == min(mine["f1"]), (row["best"], list(mine["f1"]))
PY
echo "ok"
