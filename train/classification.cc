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

}  // namespace ranktune::train
