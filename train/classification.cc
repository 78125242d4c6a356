// Held-out classification metrics and input casts (train/classification.h).
#include "train/classification.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ranktune::train {

ClassificationMetrics::ClassificationMetrics(int classes, std::vector<int> top_k)
    : classes_(classes), top_k_(std::move(top_k)), within_k_(top_k_.size(), 0),
      confusion_(static_cast<std::size_t>(classes) * static_cast<std::size_t>(classes), 0) {
  if (classes < 1) throw std::invalid_argument("a classifier needs at least one class");
  for (const int k : top_k_)
    if (k < 1) throw std::invalid_argument("top-k accuracy needs k >= 1 (got " + std::to_string(k) + ")");
}

void ClassificationMetrics::add(std::span<const float> logits, std::span<const std::uint8_t> labels) {
  const std::size_t c = static_cast<std::size_t>(classes_);
  if (logits.size() != labels.size() * c)
    throw std::invalid_argument("logits hold " + std::to_string(logits.size()) + " values for " +
                                std::to_string(labels.size()) + " samples of " + std::to_string(classes_) +
                                " classes");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const float* z = logits.data() + i * c;
    const int y = labels[i];
    if (y >= classes_)
      throw std::invalid_argument("label " + std::to_string(y) + " is not one of the " + std::to_string(classes_) +
                                  " classes");
    // The CPU engine's softmax_row, term for term.
    const float zmax = *std::max_element(z, z + c);
    float sum = 0;
    for (std::size_t k = 0; k < c; ++k) sum += std::exp(z[k] - zmax);
    loss_sum_ += static_cast<double>(std::log(sum) - (z[y] - zmax));
    std::size_t rank = 0;
    for (std::size_t k = 0; k < c; ++k)
      rank += z[k] > z[y] || (z[k] == z[y] && static_cast<int>(k) < y) ? 1 : 0;
    for (std::size_t j = 0; j < top_k_.size(); ++j) within_k_[j] += rank < static_cast<std::size_t>(top_k_[j]) ? 1 : 0;
    const auto best = static_cast<std::size_t>(std::max_element(z, z + c) - z);  // first maximum
    ++confusion_[static_cast<std::size_t>(y) * c + best];
  }
  samples_ += static_cast<std::int64_t>(labels.size());
}

double ClassificationMetrics::loss() const { return loss_sum_ / static_cast<double>(samples_); }

double ClassificationMetrics::accuracy() const {
  std::int64_t correct = 0;
  for (int k = 0; k < classes_; ++k) correct += confusion_[static_cast<std::size_t>(k) * classes_ + k];
  return static_cast<double>(correct) / static_cast<double>(samples_);
}

double ClassificationMetrics::top_k_accuracy(std::size_t i) const {
  return static_cast<double>(within_k_.at(i)) / static_cast<double>(samples_);
}

InputCast parse_input_cast(const std::string& dtype) {
  if (dtype == "float32") return InputCast::None;
  if (dtype == "float16") return InputCast::Float16;
  if (dtype == "bfloat16") return InputCast::Bfloat16;
  throw std::invalid_argument("unknown input dtype '" + dtype + "'; valid: float32, float16, bfloat16");
}

float round_to_float16(float x) {
  // On the bits, without a branch per case of frexp: this runs once per input pixel, in the
  // preprocessing that `ranktune eval` times.
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = bits & 0x80000000u, mag = bits & 0x7FFFFFFFu;
  if (mag >= 0x7F800000u) return x;                                    // inf, NaN
  if (mag >= 0x477FF000u) return std::bit_cast<float>(sign | 0x7F800000u);  // >= 65520: inf
  if (mag < 0x38800000u) {
    // Below 2^-14 the half spacing is 2^-24: adding and taking away 2^-1 rounds to it (to
    // nearest even, in the default rounding mode) since 2^-1 has its last bit at 2^-24.
    volatile float big = 0.5f;  // volatile: the sum must be rounded, not folded away
    const float a = std::bit_cast<float>(mag);
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>((a + big) - big));
  }
  // Ten fraction bits kept of float's 23: round the low 13 away, ties to even; a carry
  // into the exponent is the right result.
  const std::uint32_t rounded = (mag + 0x0FFFu + ((mag >> 13) & 1u)) & ~0x1FFFu;
  return std::bit_cast<float>(sign | rounded);
}

float round_to_bfloat16(float x) {
  if (std::isnan(x)) return x;
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  u += 0x7FFFu + ((u >> 16) & 1u);  // round the low 16 bits away, ties to even
  return std::bit_cast<float>(u & 0xFFFF0000u);
}

}  // namespace ranktune::train
