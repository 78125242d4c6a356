// Slurm's client programs run through sys::run_program (slurm/client.h).
#include "slurm/client.h"

#include "sys/run.h"

namespace ranktune::slurm {

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s, bool pass_stderr) {
  sys::RunOptions options;
  options.timeout_s = timeout_s;
  options.pass_stderr = pass_stderr;
  return sys::run_program(argv, options);
}

}  // namespace ranktune::slurm
