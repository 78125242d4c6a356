#pragma once
/// The Parzen-estimator model of TPE (Bergstra, Bardenet, Bengio & Kégl, "Algorithms for
/// Hyper-Parameter Optimization", NeurIPS 2011), in the independent (per-parameter) form of
/// Hyperopt and Optuna 3.1's TPESampler. Shared by the searchers that model l(x)/g(x):
/// "tpe" (search/tpe_searcher.h) and "bohb" (search/bohb_searcher.h).
///
/// Observations are split by score into a "good" set (the best ceil(gamma * n), at least
/// one) and a "bad" set (the rest). Each parameter gets two Parzen estimators, l(x) from the
/// good set and g(x) from the bad set; `n_ei_candidates` values are drawn from l(x) and the
/// one maximizing log l(x) - log g(x) (the expected-improvement criterion) is proposed.
///
/// Modelling, per domain kind:
/// - uniform, quniform: a truncated Gaussian mixture on [low, high]; quniform values are
///   rounded to q after the choice, as search::sample rounds them.
/// - loguniform: the same mixture on [log low, log high].
/// - randint: the integer k is the point k + 0.5 of the continuous range [low, high); a
///   chosen x becomes floor(x), clamped to [low, high - 1].
/// - choice and grid: categorical.
/// Mixtures have one component per observation plus a prior component (mean at the centre,
/// sigma = the range). Bandwidths follow Hyperopt's rule as Optuna 3.1 implements it
/// (consider_endpoints = false, magic clip): each sigma is the larger gap to its sorted
/// neighbours, clipped to [range / min(100, 1 + n), range]. Observation weights use
/// Hyperopt's linear forgetting: the newest 25 weigh 1, older ones ramp down linearly.
/// Categorical estimators are weighted counts plus prior_weight spread evenly over the values.
///
/// The multivariate form (ModelOptions::multivariate, as in Optuna's multivariate TPE) keeps
/// the same kernels but joins them: kernel i of l(x) is the product over parameters of
/// observation i's kernels (a listed value's kernel puts prior_weight spread evenly plus 1
/// on its value), with the same weights, and candidates are joint draws from l(x) scored
/// by log l(x) - log g(x) over all parameters at once.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "search/options.h"
#include "search/saved_state.h"
#include "search/space.h"

namespace ranktune::search::parzen {

/// A config as the estimators store it, one number per parameter of the space in order:
/// the raw value for uniform, quniform, loguniform and randint parameters (always inside
/// the domain), and the index of the value for choice and grid parameters.
using Point = std::vector<double>;

/// One observation: `score` is sign(mode) * metric (bigger is better).
struct Scored {
  double score = 0;
  const Point* point = nullptr;
  /// How far the trial got (iterations). The split ranks deeper observations first, then
  /// by score, as Optuna's TPE ranks pruned trials below complete ones: under a
  /// multi-fidelity scheduler a value after 1 iteration does not compete with one after 27.
  /// Equal for every observation (0) when the searcher ranks by score alone.
  std::int64_t depth = 0;
};

/// The estimator's options, shared by the searchers that use it.
struct ModelOptions {
  double gamma = 0.25;               ///< fraction of observations in the good set, in (0, 1)
  /// The good set holds at most this many observations (0: no cap). With a cap, TPE keeps
  /// modelling the best few as observations pile up (Optuna's min(ceil(0.1 n), 25)):
  /// under ASHA thousands of short trials would otherwise flatten l(x).
  std::int64_t max_good = 0;
  std::int64_t n_ei_candidates = 24; ///< draws from l(x) per parameter and proposal (>= 1)
  double prior_weight = 1.0;         ///< weight of each estimator's prior component (> 0)
  /// false: one estimator per parameter (Hyperopt's TPE), and each parameter is chosen on
  /// its own. true: one joint estimator over all parameters (Optuna's multivariate TPE,
  /// BOHB's KDE), whose kernels are products of the per-parameter kernels, so a suggestion
  /// is the best of n_ei_candidates joint draws.
  bool multivariate = false;

