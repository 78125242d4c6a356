#pragma once
/// The exit codes of every `ranktune` command (documented in docs/guide/running.md), shared by the
/// commands, the MPI driver and workers, and the Slurm job script.

namespace ranktune::experiment {

enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,     ///< a bug or an environment failure (MPI, HDF5)
  kExitUsage = 2,        ///< bad command line or bad config: nothing ran
  kExitFailed = 3,       ///< the experiment ran but no trial finished without error
  kExitInterrupted = 4,  ///< stopped by a signal (SIGINT, SIGTERM, SIGUSR1)
  kExitBadFile = 5,      ///< a results file that cannot be read
  kExitNoAnswer = 6,     ///< `ctl`: the run did not answer the request in time
};

}  // namespace ranktune::experiment
