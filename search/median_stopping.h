#pragma once
/// Median stopping rule: Golovin et al., "Google Vizier: A Service for Black-Box
/// Optimization", KDD 2017, section 3.2.1; behaves as Tune's MedianStoppingRule with
/// time_attr = training_iteration and hard_stop = true.
///
/// Rule. Let t = trial.iterations (the time unit is one iteration) and s = sign(mode) * metric
/// the score (bigger is better; a non-finite value scores -inf, the worst). At t >=
/// `grace_period`, let O be the set of OTHER trials that recorded a score at iteration t
/// (running or finished; their record is kept after they end). When |O| >=
/// `min_samples_required`, the trial is stopped iff its statistic is strictly below
/// median{ running average of o's scores over iterations 1..t : o in O }. The median of an
/// even count is the mean of the two middle values.
///
/// Options (`[scheduler]` keys):
///   - `grace_period` (integer >= 1, default 1, iterations): no trial is stopped at t below it.
///     Tune's default is 60 s of wall time; iterations are our time unit, and 1 is Vizier's
///     rule (any step).
///   - `min_samples_required` (integer >= 1, default 3, as Tune): the fewest other trials
///     with a score at t needed for a decision.
///   - `statistic` ("best" | "average", default "best"): what of the trial is compared with
///     the median: its best score so far (the paper and Tune), or its running average up to t
///     (stricter on noisy curves).
///
/// A retried attempt starts from iteration 1, so its earlier attempt's records are dropped
/// when its first result arrives; a trial that ends in Error is dropped too. The last result
/// of a trial stopped at max_t (which the controller decides without asking) is recorded in
/// on_trial_complete.
///
/// Cost. Each iteration t keeps a RankSplit of the running averages recorded at t, and each
/// trial its running sum, so a result costs O(log n_t) (n_t: trials that reached t), never a
/// scan of the history. Memory is one double per recorded result. Errors and retries cost
/// O(T log n) for the T iterations removed.
///
/// Never pauses. choose_trial_to_run is FIFO's.

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "search/early_stopping.h"
#include "search/fifo_scheduler.h"
#include "search/scheduler.h"

namespace ranktune::search {

class MedianStoppingScheduler final : public Scheduler {
 public:
  enum class Statistic { Best, Average };

  /// Reads the options above; throws OptionError for a bad or unknown key.
  MedianStoppingScheduler(SchedulerContext ctx, const Options& options);

  Decision on_trial_result(const Trial& trial) override;
  /// max(iterations + 1, grace_period): no Stop comes before the grace period ends.
  std::int64_t next_decision(const Trial& trial) const override {
    return std::max(trial.iterations + 1, grace_period_);
  }
  void on_trial_complete(const Trial& trial) override;
  void on_trial_error(const Trial& trial) override;
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override {
    return order_.next(trials);
  }
  void on_trial_requeued(const Trial& trial) override { order_.requeued(trial); }
  /// Line-based text: a header line, then one line per trial (see the .cc).
  std::string save() const override;
  /// Restores what save() gave, exactly. Throws std::invalid_argument on a bad state and
  /// then keeps the current state.
  void restore(const std::string& state) override;

  std::int64_t grace_period() const { return grace_period_; }
  std::int64_t min_samples_required() const { return min_samples_required_; }
  Statistic statistic() const { return statistic_; }

 private:
  FifoOrder order_;
  /// What one attempt of one trial recorded.
  struct TrialRecord {
    int attempt = 0;
    std::int64_t seen = 0;  ///< the last iteration recorded
    std::int64_t n = 0;     ///< scores summed (results that carried the metric)
    double sum = 0;         ///< sum of the scores
    double best = 0;        ///< best score; meaningful when n > 0
    std::vector<double> means;  ///< means[t-1]: running average recorded at t, NaN if none
  };

  /// The record of `trial`'s current attempt; an earlier attempt's records are dropped.
  TrialRecord& record_for(const Trial& trial);
  /// Adds `trial`'s latest result to `r` and to the iteration's split, once per iteration.
  void add_result(TrialRecord& r, const Trial& trial);
  /// Removes `r`'s running averages from the per-iteration splits.
  void forget(const TrialRecord& r);
  /// Median of the running averages recorded at iteration t (1-based); size must be > 0.
  double median_at(std::int64_t t);

  SchedulerContext ctx_;
  std::int64_t grace_period_ = 1;
  std::int64_t min_samples_required_ = 3;
  Statistic statistic_ = Statistic::Best;
  std::map<TrialId, TrialRecord> records_;
  std::vector<RankSplit> at_t_;  ///< at_t_[t-1]: running averages recorded at iteration t
};

}  // namespace ranktune::search
