#pragma once
/// The `ranktune` subcommands: each apps/X_command.cc registers its own (setup_X: its
/// options, filled by CLI11, and its callback) and runs it with run_X(), which returns the
/// process exit code (see experiment::ExitCode).

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "report/compare.h"

namespace CLI {
class App;
}

namespace ranktune::apps {

/// Makes `command` the callback of the subcommand `sub`. main() returns what it returns, or
/// the documented exit code of the error it throws: ConfigError and invalid_argument 2
/// ("ranktune: config error: ..." / "ranktune: ..."), StoreError 5, anything else 1.
void on_run(CLI::App* sub, std::function<int()> command);
/// The exit code left by the subcommand that ran; kExitUsage when none ran.
int exit_code();

// The subcommands, in the order `ranktune --help` lists them. `argv` is this process's
// command line, for the commands that record it or launch themselves again.
void setup_run(CLI::App& app, int argc, char** argv);
void setup_check(CLI::App& app);
void setup_report(CLI::App& app);
void setup_leaderboard(CLI::App& app);
void setup_simulate(CLI::App& app, int argc, char** argv);
void setup_compact(CLI::App& app);
void setup_export_checkpoint(CLI::App& app);
void setup_eval(CLI::App& app, int argc, char** argv);
void setup_compare(CLI::App& app);
void setup_ctl(CLI::App& app);
void setup_slurm(CLI::App& app);

struct RunOptions {
  std::string config;
  int np = 0;                     ///< workers; 0 = default_worker_count()
  std::string results;            ///< overrides [experiment] results
  std::vector<std::string> sets;  ///< --set key=value
  std::vector<std::string> warm_start;  ///< --warm-start FILE...: replaces [search] warm_start
  std::vector<std::string> argv;  ///< this process's arguments, for self-launch and the record
  bool resume = false;            ///< --resume: go on with the results file if it exists
  bool force = false;             ///< --force: resume even though the config changed
};
int run_run(const RunOptions& o, int argc, char** argv);

struct CheckOptions {
  std::string config;
  std::vector<std::string> sets;
};
int run_check(const CheckOptions& o);

struct ReportOptions {
  std::string results;
  std::optional<std::size_t> top;    ///< unset: 10 for people's formats, all for CSV and JSON
  std::string format = "table";
  std::string plots;                 ///< folder for the SVG charts ("" = none)
  std::string html;                  ///< write a self-contained HTML report here ("" = none)
  /// With --html: a "Comparison" section of this file's newest evaluation against these
  /// (FILE or FILE@ID each, as `ranktune compare` takes them).
  std::vector<std::string> compare;
  std::int64_t schedule_trial = 0;   ///< print (and plot) this trial's PBT schedule
  std::string importance;            ///< "auto" (or empty), "ped-anova" or "fanova": add the importance section
  bool importance_given = false;     ///< --importance was given, with a value or without
  bool log_y = false;                ///< curves on a log y axis (default: when values span > 2 decades)
  bool linear_y = false;             ///< ... on a linear one
  std::int64_t trial = 0;            ///< print this trial whole
  double watch_s = 0;                ///< > 0: rewrite --html every this many seconds while the run goes
  std::string reference;             ///< multi-objective: the hypervolume's reference point, "1.1,5.3" ("" = default)
};
int run_report(const ReportOptions& o);

struct LeaderboardCommandOptions {
  std::vector<std::string> results;
  std::string metric;
  std::string mode;  ///< "min", "max" or "" (the files' own, for their own metric)
  std::optional<std::size_t> top;
  std::string format = "table";
};
int run_leaderboard(const LeaderboardCommandOptions& o);

struct SimulateOptions {
  std::string config;
  int workers = 0;                ///< virtual workers (required, >= 1)
  std::optional<std::uint64_t> seed;  ///< seeds jitter and speeds; default [experiment] seed
  std::string results;            ///< default: [experiment] results with .h5 -> .sim.h5
  double jitter = 0;              ///< log-sd of the lognormal step-cost factor
  double speed_spread = 0;        ///< log-sd of the per-worker speed factors
  double overhead_s = 0;          ///< virtual seconds added to every step
  std::vector<std::string> sets;  ///< --set key=value
  std::vector<std::string> argv;  ///< for the record
};
/// `ranktune simulate`: the experiment on virtual workers in virtual time (synthetic only).
int run_simulate(const SimulateOptions& o);

struct CompactOptions {
  std::string results;
  std::string out;  ///< "" = replace `results` in place (atomically)
};
/// `ranktune compact`: rewrites a results file without the bytes of dropped checkpoints.
int run_compact(const CompactOptions& o);

struct ExportCheckpointOptions {
  std::string results;
  std::int64_t trial = 0;
  std::optional<std::int64_t> iteration;  ///< default: the trial's newest stored checkpoint
  std::string out;                        ///< a new or empty folder
};
/// `ranktune export-checkpoint`: a command trainable's checkpoint as its directory, a
/// built-in trainable's as checkpoint.bin plus checkpoint.json.
int run_export_checkpoint(const ExportCheckpointOptions& o);

struct EvalOptions {
  std::string results;
  std::size_t top = 3;                        ///< leaders to evaluate (when no --trial)
  std::vector<std::int64_t> trials;           ///< exactly these trials instead
  bool front = false;                         ///< --front: the Pareto front's trials (multi-objective)
  std::string checkpoint = "best";            ///< best or latest stored checkpoint of each
  std::string device = "auto";                ///< auto, cpu or cuda:N
  int threads = 0;                            ///< 0: the experiment's threads_per_worker
  std::vector<std::int64_t> batch_sizes = {1, 128};
  double latency_s = 1.0;                     ///< timing budget per batch size
  int warmup = 10;
  std::string config;                         ///< resolve the stored config's paths as if it lay here
  std::string format = "table";               ///< table or json
  bool no_record = false;                     ///< do not append to /evaluations
  std::string command_line;                   ///< for the manifest
  std::string manifest;                       ///< --manifest EVAL.toml ("" = the flags alone)
  std::set<std::string> given;                ///< the flags typed, which override the manifest
  std::vector<std::string> argv;              ///< this process's arguments, for the self-launch
  /// --parallel: the leaders spread over the ranks of the MPI job (mpi/eval_farm.h); started
  /// without a launcher, it launches itself under mpirun as `run` does.
  bool parallel = false;
  int np = 0;                                 ///< --np N: self-launch N workers (implies --parallel)
  bool exclusive_latency = true;              ///< a timed phase runs alone on its node
};
/// The evaluations that FILE or FILE@ID each name, after `inputs` (report/compare.h).
/// Throws io::StoreError for a missing file, std::invalid_argument for an unknown id.
std::vector<report::CompareInput> read_compare_inputs(const std::vector<std::string>& given,
                                                      std::vector<report::CompareInput> inputs = {});

/// `ranktune eval`: held-out evaluation and latency of the leaders, recorded in the file.
int run_eval(const EvalOptions& o);

struct CompareOptions {
  std::vector<std::string> inputs;  ///< FILE or FILE@ID each; the first is the baseline
  std::string format = "table";     ///< table, csv, json, markdown or html
};
/// `ranktune compare`: evaluations of the same models under different stacks side by side.
int run_compare(const CompareOptions& o);

struct CtlOptions {
  std::string op;                        ///< stop, set, add, pause, resume, budget, stop-experiment, status
  std::string results;
  std::int64_t trial = 0;                ///< stop, set
  std::vector<std::string> assignments;  ///< set, add: name=value
  std::int64_t count = 0;                ///< add: this many more trials from the searcher
  bool force = false;                    ///< values outside their domains
  double wait_s = 30;                    ///< wait this long for the run's answer (0: do not)
  std::optional<double> time_budget_s;   ///< budget: the new [stop] time_budget_s
  std::optional<std::int64_t> num_samples;  ///< budget: the new num_samples
  std::optional<std::int64_t> max_t;     ///< budget: the new [stop] max_t
  std::string format = "table";          ///< status: table, markdown or json
};
/// `ranktune ctl`: live control of a running experiment (stop, set, add, pause, resume,
/// budget, stop-experiment), and `ctl status`, its summary.
int run_ctl(const CtlOptions& o);

}  // namespace ranktune::apps