  /// Reads `gamma`, `max_good`, `n_ei_candidates`, `prior_weight` and `multivariate` through `r`, with `defaults` for
  /// the absent ones, and range-checks them (OptionError naming the key).
  static ModelOptions read(OptionReader& r, const ModelOptions& defaults);
};

/// The coordinate of an inactive parameter (search/condition.h): the estimators of a
/// parameter use only the observations where it was active.
inline constexpr double kInactive = std::numeric_limits<double>::quiet_NaN();

/// The point of `config`: every parameter of `space` that it holds, kInactive for the others.
Point encode(const Space& space, const Config& config);
/// The config of `point`, with each parameter's value type; kInactive coordinates are left out.
Config decode(const Space& space, const Point& point);
/// decode, with the parameters inactive under the space's conditions dropped from the
/// config and set to kInactive in `point`: what a searcher suggests and remembers.
Config settle(const Space& space, Point& point);

/// A point drawn from the prior: each parameter by search::sample, as random search draws it.
Point sample_point(const Space& space, Rng& rng);

/// The observations' order along each numeric parameter, kept by a searcher across
/// suggestions so that a proposal does not sort them again: for parameter p, the indices
/// of the observations (as passed to propose) by their model coordinate, ties by index.
/// Listed (categorical) parameters have no order. Pure data; see SortedObservations::add.
class SortedObservations {
 public:
  /// Forgets everything (a restore, another space).
  void clear() { orders_.clear(); count_ = 0; }
  /// Takes in observation number size() (the next index), whose point is `point`: O(n).
  void add(const Space& space, const Point& point);
  /// Holds exactly `points` (observations 0..n-1), sorted at once: O(n log n), for a restore.
  void assign(const Space& space, const std::vector<const Point*>& points);
  /// The number of observations taken in.
  std::size_t size() const { return count_; }
  /// Parameter p's order (empty for a listed parameter).
  const std::vector<std::uint32_t>& order(std::size_t p) const { return orders_[p]; }

 private:
  std::vector<std::vector<std::uint32_t>> orders_;
  std::vector<std::vector<double>> coords_;  ///< by parameter, by observation index
  std::size_t count_ = 0;
};

/// The model-based proposal: splits `observations` (oldest first; the order is the
/// forgetting weights') into good and bad sets and picks each parameter by expected
/// improvement. `running` are the points of trials suggested but not complete: they join
/// the bad set after the split (the constant liar: each counts as the worst result yet,
/// but does not change how many observations are good), so that workers suggesting at
/// the same time spread out instead of piling onto one mode of l(x). Draws only from
/// `rng`. `observations` must not be empty. `sorted`, when given and holding exactly these
/// observations, spares the sorting of every estimator's components (the same proposal,
/// faster: a merge instead of a sort per estimator).
Point propose(const Space& space, const std::vector<Scored>& observations, const ModelOptions& options,
              Rng& rng, const std::vector<const Point*>& running = {}, const SortedObservations* sorted = nullptr);

/// How many of n observations the good set holds: ceil(gamma n), at least one (none of
/// none), at most max_good when that is set. The score split above takes this many.
std::size_t good_count(std::size_t n, const ModelOptions& options);

/// A good/bad split that the caller made (MOTPE's, search/motpe_split.h), for the proposal
/// below: per observation, whether it is good, and optionally its weight in l(x).
struct Split {
  std::vector<bool> good;       ///< one per observation
  /// Empty: the good observations weigh as the score split's do (the forgetting weights).
  /// Else one per observation (only the good ones' are read): MOTPE weighs l(x)'s
  /// components by hypervolume contribution instead.
  std::vector<double> weights;
};

/// The proposal of the other propose, from a split made by the caller: l(x) from the good
/// observations (weighted by split.weights when given), g(x) from the others and `running`
/// (the constant liar). The good set may be empty (l(x) is then the prior alone). Throws
/// std::invalid_argument when the split's sizes differ from the observations'.
Point propose(const Space& space, const std::vector<const Point*>& observations, const Split& split,
              const ModelOptions& options, Rng& rng, const std::vector<const Point*>& running = {},
              const SortedObservations* sorted = nullptr);

/// Writes a point into a saved state: its coordinates, as exact doubles.
void write_point(StateWriter& w, const Point& point);
/// Reads a point of `space` that write_point wrote, and checks it lies in the space (finite,
/// integral where it must be, in range); the reader throws naming the parameter otherwise.
Point read_point(StateReader& r, const Space& space);

}  // namespace ranktune::search::parzen
