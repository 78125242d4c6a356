#!/usr/bin/env bash
# Issue 29: a config naming no [search] algorithm runs the searcher chosen for its space
# (search/default_searcher.h), `ranktune check` says which and why, and says that fifo is the
# scheduler when none is named; the run records the chosen algorithm in the results file.
source "$(dirname "$0")/../mpi/lib.sh"
cd "$WORK"
config() {  # config FILE SPACE_LINES [EXTRA]
  printf '[experiment]\nname = "d"\nmetric = "loss"\nmode = "min"\nnum_samples = 14\nseed = 3\n' > "$1"
  printf '[search.space]\n%b\n[trainable]\nkind = "synthetic"\nfunction = "branin"\n[stop]\nmax_t = 3\n%b' "$2" "${3:-}" >> "$1"
}
config numeric.toml 'x1 = { uniform = [-5.0, 10.0] }\nx2 = { uniform = [0.0, 15.0] }'
"$RANKTUNE" check numeric.toml > out.txt 2> err.txt || { cat err.txt; fail "check exited $?"; }
grep -q 'algorithm = "gp"' out.txt || { cat out.txt; fail "the rendered config does not run gp"; }
grep -q '\[search\] algorithm not given: gp, the best measured searcher' err.txt || { cat err.txt; fail "no reason for gp"; }
grep -q '\[scheduler\] kind not given: fifo, every trial runs to max_t = 3' err.txt || { cat err.txt; fail "no fifo hint"; }

config mostly_categorical.toml 'x1 = { uniform = [-5.0, 10.0] }\nx2 = { choice = [0.0, 7.5, 15.0] }\nx3 = { choice = [1, 2] }' \
  '[scheduler]\nkind = "asha"\n'
"$RANKTUNE" check mostly_categorical.toml > out.txt 2> err.txt || { cat err.txt; fail "check exited $?"; }
grep -q 'algorithm = "tpe"' out.txt || { cat out.txt; fail "a mostly categorical space does not run tpe"; }
grep -q 'tpe, since 2 of the 3 parameters are categorical' err.txt || { cat err.txt; fail "no reason for tpe"; }
! grep -q 'kind not given' err.txt || fail "a named scheduler still gets the fifo hint"

config grid.toml 'x1 = { grid = [-5.0, 0.0, 5.0] }\nx2 = { uniform = [0.0, 15.0] }'
"$RANKTUNE" check grid.toml > out.txt 2> err.txt || { cat err.txt; fail "check exited $?"; }
grep -q 'algorithm = "random"' out.txt || { cat out.txt; fail "a grid axis does not run random"; }

# The run itself: gp's suggestions past its 10 random ones, recorded as the algorithm.
"$RANKTUNE" simulate numeric.toml --workers 2 --results "$WORK/n.h5" > sim.txt 2>&1 || { cat sim.txt; fail "simulate exited $?"; }
"$PY" - "$WORK/n.h5" << 'PY' || fail "the results file does not record that gp ran"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    a = f.attrs["algorithm"]
    a = a.decode() if isinstance(a, bytes) else a
    assert a == "gp", a  # recorded, so that a resume keeps it (config/stored.h)
    assert 'algorithm' not in f.attrs["config"].decode() if isinstance(f.attrs["config"], bytes) else True
    assert len(f["trials"]) == 14, len(f["trials"])
PY
echo "ok"
