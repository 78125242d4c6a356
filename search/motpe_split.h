#pragma once
/// MOTPE's good/bad split: Y. Ozaki, Y. Tanigaki, S. Watanabe and M. Onishi, "Multiobjective
/// tree-structured Parzen estimator for computationally expensive optimization problems"
/// (GECCO 2020), and Y. Ozaki, Y. Tanigaki, S. Watanabe, M. Nomura and M. Onishi,
/// "Multiobjective Tree-Structured Parzen Estimator" (JAIR 73, 2022). TPE's "good" set is the
/// best gamma of the observations by one score; with several objectives "best" is by
/// non-domination, and the good set's densities l(x) weigh each member by its hypervolume
/// contribution. The rules below follow Optuna 3.x's TPESampler for multi-objective studies,
/// with constraints as its c-TPE handling ranks them (feasible first, then the least
/// violating); search/tpe_searcher.h and search/bohb_searcher.h use it.
///
/// The split of n observations into n_good good ones (the caller's count: TPE's ceil(gamma n),
/// capped) and the rest:
/// 1. Feasible observations first, by depth (how far the trial got, as in TPE's ranking of
///    stopped trials: a point after 1 iteration does not compete with one after 27), deepest
///    first; equal depths are one group. Within a group, fronts of the non-dominated sort
///    (search/pareto.h) are taken whole while they fit; they are found one at a time, only as
///    many as the good set needs. The first front that does not fit is
///    cut by greedy hypervolume subset selection: starting from nothing, repeatedly add the
///    point whose addition raises the selection's hypervolume most (ties: the smaller index),
///    as Optuna does (the greedy 1 - 1/e approximation of A. P. Guerreiro, C. M. Fonseca and
///    L. Paquete, "Greedy hypervolume subset selection in low dimensions", Evolutionary
///    Computation 24(3), 2016). The reference point is the front's worst value per objective
///    moved outwards by 10% (max(1.1 w, 0.9 w); 1e-12 where w = 0), Optuna's rule.
/// 2. Infeasible observations (a finite violation > 0) next, by total violation ascending
///    (ties: the smaller index): they are good only while there are too few feasible ones,
///    which steers a run that has found no feasible point towards the constraints.
/// 3. Failed observations (a NaN or infinite objective or constraint value: pareto.h's rule)
///    are never good.
/// Weights of the good observations (Optuna 3.x's rule): each feasible good one weighs its
/// exclusive hypervolume contribution among the feasible good ones (reference point as above,
/// from their worst values) plus 1e-12, divided by the largest such weight; an infeasible good
/// one weighs 1e-12; a lone feasible one weighs 1. So l(x) is drawn almost only from the
/// points that make the good set's front, in proportion to the region each alone covers.
/// Where the values are so large that a hypervolume is not finite, the cut takes the front's
/// points by index and the weights are all 1.
///
/// Everything here is pure and deterministic.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "search/pareto.h"

namespace ranktune::search::motpe {

/// One observation: its Pareto point (minimization form and violation, pareto.h) and depth.
struct Observation {
  ParetoPoint point;
  std::int64_t depth = 0;
};

/// The split of a set of observations.
struct Split {
  std::vector<bool> good;        ///< per observation
  std::vector<double> weights;   ///< per observation: the weight in l(x) of a good one, 0 for the others
};

/// The split above, with min(n_good, observations that can be good) good ones. Throws
/// std::invalid_argument when feasible points differ in their number of objectives.
Split split(std::span<const Observation> observations, std::size_t n_good);

/// The reference point of the rules above for `points` (minimization form, all finite, at
/// least one): per objective, max(1.1 w, 0.9 w) of the worst value w, 1e-12 where that is 0.
std::vector<double> reference_point(std::span<const std::vector<double>> points);

/// Greedy hypervolume subset selection: `count` indices into `points` (all finite, mutually
/// non-dominated or not), in the order they were chosen, each the one adding the most
/// hypervolume to those before it against `reference` (ties: the smaller index). Gains are
/// evaluated lazily (a gain only shrinks as the selection grows), so a front of F points
/// costs far fewer than count * F hypervolumes. Throws std::invalid_argument when a volume is
/// not finite, or past hypervolume.h's cap.
std::vector<std::size_t> greedy_hypervolume_subset(std::span<const std::vector<double>> points, std::size_t count,
                                                   const std::vector<double>& reference);

/// The weights of the rule above for the good observations `good` (their points), in order.
std::vector<double> good_weights(std::span<const ParetoPoint> good);

}  // namespace ranktune::search::motpe
