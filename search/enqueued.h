#pragma once
/// Points to evaluate first (`[search] points_to_evaluate`; Ray Tune's points_to_evaluate,
/// Optuna's enqueue_trial): the given configs are suggested first, in order, and the wrapped
/// algorithm proposes the rest. They count in the trials it plans (its total(), as in Tune's
/// num_samples), and it learns from their results as from its own (Searcher::adopt), so TPE,
/// BOHB and GP start modelling from them.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "search/searcher.h"

namespace ranktune::search {

class Enqueued final : public Searcher {
 public:
  Enqueued(std::unique_ptr<Searcher> inner, std::vector<Config> points);

  Suggestion suggest(TrialId id) override;
  void adopt(TrialId id, const Config& config) override { inner_->adopt(id, config); }
  void on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) override {
    inner_->on_trial_result(id, iteration, metrics);
  }
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override {
    inner_->on_trial_complete(id, last, error);
  }
  std::int64_t total() const override { return inner_->total(); }
  std::string extend(std::int64_t n) override { return inner_->extend(n); }
  /// "enqueued 1", the points suggested so far, then the inner state.
  std::string save() const override;
  void restore(const std::string& state) override;

 private:
  std::unique_ptr<Searcher> inner_;
  std::vector<Config> points_;
  std::int64_t given_ = 0;  ///< points suggested so far
  std::int64_t inner_suggested_ = 0;  ///< configs the algorithm proposed
};

}  // namespace ranktune::search
