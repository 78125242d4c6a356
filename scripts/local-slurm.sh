#!/usr/bin/env bash
# A private one-node Slurm cluster on this machine, for ranktune's `slurm` tests and for
# trying `ranktune slurm submit` without a real cluster. Runs as root and needs no systemd:
# munged, slurmctld and slurmd are started as plain background daemons, and everything they
# use (config, munge key and socket, state, spool, logs, pid files) lives in one directory.
#
#   scripts/local-slurm.sh start    # idempotent; prints the environment to eval
#   eval "$(scripts/local-slurm.sh env)"
#   sbatch --wait job.sh; srun -n 5 ranktune run configs/quickstart.toml
#   scripts/local-slurm.sh status   # exit 0 when all three daemons run and the node is up
#   scripts/local-slurm.sh stop     # idempotent; cancels jobs, stops only our own daemons
#
# Settings (environment):
#   RANKTUNE_SLURM_DIR       state directory (default /var/tmp/ranktune-slurm). Every directory
#                            above it must be searchable by all users, or munged refuses the socket.
#   RANKTUNE_SLURM_PORT      slurmctld port (default 6877; slurmd listens on the next port)
#   RANKTUNE_SLURM_CPUS      CPUs the node advertises (default: the larger of nproc and 8, so
#                            a 2-core machine can run 5- to 8-rank jobs; ranktune's idle ranks sleep)
#   RANKTUNE_SLURM_MIN_JOB_AGE  seconds a finished job stays visible (default 5: `sbatch --wait`
#                            then polls every 2 s instead of backing off to 32 s)
#   RANKTUNE_SLURM_WAIT      seconds `start` waits for the node to come up (default 60)
# Needs the Debian packages slurm-wlm, munge and libpmix-dev (scripts/setup.sh installs them).
set -euo pipefail

dir=${RANKTUNE_SLURM_DIR:-/var/tmp/ranktune-slurm}
port=${RANKTUNE_SLURM_PORT:-6877}
cpus=${RANKTUNE_SLURM_CPUS:-}
min_job_age=${RANKTUNE_SLURM_MIN_JOB_AGE:-5}
wait_s=${RANKTUNE_SLURM_WAIT:-60}
export PATH=$PATH:/usr/sbin:/sbin

conf=$dir/etc/slurm.conf
sock=$dir/munge/socket
# The daemons remove their own pid files when shutdown begins, so the script keeps copies
# (ours/NAME) and waits on those pids; theirs/NAME are the files the daemons write.
ours=$dir/pids
theirs=$dir/daemon-pids

say() { echo "local-slurm: $*" >&2; }
die() { say "error: $*"; exit 1; }
# Slurm clients block for a long time against a dead controller; bound every call.
client() { SLURM_CONF=$conf timeout 10 "$@"; }

# is_running PID NAME: PID is a live process called NAME. A recycled pid runs something else,
# and a zombie (a container init that reaps late) is as good as gone.
is_running() {
  local pid=$1 name=$2 state
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/stat ]] || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] || return 1
  state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null) || return 1
  [[ $state != Z && $state != X && -n $state ]]
}

# pid_in FILE NAME: prints the pid stored in FILE when it is a running NAME.
pid_in() {
  local pid
  [[ -s $1 ]] || return 1
  pid=$(tr -cd '0-9' < "$1" 2>/dev/null) || return 1
  is_running "$pid" "$2" || return 1
  echo "$pid"
}

# adopt NAME: waits up to 10 s for the daemon's own pid file, then keeps our copy.
adopt() {
  local name=$1 deadline=$((SECONDS + 10)) pid
  until pid=$(pid_in "$theirs/$name.pid" "$name"); do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
  echo "$pid" > "$ours/$name.pid"
}

# halt NAME: SIGTERM to the pid we recorded, SIGKILL if it is still there after 15 s
# (a slurmd that cannot reach its controller takes about 30 s to leave on its own).
halt() {
  local name=$1 pid deadline
  if pid=$(pid_in "$ours/$name.pid" "$name"); then
    say "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 15))
    while is_running "$pid" "$name" && ((SECONDS < deadline)); do sleep 0.1; done
    if is_running "$pid" "$name"; then
      say "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
  fi
  rm -f "$ours/$name.pid"
}

node_responds() {
  [[ -n $(client sinfo --noheader --Node --responding --states=idle,mixed,allocated --format=%N 2>/dev/null) ]]
}

all_up() {
  pid_in "$ours/munged.pid" munged > /dev/null && pid_in "$ours/slurmctld.pid" slurmctld > /dev/null &&
    pid_in "$ours/slurmd.pid" slurmd > /dev/null && node_responds
}

print_env() {
  echo "export SLURM_CONF=$conf"
  echo "export RANKTUNE_SLURM_DIR=$dir"
  # Only mpirun inside a job needs these; srun does not.
  [[ $(id -u) != 0 ]] || echo "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
}

show_logs() {
  local f
  for f in "$dir/munge/munged.log" "$dir/log/slurmctld.log" "$dir/log/slurmd.log"; do
    [[ -f $f ]] && { echo "== last lines of $f"; tail -n 20 "$f"; } >&2
  done
  return 0
}

