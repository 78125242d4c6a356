#pragma once
/// Running a program to completion with its output captured and a time limit: Slurm's
/// clients (sbatch, squeue, ...) and the h5clear repair of a results file. No shell: argv
/// goes to the program as it is.

#include <string>
#include <vector>

namespace ranktune::sys {

struct RunOptions {
  double timeout_s = 0;       ///< 0: no limit; past it the program's process group is SIGKILLed
  bool pass_stderr = false;   ///< the program's stderr is ours instead of being captured
  bool merge_stderr = false;  ///< stderr goes into `out` with stdout (as 2>&1)
};

struct RunResult {
  int status = -1;     ///< exit code; 128+N when killed by signal N; -1 when it could not start
  bool timed_out = false;
  std::string out;     ///< stdout
  std::string err;     ///< stderr (empty when passed through or merged), or why it could not start
};

/// Runs argv[0] (looked up in PATH unless it holds a '/') with `argv`, stdin from
/// /dev/null, as a ChildProcess of its own process group. Waits at most `timeout_s`, then
/// SIGKILLs the group and sets timed_out. Never throws for a failing program; the status
/// says what happened ("cannot run NAME: No such file or directory" in `err` for one that
/// does not start).
RunResult run_program(const std::vector<std::string>& argv, const RunOptions& options = {});

}  // namespace ranktune::sys
