// The early-stopping schedulers' shared parts: a result's score and the RankSplit
// order-statistics split (search/early_stopping.h).
#include "search/early_stopping.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ranktune::search {

std::optional<double> latest_score(const Trial& trial, const SchedulerContext& ctx) {
  const auto it = trial.last_metrics.find(ctx.metric);
  if (it == trial.last_metrics.end()) return std::nullopt;
  // Mapping every non-finite value to -inf keeps NaN out of the ordered containers (where it
  // would break strict weak ordering) and makes a diverged trial lose every comparison.
  if (!std::isfinite(it->second)) return -std::numeric_limits<double>::infinity();
  return sign(ctx.mode) * it->second;
}

void RankSplit::insert(double v) {
  // Insert on the side that keeps the lower <= upper invariant; the sizes are fixed by the
  // next split_at.
  if (!upper_.empty() && v >= *upper_.begin()) {
    upper_.insert(v);
  } else {
    lower_.insert(v);
  }
}

bool RankSplit::erase(double v) {
  if (auto it = lower_.find(v); it != lower_.end()) {
    lower_.erase(it);
    return true;
  }
  if (auto it = upper_.find(v); it != upper_.end()) {
    upper_.erase(it);
    return true;
  }
  return false;
}

void RankSplit::split_at(std::size_t k) {
  while (lower_.size() > k) {
    auto it = std::prev(lower_.end());
    upper_.insert(upper_.begin(), *it);  // it is <= every upper value: hint at the front
    lower_.erase(it);
  }
  while (lower_.size() < k && !upper_.empty()) {
    lower_.insert(lower_.end(), *upper_.begin());
    upper_.erase(upper_.begin());
  }
}

std::vector<double> RankSplit::values() const {
  std::vector<double> out(lower_.begin(), lower_.end());
  out.insert(out.end(), upper_.begin(), upper_.end());
  return out;
}

}  // namespace ranktune::search
