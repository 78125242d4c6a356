#pragma once
/// BOHB: Falkner, Klein and Hutter, "BOHB: Robust and Efficient Hyperparameter Optimization
/// at Scale", ICML 2018. The model-based searcher of BOHB; the budgets come from the
/// scheduler, so pair it with `[scheduler] kind = "hyperband"` (the paper's setting) or
/// "asha". With "fifo" every trial runs max_t iterations and BOHB is TPE with random
/// interleaving.
///
/// Observations are kept per budget. The budget of a result is the iteration it reports
/// (Searcher::on_trial_result's `iteration`, the controller's count, which a resumed or
/// retried trial continues from its checkpoint), so a
/// trial that HyperBand promotes to rung 27 is an observation at 1, 2, ..., 27, and one it
/// stops at rung 3 only at 1, 2, 3. A trial whose results the searcher never saw (behind
/// `repeat`, which forwards only the final mean) is one observation at budget 0.
///
/// The model budget is the largest budget with at least `min_points_in_model`
/// observations (none: no budget has that many yet). A budget's count only grows, so the
/// model budget only rises, and observations below it are forgotten: no later suggestion
/// can use them. Each suggestion is random (a draw from the space, as random search makes
/// it) with probability `random_fraction`, or while there is no model budget; otherwise it
/// comes from the Parzen-estimator model (search/parzen.h) fitted to the observations at
/// the model budget, in the order they arrived.
///
/// The density model is TPE's (shared with "tpe"), in its multivariate form by default: as in
/// the paper, l(x) and g(x) are KDEs with product kernels over all parameters, and the
/// suggestion is the best of n_ei_candidates joint draws from l(x). Departures: kernel
/// bandwidths follow TPE's neighbour-gap rule (not the paper's statsmodels bandwidths with
/// bandwidth_factor and min_bandwidth), the good set is TPE's best ceil(gamma n) (not
/// max(N_min, gamma n)), and draws come from l(x) itself (not from widened kernels).
/// gamma and n_ei_candidates play the paper's top_n_percent and num_samples.
///
/// Options (`[search]` keys):
///   - `min_points_in_model` (integer >= 1; default: number of parameters + 1): N_min,
///     the observations a budget needs before the model uses it.
///   - `random_fraction` (number in [0, 1], default 1/3): the share of random suggestions
///     once there is a model, which keeps BOHB's worst case within a constant factor of
///     HyperBand's.
///   - `gamma` (number in (0, 1), default 0.15): fraction of the model budget's
///     observations in the good set l(x).
///   - `n_ei_candidates` (integer >= 1, default 64): draws from l(x) per parameter and
///     suggestion; the one maximizing l(x)/g(x) is suggested.
///   - `prior_weight` (number > 0, default 1): weight of each estimator's prior component.
///   - `multivariate` (boolean, default true): one joint estimator over all parameters;
///     false models each parameter on its own, as "tpe" does by default.
///
/// Errored trials keep the observations they reported before they failed (those were real
/// evaluations); non-finite values are not observations. Every suggestion draws from its
/// own generator, seeded by (seed, suggestion index): the first draw decides random or
/// model, so a suggestion depends only on the seed, its index and the observations so far.
///
/// With several objectives or constraints (SearcherOptions::objectives.multi()) the model at
/// the model budget splits its observations as MOTPE does (search/motpe_split.h: Pareto rank
/// and hypervolume, feasible first; l(x) weighted by hypervolume contribution), the rest as
/// above. An observation is then the Pareto point of a result that reports at least one
/// objective; one that lacks an objective or a constrained metric (a metric reported only at
/// the end, seen at a lower budget) is a failed point there, never good.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "search/num_samples_searcher.h"
#include "search/objectives.h"
#include "search/parzen.h"

namespace ranktune::search {

/// The `[search]` options of algorithm "bohb".
struct BohbOptions {
  std::int64_t min_points_in_model = 0;  ///< >= 1; 0 here means "number of parameters + 1"
  double random_fraction = 1.0 / 3.0;    ///< in [0, 1]
  parzen::ModelOptions model{0.15, 0, 64, 1.0, /*multivariate=*/true};

  /// Reads and range-checks the options for a space of `dims` parameters (filling in the
  /// default of min_points_in_model); throws OptionError for a bad or unknown key.
  static BohbOptions read(const Options& options, std::size_t dims);
};

class BohbSearcher final : public NumSamplesSearcher {
 public:
  /// A min_points_in_model of 0 becomes the number of parameters + 1.
  BohbSearcher(Space space, SearcherOptions options, BohbOptions bohb = {});

  Suggestion suggest(TrialId id) override;
  void on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) override;
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override;
  /// Takes a trial it did not propose as its own (its config joins the model once complete).
  void adopt(TrialId id, const Config& config) override;
  /// Text: the suggestion and random-suggestion counts, the model budget, the objectives
  /// (none for one metric), the trials still needed (id, results seen, complete, point) and
  /// the observations kept, per budget in arrival order (id, value as reported, or Pareto
  /// point). A state saved with other objectives is refused.
  std::string save() const override;
  void restore(const std::string& state) override;

  /// The budget the model is fitted at, or nullopt while no budget has
  /// min_points_in_model observations (every suggestion is then random).
  std::optional<std::int64_t> model_budget() const;
  /// Observations kept at `budget` (0 for any budget below the model budget).
  std::size_t observations(std::int64_t budget) const;
  /// Suggestions that were random draws, of all suggestions so far.
  std::int64_t random_suggestions() const { return random_; }
  std::int64_t suggestions() const { return next_; }
  const BohbOptions& options() const { return bohb_; }

 private:
  struct Run {
    parzen::Point point;
    std::int64_t results = 0;  ///< the budget (iteration) of the latest result
    bool complete = false;
  };
  struct Observation {
    TrialId id;
    double score;        ///< sign(mode) * metric: bigger is better (one objective)
    ParetoPoint pareto;  ///< the result's Pareto point (several objectives; else empty)
  };

  bool multi() const { return options_.objectives.multi(); }
  /// Adds the observation of result `m` of trial `id` at `budget` if `m` is one (it reports
  /// the metric, finite, or with several objectives any of them), and raises the model
  /// budget when `budget` is above it and has enough observations.
  void observe(TrialId id, std::int64_t budget, const Metrics& m);
  /// Drops the budgets below the model budget and the complete trials no kept
  /// observation refers to.
  void forget_below_model_budget();

  Space space_;
  BohbOptions bohb_;
  std::int64_t next_ = 0;     ///< suggestions made so far
  std::int64_t random_ = 0;   ///< of which random
  std::int64_t budget_ = -1;  ///< the model budget, -1: none yet
  std::map<TrialId, Run> runs_;  ///< pending trials, and complete ones with kept observations
  std::map<std::int64_t, std::vector<Observation>> by_budget_;  ///< budgets >= budget_ only
};

}  // namespace ranktune::search
