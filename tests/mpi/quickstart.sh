#!/usr/bin/env bash
# mpirun -np NP runs tests/data/quickstart_branin.toml (the synthetic quick experiment) to completion; file and report agree.
source "$(dirname "$0")/lib.sh"
np=$1
mpirun -np "$np" --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/q.h5" \
  > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "mpirun -np $np exited $?"; }
grep -q "results: $WORK/q.h5" "$WORK/out.txt" || fail "the results path was not printed"
grep -q "on $((np - 1)) workers" "$WORK/out.txt" || fail "expected $((np - 1)) workers"
check_results "$WORK/q.h5" 24 20
