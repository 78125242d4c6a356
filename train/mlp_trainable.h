#pragma once
/// The `mlp` trainable: a multi-layer perceptron on Fashion-MNIST (or MNIST), trained with
/// SGD+momentum or Adam on the CPU (OpenBLAS) or a CUDA device, alone or data-parallel in a
/// gang (Context::collective).
///
/// Hyperparameters (the trial's config; every one optional):
///   hidden         string "256-128" (or an integer: one layer)   default "256-128"
///   depth, width   integers: `depth` hidden layers of `width`    (instead of hidden)
///   activation     "relu" | "tanh"                               default "relu"
///   optimizer      "sgd" | "adam"                                default "sgd"
///   lr             > 0                                           default 0.05 (sgd), 0.001 (adam)
///   momentum       [0, 1)   (sgd)                                default 0.9
///   beta1, beta2   [0, 1)   (adam)                               default 0.9, 0.999
///   weight_decay   >= 0 (L2 added to the gradient)               default 0
///   batch_size     integer >= 1                                  default 128
///   dropout        [0, 1) on every hidden layer's output         default 0
///   init_seed      integer >= 0                                  default: from (experiment seed, trial id)
///
/// A step trains `batches_per_step` batches, or one epoch when that is 0, then evaluates on
/// the validation split. Metrics: train_loss (mean over the step's batches), val_loss,
/// val_accuracy, samples_per_s (training samples / training seconds, the whole gang),
/// step_time_s (the step's wall time, evaluation included).
///
/// Gangs (Context::collective set): every member calls setup, step, restore in lockstep.
/// Each takes rows [b*r/k, b*(r+1)/k) of every global batch of b rows (member r of k), the
/// gradients (each already scaled by 1/b) are summed by the collective, and every member
/// applies the same update, so the weights stay identical. Validation is split the same way
/// and summed. All members return the same metrics; the leader's are the ones to report, and
/// the leader's save() is the gang's checkpoint.
///
/// Determinism: the split (seeded by the experiment seed, so every trial shares it), the
/// epoch orders, the dropout masks and the initial weights are pure functions of seeds and
/// counters. The checkpoint holds the weights, the optimizer state and those counters and
/// keys, so training resumed from it on the CPU continues bit for bit.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/mlp_engine.h"
#include "train/registry.h"
#include "train/trainable.h"

namespace ranktune::train {

/// One trial's hyperparameters, resolved.
struct MlpHyper {
  std::vector<int> hidden = {256, 128};
  Activation activation = Activation::Relu;
  OptimizerSettings optimizer;
  std::int64_t batch_size = 128;
  float dropout = 0;
  std::uint64_t init_seed = 0;
};

/// The hyperparameter names the mlp trainable reads.
const std::vector<std::string>& mlp_param_names();

/// Reads the hyperparameters from a trial config. `default_seed` is the init_seed when the
/// config has none. Throws std::invalid_argument naming the parameter and what is valid.
MlpHyper parse_mlp_hyper(const search::Config& config, std::uint64_t default_seed);

/// The metrics each step reports, in order.
const std::vector<std::string>& mlp_metrics();

/// `[trainable] kind = "mlp"`: its own keys (configs/README.md).
struct MlpOptions : config::TrainableOptions {
  static constexpr const char* kKind = "mlp";
  std::string data_dir;                 ///< IDX folder, absolute after loading ("" = Debian's Fashion-MNIST)
  double val_fraction = 0.1;            ///< share of the 60k training images held out for validation
  std::int64_t batches_per_step = 0;    ///< batches per step; 0: one epoch
  int threads_per_worker = 1;           ///< BLAS threads of each worker (CPU path)
  std::string device = "auto";          ///< "auto" (the worker's GPU if any), "cpu" or "cuda"
  std::int64_t train_samples = 0;       ///< use only this many training images (0: all)
  std::int64_t val_samples = 0;         ///< use only this many validation images (0: all)
  void print(config::TomlWriter& out, const std::vector<std::string>& metrics) const override;
};

/// The mlp kind: its line of trainable_kinds() (train/registry.h).
TrainableKind mlp_kind();

class MlpTrainable : public Trainable {
 public:
  explicit MlpTrainable(const config::TrainableSpec& spec);
  ~MlpTrainable() override;

  /// Loads the data (once per process and folder), builds the engine (GPU when the context
  /// names one and the spec allows it, else CPU) and initializes the weights; in a gang the
  /// leader's weights are broadcast. Throws TrialFailure (bad hyperparameters, missing data).
  void setup(const search::Config& config, const Context& context) override;
  StepResult step() override;

  bool can_checkpoint() const override { return true; }
  void save(CheckpointWriter& out) override;
  /// Every member of a gang must restore the same checkpoint.
  void restore(CheckpointReader& in) override;

  /// "cpu" or "cuda:N": where this trial computes.
  const std::string& path() const { return path_; }
  /// Why the GPU was not used, when the context offered one ("" otherwise).
  const std::string& path_note() const { return path_note_; }
  /// BLAS threads per worker (CPU path).
  int threads() const { return threads_; }
  ComputeInfo compute_info() const override { return {path_, threads_}; }
  /// Gang size (1 alone).
  int gang_size() const;
  /// Seconds spent in the gradient allreduce during the last step (0 alone).
  double last_allreduce_s() const { return allreduce_s_; }
  /// The current weights (flat, MlpShape layout).
  std::vector<float> parameters();
  const MlpShape& shape() const { return shape_; }
  const MlpHyper& hyper() const { return hyper_; }

  /// Held-out evaluation (loaded on the first call, on the same path as training: CPU or
  /// GPU) as Context::eval says: the t10k test files of the data folder (or of
  /// EvalSettings::data_dir), or the experiment's validation split; inputs through the
  /// pipeline asked for (normalized or raw, float32/float16/bfloat16); <split>_loss,
  /// <split>_accuracy, <split>_top<k>_accuracy and the confusion matrix from the logits.
  /// Never called during a search.
  bool can_evaluate() const override { return true; }
  HeldOutResult evaluate_held_out() override;
  /// Inference of test images [first, first + count): forward pass, softmax and argmax.
  PredictTiming predict(std::int64_t first, std::int64_t count) override;

 private:
  void start_epoch();

  MlpOptions spec_;
  Context context_;
  MlpHyper hyper_;
  MlpShape shape_;
  std::shared_ptr<const ImageSet> images_;
  std::vector<std::int32_t> train_rows_, val_rows_, order_;
  std::unique_ptr<MlpEngine> engine_;
  // Held-out evaluation: the test images on an engine of their own (same path as engine_).
  std::unique_ptr<MlpEngine> test_engine_;
  std::vector<std::int32_t> test_rows_;
  std::shared_ptr<const ImageSet> test_images_;  // the images test_rows_ index
  std::vector<DataFile> test_files_;
  std::string path_ = "cpu", path_note_;
  int threads_ = 1;
  bool params_shared_ = false;  ///< the leader's weights were broadcast to the gang
  double allreduce_s_ = 0;
  // Training position: epoch_ is the current epoch, pos_ the next row of its order.
  std::int64_t epoch_ = 0, pos_ = 0, batches_ = 0, steps_ = 0;
  std::uint64_t data_key_ = 0, dropout_key_ = 0;
};

}  // namespace ranktune::train
