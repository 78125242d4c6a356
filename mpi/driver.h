#pragma once
/// The driver loop on rank 0: it runs the controller against the workers over MPI and is
/// the single writer of the results file.

#include <string>

#include <boost/mpi/communicator.hpp>

#include "io/config.h"
#include "io/store.h"
#include "search/controller.h"

namespace ranktune::mpi {

/// Exit codes of `ranktune` (documented in the README).
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,     ///< a bug or an environment failure (MPI, HDF5)
  kExitUsage = 2,        ///< bad command line or bad config: nothing ran
  kExitFailed = 3,       ///< the experiment ran but no trial finished without error
  kExitInterrupted = 4,  ///< stopped by a signal (SIGINT, SIGTERM, SIGUSR1)
  kExitBadFile = 5,      ///< a results file that cannot be read
  kExitNoAnswer = 6,     ///< `ctl`: the run did not answer the request in time
};

struct DriverOptions {
  std::string command_line;
  bool force = false;  ///< resume a results file even though its config differs
};

/// The controller's options from an experiment config (shared by the driver and
/// `ranktune simulate`, so both run the same rules). `workers` (the hosts of the worker
/// ranks) lets gang placement keep a gang on one node; without it all count as one node.
search::ControllerOptions controller_options(const io::ExperimentConfig& cfg,
                                             const std::vector<io::WorkerInfo>& workers = {});

/// Rank 0 when the config was refused: tells the workers to exit without running.
void abort_setup(const boost::mpi::communicator& world);

/// Runs the experiment to its end. Workers must be in run_worker. Returns an ExitCode.
/// Throws (io::ConfigError) only before the workers are given the Setup; an error after it
/// is printed and ends the whole job (abort_job: MPI_Abort with the error's exit code), and
/// a full disk during the run stops it with exit 4 (rows committed) or 1.
int run_driver(const boost::mpi::communicator& world, const io::ExperimentConfig& cfg,
               const DriverOptions& options);

}  // namespace ranktune::mpi
