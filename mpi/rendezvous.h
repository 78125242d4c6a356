#pragma once
/// Where the processes of a trial meet for their own distributed training (a DDP script run
/// as a gang of command trainables): torchrun's RANK, LOCAL_RANK, NODE_RANK, MASTER_ADDR and
/// MASTER_PORT for each member, agreed over the gang's communicator before any member starts
/// its program. The leader picks a free port on its host; members on its host meet it at
/// 127.0.0.1, members elsewhere at its interface address.

#include <span>
#include <string>

#include "train/trainable.h"

namespace ranktune::mpi {

class Gang;

/// Member `rank`'s place in a gang whose members run on `hosts` (by gang rank, the leader
/// first): its index among the members on its host, and its host's index among the gang's
/// hosts in the order they first appear. The master is at `leader_address` when the gang
/// spans several hosts, else at 127.0.0.1. Pure.
train::DistributedEnv place_member(std::span<const std::string> hosts, int rank, const std::string& leader_address,
                                   int master_port);

/// The rendezvous of this member: one all-gather over `gang` (every member calls it at the
/// same point), or, without a gang, a world of one on this host. `host` is this rank's host
/// name (mpi::Placement::host). Throws MpiError when the gang's communicator fails.
train::DistributedEnv rendezvous(Gang* gang, const std::string& host);

}  // namespace ranktune::mpi
