#pragma once
/// The sbatch script of an experiment (`ranktune slurm script` / `submit`): a pure function
/// of the resolved experiment config and the job options, so it is tested without Slurm.
///
/// The job asks for one task per worker plus one for the driver (rank 0), launches them with
/// `srun --mpi=pmix ranktune run EXPERIMENT --results FILE [--resume]`, appends to its log
/// across requeues (`--open-mode=append`), and asks for `B:USR1` some seconds before the time
/// limit. The batch shell turns that warning into SIGTERM for the job's tasks (rank 0 then
/// stops gracefully and exits 4, workers ignore it) and, when the job may be requeued,
/// requeues itself once ranktune has exited 4 after the warning.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace ranktune::slurm {

/// What the user asks of the job. Empty strings and zeros mean "the default" below.
struct ScriptOptions {
  int nodes = 1;                  ///< --nodes, >= 1
  int gpus_per_node = 0;          ///< --gpus-per-node; 0: a CPU job
  int workers = 0;                ///< worker ranks; 0: nodes * gpus_per_node, or 4 per node on CPUs
  int cpus_per_worker = 1;        ///< --cpus-per-task of every rank (the driver's too), >= 1
  std::string time;               ///< --time in Slurm's syntax; "": the partition's default
  std::string partition;          ///< --partition; "": the cluster's default
  std::string account;            ///< --account
  std::string qos;                ///< --qos
  bool requeue = false;           ///< --requeue, and requeue after a time-limit stop
  std::optional<int> signal_lead_s;  ///< seconds of warning; default 300, at most half of --time
  std::string output;             ///< --output; "": RESULTS without .h5, then "-%j.out"
  std::string job_name;           ///< --job-name; "": "ranktune-" + experiment name
  std::string ranktune = "ranktune";  ///< the program the job runs (an absolute path is safest)
  std::vector<std::string> sets;  ///< --set overrides passed on to `ranktune run`
  bool resume = true;             ///< pass --resume, so a requeued job continues the results file
};

/// The job's size, derived from the options and the config's gang size.
struct JobShape {
  int nodes = 1;
  int workers = 0;          ///< multiple of ranks_per_trial
  int tasks = 0;            ///< workers + 1 (the driver)
  int ranks_per_trial = 1;  ///< from [resources] ranks_per_trial
  int gpus_per_node = 0;
  int cpus_per_task = 1;
  int signal_lead_s = 0;    ///< seconds of warning before the time limit
  std::optional<std::int64_t> time_limit_s;  ///< nullopt: not given, or unlimited
};

/// Checks the options against the config and sizes the job. Throws std::invalid_argument
/// with one line naming the option and what to do.
JobShape job_shape(const config::ExperimentConfig& cfg, const ScriptOptions& options);

/// The script. cfg.path and cfg.results must be absolute (load_config makes them so).
/// Throws as job_shape.
std::string sbatch_script(const config::ExperimentConfig& cfg, const ScriptOptions& options);

/// Where `submit` writes the script: RESULTS without a trailing ".h5", plus ".sbatch".
std::string script_path_for(const std::string& results);

/// The default --output: RESULTS without a trailing ".h5", plus "-%j.out".
std::string output_path_for(const std::string& results);

/// `word` quoted for bash: unchanged when it has only safe characters, else in single quotes.
std::string shell_quote(const std::string& word);

}  // namespace ranktune::slurm
