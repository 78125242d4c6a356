#pragma once
/// Where a rank runs: its node, its index among the workers of that node, and the device
/// it binds. Workers bind GPU (local_index mod visible devices), so one layout works for
/// Slurm's --gpus-per-task=1 (each rank sees one device) and --gpus-per-node (all visible).

#include <string>

#include <boost/mpi/communicator.hpp>

namespace ranktune::mpi {

struct Placement {
  std::string host;
  int local_index = 0;      ///< index among the worker ranks of this node (driver excluded)
  std::string device = "cpu";  ///< "cpu" or "cuda:N"
  std::string device_name;  ///< the GPU's name, or the CPU model in CPU mode
};

/// Collective over `world`: every rank must call it. Rank 0 (the driver) gets its host
/// only; workers also bind a GPU when one is visible.
Placement place(const boost::mpi::communicator& world);

/// The CPU model from /proc/cpuinfo, "" if unknown.
std::string cpu_model();

}  // namespace ranktune::mpi
