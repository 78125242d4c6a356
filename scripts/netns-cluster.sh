#!/usr/bin/env bash
# A private cluster of N "hosts" on this machine, for ranktune's multi-node tests (label
# `multinode`) and for trying multi-node runs without a cluster. Each host is a network
# namespace with its own address (10.213.0.I/24) and, for every command run in it, its own
# host name (nodeI, a UTS namespace per command); a bridge in a switch namespace joins them.
# The root namespace gets no interface, only a blackhole route for the subnet (the guard): a
# client run outside the namespaces by mistake fails at once ("connect: Invalid argument")
# instead of sending packets off the machine. All hosts share the file system, as a cluster
# shares its parallel file system; host names resolve on every host (the cluster's own
# /etc/hosts, for commands run with `exec`). Open MPI starts its daemons on the other hosts
# through scripts/netns-rsh.sh.
#
#   scripts/netns-cluster.sh start [N]         # N hosts node1..N (default 3); clears a stale set first
#   scripts/netns-cluster.sh exec HOST CMD...  # run CMD on HOST (node1, ...) with its host name
#   scripts/netns-cluster.sh mpirun-args [S1 S2 ...]  # mpirun's flags; Si slots on nodei (default 1 each)
#   scripts/netns-cluster.sh address HOST      # HOST's address
#   scripts/netns-cluster.sh hosts             # the hosts, one a line
#   scripts/netns-cluster.sh kill-host HOST    # SIGKILL every process on HOST (a crashed host)
#   scripts/netns-cluster.sh stop              # ends what runs on the hosts, deletes the namespaces
#
# Settings (environment):
#   RANKTUNE_NETNS_PREFIX  prefix of the namespaces (default rtn-: rtn-node1.., rtn-switch); two
#                          clusters at once need two prefixes (the tests derive it from the build
#                          directory). They may share the subnet: each has its own bridge.
# Runs as root; needs iproute2 (ip) and util-linux (unshare, nsenter).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
prefix=${RANKTUNE_NETNS_PREFIX:-rtn-}
export RANKTUNE_NETNS_PREFIX=$prefix
subnet=10.213.0
export PATH=$PATH:/usr/sbin:/sbin
# One blackhole route serves every cluster on this machine: each holds a marker file, and
# the last one to stop removes the route.
guard_dir=/run/ranktune-netns

