#pragma once
/// The worker loop run by every rank but 0: receive the setup, introduce itself, then run
/// trials one at a time as the driver says, until it says Shutdown.

#include <boost/mpi/communicator.hpp>

namespace ranktune::mpi {

/// Runs until Shutdown. Returns the process exit code. Trial failures never end it.
int run_worker(const boost::mpi::communicator& world);

}  // namespace ranktune::mpi
