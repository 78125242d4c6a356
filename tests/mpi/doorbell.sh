#!/usr/bin/env bash
# The ranks ring each other's doorbells (mpi/doorbell.h): a worker that sends the Result
# its lease ends on and waits for the answer rings the driver, and the driver rings the
# worker it answers. 16 one-step trials on 2 workers that checkpoint at their end (so that
# each waits for the driver's Pause, instead of going on to a Start sent ahead:
# search/controller_ahead.cc): each trial's end wakes the driver by a ring, and each answer
# wakes its worker, so both sides count (RANKTUNE_TRACE prints the counts at each rank's
# end) at least one ring-ended nap per two trials; without the rings every nap runs out.
source "$(dirname "$0")/lib.sh"
trials=16
RANKTUNE_TRACE=1 mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/bell.h5" \
    --set experiment.num_samples=$trials --set stop.max_t=1 --set trainable.seconds_per_step=0.02 \
    --set checkpoint.at_end=true \
    > "$WORK/out.txt" 2> "$WORK/trace.txt" || { cat "$WORK/out.txt" "$WORK/trace.txt"; fail "run failed"; }
check_results "$WORK/bell.h5" $trials 1
grep 'doorbell' "$WORK/trace.txt" || true
rung() { sed -n "s/.* $1; doorbell open, \([0-9]*\) naps ended by a ring.*/\1/p" "$WORK/trace.txt" | awk '{ s += $1 } END { print s + 0 }'; }
count() { grep -c " $1; doorbell open" "$WORK/trace.txt" || true; }
[[ $(count "driver: results file closed") == 1 ]] || fail "the driver's doorbell was not open"
[[ $(count "worker: Bye sent") == 2 ]] || fail "not every worker's doorbell was open"
driver=$(rung "driver: results file closed")
workers=$(rung "worker: Bye sent")
((driver >= trials / 2)) || fail "rings ended only $driver of the driver's naps for $trials trials"
((workers >= trials / 2)) || fail "rings ended only $workers of the workers' naps for $trials trials"
echo "ok: rings ended $driver of the driver's naps and $workers of the workers'"

# A gang's leader rings its members once it has shared the decision of a step (Gang::share):
# one trial of 20 steps on a gang of 2 is one lease, in which the driver rings nobody, so
# the member's naps end by a ring about once a step; without the leader's rings only the
# driver's Start, Stop and Shutdown ring it.
steps=20
RANKTUNE_TRACE=1 mpirun -np 3 --bind-to none "$RANKTUNE" run "$SRC/configs/quickstart.toml" --results "$WORK/gang.h5" \
    --set experiment.num_samples=1 --set stop.max_t=$steps --set trainable.seconds_per_step=0.02 \
    --set resources.ranks_per_trial=2 > "$WORK/gang_out.txt" 2> "$WORK/gang_trace.txt" \
    || { cat "$WORK/gang_out.txt" "$WORK/gang_trace.txt"; fail "gang run failed"; }
check_results "$WORK/gang.h5" 1 $steps
member=$(sed -n "s/.* worker: Bye sent; doorbell open, \([0-9]*\) naps ended by a ring.*/\1/p" "$WORK/gang_trace.txt" \
  | sort -n | tail -1)
((member >= steps / 2)) || fail "rings ended only ${member:-0} of the gang member's naps in $steps steps"
echo "ok: rings ended $member of the gang member's naps in $steps steps"
