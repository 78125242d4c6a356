#!/usr/bin/env bash
# A private N-node Slurm cluster on the hosts of scripts/netns-cluster.sh, for ranktune's
# multi-node Slurm tests: slurmctld on node1 (port 6917 there), one slurmd per host (NodeName
# nodeI, NodeAddr 10.213.0.I), and one munged in the root namespace whose socket is a path
# that every host reaches. Everything lives in one directory; no systemd, runs as root.
#
#   scripts/netns-slurm.sh start [N]   # N nodes (default 3); makes the hosts if they are missing
#   scripts/netns-slurm.sh env         # the variables a client needs (SLURM_CONF, ...)
#   scripts/netns-slurm.sh login CMD...  # CMD on node1, the login node, with that environment
#   scripts/netns-slurm.sh kill-node nodeI   # SIGKILL nodeI's slurmd, job steps and tasks
#   scripts/netns-slurm.sh start-node nodeI  # its slurmd again
#   scripts/netns-slurm.sh stop        # cancels jobs, stops the daemons and the hosts it made
# Slurm's clients reach slurmctld only from inside a host: use `login`.
#
# Settings (environment): RANKTUNE_NETNS_SLURM_DIR (default /var/tmp/ranktune-netns-slurm;
# every directory above it must be searchable by all, or munged refuses the socket),
# RANKTUNE_NETNS_SLURMD_TIMEOUT (SlurmdTimeout, default 30 s: how soon a dead node is DOWN),
# RANKTUNE_NETNS_PREFIX (the hosts' namespaces, scripts/netns-cluster.sh).
# Pitfalls (found by the recipe this follows): daemons start under nsenter, not `ip netns exec`,
# whose fresh /sys lacks /sys/fs/cgroup (slurmd then dies); TmpFS is per node, since PMIx's
# directory there is named by job and step only; CPUs=2 per node so that tasks spread evenly.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
netns=$here/netns-cluster.sh
export RANKTUNE_NETNS_PREFIX=${RANKTUNE_NETNS_PREFIX:-rtn-}
prefix=$RANKTUNE_NETNS_PREFIX
dir=${RANKTUNE_NETNS_SLURM_DIR:-/var/tmp/ranktune-netns-slurm}
slurmd_timeout=${RANKTUNE_NETNS_SLURMD_TIMEOUT:-30}
port=6917
export PATH=$PATH:/usr/sbin:/sbin
conf=$dir/etc/slurm.conf
sock=$dir/munge/socket
ours=$dir/pids          # our copies of the daemons' pids (they delete their own files)
theirs=$dir/daemon-pids

say() { echo "netns-slurm: $*" >&2; }
die() { say "error: $*"; exit 1; }
nodes() { [[ -s $dir/nodes ]] && cat "$dir/nodes"; }
# A bounded Slurm client on node1 (a dead controller would make it block for minutes).
client() { "$netns" exec node1 env SLURM_CONF="$conf" timeout 10 "$@"; }
# on_node nodeI CMD...: a daemon in nodeI's network namespace, with host name nodeI.
on_node() {
  local n=$1
  shift
  nsenter --net="/run/netns/$prefix$n" unshare --uts /bin/bash -c 'hostname "$0" && exec "$@"' "$n" "$@"
}

is_running() {  # PID NAME
  local state
  [[ $1 =~ ^[0-9]+$ && -r /proc/$1/stat && $(cat "/proc/$1/comm" 2> /dev/null) == "$2" ]] || return 1
  state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$1/stat" 2> /dev/null) || return 1
  [[ $state != Z && $state != X && -n $state ]]
}
pid_in() {  # FILE NAME: the pid in FILE when it is a running NAME
  local pid
  [[ -s $1 ]] || return 1
  pid=$(tr -cd '0-9' < "$1" 2> /dev/null) || return 1
  is_running "$pid" "$2" && echo "$pid"
}
adopt() {  # NAME FILE: wait up to 10 s for the daemon's pid file, keep our copy
  local deadline=$((SECONDS + 10)) pid
  until pid=$(pid_in "$theirs/$2" "$1"); do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
  echo "$pid" > "$ours/$2"
}
halt() {  # NAME FILE: SIGTERM, SIGKILL after 15 s
  local pid deadline
  if pid=$(pid_in "$ours/$2" "$1"); then
    kill -TERM "$pid" 2> /dev/null || true
    deadline=$((SECONDS + 15))
    while is_running "$pid" "$1" && ((SECONDS < deadline)); do sleep 0.1; done
    is_running "$pid" "$1" && { say "$1 ignored SIGTERM; SIGKILL"; kill -KILL "$pid" 2> /dev/null || true; }
  fi
  rm -f "$ours/$2"
}
nodes_up() { client sinfo -h -N -r -t idle,mixed,allocated -o %N 2> /dev/null | sort -u | grep -c . || true; }

stop_daemons() {
  local jobs deadline n
  if pid_in "$ours/slurmctld.pid" slurmctld > /dev/null; then
    jobs=$(client squeue -h -o %A 2> /dev/null || true)
    if [[ -n $jobs ]]; then
      say "cancelling jobs $(echo $jobs)"
      # shellcheck disable=SC2086
      client scancel $jobs 2> /dev/null || true
      deadline=$((SECONDS + 15))
      while [[ -n $(client squeue -h -o %A 2> /dev/null) ]] && ((SECONDS < deadline)); do sleep 0.2; done
    fi
  fi
  for n in $(nodes); do halt slurmd "slurmd-$n.pid"; done
  halt slurmctld slurmctld.pid
  halt munged munged.pid
}

