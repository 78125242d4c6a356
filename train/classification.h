#pragma once
/// Held-out classification metrics from logits: mean cross-entropy, top-k accuracy and the
/// confusion matrix, accumulated batch by batch. Pure. The loss is computed exactly as the
/// CPU engine computes it during training (float log-sum-exp per row, summed in double in
/// row order), so a held-out figure from logits equals the engine's own to the bit.

#include <bit>
#include <cmath>
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

// The two casts run once per input pixel, in the preprocessing that `ranktune eval` times:
// inline and on the bits, so that they cost what a real cast costs, not a call per pixel.

/// `x` rounded to the nearest IEEE binary16 value (ties to even), as a float: what a model
/// fed float16 inputs sees. Overflow gives infinity, as the conversion does.
inline float round_to_float16(float x) {
  // Every case computed and one selected, without a branch or a call, so the loop over the
  // pixels vectorizes.
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = bits & 0x80000000u, mag = bits & 0x7FFFFFFFu;
  // Normal halves: ten fraction bits kept of float's 23; round the low 13 away, ties to
  // even; a carry into the exponent is the right result.
  const std::uint32_t normal = (mag + 0x0FFFu + ((mag >> 13) & 1u)) & ~0x1FFFu;
  // Below 2^-14 the spacing of halves is 2^-24 (subnormals): adding and taking away 0.5,
  // whose last bit is 2^-24, rounds to it (to nearest even; IEEE arithmetic, which the
  // compiler may not fold without -ffast-math).
  const float a = std::bit_cast<float>(mag);
  const std::uint32_t subnormal = std::bit_cast<std::uint32_t>((a + 0.5f) - 0.5f);
  // From 65520 on the rounding overflows to infinity; infinity and NaN stay what they are.
  const std::uint32_t big = mag >= 0x7F800000u ? mag : 0x7F800000u;
  // Selected with masks: a conditional here made GCC give up vectorizing the loop.
  const std::uint32_t is_sub = 0u - static_cast<std::uint32_t>(mag < 0x38800000u);
  const std::uint32_t is_big = 0u - static_cast<std::uint32_t>(mag >= 0x477FF000u);
  const std::uint32_t r = (subnormal & is_sub) | (normal & ~is_sub);
  return std::bit_cast<float>(sign | (big & is_big) | (r & ~is_big));
}

/// `x` rounded to the nearest bfloat16 value (ties to even), as a float.
inline float round_to_bfloat16(float x) {
  if (std::isnan(x)) return x;
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  u += 0x7FFFu + ((u >> 16) & 1u);  // round the low 16 bits away, ties to even
  return std::bit_cast<float>(u & 0xFFFF0000u);
}

}  // namespace ranktune::train
