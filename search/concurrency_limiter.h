#pragma once
/// ConcurrencyLimiter (Tune's `ConcurrencyLimiter`, `tune.search.ConcurrencyLimiter`): caps
/// the number of live trials of any searcher. Model-based searchers learn only from
/// completed trials, so fewer trials in flight means each suggestion sees more results.

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "search/searcher.h"

namespace ranktune::search {

class ConcurrencyLimiter final : public Searcher {
 public:
  /// Wraps `inner`; at most `max_concurrent` (>= 1) trials are live at once.
  /// Throws std::invalid_argument when `inner` is null or `max_concurrent` < 1.
  ConcurrencyLimiter(std::unique_ptr<Searcher> inner, std::int64_t max_concurrent);

  /// NotNow while `live()` >= max_concurrent; otherwise asks the inner searcher.
  /// A trial is live from its Config suggestion until its on_trial_complete.
  Suggestion suggest(TrialId id) override;
  void on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) override;
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override;
  std::int64_t total() const override { return inner_->total(); }
  std::string extend(std::int64_t n) override { return inner_->extend(n); }
  /// Text: "concurrency_limiter 1", the live trial ids, then the inner searcher's state,
  /// length-prefixed so that it may contain any bytes.
  std::string save() const override;
  /// The limit is not part of the state: the one given to the constructor applies.
  void restore(const std::string& state) override;

  std::size_t live() const { return live_.size(); }
  std::int64_t max_concurrent() const { return max_concurrent_; }
  const Searcher& inner() const { return *inner_; }

 private:
  std::unique_ptr<Searcher> inner_;
  std::int64_t max_concurrent_;
  std::set<TrialId> live_;
};

}  // namespace ranktune::search
