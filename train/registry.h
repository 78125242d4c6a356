#pragma once
/// The trainable kinds: one table, trainable_kinds(), a line per kind with its name, one line
/// of help, its own `[trainable]` keys, how it reads, checks and prints them, its traits and
/// its factory. The config layer hands the kind's keys over unread (config::TrainableKeys, with
/// their file:line); the driver, the worker, `check`, `simulate` and `eval` ask the traits
/// and never compare kind names. A new kind is its own file pair and one line in the table
/// (docs/architecture.md, "Adding a trainable kind").

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "train/trainable.h"

namespace ranktune::train {

/// What the layers around a trainable may ask of its kind.
struct TrainableTraits {
  bool can_checkpoint = false;  ///< save() and restore() work (a command only with checkpoint = true)
  bool uses_gpu = false;        ///< it computes on the worker's GPU when it has one
  bool can_gang = false;        ///< it can run as a gang (ranks_per_trial > 1)
  bool can_evaluate = false;    ///< `ranktune eval` can evaluate it on held-out data
  /// Why not, when can_evaluate is false for a reason its options give (a command without
  /// checkpoint = true): said by `ranktune eval`'s refusal. "" otherwise.
  std::string no_evaluation;
  bool writes_logs = false;     ///< its trials write logs beside the results file
  /// It is told torchrun's variables (train::DistributedEnv): a program that does its own
  /// distributed training; the worker agrees on them over the gang (mpi/rendezvous.h).
  bool distributed_env = false;
  /// The metrics it reports (a command: the declared `metrics`, which may be just the
  /// experiment metric).
  std::vector<std::string> metrics;
  /// Its metrics are whatever its program prints (a command), so `metrics` cannot tell
  /// what it never reports: validate() records the objectives and constrained metrics as
  /// the config names them instead of refusing those not in `metrics`.
  bool open_metrics = false;
  /// Parameters that change the shape of its state (a layer's width): a checkpoint saved
  /// with one value cannot be loaded with another, so PBT may not mutate them (validate()).
  std::vector<std::string> shape_params;
};

/// One trainable kind: a line of trainable_kinds().
struct TrainableKind {
  const char* name;
  const char* help;  ///< one line
  /// Its own `[trainable]` keys (besides `kind`); a key of another kind is refused as such.
  const std::vector<std::string>& (*keys)();
  /// Reads its keys, defaults for the absent ones; may set cfg.trainable.metrics. Throws
  /// config::ConfigError (through `keys`).
  std::shared_ptr<const config::TrainableOptions> (*read)(const config::TrainableKeys& keys, config::ExperimentConfig& cfg);
  /// Checks what only the kind knows (the function exists, the program runs, the data is
  /// there) against the rest of the config. Throws config::ConfigError (cfg.fail).
  void (*check)(const config::ExperimentConfig& cfg);
  TrainableTraits (*traits)(const config::TrainableSpec& spec);
  /// Builds a trainable; only reads the spec (a command is not started before setup()).
  std::unique_ptr<Trainable> (*make)(const config::TrainableSpec& spec);
  /// Why it cannot run as a gang, for the error (nullptr: it can).
  const char* no_gang = nullptr;
  /// `ranktune eval`, for kinds that can_evaluate: the spec on the compute asked for
  /// (device "auto", "cpu" or "cuda"; threads 0: as configured) and what the evaluation's
  /// manifest records of the trainable besides its kind and seed.
  config::TrainableSpec (*on_compute)(const config::TrainableSpec& spec, const std::string& device, int threads) = nullptr;
  nlohmann::json (*describe)(const config::TrainableSpec& spec) = nullptr;
};

/// Every kind, in the order messages list them.
const std::vector<TrainableKind>& trainable_kinds();
std::vector<std::string> trainable_kind_names();
/// The kind of `spec`. Throws std::invalid_argument naming the valid kinds.
const TrainableKind& kind_of(const config::TrainableSpec& spec);

/// The traits of `spec`'s kind with its options. Throws std::invalid_argument.
TrainableTraits traits(const config::TrainableSpec& spec);

/// Reads `[trainable]`: checks the kind against the table, refuses keys of other kinds and
/// unknown keys, lets the kind read its own, and refuses a gang of a kind that cannot run as
/// one. Does nothing more once cfg.trainable.options is set (a spec built in code, or read
/// before). Throws config::ConfigError at file:line:key. validate() calls it; so must every
/// caller of config::parse_config that builds or describes the trainable.
void read_trainable(config::ExperimentConfig& cfg);

/// The folder relative paths of the config are relative to.
std::filesystem::path config_dir(const config::ExperimentConfig& cfg);

}  // namespace ranktune::train
