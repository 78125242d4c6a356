#pragma once
/// The optimizers of the MLP over flat parameter buffers (CPU versions; the GPU engine has
/// kernels with the same arithmetic). Weight decay is classic L2: `weight_decay * w` is added
/// to the gradient before the update, for SGD and Adam alike (PyTorch's `weight_decay`).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ranktune::train {

enum class OptimizerKind { Sgd, Adam };

/// "sgd" or "adam". Throws std::invalid_argument naming the valid values.
OptimizerKind parse_optimizer(const std::string& name);
const char* optimizer_name(OptimizerKind k);

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::Sgd;
  float lr = 0.05f;
  float momentum = 0.9f;   ///< SGD: v = momentum * v + g; w -= lr * v (PyTorch's form)
  float beta1 = 0.9f;      ///< Adam
  float beta2 = 0.999f;    ///< Adam
  float eps = 1e-8f;       ///< Adam
  float weight_decay = 0.0f;
};

/// The optimizer's memory: SGD uses `m` (the velocity), Adam `m` and `v`; `t` counts the
/// updates done (Adam's bias correction).
struct OptimizerState {
  std::vector<float> m, v;
  std::int64_t t = 0;
  /// Zeroed slots for `n` parameters, as `kind` needs them.
  void reset(OptimizerKind kind, std::size_t n);
};

/// One update of `params` by `grad`. Deterministic: element by element, in order.
void optimizer_step(const OptimizerSettings& s, std::span<float> params, std::span<const float> grad,
                    OptimizerState& state);

}  // namespace ranktune::train
