#pragma once
/// Hyperparameter importance: which hyperparameters mattered for the metric, from the
/// finished trials alone. Two methods, each in its own file:
/// - PED-ANOVA (analysis/ped_anova.h): no surrogate model, milliseconds, but it judges only
///   the top 10% of the trials, so it needs many;
/// - fANOVA (analysis/fanova.h): variance decomposition of a random forest, as Optuna's
///   default evaluator; every trial counts.
/// Each share comes with a bootstrap interval and is set against a noise floor
/// (analysis/bootstrap.h, analysis/null_importance.h). This file encodes configs into the
/// coordinates the methods work on, picks the method the data supports, and runs it.
/// Pure: no I/O.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "search/space.h"
#include "search/types.h"

namespace ranktune::analysis {

// Importance is computed over search/'s spaces and configs; their names are used
// unqualified throughout analysis/.
using namespace ranktune::search;

/// One hyperparameter as a coordinate: a number within [low, high] (log-scaled for a
/// loguniform domain, so that the methods see the scale the search drew on), or, for a
/// listed domain, the index of its value coded as index + 0.5 within [0, categories].
struct Feature {
  std::string name;
  double low = 0;
  double high = 0;
  std::size_t categories = 0;  ///< > 0: a listed domain of that many values
  std::size_t steps = 0;       ///< > 0: an integer or quantized domain of that many values
  /// A domain with one value (or low == high) carries no information: importance 0.
  bool constant() const { return categories ? categories < 2 : !(high > low); }
};

/// Trials as a matrix: `rows[i][j]` is trial i's coordinate on features[j], `loss[i]` its
/// metric turned so that lower is better.
struct Observations {
  std::vector<Feature> features;
  std::vector<std::vector<double>> rows;
  std::vector<double> loss;
};

/// Encodes `configs` over `space` with their metric `values` (NaN values and configs that
/// lack a parameter are left out; values outside a domain, as PBT's perturbations may
/// give, are clamped into it). `mode` says which way is better.
Observations encode(const Space& space, const std::vector<Config>& configs, const std::vector<double>& values,
                    Mode mode);

/// Auto picks one of the other two by the number of trials (choose_method).
enum class Method { Auto, PedAnova, Fanova };

/// "auto", "ped-anova" or "fanova".
const char* to_string(Method m);

/// Fewer trials with a value than this, and no method says anything: evaluate gives no
/// shares. A bootstrap over fewer trials cannot tell a parameter's effect from chance.
inline constexpr std::size_t kMinTrials = 10;
/// Auto runs PED-ANOVA when its top set would hold at least this many trials, fANOVA below.
/// Found by experiment (bench_importance accuracy; the figures are in docs/guide/report.md,
/// "Importance"): over three planted problems and 20 to 40 seeds, PED-ANOVA's top-k missed
/// the planted parameters in up to a quarter of the seeds with 6 top trials, and with 10 its
/// intervals still reached the noise floor for a quarter of the planted parameters; from 20
/// it was right in every seed (fANOVA missed once in all 720 runs), for a fraction of the cost.
inline constexpr std::size_t kPedAnovaMinTop = 20;

struct Options {
  Method method = Method::Auto;
  double quantile = 0.1;     ///< PED-ANOVA: the top fraction whose density is compared
  std::size_t trees = 64;    ///< fANOVA: trees of the forest
  std::uint64_t seed = 0;    ///< the forest's bootstrap and feature order, the resamples, the shuffles
  std::size_t resamples = 100;         ///< bootstrap resamples for the intervals and the floor (0: none)
  double level = 0.9;                  ///< of the intervals
  std::size_t trees_per_resample = 0;  ///< fANOVA: trees grown on each resample; 0: by the trials (analysis/bootstrap.h)
};

struct Score {
  std::string name;
  double value = 0;  ///< the share of importance; the scores sum to 1 (0 for constants)
  double low = 0, high = 0;  ///< its bootstrap interval at Options::level
  bool below_noise = false;  ///< low reaches the noise floor: the share could be noise
};

struct Importance {
  Method method = Method::Fanova;  ///< the one that ran (never Auto)
  std::size_t trials = 0;          ///< the observations judged
  std::string reason;              ///< why that method, or why there are no scores
  double noise_floor = 0;          ///< what a parameter with no effect gets (analysis/bootstrap.h)
  double level = 0.9;              ///< of the intervals
  std::size_t resamples = 0;       ///< behind the intervals
  std::vector<Score> scores;       ///< most important first; empty when there are too few trials
};

/// The method Auto runs on `trials` observations (with PED-ANOVA's top `quantile`), and
/// why, as a phrase ("fANOVA: ...").
Method choose_method(std::size_t trials, double quantile, std::string* reason);

/// The shares of `method` (not Auto) on `obs`, in feature order, without intervals.
std::vector<double> shares(const Observations& obs, Method method, const Options& options);

/// Importance of every feature, most important first (ties in declaration order), with
/// intervals and the noise floor. Under kMinTrials observations, or with no feature that
/// varies, no scores: `reason` says why.
Importance evaluate(const Observations& obs, const Options& options);

}  // namespace ranktune::analysis