do_stop() {
  local jobs deadline
  if pid_in "$ours/slurmctld.pid" slurmctld > /dev/null; then
    # A job step left running would outlive slurmd and keep its processes.
    jobs=$(client squeue --noheader --format=%A 2>/dev/null || true)
    if [[ -n $jobs ]]; then
      say "cancelling jobs $(echo $jobs)"
      # shellcheck disable=SC2086
      client scancel $jobs 2>/dev/null || true
      deadline=$((SECONDS + 15))
      while [[ -n $(client squeue --noheader --format=%A 2>/dev/null) ]] && ((SECONDS < deadline)); do sleep 0.2; done
    fi
  fi
  halt slurmd
  halt slurmctld
  halt munged
}

abort_start() {
  show_logs
  do_stop
  die "$*"
}

do_start() {
  local host mem pmix t0=$SECONDS pid tool
  [[ $(id -u) == 0 ]] || die "run as root: slurmd must start job processes as any user"
  for tool in munged munge unmunge slurmctld slurmd sinfo squeue scontrol scancel srun sbatch timeout; do
    command -v "$tool" > /dev/null || die "$tool is missing; install slurm-wlm, munge and libpmix-dev (scripts/setup.sh does)"
  done
  if all_up; then
    say "already running ($dir)"
    print_env
    return 0
  fi
  do_stop  # a half-started cluster is cleared and started again from nothing

  host=$(uname -n)
  host=${host%%.*}  # SlurmctldHost must be the short name that uname reports
  [[ -n $cpus ]] || cpus=$(($(nproc) > 8 ? $(nproc) : 8))
  mem=$(slurmd -C 2> /dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -n 1)
  [[ -n $mem ]] || mem=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
  # Slurm's pmix plugin loads the libpmix.so that only libpmix-dev installs; without it every
  # srun would fail, so fall back to no MPI plugin and say so.
  pmix=pmix
  if ! compgen -G "/usr/lib/*/pmix2/lib/libpmix.so" > /dev/null && ! compgen -G "/usr/lib/*/libpmix.so" > /dev/null; then
    pmix=none
    say "warning: libpmix.so not found (apt-get install libpmix-dev); srun --mpi=pmix will not work"
  fi

  mkdir -p "$dir"
  rm -rf -- "${dir:?}/etc" "${dir:?}/munge" "${dir:?}/state" "${dir:?}/spool" "${dir:?}/log" "$ours" "$theirs"
  mkdir -p "$dir/etc" "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" "$ours" "$theirs"
  chmod 755 "$dir" "$dir/munge"  # munged checks that everyone may traverse to its socket

  # A private munge key and socket: a system munged, if any, is neither used nor disturbed.
  (umask 077 && head -c 1024 /dev/urandom > "$dir/munge/munge.key")
  chmod 400 "$dir/munge/munge.key"
  munged --key-file="$dir/munge/munge.key" --socket="$sock" --pid-file="$theirs/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" || abort_start "munged did not start"
  adopt munged || abort_start "munged exited right after starting"
  munge -n -S "$sock" | unmunge -S "$sock" > /dev/null || abort_start "munge cannot decode its own credential"

  cat > "$conf" << EOF
# Written by ranktune's scripts/local-slurm.sh: a one-node test cluster. Do not edit; start rewrites it.
ClusterName=ranktune
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
# Clients, daemons and job credentials all use the private munged above.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$theirs/slurmctld.pid
SlurmdPidFile=$theirs/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# No cgroups (no systemd here): process-group tracking still kills orphans left by a batch shell.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=$pmix
MailProg=/bin/true
# Take CPUs below at face value, even when the machine has fewer.
SlurmdParameters=config_overrides
# Refuse a job that can never fit at submission instead of leaving it pending forever.
EnforcePartLimits=ALL
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
# SIGKILL follows SIGTERM after 5 s at a time limit or scancel (default 30 s).
KillWait=5
MinJobAge=$min_job_age
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

  local deadline=$((SECONDS + wait_s))
  slurmctld -f "$conf" || abort_start "slurmctld did not start"
  adopt slurmctld || abort_start "slurmctld exited right after starting"
  pid=$(cat "$ours/slurmctld.pid")
  until client scontrol ping 2>/dev/null | grep -q 'is UP'; do
    is_running "$pid" slurmctld || abort_start "slurmctld exited (is port $port taken? set RANKTUNE_SLURM_PORT)"
    ((SECONDS < deadline)) || abort_start "slurmctld did not answer within ${wait_s}s"
    sleep 0.1
  done
  slurmd -f "$conf" -N "$host" || abort_start "slurmd did not start"
  adopt slurmd || abort_start "slurmd exited right after starting"
  pid=$(cat "$ours/slurmd.pid")
  until node_responds; do
    is_running "$pid" slurmd || abort_start "slurmd exited (is port $((port + 1)) taken? set RANKTUNE_SLURM_PORT)"
    ((SECONDS < deadline)) || abort_start "node $host did not come up within ${wait_s}s"
    sleep 0.1
  done
  print_env > "$dir/env.sh"
  say "up after $((SECONDS - t0))s: node $host, $cpus CPUs, MpiDefault=$pmix, MinJobAge=$min_job_age, port $port, state in $dir"
  print_env
}

do_status() {
  local name pid rc=0
  for name in munged slurmctld slurmd; do
    if pid=$(pid_in "$ours/$name.pid" "$name"); then
      echo "$name: running (pid $pid)"
    else
      echo "$name: not running"
      rc=1
    fi
  done
  if ((rc == 0)); then
    client sinfo --noheader --Node --format='node %N: %T, %c CPUs, %m MB' || rc=1
  fi
  return $rc
}

case ${1:-} in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  env) print_env ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