do_stop() {
  stop_daemons
  # The hosts go too when this script made them (netns-cluster.sh ends what is left on them).
  if [[ -f $dir/made-hosts ]]; then "$netns" stop; rm -f "$dir/made-hosts"; fi
}

start_slurmd() {
  local n=$1
  mkdir -p "$dir/spool/$n" "$dir/tmp/$n"
  rm -f "$theirs/slurmd-$n.pid"
  on_node "$n" slurmd -f "$conf" -N "$n" && adopt slurmd "slurmd-$n.pid"
}

abort_start() {
  local f
  for f in "$dir/munge/munged.log" "$dir"/log/*.log; do [[ -f $f ]] && { echo "== $f"; tail -n 15 "$f"; } >&2; done
  do_stop
  die "$*"
}

do_start() {
  local want=${1:-3} have n mem pmix=pmix deadline tool
  [[ $(id -u) == 0 ]] || die "run as root"
  for tool in munged munge unmunge slurmctld slurmd sinfo squeue scancel srun sbatch timeout nsenter unshare; do
    command -v "$tool" > /dev/null || die "$tool is missing; install slurm-wlm, munge, libpmix-dev, util-linux (scripts/setup.sh does)"
  done
  stop_daemons 2> /dev/null || true  # a half-started or stale cluster of this directory
  have=$("$netns" hosts 2> /dev/null | grep -c . || true)
  mkdir -p "$dir"
  chmod 755 "$dir"
  if ((have == 0)); then
    "$netns" start "$want"
    touch "$dir/made-hosts"
  elif ((have != want)); then
    die "$have hosts ${prefix}node* exist, asked for $want"
  fi
  rm -rf -- "${dir:?}/etc" "${dir:?}/munge" "${dir:?}/state" "${dir:?}/spool" "${dir:?}/tmp" "${dir:?}/log" "$ours" "$theirs"
  mkdir -p "$dir/etc" "$dir/munge" "$dir/state" "$dir/spool" "$dir/tmp" "$dir/log" "$ours" "$theirs"
  chmod 755 "$dir/munge"
  "$netns" hosts > "$dir/nodes"
  mem=$(($(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo) / want))
  compgen -G "/usr/lib/*/pmix2/lib/libpmix.so" > /dev/null || { pmix=none; say "warning: libpmix.so missing (libpmix-dev): no srun --mpi=pmix"; }

  (umask 077 && head -c 1024 /dev/urandom > "$dir/munge/munge.key")
  chmod 400 "$dir/munge/munge.key"
  munged --key-file="$dir/munge/munge.key" --socket="$sock" --pid-file="$theirs/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" || abort_start "munged did not start"
  adopt munged munged.pid || abort_start "munged exited right after starting"

  cat > "$conf" << EOF
# Written by ranktune's scripts/netns-slurm.sh: a test cluster on network namespaces. start rewrites it.
ClusterName=ranktune-netns
SlurmctldHost=node1(10.213.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
# Per node (%n): PMIx names its directories in TmpFS by job and step only.
SlurmdSpoolDir=$dir/spool/%n
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$theirs/slurmctld.pid
SlurmdPidFile=$theirs/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
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
SlurmdParameters=config_overrides
EnforcePartLimits=ALL
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=$slurmd_timeout
InactiveLimit=0
KillWait=5
MinJobAge=5
NodeName=node[1-$want] NodeAddr=10.213.0.[1-$want] CPUs=2 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  deadline=$((SECONDS + 60))
  rm -f "$theirs/slurmctld.pid"
  on_node node1 slurmctld -f "$conf" || abort_start "slurmctld did not start"
  adopt slurmctld slurmctld.pid || abort_start "slurmctld exited right after starting"
  until client scontrol ping 2> /dev/null | grep -q 'is UP'; do
    pid_in "$ours/slurmctld.pid" slurmctld > /dev/null || abort_start "slurmctld exited"
    ((SECONDS < deadline)) || abort_start "slurmctld did not answer within 60 s"
    sleep 0.1
  done
  for n in $(nodes); do start_slurmd "$n" || abort_start "slurmd on $n did not start"; done
  until [[ $(nodes_up) == "$want" ]]; do
    ((SECONDS < deadline)) || abort_start "not all $want nodes came up within 60 s"
    sleep 0.1
  done
  say "up: nodes $(nodes | paste -sd,), slurmctld node1:$port, MpiDefault=$pmix, SlurmdTimeout=$slurmd_timeout, state in $dir"
}

print_env() {
  echo "export SLURM_CONF=$conf"
  echo "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
}

case ${1:-} in
  start) shift; do_start "$@" ;;
  stop) do_stop ;;
  env) print_env ;;
  login)
    shift
    exec "$netns" exec node1 env SLURM_CONF="$conf" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$@"
    ;;
  kill-node)
    n=${2:?kill-node nodeI}
    [[ $n != node1 ]] || die "node1 holds slurmctld; kill another node"
    "$netns" kill-host "$n"
    rm -f "$ours/slurmd-$n.pid"
    ;;
  start-node) start_slurmd "${2:?start-node nodeI}" && echo "slurmd on $2: pid $(cat "$ours/slurmd-$2.pid")" ;;
  *)
    sed -n '2,21p' "$0" >&2
    exit 2
    ;;
esac
