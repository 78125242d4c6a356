#!/usr/bin/env bash
# Open MPI's plm_rsh_agent for scripts/netns-cluster.sh (its `mpirun-args` names this file):
# mpirun calls it as `netns-rsh.sh HOST CMD...` to start its daemon (orted) on HOST, where
# HOST is an address 10.213.0.I of the cluster (or a name nodeI). The daemon then runs in
# namespace ${RANKTUNE_NETNS_PREFIX}nodeI with host name nodeI, as ssh would start it there.
set -euo pipefail
host=$1
shift
i=${host##*.}
i=${i#node}
[[ $i =~ ^[0-9]+$ ]] || { echo "netns-rsh: '$host' is not a host of the cluster" >&2; exit 255; }
ns=${RANKTUNE_NETNS_PREFIX:-rtn-}node$i
# ssh hands its command line to the remote shell: so does this.
exec ip netns exec "$ns" unshare --uts /bin/bash -c 'hostname "node$0" && exec /bin/sh -c "$*"' "$i" "$@"
