#pragma once
/// Repeater (Tune's `Repeater`, `tune.search.Repeater`): evaluates every config the inner
/// searcher suggests `repeat` times, as consecutive trials with their own ids (so each has
/// its own noise stream and RANKTUNE_TRIAL_ID), and tells the inner searcher the mean.
/// It averages out noisy objectives for model-based searchers.
///
/// The inner searcher sees groups, not trials: a group is known to it by the id of the
/// group's first trial. When the last trial of a group completes, the inner searcher gets one
/// on_trial_complete(first id, {metric: mean}, error) where the mean is over the members'
/// final `metric` values (SearcherOptions::metric) that are finite and not from errored
/// trials; error is true only when every member errored. When no member errored but none
/// has a finite value, the metric is reported as NaN (without error).
///
/// Intermediate results are not forwarded: they belong to single trials, and a result of
/// one member under the group's id would mix the members' curves in the inner searcher.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "search/searcher.h"

namespace ranktune::search {

class Repeater final : public Searcher {
 public:
  /// Wraps `inner`; each of its configs runs `repeat` (>= 1) times, and `metric` is
  /// averaged. Throws std::invalid_argument when `inner` is null or `repeat` < 1.
  Repeater(std::unique_ptr<Searcher> inner, std::int64_t repeat, std::string metric);

  /// Suggests the current group's config until it has `repeat` trials; then asks the
  /// inner searcher (with the new trial's id) for the next group. NotNow and Finished from
  /// the inner searcher pass through.
  Suggestion suggest(TrialId id) override;
  /// Not forwarded (see the file comment).
  void on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) override {}
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override;
  /// inner total × repeat, or -1 when the inner total is unknown.
  std::int64_t total() const override;
  /// Whole groups only: `n` must be a multiple of `repeat`.
  std::string extend(std::int64_t n) override;
  /// Text: "repeater 1", repeat, the group being suggested, the open groups, then the
  /// inner searcher's state, length-prefixed.
  std::string save() const override;
  /// Throws std::invalid_argument on a bad state or one saved with another `repeat`.
  void restore(const std::string& state) override;

  std::int64_t repeat() const { return repeat_; }
  const Searcher& inner() const { return *inner_; }

 private:
  /// A config's trials whose completion the inner searcher still waits for.
  struct Group {
    std::int64_t left = 0;   ///< members not yet complete (suggested or not)
    std::int64_t valid = 0;  ///< members with a finite metric, not errored
    std::int64_t errors = 0; ///< errored members
    double sum = 0;          ///< of the valid members' metric
  };

  std::unique_ptr<Searcher> inner_;
  std::int64_t repeat_;
  std::string metric_;
  Config config_;             ///< the config of the group being suggested
  TrialId current_ = 0;       ///< its first trial id; 0 when no group is being suggested
  std::int64_t to_suggest_ = 0;  ///< trials of the current group still to suggest
  std::map<TrialId, Group> groups_;   ///< open groups by first trial id
  std::map<TrialId, TrialId> member_of_;  ///< suggested, not complete: trial -> first id
};

}  // namespace ranktune::search
