#pragma once
/// One leader's held-out evaluation (`ranktune eval`): its trainable is rebuilt from the
/// experiment's config and the trial's hyperparameters, restored from the stored
/// checkpoint, evaluated on the held-out split, and timed on batches of held-out samples.
/// A command trainable (a script) is started in evaluation mode instead, evaluates and
/// times itself (ranktune.on_evaluate, ranktune.time_inference), and hands the figures over.
/// Each evaluation carries a manifest that says exactly what was evaluated, on what and
/// how (MLModelScope's evaluation manifests), so the figure can be reproduced and
/// compared.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/latency.h"
#include "eval/leaders.h"
#include "eval/turns.h"
#include "config/config.h"
#include "config/eval_manifest.h"
#include "io/store.h"
#include "train/trainable.h"

namespace ranktune::eval {

/// What the trainable is told (train::EvalSettings: the device, the latency settings, the
/// split, data folder, input pipeline and metrics asked for; it goes into Context::eval as
/// it is), and what only the evaluator uses.
struct EvalOptions : train::EvalSettings {
  EvalOptions() { batch_sizes = {1, 128}; }  // `--batch-sizes`'s default
  std::string pipeline = "reference";       ///< the pipeline's name (config::EvalPipeline::name)
  bool accuracy = true, loss = true;        ///< keep <split>_accuracy and <split>_loss
  /// A parallel evaluation's turns on this node (eval/turns.h): the latency is timed only in a
  /// timing turn, the rest runs in a compute turn. nullptr: no one to share with.
  ComputeTurns* turns = nullptr;
};

/// The options a manifest gives for one of its pipelines.
EvalOptions options_of(const config::EvalManifest& manifest, const config::EvalPipeline& pipeline);

struct LeaderEvaluation {
  Leader leader;
  std::string path;       ///< where it computed: "cpu" or "cuda:N"
  int threads = 1;
  search::Metrics metrics;  ///< held-out metrics (test_loss, test_accuracy, ...)
  std::int64_t samples = 0;  ///< held-out samples evaluated
  std::vector<LatencyStats> latency;
  double seconds = 0;      ///< wall time of this evaluation, restore included
  std::vector<std::int64_t> confusion;  ///< classes x classes (row: true label); empty unless asked for
  int classes = 0;
  nlohmann::json manifest;  ///< what, on what and how: see evaluate_leader()
};

/// Throws std::invalid_argument, naming the file and the trainable's kind, when the
/// experiment's trainable has no held-out evaluation (a synthetic trainable, a command
/// without checkpoint = true): `ranktune eval` asks this before it chooses any leader.
void require_evaluable(const io::ResultsFile& file, const config::ExperimentConfig& cfg);

/// Evaluates one leader. The manifest holds the results file and experiment, the trial and
/// its hyperparameters, the checkpoint (iteration, attempt, size, CRC-32C, score), the
/// trainable spec, the held-out data files (path, size, CRC-32C), the device, path and
/// threads, the latency settings, the ranktune version and the git sha (for a command: its
/// argv and program files with their size and CRC-32C, and the data files its evaluation
/// named). A command's output goes to <results>.logs/eval/trial_<id>_attempt_<k>.log.
/// Throws, with the file and trial named: std::invalid_argument when the trainable cannot
/// be evaluated (a synthetic trainable, a command without checkpoint = true or one that
/// never calls ranktune.on_evaluate()) or set up here (missing data, an unusable device, a
/// bad option); io::StoreError for a checkpoint that is damaged or does not restore; and
/// std::runtime_error when restoring or evaluating fails otherwise (a script's exit, its
/// last line and its output's tail).
LeaderEvaluation evaluate_leader(const io::ResultsFile& file, const config::ExperimentConfig& cfg, const Leader& leader,
                                 const EvalOptions& options);

}  // namespace ranktune::eval
