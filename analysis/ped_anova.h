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

#include <vector>

#include "analysis/importance.h"

namespace ranktune::analysis {

/// The normalized importance of each of `obs.features` (in their order), 0 for constant
/// features. `quantile` in (0, 1]; the top set holds at least 2 trials.
std::vector<double> ped_anova(const Observations& obs, double quantile);

/// The grid density of feature `f` over the rows `members` (exposed for tests): one value
/// per cell, summing to 1.
std::vector<double> ped_anova_density(const Observations& obs, std::size_t f, const std::vector<std::size_t>& members);

}  // namespace ranktune::analysis
