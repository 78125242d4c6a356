#pragma once
/// Held-out classification metrics from logits: mean cross-entropy, top-k accuracy and the
/// confusion matrix, accumulated batch by batch. Pure. The loss is computed exactly as the
/// CPU engine computes it during training (float log-sum-exp per row, summed in double in
/// row order), so a held-out figure from logits equals the engine's own to the bit.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ranktune::train {

class ClassificationMetrics {
 public:
  /// `top_k`: the k of each top-k accuracy (1 <= k); k at or above `classes` counts every
  /// sample as correct, which is what it means.
  ClassificationMetrics(int classes, std::vector<int> top_k);

  /// Adds `labels.size()` samples whose logits are `logits` (row-major, `classes` per row).
  /// Ties in the ranking go to the lower class, as the engines' argmax does: a label's rank
  /// is the number of classes with a larger logit plus those before it with an equal one.
  void add(std::span<const float> logits, std::span<const std::uint8_t> labels);

  std::int64_t samples() const { return samples_; }
  double loss() const;      ///< mean cross-entropy
  double accuracy() const;  ///< top-1
  /// Accuracy at top_k[i].
  double top_k_accuracy(std::size_t i) const;
  const std::vector<int>& top_k() const { return top_k_; }
  /// classes x classes, row = the true label, column = the top-1 prediction.
  const std::vector<std::int64_t>& confusion() const { return confusion_; }
  int classes() const { return classes_; }

 private:
  int classes_;
  std::vector<int> top_k_;
  std::int64_t samples_ = 0;
  double loss_sum_ = 0;
  std::vector<std::int64_t> within_k_;  // per top_k entry
  std::vector<std::int64_t> confusion_;
};

/// The input types a held-out pipeline may round its inputs to (config::EvalPipeline).
enum class InputCast { None = 0, Float16 = 1, Bfloat16 = 2 };  // the values the CUDA gather takes

/// "float32", "float16" or "bfloat16" as an InputCast; throws std::invalid_argument otherwise.
InputCast parse_input_cast(const std::string& dtype);

/// `x` rounded to the nearest IEEE binary16 value (ties to even), as a float: what a model
/// fed float16 inputs sees. Overflow gives infinity, as the conversion does.
float round_to_float16(float x);
/// `x` rounded to the nearest bfloat16 value (ties to even), as a float.
float round_to_bfloat16(float x);

}  // namespace ranktune::train
