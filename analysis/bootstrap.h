#pragma once
/// How sure an importance is: a bootstrap interval per share and a noise floor.
///
/// Intervals: the bootstrap over trials (Efron, "Bootstrap Methods: Another Look at the
/// Jackknife", Annals of Statistics 1979; the percentile interval of Efron & Tibshirani, "An
/// Introduction to the Bootstrap", 1993, ch. 13). Each of R resamples draws the trials with
/// replacement and runs the same method on them; a share's interval is the (1 - level) / 2
/// and (1 + level) / 2 quantiles of its R values, moved to sit around the share of the full
/// data (repeated trials bias a resample's shares, and the interval should measure their
/// spread, not that bias), clipped to [0, 1].
///
/// fANOVA would need a forest per resample: R x 64 trees. Each resample grows a forest of k
/// trees instead (8 up to 250 trials, 2000 / trials down to 2 from 1,000 trials), each on a bootstrap of the resample, as the full forest's trees are on
/// the trials: bagging within the bootstrap. Its spread holds the data's variation and that
/// of k trees, so the intervals are wider than a 64-tree forest's: conservative. (Sexton &
/// Laake's correction for the trees' share of it, "Standard errors for bagged and random
/// forest estimators", CSDA 2009, was tried: where the trees' variance swamps the data's it
/// estimates the data's at zero, and the intervals of small shares collapsed to a point.) A
/// bootstrap of a bootstrap sees fewer distinct trials, which shrinks small shares most, so
/// the forest's spread is taken relative to the resamples' mean and scaled onto the point.
///
/// Noise floor (analysis/null_importance.h): the (1 + level) / 2 quantile of the shares
/// that shuffled copies of the parameters get, scored the same way; a share whose interval
/// reaches it could be noise. PED-ANOVA scores every parameter on its own, so each of R
/// rounds scores a shuffled copy of every parameter on the full data beside the real ones.
/// A forest's parameters compete for splits, so fANOVA grows R / 5 forests (at least one per
/// parameter) on the trials, as the full forest is grown, each beside one shuffled copy, of
/// each parameter in turn; a forest has a quarter of the full one's trees up to 500 trials
/// (fewer above, at least k): a forest of few trees now and then gives a copy a large
/// share that the full forest would average away, and set the floor too high.
/// Pure: no I/O.

#include <cstddef>
#include <vector>

#include "analysis/importance.h"

namespace ranktune::analysis {

struct Uncertainty {
  std::vector<double> low, high;  ///< per feature of obs, in its order; 0 and 0 for constants
  double noise_floor = 0;
};

/// The intervals around `point` (the shares `method` gave on all of `obs`, in feature
/// order) and the noise floor, from options.resamples resamples (seeded by options.seed).
/// With no resamples the intervals are the points and the floor is 0.
Uncertainty bootstrap(const Observations& obs, const std::vector<double>& point, Method method,
                      const Options& options);

/// The q-quantile (0 <= q <= 1) of `values` by linear interpolation between order
/// statistics (exposed for tests); NaN when empty.
double quantile(std::vector<double> values, double q);

}  // namespace ranktune::analysis
