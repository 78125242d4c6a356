#pragma once
/// `ranktune slurm script|submit|status`: sbatch scripts for an experiment, submission, and
/// the job's state joined with the experiment's progress. The subcommand registers its
/// own options (CLI11) so main.cc needs two lines.

#include <memory>

namespace CLI {
class App;
}

namespace ranktune::apps {

class SlurmCommand {
 public:
  /// Adds `slurm` and its three subcommands to `app`.
  explicit SlurmCommand(CLI::App& app);
  ~SlurmCommand();
  SlurmCommand(const SlurmCommand&) = delete;
  SlurmCommand& operator=(const SlurmCommand&) = delete;

  /// True when the command line chose `slurm` (after app.parse).
  bool selected() const;
  /// Runs the chosen subcommand; returns the exit code (experiment::ExitCode, or sbatch's with --wait).
  int run() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ranktune::apps
