#include "mpi/placement.h"

#include <fstream>

#include <boost/mpi/collectives/all_gather.hpp>

#include "mpi/errors.h"
#include "mpi/gpu.h"

namespace ranktune::mpi {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return {};
}

Placement place(const boost::mpi::communicator& world) {
  MPI_Comm node_raw = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(static_cast<MPI_Comm>(world), MPI_COMM_TYPE_SHARED, world.rank(),
                                MPI_INFO_NULL, &node_raw));
  boost::mpi::communicator node(node_raw, boost::mpi::comm_take_ownership);
  std::vector<int> world_ranks;
  boost::mpi::all_gather(node, world.rank(), world_ranks);

  Placement p;
  p.host = host_name();
  for (int r : world_ranks) {
    if (r != 0 && r < world.rank()) ++p.local_index;
  }
  if (world.rank() == 0) return p;
  const int gpus = cuda_device_count();
  if (gpus > 0 && cuda_bind(p.local_index % gpus)) {
    p.device = "cuda:" + std::to_string(p.local_index % gpus);
    p.device_name = cuda_device_name(p.local_index % gpus);
  } else {
    p.device_name = cpu_model();
  }
  return p;
}

}  // namespace ranktune::mpi
