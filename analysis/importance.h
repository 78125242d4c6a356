#pragma once
/// Hyperparameter importance: which hyperparameters mattered for the metric, from the
/// finished trials alone. Two methods, each in its own file:
/// - PED-ANOVA (analysis/ped_anova.h), the default: no surrogate model, milliseconds;
/// - fANOVA (analysis/fanova.h): variance decomposition of a random forest, as Optuna's
///   default evaluator.
/// This file encodes configs into the coordinates both methods work on. Pure: no I/O.

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

enum class Method { PedAnova, Fanova };

/// "ped-anova" or "fanova".
const char* to_string(Method m);

struct Options {
  Method method = Method::PedAnova;
  double quantile = 0.1;     ///< PED-ANOVA: the top fraction whose density is compared
  std::size_t trees = 64;    ///< fANOVA: trees of the forest
  std::uint64_t seed = 0;    ///< fANOVA: bootstrap and feature order
};

struct Score {
  std::string name;
  double value = 0;  ///< the share of importance; the scores sum to 1 (0 for constants)
};

/// Importance of every feature, most important first (ties in declaration order). With
/// fewer than 3 observations every non-constant feature gets an equal share.
std::vector<Score> evaluate(const Observations& obs, const Options& options);

}  // namespace ranktune::analysis
