// Where a rank runs: its host, its index among the node's workers and the GPU it binds
// (mpi/placement.h: the layouts and why).
#include "mpi/placement.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <vector>

#include <boost/mpi/collectives/all_gather.hpp>

#include "mpi/errors.h"
#include "mpi/gpu.h"
#include "sys/host.h"

namespace ranktune::mpi {

GpuChoice choose_gpu(const std::map<std::string, std::string>& env, int local_index, int local_workers,
                     int runtime_devices) {
  GpuChoice c;
  if (runtime_devices <= 0) {
    c.layout = "cpu";
    return c;
  }
  const auto get = [&](const char* k) {
    const auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  c.device = local_index % runtime_devices;
  c.visible_id = std::to_string(c.device);
  // The runtime's index N is the N-th entry of CUDA_VISIBLE_DEVICES (ids or GPU-UUIDs).
  if (const auto visible = get("CUDA_VISIBLE_DEVICES"); !visible.empty()) {
    std::vector<std::string> ids(1);
    for (char ch : visible) {
      if (ch == ',') ids.emplace_back();
      else ids.back() += ch;
    }
    if (c.device < static_cast<int>(ids.size())) c.visible_id = ids[static_cast<std::size_t>(c.device)];
  }
  const bool per_task = !get("SLURM_GPUS_PER_TASK").empty();
  c.layout = per_task ? "per-task" : "per-node";
  // With per-task binding each task has its own devices, so the node's worker count says
  // nothing about sharing.
  c.shared = !per_task && local_workers > runtime_devices;
  return c;
}

Placement place(const boost::mpi::communicator& world) {
  MPI_Comm node_raw = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(static_cast<MPI_Comm>(world), MPI_COMM_TYPE_SHARED, world.rank(),
                                MPI_INFO_NULL, &node_raw));
  boost::mpi::communicator node(node_raw, boost::mpi::comm_take_ownership);
  std::vector<int> world_ranks;
  boost::mpi::all_gather(node, world.rank(), world_ranks);

  Placement p;
  p.host = sys::host_name();
  int local_workers = 0;
  for (int r : world_ranks) {
    if (r != 0 && r < world.rank()) ++p.local_index;
    if (r != 0) ++local_workers;
  }
  if (world.rank() == 0) return p;
  std::map<std::string, std::string> env;
  for (const char* v : {"CUDA_VISIBLE_DEVICES", "SLURM_GPUS_PER_TASK"}) {
    if (const char* value = std::getenv(v)) env[v] = value;
  }
  // Test hook (tests/multinode/gpu_binding.sh): with RANKTUNE_FAKE_CUDA=1 the worker acts as
  // if the CUDA runtime saw the devices that CUDA_VISIBLE_DEVICES lists, and binds none, so
  // the choice of device can be checked on machines without GPUs.
  const char* fake_env = std::getenv("RANKTUNE_FAKE_CUDA");
  const bool fake = fake_env != nullptr && std::string(fake_env) == "1";
  int devices = 0;
  if (fake) {
    const auto visible = env.find("CUDA_VISIBLE_DEVICES");
    if (visible != env.end() && !visible->second.empty())
      devices = 1 + static_cast<int>(std::count(visible->second.begin(), visible->second.end(), ','));
  } else {
    devices = cuda_device_count();
  }
  const GpuChoice gpu = choose_gpu(env, p.local_index, local_workers, devices);
  if (gpu.device >= 0 && (fake || cuda_bind(gpu.device))) {
    p.device = "cuda:" + std::to_string(gpu.device);
    // Under --gpus-per-task every worker is cuda:0; the node's id tells them apart.
    p.device_name = (fake ? std::string("fake GPU") : cuda_device_name(gpu.device)) + " (id " + gpu.visible_id + ", " + gpu.layout +
                    (gpu.shared ? ", shared" : "") + ")";
  } else {
    p.device_name = sys::cpu_model();
  }
  return p;
}

}  // namespace ranktune::mpi
