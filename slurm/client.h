#pragma once
/// Runs Slurm's client programs (sbatch, scontrol, squeue, sacct) and captures their output.
/// The only place in slurm/ that starts processes.

#include <string>
#include <vector>

namespace ranktune::slurm {

struct CommandResult {
  int status = -1;     ///< exit code; 128+N when killed by signal N; -1 when it could not start
  bool timed_out = false;
  std::string out;     ///< stdout
  std::string err;     ///< stderr (empty when it was passed through), or why it could not start
};

/// Runs argv[0] (looked up in PATH) with `argv`, stdin from /dev/null. Waits at most
/// `timeout_s` seconds (0: no limit), then SIGKILLs it. With `pass_stderr`, the program's
/// stderr is this process's stderr instead of being captured. Never throws for a failing
/// program; the status says what happened.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s, bool pass_stderr = false);

}  // namespace ranktune::slurm
