#pragma once
/// Pareto ranking for multi-objective search: constrained domination, fast non-dominated
/// sorting and crowding distance, as K. Deb, A. Pratap, S. Agarwal and T. Meyarivan give them in
/// "A fast and elitist multiobjective genetic algorithm: NSGA-II" (IEEE Transactions on
/// Evolutionary Computation 6(2), 2002): section III-A (sorting), III-B (crowding) and VI
/// (constrained domination). MO-ASHA's rung ranking and NSGA-II's selection rest on it.
///
/// Conventions, fixed here once so that every caller agrees:
/// - Objectives are compared in minimization form: a Max objective is negated
///   (`to_minimization`), so "smaller is better" in every coordinate below.
/// - Constraints have Optuna's semantics: a point's constraint values c_i hold when c_i <= 0;
///   it is feasible when every one holds. Its total violation is sum(max(0, c_i)).
/// - Failed values are the worst: a point with a NaN or infinite objective (a diverged loss, a
///   metric that was never reported) is treated as infeasible with an infinite violation, and so
///   is one with a NaN constraint value (it cannot be said to hold). Every point with finite
///   objectives and a finite violation dominates it, and such points dominate none and are
///   dominated by no other one of their kind: they share the last front. An infinite objective
///   counts as failed even where its sign is "good" (-inf loss): no training run reaches it.
///
/// Everything is pure and deterministic: ties are broken by the points' indices.

#include <cstddef>
#include <span>
#include <vector>

#include "search/types.h"

namespace ranktune::search {

/// One point to rank: its objectives in minimization form, and its total constraint violation
/// (0 when feasible, > 0 when not, +inf when failed: see the conventions above).
struct ParetoPoint {
  std::vector<double> objectives;
  double violation = 0;

  /// No violation and finite objectives: the rule `dominates` applies, however the point was built.
  bool feasible() const;
};

/// The values of `values` in minimization form: negated where the mode is Max. Throws
/// std::invalid_argument when the counts differ or there is no objective.
std::vector<double> to_minimization(std::span<const double> values, std::span<const Mode> modes);

/// sum(max(0, c_i)) over the constraint values; +inf when one is NaN. 0 for no constraints.
double total_violation(std::span<const double> constraints);

/// A point from a trial's objectives (in their own directions, with their modes) and its
/// constraint values: minimization form, total violation, and the failed-value rule above.
/// Throws std::invalid_argument when the objectives and the modes differ in count.
ParetoPoint make_pareto_point(std::span<const double> objectives, std::span<const Mode> modes,
                              std::span<const double> constraints = {});

/// Deb's constrained domination: true when `a` dominates `b`. A feasible point dominates an
/// infeasible one; of two infeasible ones, the one of smaller total violation dominates; of two
/// feasible ones, `a` dominates when it is no worse in every objective and better in one.
/// Throws std::invalid_argument when two feasible points differ in their number of objectives.
bool dominates(const ParetoPoint& a, const ParetoPoint& b);

/// The non-domination ranks of a set of points.
struct ParetoRanking {
  std::vector<std::size_t> rank;                 ///< per point: 0 for the front, 1 for the next, ...
  std::vector<std::vector<std::size_t>> fronts;  ///< fronts[r]: the points of rank r, ascending
};

/// The ranks of Deb's fast non-dominated sort under constrained domination, computed by the
/// efficient non-dominated sort with binary search (Zhang et al. 2015, see pareto.cc) on the
/// feasible points: O(N log N) for 2 objectives, O(M N^2) at worst from 3 on; O(N) memory.
/// Throws std::invalid_argument when the points differ in their number of objectives (naming
/// the first that does).
ParetoRanking nondominated_sort(std::span<const ParetoPoint> points);

/// The crowding distance of each point of `front` (indices into `points`), in the order of
/// `front`. Per objective, the front is ordered by value (ties by index); the first and the last
/// get +inf, and each other point adds (next - previous) / (max - min). An objective in which
/// every point of the front has the same value adds nothing, not even +inf at its ends: which
/// equal point sat at an end would only be an artifact of the tie order. A front of one or two
/// points is all +inf. Points with a non-finite objective get 0 and are left out of the others'
/// distances: they are failures (see above), never a front's spread.
std::vector<double> crowding_distance(std::span<const ParetoPoint> points, std::span<const std::size_t> front);

/// Ranks and crowding distances of every point, and the selection order that MO-ASHA and
/// NSGA-II use: rank ascending, then crowding distance descending, then index ascending (so
/// equal points are taken in a deterministic order). A total order of the indices.
struct ParetoSelection {
  ParetoRanking ranking;
  std::vector<double> crowding;     ///< per point, within its own front
  std::vector<std::size_t> order;   ///< every index, best first
};
ParetoSelection pareto_selection(std::span<const ParetoPoint> points);

/// The selection order's comparison of points i and j of a ParetoSelection: true when i comes
/// first. What `order` is sorted by, for callers that keep their own containers.
bool selected_before(const ParetoSelection& s, std::size_t i, std::size_t j);

}  // namespace ranktune::search
