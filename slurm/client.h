#pragma once
/// Runs Slurm's client programs (sbatch, scontrol, squeue, sacct) and captures their output.
/// The only place in slurm/ that starts processes (through sys::run_program).

#include <string>
#include <vector>

#include "sys/run.h"

namespace ranktune::slurm {

/// status (exit code; 128+N when killed by signal N; -1 when it could not start),
/// timed_out, out (stdout), err (stderr, empty when passed through; or why it could not start).
using CommandResult = sys::RunResult;

/// Runs argv[0] (looked up in PATH) with `argv`, stdin from /dev/null, in a process group of
/// its own. Waits at most `timeout_s` seconds (0: no limit), then SIGKILLs the group. With
/// `pass_stderr`, the program's stderr is this process's stderr instead of being captured.
/// Never throws for a failing program; the status says what happened.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s, bool pass_stderr = false);

}  // namespace ranktune::slurm
