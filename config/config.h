#pragma once
/// The experiment config: a TOML file, strictly validated. Every key is documented in
/// configs/README.md. Errors name file:line, the key path, and what to do.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "search/objectives.h"
#include "search/options.h"
#include "search/scheduler.h"
#include "search/searcher.h"
#include "search/space.h"
#include "search/types.h"

namespace ranktune::config {

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

struct ExperimentConfig;

/// Writes `key = value` lines of TOML: how render_config and the trainable kinds' options
/// (TrainableOptions::print) print a resolved config.
class TomlWriter {
 public:
  void string(const std::string& key, const std::string& value);
  void number(const std::string& key, double value);  ///< always a TOML float
  void integer(const std::string& key, std::int64_t value);
  void boolean(const std::string& key, bool value);
  void strings(const std::string& key, const std::vector<std::string>& values);
  void table(const std::string& key, const std::map<std::string, std::string>& entries);  ///< inline
  void raw(const std::string& key, const std::string& toml);  ///< a value already in TOML
  void comment(const std::string& text);  ///< "# text"
  void line(const std::string& text);     ///< as given, e.g. "[stop]" or ""
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

/// The options of one trainable kind, parsed from its own `[trainable]` keys by train/
/// (train/registry.h): the config layer knows none of them, and prints them through print().
class TrainableOptions {
 public:
  virtual ~TrainableOptions() = default;
  /// The kind's keys, every default filled in (`ranktune check`); `metrics` is the spec's.
  virtual void print(TomlWriter& out, const std::vector<std::string>& metrics) const = 0;
};

/// The `[trainable]` table as written, for the kind to read its own keys from (train/
/// registry.h): each read checks the TOML type and the bounds, and a bad value throws
/// ConfigError at its file:line (or its --set), with the same words as the rest of the config.
/// Cheap to copy (shared and immutable); empty for a spec built in code.
class TrainableKeys {
 public:
  struct Impl;
  TrainableKeys() = default;
  explicit TrainableKeys(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  bool empty() const { return impl_ == nullptr; }

  /// The keys in the order written (the file's, then those only --set added).
  std::vector<std::string> names() const;
  bool has(const std::string& key) const;
  /// The value of `key` as written, for "(got ...)" in messages.
  std::string got(const std::string& key) const;
  /// Throws ConfigError at `key` (its line, else the table's).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  /// As cfg.fail(key, message) for any key of `cfg`, naming the file as this table's errors
  /// do (as it was given, where cfg.fail names it absolute).
  [[noreturn]] void fail_config(const ExperimentConfig& cfg, const std::string& key, const std::string& message) const;
  /// Refuses any key not in `allowed`, with a did-you-mean or the list of valid keys.
  void check_keys(const std::vector<std::string>& allowed) const;

  /// Reads `key` into `out` when present; returns whether it was.
  bool read(const std::string& key, std::string& out) const;
  bool read(const std::string& key, double& out) const;
  bool read(const std::string& key, bool& out) const;
  bool read(const std::string& key, std::int64_t& out) const;
  bool read(const std::string& key, int& out) const;
  bool read(const std::string& key, std::vector<std::string>& out) const;
  bool read(const std::string& key, std::map<std::string, std::string>& out) const;  ///< environment names
  /// As read, and a missing key is an error that shows `example` as its value.
  void read_required(const std::string& key, std::vector<std::string>& out, const std::string& example) const;
  /// Lower bound `min` (exclusive when `strict`); read_range adds ranktune's upper limit.
  void read_min(const std::string& key, double& out, double min, bool strict = false) const;
  void read_min(const std::string& key, std::int64_t& out, std::int64_t min) const;
  void read_min(const std::string& key, int& out, int min) const;
  void read_range(const std::string& key, double& out, double min, double max) const;
  void read_range(const std::string& key, std::int64_t& out, std::int64_t min, std::int64_t max) const;
  /// One of `valid`; returns whether it was present.
  bool read_enum(const std::string& key, const std::vector<std::string>& valid, std::string& out,
                 bool required = false) const;

 private:
  std::shared_ptr<const Impl> impl_;
};

/// `[trainable]`: what runs a trial. The keys of each kind are its own (train/registry.h).
struct TrainableSpec {
  std::string kind = "synthetic";  ///< a name of train::trainable_kinds()
  /// Metrics recorded as columns of /results. The experiment metric is always first.
  /// Filled by train::validate from what the kind reports (a command: its `metrics` key).
  std::vector<std::string> metrics;
  /// The kind's own options; null until train::read_trainable parsed `keys`.
  std::shared_ptr<const TrainableOptions> options;
  /// The table as written (empty for a spec built in code).
  TrainableKeys keys;
};

/// A fully resolved experiment: every default filled in, every path absolute.
struct ExperimentConfig {
  std::string path;  ///< the config file, absolute ("" when parse_config was given no path)
  std::string text;  ///< the file's text as read (overrides are recorded separately)
  std::vector<std::string> overrides;  ///< the --set key=value strings applied
  /// How the user typed the overrides that a command-line flag stands for (override ->
  /// "--results PATH"): errors about them quote the flag, not a --set the user never typed.
  std::map<std::string, std::string> shown_overrides;

