#pragma once
/// Tree-structured Parzen Estimator (Bergstra, Bardenet, Bengio & Kégl, "Algorithms for
/// Hyper-Parameter Optimization", NeurIPS 2011), in the independent (per-parameter) form of
/// Hyperopt and Optuna 3.1's TPESampler.
///
/// After `n_startup` completed observations, every suggestion comes from the Parzen-estimator
/// model of search/parzen.h (good/bad split by `gamma`, expected improvement over
/// `n_ei_candidates` draws from l(x)). TPE does not enumerate grids: a grid axis is one more
/// categorical parameter, and total() is num_samples.
///
/// Every suggestion draws from its own generator, seeded by (seed, suggestion index), so a
/// suggestion depends only on the seed, its index and the observations completed before it.
/// Observations are the experiment metric's last value; errored trials and non-finite
/// values are not observations.
///
/// With several objectives or constraints (SearcherOptions::objectives.multi()) it is MOTPE
/// (Ozaki et al., GECCO 2020 and JAIR 2022): an observation is the Pareto point of the
/// trial's last result (search/objectives.h), and the good set is MOTPE's split,
/// search/motpe_split.h (non-domination rank and hypervolume, feasible before infeasible,
/// failed never good; l(x) weighted by hypervolume contribution). The good count, the
/// estimators, the constant liar (running trials join g(x), as the worst) and the depth
/// ranking are TPE's. Errored trials, and results that report none of the objectives, are
/// not observations; a result with a NaN or missing objective or constrained metric is a
/// failed one (it shapes g(x) only).

#include <cstdint>
#include <map>
#include <vector>

#include "search/num_samples_searcher.h"
#include "search/objectives.h"
#include "search/parzen.h"

namespace ranktune::search {

/// The `[search]` options of algorithm "tpe".
struct TpeOptions {
  std::int64_t n_startup = 10;       ///< random suggestions until this many observations (>= 1)
  /// The good set is the best min(ceil(gamma n), max_good) of n observations: Optuna's
  /// default rule, min(ceil(0.1 n), 25). The side-by-side suite (benchmarks/RESULTS.md) chose
  /// it over Hyperopt's 0.25 without a cap: under ASHA, where n runs into the thousands, 0.25 n
  /// flattens l(x) (Hartmann-6 at 2,700 steps: median regret 0.25 against 0.11).
  double gamma = 0.1;                ///< fraction of observations in the good set, in (0, 1)
  std::int64_t max_good = 25;        ///< the good set's most observations (0: no cap)
  std::int64_t n_ei_candidates = 24; ///< draws from l(x) per parameter and suggestion (>= 1)
  double prior_weight = 1.0;         ///< weight of each estimator's prior component (> 0)
  bool multivariate = false;         ///< one joint estimator instead of one per parameter
  /// Running trials join the bad set as if they had the worst result yet (Optuna's
  /// constant_liar), so that parallel workers do not all sample the same region.
  bool constant_liar = true;
  /// How trials a scheduler stopped early rank among the observations: "depth" (the
  /// default: those that got further rank first, then by value, as Optuna's TPE ranks
  /// pruned trials) or "value" (by their last value only, as ranktune did before 0.29).
  bool rank_by_depth = true;

  /// Reads and range-checks the options; throws OptionError for a bad or unknown key.
  static TpeOptions read(const Options& options);
  /// The estimator's part of these options.
  parzen::ModelOptions model() const { return {gamma, max_good, n_ei_candidates, prior_weight, multivariate}; }
};

class TpeSearcher final : public NumSamplesSearcher {
 public:
  TpeSearcher(Space space, SearcherOptions options, TpeOptions tpe = {});

  Suggestion suggest(TrialId id) override;
  void on_trial_result(TrialId id, std::int64_t iteration, const Metrics& metrics) override;
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override;
  /// Takes a trial it did not propose as its own (its config joins the model once complete).
  void adopt(TrialId id, const Config& config) override;
  /// Text: the suggestion count, the objectives (none for one metric), the configs of trials
  /// not yet complete, and the observations in the order they completed (id, value or Pareto
  /// point, depth, one number per parameter). A state saved with other objectives is refused.
  std::string save() const override;
  void restore(const std::string& state) override;

  /// Number of valid observations so far.
  std::size_t observations() const { return observed_.size(); }

 private:
  using Point = parzen::Point;
  struct Observation {
    TrialId id;
    double score;  ///< sign(mode) * metric: bigger is better (one objective)
    Point point;
    std::int64_t depth = 0;  ///< iterations it reached (0 when ranked by value alone)
    ParetoPoint pareto;      ///< the result's Pareto point (several objectives; else empty)
  };

  bool multi() const { return options_.objectives.multi(); }
  /// The MOTPE proposal (several objectives), with `running` in g(x).
  Point propose_multi(Rng& rng, const std::vector<const Point*>& running) const;

  Space space_;
  TpeOptions tpe_;
  std::int64_t next_ = 0;                ///< suggestions made so far
  std::map<TrialId, Point> pending_;     ///< suggested, not yet complete
  std::map<TrialId, std::int64_t> reached_;  ///< pending trials' latest iteration
  /// A state saved before depths were recorded (version 1): every observation ranks by
  /// value, the old ones and the new, so a resumed run decides as it did.
  bool legacy_ranking_ = false;
  std::vector<Observation> observed_;    ///< in completion order
  parzen::SortedObservations sorted_;    ///< observed_ along each parameter, for propose()
};

}  // namespace ranktune::search
