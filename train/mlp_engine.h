#pragma once
/// Where the MLP's arithmetic runs: the CPU (OpenBLAS) or a CUDA device (cuBLAS and our
/// kernels). An engine owns the parameters, their gradient, the optimizer state and, on a
/// GPU, a device copy of the images; the MlpTrainable drives it batch by batch. Both engines
/// follow the same MlpShape layout and the same counter-based dropout, so their results
/// agree up to floating-point rounding.

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "train/classification.h"
#include "train/collective.h"
#include "train/mlp_model.h"
#include "train/mnist.h"
#include "train/optimizer.h"
#include "train/predict_timing.h"

namespace ranktune::train {

/// Summed loss and correct predictions over some rows.
struct EvalSums {
  double loss_sum = 0;
  double correct = 0;
};

class MlpEngine {
 public:
  virtual ~MlpEngine() = default;
  /// "cpu" or "cuda:N": where this engine computes.
  virtual std::string path() const = 0;

  /// The rows that training batches refer to (an epoch's order of training-image indices).
  virtual void set_order(std::span<const std::int32_t> rows) = 0;

  virtual void set_params(std::span<const float> params) = 0;
  virtual void get_params(std::span<float> params) = 0;
  virtual void set_optimizer_state(const OptimizerState& state) = 0;
  virtual void get_optimizer_state(OptimizerState& state) = 0;

  /// The gradient of the mean cross-entropy over a batch of `global_batch` rows, from this
  /// member's part of it: order[begin, begin + count), which sits at position `first_row`
  /// of the batch. Adds those rows' summed loss to the loss accumulator. `dropout` is the
  /// drop probability and `key` the batch's dropout key.
  virtual void forward_backward(std::int64_t begin, std::int64_t count, std::int64_t first_row,
                                std::int64_t global_batch, float dropout, std::uint64_t key) = 0;
  /// Copies member 0's parameters to every member of the gang.
  virtual void broadcast_params(Collective& collective) = 0;
  /// Sums the gradient over the gang (each member holds its rows' share of the mean).
  virtual void allreduce_gradient(Collective& collective) = 0;
  /// Applies the optimizer to the gradient.
  virtual void update(const OptimizerSettings& settings) = 0;
  /// Returns the loss accumulated since the last call, and clears it.
  virtual double take_loss_sum() = 0;
  /// Loss and accuracy sums over `rows` (no dropout).
  virtual EvalSums evaluate(std::span<const std::int32_t> rows) = 0;
  /// Predicts the class of each of `rows` as one batch (no dropout), into host memory
  /// (predictions()), and times its three parts: preprocessing (gathering the rows' pixels
  /// as floats in the input buffer), inference (the forward pass), postprocessing (softmax
  /// and argmax, the classes copied to the host). A GPU engine synchronizes after each.
  virtual PredictTiming predict(std::span<const std::int32_t> rows) = 0;
  /// The classes of the last predict()'s rows.
  virtual std::span<const std::int32_t> predictions() const = 0;

  // The held-out pipeline (`ranktune eval`): how pixels become inputs, and the logits.
  /// Inputs are pixel * `scale`, then rounded to `cast`. Training's pipeline, the default,
  /// is (1/255, None); an engine that evaluates held-out data may be given another.
  virtual void set_input_pipeline(float scale, InputCast cast) = 0;
  /// The logits of `rows` (no dropout), row-major, `classes` per row, into `out` in host
  /// memory; `out.size()` must be rows.size() * classes.
  virtual void logits(std::span<const std::int32_t> rows, std::span<float> out) = 0;
};

/// A CPU engine on OpenBLAS with `threads` BLAS threads.
std::unique_ptr<MlpEngine> make_cpu_engine(const MlpShape& shape, OptimizerKind kind,
                                           std::shared_ptr<const ImageSet> images, int threads);

/// A CUDA engine on `device`, or nullptr when the build has no CUDA or the device cannot be
/// used (no GPU: cudaGetDeviceCount fails). `why` says why not.
std::unique_ptr<MlpEngine> make_cuda_engine(const MlpShape& shape, OptimizerKind kind,
                                            std::shared_ptr<const ImageSet> images, int device,
                                            std::string& why);

}  // namespace ranktune::train
