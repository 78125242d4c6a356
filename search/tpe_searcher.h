#pragma once
/// Tree-structured Parzen Estimator (Bergstra, Bardenet, Bengio & Kégl, "Algorithms for
/// Hyper-Parameter Optimization", NeurIPS 2011), in the independent (per-parameter) form of
/// Hyperopt and Optuna 3.1's TPESampler.
///
/// After `n_startup` completed observations, the observations are split by value into a
/// "good" set (the best ceil(gamma * n), at least one) and a "bad" set (the rest). Each
/// parameter gets two Parzen estimators, l(x) from the good set and g(x) from the bad set;
/// `n_ei_candidates` values are drawn from l(x) and the one maximizing log l(x) - log g(x)
/// (the expected-improvement criterion of the paper) is suggested.
///
/// Modelling, per domain kind:
/// - uniform, quniform: a truncated Gaussian mixture on [low, high]; quniform values are
///   rounded to q after the choice, as search::sample rounds them.
/// - loguniform: the same mixture on [log low, log high].
/// - randint: the integer k is the point k + 0.5 of the continuous range [low, high); a
///   chosen x becomes floor(x), clamped to [low, high - 1].
/// - choice and grid: categorical. TPE does not enumerate grids: a grid axis is one more
///   categorical parameter, and total() is num_samples.
/// Mixtures have one component per observation plus a prior component (mean at the centre,
/// sigma = the range). Bandwidths follow Hyperopt's rule as Optuna 3.1 implements it
/// (consider_endpoints = false, magic clip): each sigma is the larger gap to its sorted
/// neighbours, clipped to [range / min(100, 1 + n), range]. Observation weights use
/// Hyperopt's linear forgetting: the newest 25 weigh 1, older ones ramp down linearly.
/// Categorical estimators are weighted counts plus prior_weight spread evenly over the values.
///
/// Every suggestion draws from its own generator, seeded by (seed, suggestion index), so a
/// suggestion depends only on the seed, its index and the observations completed before it.
/// Observations are the experiment metric's last value; errored trials and non-finite
/// values are not observations.

#include <cstdint>
#include <map>
#include <vector>

#include "search/searcher.h"

namespace ranktune::search {

/// The `[search]` options of algorithm "tpe".
struct TpeOptions {
  std::int64_t n_startup = 10;       ///< random suggestions until this many observations (>= 1)
  double gamma = 0.25;               ///< fraction of observations in the good set, in (0, 1)
  std::int64_t n_ei_candidates = 24; ///< draws from l(x) per parameter and suggestion (>= 1)
  double prior_weight = 1.0;         ///< weight of each estimator's prior component (> 0)

  /// Reads and range-checks the options; throws OptionError for a bad or unknown key.
  static TpeOptions read(const Options& options);
};

class TpeSearcher final : public Searcher {
 public:
  TpeSearcher(Space space, SearcherOptions options, TpeOptions tpe = {});

  Suggestion suggest(TrialId id) override;
  void on_trial_complete(TrialId id, const Metrics& last, bool error) override;
  std::int64_t total() const override { return options_.num_samples; }
  /// Text: the suggestion count, the configs of trials not yet complete, and the
  /// observations in the order they completed (id, value, one number per parameter).
  std::string save() const override;
  void restore(const std::string& state) override;

  /// Number of valid observations so far.
  std::size_t observations() const { return observed_.size(); }

 private:
  /// One parameter value in the model's coordinates: the point in the continuous range
  /// (log scale for loguniform, k + 0.5 for randint) or the index of a listed value.
  using Point = std::vector<double>;
  struct Observation {
    TrialId id;
    double score;  ///< sign(mode) * metric: bigger is better
    Point point;
  };

  Point encode(const Config& config) const;
  Config decode(const Point& point) const;
  /// The model-based suggestion for one parameter.
  double propose(std::size_t param, const std::vector<const Observation*>& good,
                 const std::vector<const Observation*>& bad, Rng& rng) const;

  Space space_;
  SearcherOptions options_;
  TpeOptions tpe_;
  std::int64_t next_ = 0;                ///< suggestions made so far
  std::map<TrialId, Point> pending_;     ///< suggested, not yet complete
  std::vector<Observation> observed_;    ///< in completion order
};

}  // namespace ranktune::search
