#pragma once
/// The driver loop on rank 0: it runs the controller against the workers over MPI and is
/// the single writer of the results file.

#include <string>

#include <boost/mpi/communicator.hpp>

#include "config/config.h"
#include "io/store.h"

namespace ranktune::mpi {

struct DriverOptions {
  std::string command_line;
  bool force = false;  ///< resume a results file even though its config differs
};

/// Rank 0 when the config was refused: tells the workers to exit without running.
void abort_setup(const boost::mpi::communicator& world);

/// Runs the experiment to its end. Workers must be in run_worker. Returns an experiment::ExitCode.
/// Throws (config::ConfigError) only before the workers are given the Setup; an error after it
/// is printed and ends the whole job (abort_job: MPI_Abort with the error's exit code), and
/// a full disk during the run stops it with exit 4 (rows committed) or 1.
int run_driver(const boost::mpi::communicator& world, const config::ExperimentConfig& cfg,
               const DriverOptions& options);

}  // namespace ranktune::mpi
