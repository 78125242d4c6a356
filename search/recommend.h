#pragma once
/// Which configuration ranktune recommends, and the leaderboard's order.
///
/// Under a multi-fidelity scheduler (ASHA, HyperBand, median stopping) most trials end early,
/// and a value reported after a few iterations is not comparable with one reported at max_t:
/// the noise of a short run can beat every long one. So, as Optuna's best_trial (complete
/// trials only) and Ray Tune's get_best_result (the trials that ran to the end), the
/// recommendation is the best trial among those trained the longest:
///   1. the *deepest* trials first: those that reached the most iterations any trial with a
///      finite value reached (max_t once any trial ran its course; the highest rung reached
///      before that), ranked by their best value;
///   2. then every other trial with a finite value, ranked by its best value;
///   3. then trials without a finite value, by id; trials that ended in ERROR last (in the
///      same order among themselves): a failed trial's value is not a result to pick.
/// Ties go to the lower id. The first trial of this order is the recommended configuration.

#include <cstdint>
#include <vector>

#include "search/trial.h"
#include "search/types.h"

namespace ranktune::search {

/// The iterations a trial must have reached to be in the deepest tier: the most any trial
/// with a finite best (that did not fail) reached; 0 when there is none.
std::int64_t deepest_iterations(const std::vector<const Trial*>& trials);

/// `trials` in the order above (stable for equal keys).
std::vector<const Trial*> recommendation_order(std::vector<const Trial*> trials, Mode mode);

/// The recommended trial (the first of recommendation_order), or nullptr when no trial has
/// a finite value.
const Trial* recommended(const std::vector<const Trial*>& trials, Mode mode);

}  // namespace ranktune::search
