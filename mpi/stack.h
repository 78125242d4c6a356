#pragma once
/// The hardware and software stack of a run, as recorded in the results file's /stack
/// group (MLModelScope's point: a number without its stack is not reproducible).

#include <map>
#include <string>
#include <vector>

#include "io/store.h"

namespace ranktune::mpi {

/// Collects the stack on the driver. `workers` are the Hellos of every worker rank.
std::map<std::string, std::string> collect_stack(const std::vector<io::WorkerInfo>& workers,
                                                 int world_size);

}  // namespace ranktune::mpi
