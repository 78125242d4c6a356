#pragma once
/// Asynchronous Successive Halving (ASHA), stopping variant: Li et al., "A System for
/// Massively Parallel Hyperparameter Tuning", MLSys 2020; behaves as Tune's
/// AsyncHyperBandScheduler (stop_last_trials = true), with the choices marked below.
///
/// Rungs. Bracket s (0 <= s < `brackets`) has rungs at the milestones
/// ceil(grace_period * reduction_factor^(s + k)), k = 0, 1, ..., that lie below `max_t`
/// (a rung at max_t would judge nothing: the controller stops trials there anyway).
/// Trials are assigned to brackets round-robin in the order they are added (trial added
/// n-th, from 0, goes to bracket n mod brackets); Tune draws them from a softmax, which we
/// avoid to keep the scheduler deterministic without a generator.
///
/// Rule. Score s = sign(mode) * metric (bigger is better; non-finite scores -inf, the
/// worst). When a trial's iterations first reach a rung's milestone (the highest rung
/// reached, if a result without the metric skipped one), let x_0 <= ... <= x_{m-1} be the
/// m scores recorded at that rung before it. The cutoff is x_i with
/// i = floor((m - 1) * (1 - 1/reduction_factor)): the (1 - 1/rf) quantile with numpy's
/// "lower" method (Tune uses "linear", which interpolates; "lower" never invents a value,
/// so -inf stays well defined and each decision is an order statistic). The trial is
/// stopped iff s < cutoff (ties continue); the first trial at a rung always continues.
/// Either way its score is then recorded at the rung, and each rung judges a trial once
/// (also across retries, as Tune). Example, rf = 2: with recorded {1, 3, 5} (m = 3),
/// i = floor(2 * 0.5) = 1, cutoff 3: a score 2 stops, a score 3 continues.
///
/// Options (`[scheduler]` keys):
///   - `max_t` (integer >= 1, default: `[stop] max_t`, iterations): bounds the rungs.
///   - `grace_period` (integer >= 1, default 1, iterations): the first rung of bracket 0;
///     no trial is stopped before it.
///   - `reduction_factor` (number > 1, default 4): rung spacing; about 1/rf of the trials
///     reaching a rung go on. With an integer rf, i above is computed exactly.
///   - `brackets` (integer >= 1, default 1): the number of brackets; each must have a rung,
///     i.e. grace_period * rf^(brackets - 1) < max_t.
///
/// The promotion variant (pause at a rung, resume the top 1/rf from their checkpoints) is
/// AshaPromotionScheduler, selected by `variant = "promotion"`. This one never pauses;
/// choose_trial_to_run is FIFO's.
///
/// Cost. Each rung keeps its scores in a RankSplit whose split rank moves by at most one
/// per insertion, so a decision is O(log n) in the trials recorded at the rung plus
/// O(rungs) = O(log_rf(max_t / grace_period)); a result that reaches no new rung is one
/// hash lookup. Memory is one double per (trial, rung reached).

#include <cstdint>
#include <vector>

#include "search/asha_rungs.h"
#include "search/early_stopping.h"

namespace ranktune::search {

/// The rung milestones of bracket s: ceil(grace * rf^(s + k)), k = 0, 1, ..., below max_t,
/// strictly increasing (rounding duplicates dropped). Shared by both ASHA variants. Stops
/// after `limit` + 1 milestones, so that a caller can refuse more than `limit` without
/// computing millions.
std::vector<std::int64_t> asha_milestones(std::int64_t grace, double rf, std::int64_t max_t, int s,
                                          std::size_t limit = kMaxRungs);

/// Throws OptionError (key reduction_factor) when `rungs` exceeds kMaxRungs, saying about how
/// many rungs these options make.
void require_rung_count(const OptionReader& r, std::size_t rungs, std::int64_t grace, double rf,
                        std::int64_t max_t);

/// The rung options both ASHA variants read: `max_t` (default `default_max_t`),
/// `grace_period` and `reduction_factor`, range-checked.
struct AshaRungOptions {
  std::int64_t max_t = 1;
  std::int64_t grace = 1;
  double reduction_factor = 4;
};
AshaRungOptions read_asha_rung_options(OptionReader& r, std::int64_t default_max_t);

class AshaScheduler final : public AshaStoppingBase {
 public:
  /// Reads the options above; throws OptionError for a bad or unknown key.
  AshaScheduler(SchedulerContext ctx, const Options& options);

  Decision on_trial_result(const Trial& trial) override;
  /// Line-based text (see the .cc): bracket assignment, each trial's next rung, each rung's
  /// scores.
  std::string save() const override;
  /// Restores what save() gave, exactly. Throws std::invalid_argument on a bad state, or
  /// one saved with other rungs, and then keeps the current state.
  void restore(const std::string& state) override;

 private:
  SchedulerContext ctx_;
  std::vector<std::vector<RankSplit>> scores_;  ///< scores_[s][k]: the scores recorded at rung k of bracket s
};

}  // namespace ranktune::search