  // [experiment]
  std::string name;
  /// The metric to optimize; with several objectives (`metric = [...]`), the first one: the
  /// reports' primary metric (the `best` and `last` columns of /trials, the learning curves).
  std::string metric;
  search::Mode mode = search::Mode::Max;
  /// Several objectives (`metric` and `mode` lists) or `constraints`: then multi() is true and
  /// the schedulers and searchers that take several objectives rank trials by them. Empty for
  /// a single metric without constraints (today's single-objective behaviour, unchanged).
  search::Objectives objectives;
  std::uint64_t seed = 0;
  std::int64_t num_samples = 1;
  std::string results;           ///< results file, absolute; default "<cwd>/<name>.h5"
  int max_failures = 0;
  std::string non_finite = "error";  ///< "error" or "worst"
  double flush_interval_ms = 200;
  double status_interval_s = 10;

  // [search]
  std::string algorithm = "random";  ///< one of search::searcher_names()
  /// Why `algorithm` was chosen, when it was not in the file (search/default_searcher.h);
  /// empty when the file names it.
  std::string algorithm_reason;
  search::Space space;
  search::Options search_options;    ///< the other [search] keys, checked by the searcher
  /// `points_to_evaluate`: configs tried first, in order (checked against the space; fixed
  /// values filled in, inactive parameters absent).
  std::vector<search::Config> points_to_evaluate;
  /// `warm_start` (and `ranktune run --warm-start`): earlier results files, absolute.
  std::vector<std::string> warm_start;
  /// Their trials, as experiment::load_warm_start read them for this space.
  std::vector<search::WarmObservation> warm;
  /// Per file, where the warm trials came from ("12 trials from /x/old.h5 ..."): the
  /// results file's "warm_start" events and the report.
  std::vector<std::string> warm_sources;

  // [scheduler]
  std::string scheduler = "fifo";    ///< one of search::scheduler_names()
  bool scheduler_given = false;      ///< `kind` was in the file (else fifo, and check says so)
  search::Options scheduler_options; ///< the other [scheduler] keys, checked by the scheduler

  // [trainable]
  TrainableSpec trainable;

  // [stop]
  std::int64_t max_t = 1;
  double time_budget_s = 0;  ///< 0: no budget
  std::int64_t max_total_steps = 0;  ///< 0: no budget; else iterations of all trials together
  std::optional<double> target;

  // [checkpoint]
  std::int64_t checkpoint_every = 0;  ///< store a checkpoint every N iterations (0: never)
  bool checkpoint_at_end = false;     ///< store one when a trial ends (max_t or early stop)
  std::int64_t checkpoint_keep_last = 0;  ///< keep this many newest per trial (0: all)
  std::int64_t checkpoint_keep_best = 0;  ///< keep this many best per trial (0: none for merit)
  bool checkpoint_fsync = false;  ///< fdatasync the results file after each checkpoint's bytes

  // [resources]
  int ranks_per_trial = 1;

  // [report]
  std::string report_html;             ///< rank 0 rewrites this HTML page as the run goes ("": none)
  double report_html_interval_s = 30;  ///< ... every this many seconds, and at the end

  /// Line of each key path that appeared in the file ("experiment.metric" -> 4), so later
  /// checks (e.g. by the trainable) can point at the right line.
  std::map<std::string, int> lines;

  /// Throws ConfigError pointing at `key`: its line if known, else the line of its nearest
  /// enclosing table, else the file. A key set by `--set` points at that override (line 0).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
};

/// Reads and validates a config file, then applies `overrides` ("experiment.seed=3"; the
/// value is TOML). `shown` gives, for an override that a command-line flag stands for, the
/// flag as typed ("experiment.results=\"/x.h5\"" -> "--results /x.h5"), which its errors
/// name instead of "--set ...". Throws ConfigError.
ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {},
                             const std::map<std::string, std::string>& shown = {});

/// As load_config, from text. `path` is used for messages and relative paths.
ExperimentConfig parse_config(const std::string& text, const std::string& path,
                              const std::vector<std::string>& overrides = {},
                              const std::map<std::string, std::string>& shown = {});

/// The resolved config as TOML, with defaults filled in (`ranktune check`). The trainable's
/// own keys are printed once train::read_trainable parsed them.
std::string render_config(const ExperimentConfig& cfg);

/// A number as the config's messages show it ("0.5", "1e+09").
std::string number_text(double d);

/// The closest of `candidates` to `word` by edit distance, or "" when none is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

/// What the experiment's scheduler is told about it; refers to cfg.space, so `cfg` must
/// outlive the scheduler.
search::SchedulerContext scheduler_context(const ExperimentConfig& cfg);

}  // namespace ranktune::config
