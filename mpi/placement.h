#pragma once
/// Where a rank runs: its node, its index among the workers of that node, and the device
/// it binds. Workers bind GPU (local_index mod visible devices), so one layout works for
/// Slurm's --gpus-per-task=1 (each rank sees one device) and --gpus-per-node (all visible).

#include <map>
#include <string>

#include <boost/mpi/communicator.hpp>

namespace ranktune::mpi {

struct Placement {
  std::string host;
  int local_index = 0;      ///< index among the worker ranks of this node (driver excluded)
  std::string device = "cpu";  ///< "cpu" or "cuda:N"
  std::string device_name;  ///< the GPU's name, or the CPU model in CPU mode
};

/// The GPU a worker binds, chosen from what the worker sees.
struct GpuChoice {
  int device = -1;          ///< CUDA runtime index to bind; -1: CPU mode (no device visible)
  std::string visible_id;   ///< that device's entry in CUDA_VISIBLE_DEVICES (the node's
                            ///< numbering), or the runtime index when the variable is unset
  std::string layout;       ///< "per-task" (Slurm --gpus-per-task: each task sees its own
                            ///< GPUs), "per-node" (all of the node's GPUs visible), or "cpu"
  bool shared = false;      ///< more workers on this node than the GPUs they can see
};

/// Pure: which GPU the worker with node-local index `local_index` (of `local_workers`
/// workers on its node) binds, when the CUDA runtime reports `runtime_devices` devices and
/// the environment is `env` (CUDA_VISIBLE_DEVICES, SLURM_GPUS_PER_TASK). The runtime already
/// honours CUDA_VISIBLE_DEVICES, so the index is local_index mod runtime_devices in both
/// layouts: under --gpus-per-task=1 each task sees one device (index 0); under
/// --gpus-per-node=G every task sees G and the node-local index spreads workers over them.
GpuChoice choose_gpu(const std::map<std::string, std::string>& env, int local_index, int local_workers,
                     int runtime_devices);

/// Collective over `world`: every rank must call it. Rank 0 (the driver) gets its host
/// only; workers also bind a GPU when one is visible. Test hook: RANKTUNE_FAKE_CUDA=1 counts
/// the devices in CUDA_VISIBLE_DEVICES instead of asking the runtime, and binds none
/// (device_name "fake GPU ..."), so GPU binding is testable without GPUs.
Placement place(const boost::mpi::communicator& world);

}  // namespace ranktune::mpi
