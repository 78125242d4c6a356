#!/usr/bin/env bash
# A self-launched run killed with kill -9 (issue 27 items 15 and 16): it exited 137 without a
# word, and the pages said RUNNING and reloaded themselves forever. Now:
# - rank 0 killed: the launcher says so (which rank, which signal), rewrites the live page as
#   final ("no longer running"), and `report --watch` notices the writer's lock is free,
#   writes its last page (trials "RUNNING when the writer died", no refresh) and exits;
# - a worker killed: the launcher names that worker rank;
# - mpirun killed: the launcher names mpirun.
source "$(dirname "$0")/lib.sh"
unset OMPI_MCA_rmaps_base_oversubscribe
cd "$WORK"
R="$RANKTUNE"

start() {  # NAME: a self-launched run of the quickstart writing NAME.h5 and the live page NAME.html
  "$R" run "$SRC/tests/data/quickstart_branin.toml" --np 2 --results "$WORK/$1.h5" --set trainable.seconds_per_step=0.2 \
    --set report.html="$WORK/$1.html" --set report.html_interval_s=1 > "$1.txt" 2>&1 &
  launcher=$!
  for _ in $(seq 100); do
    [[ -s $1.html ]] && grep -q 'http-equiv="refresh"' "$1.html" && break
    sleep 0.1
  done
  grep -q 'http-equiv="refresh"' "$1.html" || { kill "$launcher" 2> /dev/null || true; cat "$1.txt"; fail "$1: no live page"; }
}
rank_pid() {  # RESULTS RANK: the pid of that rank of the run writing RESULTS
  local pid
  for pid in $(pgrep -f "ranktune run .*$1" || true); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then echo "$pid"; return; fi
  done
  fail "rank $2 of the run writing $1 not found"
}
ended() {  # NAME CODE TEXT: the launcher exited CODE and said TEXT
  local rc=0
  wait "$launcher" || rc=$?
  [[ $rc == "$2" ]] || { cat "$1.txt"; fail "$1: the launcher exited $rc, expected $2"; }
  grep -q -- "$3" "$1.txt" || { cat "$1.txt"; fail "$1: the launcher did not say '$3'"; }
}

# Rank 0 killed, with `report --watch` on the file.
start a
"$R" report "$WORK/a.h5" --html "$WORK/watch.html" --watch 0.5 > watch.txt 2> watch_err.txt &
watch=$!
sleep 1.5
rank0=$(rank_pid a.h5 0)
kill -9 "$rank0"
ended a 137 "ranktune: the run was killed: rank 0 (the driver, pid $rank0) ended first, killed by signal SIGKILL (9), and mpirun ended the rest of the job\. .*a\.h5 keeps what rank 0 committed: run the same command again to resume it\. The live page .*a\.html says so\. Exit code 137\."
grep -q 'http-equiv="refresh"' a.html && fail "the live page still reloads itself after rank 0 died"
grep -q "The run is no longer running" a.html || fail "the live page does not say the run is no longer running"
for _ in $(seq 100); do kill -0 "$watch" 2> /dev/null || break; sleep 0.1; done
if kill -0 "$watch" 2> /dev/null; then kill "$watch"; fail "report --watch went on after the writer died"; fi
wait "$watch" || { cat watch_err.txt; fail "report --watch exited $?"; }
grep -q "wrote $WORK/watch.html (final)" watch.txt || { cat watch.txt; fail "report --watch did not write its final page"; }
grep -q "ranktune report: the run writing $WORK/a.h5 is no longer running: .* no process holds it" watch_err.txt \
  || { cat watch_err.txt; fail "report --watch did not say the writer died"; }
grep -q 'http-equiv="refresh"' watch.html && fail "the watched page still reloads itself"
grep -q "RUNNING when the writer died" watch.html || fail "the watched page does not mark the trials that were running"
"$PY" "$SRC/tests/cli/check_html.py" watch.html --section Leaderboard || fail "the watched page is not a whole page"
echo "ok: rank 0 killed: the launcher, the live page and report --watch say so"

# A worker killed: mpirun ends the rest, and the launcher names the worker.
start b
sleep 1
worker=$(rank_pid b.h5 2)
kill -9 "$worker"
ended b 137 "ranktune: the run was killed: rank 2 (a worker, pid $worker) ended first, killed by signal SIGKILL (9), and mpirun ended the rest of the job"
echo "ok: a worker killed"

# mpirun killed: the ranks end with it.
start c
sleep 1
mpirun=$(pgrep -P "$launcher" mpirun)
kill -9 "$mpirun"
ended c 137 "ranktune: the run was killed: mpirun (pid $mpirun) was killed by signal SIGKILL (9), and the ranks ended with it\."
grep -q 'http-equiv="refresh"' c.html && fail "the live page still reloads itself after mpirun died"
echo "ok: killed runs say what killed them"
