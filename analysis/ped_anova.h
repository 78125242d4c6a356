#pragma once
/// PED-ANOVA hyperparameter importance (Watanabe, Bansal & Hutter, "PED-ANOVA: Efficiently
/// Quantifying Hyperparameter Importance in Arbitrary Subspaces", IJCAI 2023).
///
/// The importance of a hyperparameter for reaching the top `quantile` of the observed
/// losses is the Pearson divergence between two 1-D densities of that hyperparameter: p_top
/// over the top trials and p_all over all of them,
///     D(d) = sum_k p_all(k) (p_top(k) / p_all(k) - 1)^2,
/// which the paper shows equals the local variance a functional ANOVA would attribute to d
/// in that region. No surrogate model is fitted, so it costs O(trials x features).
///
/// Densities live on a grid of at most 50 cells per numeric feature (fewer for integer and
/// quantized domains: one cell per value), as Parzen estimators: one Gaussian kernel per
/// occupied cell weighted by its count, bandwidth by Scott's rule (1.059 min(IQR / 1.34,
/// sd) n^(-1/5), at least 0.5 / 1.64 cells so that 90% of a kernel stays in its cell's
/// neighbourhood), truncated and discretized to the grid, plus a prior kernel over the
/// whole range of weight 1. A listed domain gets one cell per value, p(c) = (count(c) +
/// 1 / K) / (n + 1): its counts plus the same prior weight spread evenly.
/// Limits: each hyperparameter is judged alone, so an importance that only shows in an
/// interaction is missed; with few top trials (under about 5) the figures are noisy.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/importance.h"

namespace ranktune::analysis {

/// The normalized importance of each of `obs.features` (in their order), 0 for constant
/// features. `quantile` in (0, 1]; the top set holds at least 2 trials.
std::vector<double> ped_anova(const Observations& obs, double quantile);

/// The Pearson divergences D(d) of the features `features` (unnormalized; 0 for the others
/// and for constants; all 0 with 2 trials or fewer): the shadows of a noise floor are
/// scored on their own against the real features' total (analysis/bootstrap.h).
std::vector<double> ped_anova_divergences(const Observations& obs, double quantile, const std::vector<std::size_t>& features);

/// Each trial's grid cell on each feature, which the bootstrap counts with multiplicities
/// instead of copying its resamples (analysis/bootstrap.h).
struct PedAnovaGrid {
  std::vector<std::size_t> cells;               ///< per feature: cells of its grid
  std::vector<std::vector<std::uint32_t>> cell;  ///< [feature][trial]: its cell
};
PedAnovaGrid ped_anova_grid(const Observations& obs);

/// The loss at or below which a trial is in the top set of `loss` (trials `order`, sorted
/// by loss, trial i counted weight[i] times, once each when `weight` is empty): the
/// quantile's loss, ties included, but no better than the 2nd. -inf with 2 trials or fewer.
double ped_anova_cut(const std::vector<double>& loss, const std::vector<std::size_t>& order,
                     const std::vector<std::uint32_t>& weight, double quantile);

/// D(d) of one feature from the counts per cell of its top set and of all trials.
double ped_anova_divergence(const Feature& feature, const std::vector<double>& top, const std::vector<double>& all);

/// The grid density of feature `f` over the rows `members` (exposed for tests): one value
/// per cell, summing to 1.
std::vector<double> ped_anova_density(const Observations& obs, std::size_t f, const std::vector<std::size_t>& members);

}  // namespace ranktune::analysis
