#!/usr/bin/env bash
# Stopping a job by hand.
# 1. `scancel --signal=TERM JOB` (docs/guide/slurm.md's graceful stop): only the tasks get SIGTERM; rank 0
#    stops the running trials, flushes and exits 4, and the job script does not requeue (no
#    time-limit warning came). The file ends with an `interrupted` event and has no RUNNING
#    trial; `slurm status` says so. Resubmitting the same experiment resumes and finishes it,
#    and `slurm status` then says finished (not the first job's interruption, nor a requeue).
# 2. A plain `scancel JOB`: the tasks get SIGTERM too (srun also does, and asks for the step to
#    be killed, but the job is already ending and the tasks keep KillWait seconds), so rank 0
#    stops gracefully the same way; nothing is requeued.
source "$(dirname "$0")/lib.sh"
resume=()

# submit_running RESULTS: submits the quickstart with 200 trials and waits until ranktune
# prints its first status line; prints the job id.
submit_running() {
  local job log
  job=$("$RANKTUNE" slurm submit "$SRC/tests/data/quickstart_branin.toml" --results "$1" --workers 2 --time 5 --requeue \
    --set experiment.num_samples=200 "${resume[@]}" 2> "$WORK/submit.err") || { cat "$WORK/submit.err" >&2; fail "submit exited $?"; }
  log=${1%.h5}-$job.out
  for _ in $(seq 300); do grep -q "^\[ranktune quickstart\]" "$log" 2> /dev/null && break; sleep 0.1; done
  grep -q "^\[ranktune quickstart\]" "$log" || { show_log "$log"; fail "job $job did not start ranktune within 30 s"; }
  echo "$job"
}

# gone JOB: waits up to 30 s for every process of the job to end (COMPLETING included).
gone() {
  for _ in $(seq 300); do [[ -z $(squeue -h -j "$1" -o %T 2> /dev/null) ]] && return 0; sleep 0.1; done
  fail "job $1 still listed 30 s after scancel"
}

job=$(submit_running "$WORK/c.h5")
log=$WORK/c-$job.out
sleep 1.5
scancel --signal=TERM "$job"
gone "$job"
grep -q "signal 15 received" "$log" || { show_log "$log"; fail "rank 0 did not get SIGTERM"; }
grep -q "task 0: Exited with exit code 4" "$log" || { show_log "$log"; fail "rank 0 did not exit 4"; }
! grep -q "requeueing" "$log" || { show_log "$log"; fail "a stop by hand must not requeue"; }
"$PY" - "$WORK/c.h5" << 'PY' || { show_log "$log"; fail "the stopped file"; }
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:  # a plain open: the writer closed the file cleanly
    ev = [(e["kind"].decode(), e["message"].decode()) for e in f["events"][:]]
    status = [s.decode() for s in f["trials"]["status"]]
assert ("end", "interrupted") in ev, ev[-3:]
assert "RUNNING" not in status, status
assert 0 < status.count("TERMINATED") < 200, status.count("TERMINATED")
print(f"ok: stopped after {status.count('TERMINATED')} of 200 trials")
PY
"$RANKTUNE" slurm status "$WORK/c.h5" > "$WORK/status.txt" || fail "slurm status exited $?"
grep -q "^job: *$job " "$WORK/status.txt" && grep -q "ended: interrupted" "$WORK/status.txt" \
  || { cat "$WORK/status.txt"; fail "status does not show the stopped job"; }
"$RANKTUNE" slurm submit "$SRC/tests/data/quickstart_branin.toml" --results "$WORK/c.h5" --workers 2 --time 5 \
  --set experiment.num_samples=200 --wait > "$WORK/job2" 2> "$WORK/submit2.err" \
  || { cat "$WORK/submit2.err"; show_log "$WORK"/c-*.out; fail "the resumed job failed"; }
check_results "$WORK/c.h5" 200 20
# The second job resumed and finished the experiment (issue 27 item 6): the first job's
# `end: interrupted` no longer stands, and a new submission is no requeue.
"$RANKTUNE" slurm status "$WORK/c.h5" > "$WORK/status2.txt" || fail "slurm status exited $?"
grep -q "^experiment: finished: every planned trial ended" "$WORK/status2.txt" \
  || { cat "$WORK/status2.txt"; fail "status does not say that the resumed experiment finished"; }
! grep -q "interrupted\|^requeues:" "$WORK/status2.txt" \
  || { cat "$WORK/status2.txt"; fail "status shows the first job's interruption, or a requeue"; }
grep -q "^jobs: *2 ($job, $(cat "$WORK/job2");" "$WORK/status2.txt" \
  || { cat "$WORK/status2.txt"; fail "status does not list the two jobs"; }
echo "ok: scancel, then submitted again: the status says finished, by two jobs"

job=$(submit_running "$WORK/k.h5")
sleep 1.5
scancel "$job"
gone "$job"
log=$WORK/k-$job.out
! grep -q "requeueing" "$log" || { show_log "$log"; fail "scancel must not requeue"; }
grep -q "task 0: Exited with exit code 4" "$log" || { show_log "$log"; fail "plain scancel: rank 0 did not stop gracefully"; }
"$RANKTUNE" slurm status "$WORK/k.h5" > "$WORK/k.txt" || { show_log "$log"; fail "the cancelled file is unreadable"; }
grep -q "ended: interrupted" "$WORK/k.txt" || { cat "$WORK/k.txt"; fail "plain scancel: no interrupted end"; }
echo "ok: plain scancel: graceful stop, exit 4, no requeue"
