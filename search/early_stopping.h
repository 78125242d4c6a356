#pragma once
/// Building blocks shared by the early-stopping schedulers (median_stopping, asha): the
/// scheduler's view of a result and an order-statistics split of a multiset. (The text
/// form of their saved state is search/saved_state.h's, as every algorithm's.)

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "search/scheduler.h"

namespace ranktune::search {

/// The experiment metric in `trial.last_metrics` as a score where bigger is better:
/// `sign(ctx.mode) * value`. A non-finite value (NaN, ±inf, possible under
/// non_finite = "worst") is the worst score, -inf. nullopt when the result lacks the metric.
std::optional<double> latest_score(const Trial& trial, const SchedulerContext& ctx);

/// A multiset of scores split in two at a chosen rank: `lower` holds the k smallest values,
/// `upper` the rest. Moving the split by d costs O(d log n), and insert/erase O(log n), so
/// a quantile whose rank moves by at most one per insertion (a median, a 1 - 1/rf quantile)
/// costs O(log n) per update, against O(n) for std::nth_element on every query.
/// Values must not be NaN (scores use -inf for "worst").
class RankSplit {
 public:
  void insert(double v);
  /// Removes one copy of `v`; false if absent.
  bool erase(double v);
  std::size_t size() const { return lower_.size() + upper_.size(); }
  /// Moves values so that exactly min(k, size()) are in `lower`.
  void split_at(std::size_t k);
  /// The largest value in `lower`: the k-th smallest (1-based) after split_at(k). Needs k > 0.
  double max_lower() const { return *lower_.rbegin(); }
  /// The smallest value in `upper`: the (k+1)-th smallest after split_at(k). Needs k < size().
  double min_upper() const { return *upper_.begin(); }
  /// Every value, ascending.
  std::vector<double> values() const;

 private:
  std::multiset<double> lower_, upper_;  // every lower_ value <= every upper_ value
};


}  // namespace ranktune::search
