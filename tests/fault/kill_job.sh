#!/usr/bin/env bash
# kill -9 of a self-launched run's process group (the launcher and mpirun; Open MPI gives
# each rank a group of its own) takes the ranks, the trials (also a child that called
# setsid()) and every temporary folder with it, within about a second; so does kill -9 of
# rank 0 alone. A folder that a killed run left is removed by the next start of the same
# experiment.
source "$(dirname "$0")/../mpi/lib.sh"
unset OMPI_MCA_rmaps_base_oversubscribe
export TMPDIR="$WORK/tmp"   # private: every ranktune-* entry in it is this test's
mkdir -p "$TMPDIR"
# A checkpointing command (so each trial has a folder) that reports, then sleeps without
# reading its control fd: it would outlive a worker that just vanished.
cat > "$WORK/sleeper.sh" <<'SH'
#!/usr/bin/env bash
setsid sleep 1234.25 &
for i in 1 2 3 4 5 6 7 8 9; do echo "{\"loss\": $i}" >&3; sleep 30; done
SH
chmod +x "$WORK/sleeper.sh"
command_config "$WORK/exp.toml" kill_job 4 9 ./sleeper.sh "checkpoint = true"

kill_leftovers() {  # by pid: only this test's processes
  local p
  for p in $(pgrep -f "$WORK/|sleep 1234.25" || true); do kill -9 "$p" 2> /dev/null || true; done
}
leftovers() {  # prints what the job left: processes, then ranktune-* folders and files
  pgrep -af "$WORK/(exp.toml|sleeper.sh)|sleep 1234.25" || true
  find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'ranktune-*' ! -name '*-99999999[67]' ! -name "*-$$" || true
}
start_and_kill() {  # [rank0]: kill -9 rank 0 alone (mpirun then SIGKILLs the workers)
  local target=${1:-group}
  setsid "$RANKTUNE" run "$WORK/exp.toml" --np 2 --results "$WORK/k.h5" > "$WORK/out.txt" 2>&1 &
  local launcher=$! trials=0
  for _ in $(seq 150); do
    trials=$(find "$TMPDIR" -mindepth 1 -maxdepth 2 -name '*trial*' 2>/dev/null | wc -l)
    [[ $trials -ge 2 ]] && pgrep -f "sleep 1234.25" > /dev/null && break
    sleep 0.1
  done
  [[ $trials -ge 2 ]] || { cat "$WORK/out.txt"; kill -9 -- "-$launcher"; kill_leftovers; fail "the trials did not start"; }
  if [[ $target == rank0 ]]; then
    local rank0="" pid
    for pid in $(pgrep -f "ranktune run $WORK/exp.toml" || true); do
      if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=0"; then rank0=$pid; fi
    done
    [[ -n $rank0 ]] || { kill -9 -- "-$launcher"; kill_leftovers; fail "rank 0 not found"; }
    kill -9 "$rank0"
  else
    kill -9 -- "-$launcher"
  fi
  local left=""
  for _ in $(seq 15); do  # 1.5 s
    sleep 0.1
    left=$(leftovers)
    [[ -z $left ]] && break
  done
  if [[ -n $left ]]; then
    echo "left behind 1.5 s after kill -9 of the job's $target:" >&2
    echo "$left" >&2
    kill_leftovers
    fail "processes or temporary folders outlived the job"
  fi
}

start_and_kill
echo "kill -9 of the process group: nothing left"
# Rank 0 alone: the workers end with it, before mpirun's SIGKILL can leave their folders.
start_and_kill rank0
echo "kill -9 of rank 0: nothing left"

# A killed process that had no chance to clean up: its folder stays (a pid that is not
# running), and the next start of the same experiment removes it, but not a folder of a
# live process, another experiment's, or something that is not a folder.
setsid "$RANKTUNE" run "$WORK/exp.toml" --np 2 --results "$WORK/k.h5" > "$WORK/out.txt" 2>&1 &
launcher=$!
for _ in $(seq 150); do
  mine=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 -name "ranktune-*-$launcher" | head -1)
  [[ -n $mine ]] && break
  sleep 0.1
done
[[ -n $mine ]] || { cat "$WORK/out.txt"; kill -9 -- "-$launcher"; fail "no run folder named by the launcher's pid"; }
prefix=${mine%-"$launcher"}
kill -9 -- "-$launcher"
sleep 1.5
mkdir -p "$prefix-999999998/ranktune-trial1-attempt0-x" "$prefix-$$" "${prefix}x-999999997"
touch "$prefix-999999996"
start_and_kill
[[ ! -e "$prefix-999999998" ]] || fail "the next start did not remove a dead run's folder"
[[ -d "$prefix-$$" && -d "${prefix}x-999999997" && -f "$prefix-999999996" ]] ||
  fail "the next start removed what was not a dead run's folder of this experiment"
echo "OK"