say() { echo "netns-cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

hosts() { ip netns list 2>/dev/null | awk '{print $1}' | sed -n "s/^${prefix}\(node[0-9][0-9]*\)$/\1/p" | sort -V; }
index_of() {  # nodeI -> I, for a host of this cluster
  local h=$1
  [[ $h =~ ^node([0-9]+)$ ]] || die "'$h' is not a host name (node1, node2, ...)"
  ip netns list | awk '{print $1}' | grep -qx "${prefix}$h" || die "no host $h (namespace ${prefix}$h); hosts: $(hosts | paste -sd' ')"
  echo "${BASH_REMATCH[1]}"
}

# Open MPI keeps per-host state under the host's name in folders every namespace shares: the
# shared-memory segments (/dev/shm/vader_segment.HOST.*) and the session folders
# (/tmp/ompi.HOST.*). A rank killed with its host (the node-failure tests) leaves its own,
# and a later job of the same Slurm job id on a host of the same name meets them. The host
# names node1.. are the harness's alone, so when no cluster is up (called under the guard's
# lock) they are removed.
clear_open_mpi_leftovers() {
  local tmp=${TMPDIR:-/tmp}
  find /dev/shm -maxdepth 1 -name 'vader_segment.node[0-9]*' -user "$(id -u)" -delete 2> /dev/null || true
  find "$tmp" /tmp -maxdepth 1 -name 'ompi.node[0-9]*' -user "$(id -u)" -exec rm -rf {} + 2> /dev/null || true
}

# The guard, under a lock shared by every cluster on the machine.
guard() {  # add|drop
  mkdir -p "$guard_dir/holders"
  exec 9> "$guard_dir/lock"
  flock 9
  if [[ $1 == add ]]; then
    [[ -n $(ls -A "$guard_dir/holders") ]] || clear_open_mpi_leftovers
    touch "$guard_dir/holders/$prefix"
    ip route replace blackhole "$subnet.0/24"
  else
    rm -f "$guard_dir/holders/$prefix"
    if [[ -z $(ls -A "$guard_dir/holders") ]]; then
      ip route del blackhole "$subnet.0/24" 2> /dev/null || true
      clear_open_mpi_leftovers
    fi
  fi
  exec 9>&-
}

# pids_on HOST...: the live processes in the hosts' namespaces.
pids_on() {
  local h
  for h in "$@"; do ip netns pids "${prefix}$h" 2> /dev/null || true; done
}

# end_processes HOST...: SIGTERM, then SIGKILL after 5 s, to what still runs on the hosts
# (the namespaces are this cluster's, so everything in them was started here).
end_processes() {
  local pids deadline
  pids=$(pids_on "$@")
  [[ -n $pids ]] || return 0
  say "ending processes left on $*: $(echo $pids)"
  # shellcheck disable=SC2086
  kill -TERM $pids 2> /dev/null || true
  deadline=$((SECONDS + 5))
  while [[ -n $(pids_on "$@") ]] && ((SECONDS < deadline)); do sleep 0.1; done
  pids=$(pids_on "$@")
  # shellcheck disable=SC2086
  [[ -z $pids ]] || kill -KILL $pids 2> /dev/null || true
}

do_stop() {
  local h all
  mapfile -t all < <(hosts)
  ((${#all[@]} == 0)) || end_processes "${all[@]}"
  for h in "${all[@]}"; do
    ip netns del "${prefix}$h" 2> /dev/null || true
    rm -rf -- "/etc/netns/${prefix}$h"
  done
  ip netns del "${prefix}switch" 2> /dev/null || true
  rmdir /etc/netns 2> /dev/null || true  # only when no other set has files there
  guard drop
}

do_start() {
  local n=${1:-3} i ns sw=${prefix}switch tool
  [[ $(id -u) == 0 ]] || die "run as root: network namespaces need it"
  for tool in ip unshare nsenter flock; do
    command -v "$tool" > /dev/null || die "$tool is missing; install iproute2 and util-linux (scripts/setup.sh does)"
  done
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 250)) || die "start takes a number of hosts from 1 to 250, got '$n'"
  # The subnet must be nobody's real network: the guard would cut a route the machine uses.
  if [[ -n $(ip -4 addr show to "$subnet.0/24" 2> /dev/null) ]] ||
    ip route show "$subnet.0/24" 2> /dev/null | grep -qv '^blackhole'; then
    die "$subnet.0/24 is a network of this machine's root namespace; the cluster cannot use it here"
  fi
  [[ -z $(hosts) ]] || { say "clearing a stale cluster ${prefix}*"; do_stop; }
  ip netns del "$sw" 2> /dev/null || true
  guard add
  ip netns add "$sw"
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for i in $(seq 1 "$n"); do
    ns=${prefix}node$i
    ip netns add "$ns"
    # Both ends are created inside the namespaces: nothing appears in the root namespace, so
    # two clusters cannot clash over interface names.
    ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "p$i" master br0
    ip -n "$sw" link set "p$i" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$subnet.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  # Host names resolve as on a real cluster (DNS or /etc/hosts): `ip netns exec` mounts
  # /etc/netns/NS/hosts over /etc/hosts. gloo, for one, finds its own address from its name.
  for i in $(seq 1 "$n"); do
    mkdir -p "/etc/netns/${prefix}node$i"
    { echo "127.0.0.1 localhost"; for j in $(seq 1 "$n"); do echo "$subnet.$j node$j"; done; } > "/etc/netns/${prefix}node$i/hosts"
  done
  say "started $n hosts $(hosts | paste -sd,) at $subnet.1-$n (namespaces ${prefix}*)"
}

case ${1:-} in
  start) shift; do_start "$@" ;;
  stop) do_stop ;;
  exec)
    shift
    host=${1:?exec HOST CMD...}
    shift
    (($# > 0)) || die "exec $host: no command"
    i=$(index_of "$host")
    # A new UTS namespace per command, so gethostname() (MPI_Get_processor_name, ranktune's
    # /workers) says nodeI. The variable tells scripts/netns-rsh.sh which cluster it serves.
    exec ip netns exec "${prefix}node$i" unshare --uts /bin/bash -c 'hostname "$0" && exec "$@"' "$host" "$@"
    ;;
  hosts) hosts ;;
  address) i=$(index_of "${2:?address HOST}"); echo "$subnet.$i" ;;
  mpirun-args)
    shift
    mapfile -t all < <(hosts)
    ((${#all[@]} > 0)) || die "no cluster ${prefix}*: start it first"
    list=()
    for h in "${all[@]}"; do
      i=${h#node}
      slots=${1:-1}
      (($# == 0)) || shift
      [[ $slots == 0 ]] || list+=("$subnet.$i:$slots")
    done
    (($# == 0)) || die "mpirun-args: more slot counts than the ${#all[@]} hosts"
    # -H takes addresses, so no /etc/hosts is needed; the agent maps each to its namespace.
    # Both of Open MPI's TCP channels stay on the cluster's subnet.
    echo "--mca plm_rsh_agent $here/netns-rsh.sh --mca btl_tcp_if_include $subnet.0/24" \
      "--mca oob_tcp_if_include $subnet.0/24 -H $(IFS=,; echo "${list[*]}")"
    ;;
  kill-host)
    i=$(index_of "${2:?kill-host HOST}")
    pids=$(pids_on "node$i")
    [[ -n $pids ]] || die "nothing runs on node$i"
    # shellcheck disable=SC2086
    kill -KILL $pids 2> /dev/null || true
    echo "killed on node$i: $(echo $pids)"
    ;;
  *)
    sed -n '2,24p' "$0" >&2
    exit 2
    ;;
esac
