#!/usr/bin/env bash
# Idle ranks must not busy-spin: one trial of 10 sleeping steps on 5 workers leaves four
# workers and most of the driver idle for ~3 s. Spinning ranks would burn a core each
# (2 cores x 3 s = 6 s of CPU at least); sleeping ones cost start-up and a few polls.
source "$(dirname "$0")/lib.sh"
TIMEFORMAT='%U %S %R'
{ time mpirun -np 6 --bind-to none "$RANKTUNE" run "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/idle.h5" \
    --set experiment.num_samples=1 --set stop.max_t=10 --set trainable.seconds_per_step=0.3 \
    > "$WORK/out.txt" 2>&1; } 2> "$WORK/time.txt" || { cat "$WORK/out.txt"; fail "run failed"; }
read -r user sys real < "$WORK/time.txt"
echo "CPU user ${user} s + sys ${sys} s over ${real} s of wall time, 6 ranks"
awk -v u="$user" -v s="$sys" -v r="$real" 'BEGIN { exit !(r >= 3.0 && u + s < 3.0) }' \
  || fail "ranks used ${user}+${sys} s of CPU in ${real} s: idle ranks are spinning"
