#pragma once
/// The experiment config: a TOML file, strictly validated. Every key is documented in
/// configs/README.md. Errors name file:line, the key path, and what to do.

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "search/options.h"
#include "search/scheduler.h"
#include "search/space.h"
#include "search/types.h"

namespace ranktune::io {

/// A config that cannot be used. what() is one line: "FILE:LINE: KEY: problem. hint".
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, int line, std::string key, const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& key() const { return key_; }

 private:
  std::string file_;
  int line_;
  std::string key_;
};

/// The largest `[trainable] kill_grace_s`: a worker waits this long per stopped trial.
inline constexpr double kMaxKillGraceS = 600.0;

/// `[trainable]`: what runs a trial.
struct TrainableSpec {
  std::string kind = "synthetic";  ///< "synthetic", "command" or "mlp"
  // synthetic
  std::string function = "branin";  ///< see train/synthetic.h for the list
  double seconds_per_step = 0.0;    ///< sleep per step, to emulate work
  double noise = 0.0;               ///< std-dev of seeded Gaussian noise added to each report
  // command
  std::vector<std::string> command;           ///< argv; argv[0] relative to config dir if it has a '/'
  std::string workdir;                        ///< absolute after loading ("" = config dir)
  std::map<std::string, std::string> env;     ///< extra environment variables
  double step_timeout_s = 0.0;                ///< 0: none. A trial silent for longer fails.
  /// Each trial log (`<results>.logs/trial_T_attempt_A.log`) is kept under about this many
  /// MiB: its head and its tail, with a line saying where and how much was cut. 0: no cap.
  double max_log_mb = 100.0;
  /// Seconds a stopped program has between SIGTERM and SIGKILL (at most kMaxKillGraceS).
  double kill_grace_s = 2.0;
  /// The command speaks the checkpoint protocol (RANKTUNE_CHECKPOINT_DIR and
  /// RANKTUNE_CONTROL_FD, see README "Checkpoints of command trainables").
  bool checkpoint = false;
  // mlp (train/mlp_trainable.h)
  std::string data_dir;                 ///< IDX folder, absolute after loading ("" = Debian's Fashion-MNIST)
  double val_fraction = 0.1;            ///< share of the 60k training images held out for validation
  std::int64_t batches_per_step = 0;    ///< batches per step; 0: one epoch
  int threads_per_worker = 1;           ///< BLAS threads of each worker (CPU path)
  std::string device = "auto";          ///< "auto" (the worker's GPU if any), "cpu" or "cuda"
  std::int64_t train_samples = 0;       ///< use only this many training images (0: all)
  std::int64_t val_samples = 0;         ///< use only this many validation images (0: all)
  /// Metrics recorded as columns of /results. The experiment metric is always first.
  /// For synthetic trainables this is filled from the function's metrics.
  std::vector<std::string> metrics;
};

/// A fully resolved experiment: every default filled in, every path absolute.
struct ExperimentConfig {
  std::string path;  ///< the config file, absolute ("" when parse_config was given no path)
  std::string text;  ///< the file's text as read (overrides are recorded separately)
  std::vector<std::string> overrides;  ///< the --set key=value strings applied

  // [experiment]
  std::string name;
  std::string metric;
  search::Mode mode = search::Mode::Max;
  std::uint64_t seed = 0;
  std::int64_t num_samples = 1;
  std::string results;           ///< results file, absolute; default "<cwd>/<name>.h5"
  int max_failures = 0;
  std::string non_finite = "error";  ///< "error" or "worst"
  double flush_interval_ms = 200;
  double status_interval_s = 10;

  // [search]
  std::string algorithm = "random";  ///< one of search::searcher_names()
  search::Space space;
  search::Options search_options;    ///< the other [search] keys, checked by the searcher

  // [scheduler]
  std::string scheduler = "fifo";    ///< one of search::scheduler_names()
  search::Options scheduler_options; ///< the other [scheduler] keys, checked by the scheduler

  // [trainable]
  TrainableSpec trainable;

  // [stop]
  std::int64_t max_t = 1;
  double time_budget_s = 0;  ///< 0: no budget
  std::optional<double> target;

  // [checkpoint]
  std::int64_t checkpoint_every = 0;  ///< store a checkpoint every N iterations (0: never)
  bool checkpoint_at_end = false;     ///< store one when a trial ends (max_t or early stop)
  std::int64_t checkpoint_keep_last = 0;  ///< keep this many newest per trial (0: all)
  std::int64_t checkpoint_keep_best = 0;  ///< keep this many best per trial (0: none for merit)

  // [resources]
  int ranks_per_trial = 1;

  /// Line of each key path that appeared in the file ("experiment.metric" -> 4), so later
  /// checks (e.g. by the trainable) can point at the right line.
  std::map<std::string, int> lines;

  /// Throws ConfigError pointing at `key`: its line if known, else the line of its nearest
  /// enclosing table, else the file. A key set by `--set` points at that override (line 0).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
};

/// Reads and validates a config file, then applies `overrides` ("experiment.seed=3"; the
/// value is TOML). Throws ConfigError.
ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// As load_config, from text. `path` is used for messages and relative paths.
ExperimentConfig parse_config(const std::string& text, const std::string& path,
                              const std::vector<std::string>& overrides = {});

/// The resolved config as TOML, with defaults filled in (`ranktune check`).
std::string render_config(const ExperimentConfig& cfg);

/// The closest of `candidates` to `word` by edit distance, or "" when none is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

/// What the experiment's scheduler is told about it; refers to cfg.space, so `cfg` must
/// outlive the scheduler.
search::SchedulerContext scheduler_context(const ExperimentConfig& cfg);

}  // namespace ranktune::io
