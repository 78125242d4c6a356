#pragma once
/// The hypervolume indicator: the measure of the region that a set of points dominates and that
/// dominates a reference point, in minimization form (search/pareto.h's `to_minimization`). It is
/// how multi-objective runs are compared (one number per front), and each point's exclusive
/// contribution to it is how MOTPE splits its good trials from its bad ones.
///
/// Algorithms, all exact:
/// - 1 objective: r - min(p).
/// - 2 objectives: a sweep over the points sorted by the first objective, O(n log n).
/// - 3 objectives: the dimension sweep of C. M. Fonseca, L. Paquete and M. López-Ibáñez, "An
///   improved dimension-sweep algorithm for the hypervolume indicator" (IEEE CEC 2006): the points
///   in order of the third objective, each added to a 2-D staircase (an ordered tree) whose area
///   is kept up to date as points enter and dominated ones leave, O(n log n).
/// - 4 objectives or more: WFG, L. While, L. Bradstreet and L. Barone, "A fast way of calculating
///   exact hypervolumes" (IEEE Transactions on Evolutionary Computation 16(1), 2012): the sum of
///   each point's exclusive volume against the points after it, through their "limit set",
///   with the points ordered so that the recursion loses one objective per level and ends in the
///   3-D sweep. It is exponential in the number of objectives, so it has a cap: with n points
///   (those left after removing the ones that do not dominate the reference or are dominated) and
///   d >= 4 objectives it does at most C(n, d-3) 3-D sweeps of at most n points, and a set with
///   C(n, d-3) * n > kMaxHypervolumeWork throws std::invalid_argument (for 4 objectives about
///   3,000 points, for 5 about 270, for 6 about 90). That is a worst case: the limit sets shrink
///   as they are filtered, and 250 points spread over a 5-objective front take about 0.01 s.
///   Exact with a cap was preferred to a seeded Monte Carlo estimate: comparing runs by
///   hypervolume should not depend on a seed or carry a sampling error, and the fronts of
///   hyperparameter tuning rarely have more than 3 objectives.
///
/// A point contributes nothing unless it strictly dominates the reference (every coordinate
/// smaller), and so does a point with a NaN or infinite coordinate (a failure, as in pareto.h).
/// The reference must be finite, and every point must have its number of coordinates.

#include <cstddef>
#include <span>
#include <vector>

namespace ranktune::search {

/// The work bound of the exact algorithm for 4 objectives or more (see above).
inline constexpr double kMaxHypervolumeWork = 1e7;

/// The hypervolume of `points` with respect to `reference`, minimization. Throws
/// std::invalid_argument for a reference with no coordinate or a non-finite one, a point whose
/// number of coordinates differs from the reference's (naming it), or past the cap above.
double hypervolume(std::span<const std::vector<double>> points, const std::vector<double>& reference);

/// Each point's exclusive contribution: HV(all) - HV(all but that point). Computed as the volume
/// of the point's box less the hypervolume of its limit set (the other points clipped into its
/// box), which is n hypervolumes of n - 1 points: O(n^2 log n) for 2 and 3 objectives, and for
/// 4 or more each one under the cap above, checked once for the whole set. A point dominated by,
/// or equal to, another one contributes 0; a point's contribution includes what the points it
/// dominates would cover without it.
std::vector<double> hypervolume_contributions(std::span<const std::vector<double>> points,
                                              const std::vector<double>& reference);

}  // namespace ranktune::search
