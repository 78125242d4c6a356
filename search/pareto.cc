#include "search/pareto.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ranktune::search {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool all_finite(std::span<const double> v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

/// The violation a comparison uses: the failed-value rule applied to a point however it was
/// built (by make_pareto_point or by hand), so that `dominates` and the sort agree on it.
double effective_violation(const ParetoPoint& p) {
  if (std::isnan(p.violation) || !all_finite(p.objectives)) return kInf;
  return std::max(0.0, p.violation);
}

/// Pareto domination of two feasible points' objectives (minimization).
bool pareto_dominates(std::span<const double> a, std::span<const double> b) {
  bool better = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
    if (a[i] < b[i]) better = true;
  }
  return better;
}

/// Deb's rule on precomputed violations (the sort computes them once, not N^2 times).
bool constrained_dominates(const ParetoPoint& a, double va, const ParetoPoint& b, double vb) {
  if (va == 0 && vb == 0) return pareto_dominates(a.objectives, b.objectives);
  if (va == 0) return true;  // feasible over infeasible
  if (vb == 0) return false;
  return va < vb;  // two infeasible ones: inf < inf is false, so failed points tie
}

}  // namespace

bool ParetoPoint::feasible() const { return effective_violation(*this) == 0; }

std::vector<double> to_minimization(std::span<const double> values, std::span<const Mode> modes) {
  if (values.empty()) throw std::invalid_argument("multi-objective point: no objective value");
  if (values.size() != modes.size())
    throw std::invalid_argument("multi-objective point: " + std::to_string(values.size()) + " objective values for " +
                                std::to_string(modes.size()) + " modes; give one mode per objective");
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = modes[i] == Mode::Max ? -values[i] : values[i];
  return out;
}

double total_violation(std::span<const double> constraints) {
  double sum = 0;
  for (const double c : constraints) {
    if (std::isnan(c)) return kInf;
    if (c > 0) sum += c;
  }
  return sum;
}

ParetoPoint make_pareto_point(std::span<const double> objectives, std::span<const Mode> modes,
                              std::span<const double> constraints) {
  ParetoPoint p{to_minimization(objectives, modes), total_violation(constraints)};
  if (!all_finite(p.objectives)) p.violation = kInf;
  return p;
}

bool dominates(const ParetoPoint& a, const ParetoPoint& b) {
  const double va = effective_violation(a), vb = effective_violation(b);
  if (va == 0 && vb == 0 && a.objectives.size() != b.objectives.size())
    throw std::invalid_argument("Pareto domination: points of " + std::to_string(a.objectives.size()) + " and " +
                                std::to_string(b.objectives.size()) + " objectives cannot be compared");
  return constrained_dominates(a, va, b, vb);
}

// The ranks are those of Deb's fast non-dominated sort; its O(M N^2) comparisons cost a second
// per MO-ASHA decision once a rung holds 10^4 points. Deb's constrained domination splits the
// points into three classes that never interleave: the feasible ones (ranked among themselves
// by their objectives), then the infeasible ones (one front per distinct total violation,
// smallest first: of two, the smaller dominates, and equal ones tie), then the failed ones (one
// last front). The feasible ones are ranked by the efficient non-dominated sort with binary
// search (ENS-BS) of X. Zhang, Y. Tian, R. Cheng and Y. Jin, "An Efficient Approach to
// Nondominated Sorting for Evolutionary Multiobjective Optimization" (IEEE Transactions on
// Evolutionary Computation 19(2), 2015): in lexicographic order no point can dominate one
// before it, so each point joins the first front none of whose members dominates it, and that
// front is found by binary search, because a point dominated by a member of front r is
// dominated by a member of every front before r (that member's own dominator, transitively).
// With two objectives the newest member of a front decides alone: the members of a front, in
// insertion (lexicographic) order, have non-increasing second objectives, so the newest has the
// front's smallest f2 and an f1 no greater than p's, and it dominates p whenever any member does
// (were it equal to p, no member could). That makes two objectives O(N log N); from three on, a
// front is scanned from its newest member: O(M N^2) at worst, far less on typical points. tests/unit/search/pareto_test.cc checks the ranks
// against Deb's algorithm on random sets with ties, constraints and failures.
ParetoRanking nondominated_sort(std::span<const ParetoPoint> points) {
  const std::size_t n = points.size();
  ParetoRanking r;
  r.rank.assign(n, 0);
  if (n == 0) return r;
  const std::size_t m = points[0].objectives.size();
  for (std::size_t i = 1; i < n; ++i)
    if (points[i].objectives.size() != m)
      throw std::invalid_argument("non-dominated sort: point " + std::to_string(i) + " has " +
                                  std::to_string(points[i].objectives.size()) + " objectives, point 0 has " +
                                  std::to_string(m) + "; every point needs the same objectives");
  std::vector<std::size_t> feasible, infeasible, failed;
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = effective_violation(points[i]);
    (v[i] == 0 ? feasible : v[i] == kInf ? failed : infeasible).push_back(i);
  }

  // The feasible points: ENS-BS in lexicographic order (ties by index, for a fixed order).
  std::sort(feasible.begin(), feasible.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = points[a].objectives;
    const auto& y = points[b].objectives;
    for (std::size_t j = 0; j < m; ++j) {
      if (x[j] < y[j]) return true;
      if (y[j] < x[j]) return false;
    }
    return a < b;
  });
  auto front_dominates = [&](const std::vector<std::size_t>& front, std::size_t p) {
    if (m == 2) return pareto_dominates(points[front.back()].objectives, points[p].objectives);
    for (auto q = front.rbegin(); q != front.rend(); ++q)
      if (pareto_dominates(points[*q].objectives, points[p].objectives)) return true;
    return false;
  };
  for (const std::size_t p : feasible) {
    std::size_t lo = 0, hi = r.fronts.size();  // fronts [0, lo) dominate p, [hi, end) do not
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (front_dominates(r.fronts[mid], p)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo == r.fronts.size()) r.fronts.emplace_back();
    r.fronts[lo].push_back(p);
  }

  // The infeasible ones: a front per distinct violation, smallest first; then the failed ones.
  std::sort(infeasible.begin(), infeasible.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b] || (v[a] == v[b] && a < b); });
  for (std::size_t k = 0; k < infeasible.size(); ++k) {
    if (k == 0 || v[infeasible[k]] != v[infeasible[k - 1]]) r.fronts.emplace_back();
    r.fronts.back().push_back(infeasible[k]);
  }
  if (!failed.empty()) r.fronts.push_back(std::move(failed));

  for (std::size_t rank = 0; rank < r.fronts.size(); ++rank) {
    std::sort(r.fronts[rank].begin(), r.fronts[rank].end());
    for (const std::size_t p : r.fronts[rank]) r.rank[p] = rank;
  }
  return r;
}

std::vector<double> crowding_distance(std::span<const ParetoPoint> points, std::span<const std::size_t> front) {
  std::vector<double> out(front.size(), 0.0);
  // Only points with finite objectives span the front; failed ones keep 0.
  std::vector<std::size_t> finite;  // positions in `front`
  for (std::size_t k = 0; k < front.size(); ++k) {
    if (front[k] >= points.size())
      throw std::invalid_argument("crowding distance: index " + std::to_string(front[k]) + " past the " +
                                  std::to_string(points.size()) + " points");
    if (all_finite(points[front[k]].objectives)) finite.push_back(k);
  }
  if (finite.size() <= 2) {
    for (const std::size_t k : finite) out[k] = kInf;
    return out;
  }
  const std::size_t m = points[front[finite[0]]].objectives.size();
  for (const std::size_t k : finite)
    if (points[front[k]].objectives.size() != m)
      throw std::invalid_argument("crowding distance: point " + std::to_string(front[k]) +
                                  " has a different number of objectives from point " +
                                  std::to_string(front[finite[0]]));
  std::vector<std::size_t> order = finite;
  for (std::size_t j = 0; j < m; ++j) {
    auto f = [&](std::size_t k) { return points[front[k]].objectives[j]; };
    // Ties by index, so that the order, and so the distances, never depend on the sort.
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return f(a) != f(b) ? f(a) < f(b) : front[a] < front[b];
    });
    const double lo = f(order.front()), hi = f(order.back());
    if (!(hi > lo)) continue;  // every value equal: no spread to measure in this objective
    out[order.front()] = kInf;
    out[order.back()] = kInf;
    for (std::size_t i = 1; i + 1 < order.size(); ++i) out[order[i]] += (f(order[i + 1]) - f(order[i - 1])) / (hi - lo);
  }
  return out;
}

bool selected_before(const ParetoSelection& s, std::size_t i, std::size_t j) {
  if (s.ranking.rank[i] != s.ranking.rank[j]) return s.ranking.rank[i] < s.ranking.rank[j];
  if (s.crowding[i] != s.crowding[j]) return s.crowding[i] > s.crowding[j];
  return i < j;
}

ParetoSelection pareto_selection(std::span<const ParetoPoint> points) {
  ParetoSelection s;
  s.ranking = nondominated_sort(points);
  s.crowding.assign(points.size(), 0.0);
  for (const auto& front : s.ranking.fronts) {
    const auto d = crowding_distance(points, front);
    for (std::size_t k = 0; k < front.size(); ++k) s.crowding[front[k]] = d[k];
  }
  s.order.resize(points.size());
  std::iota(s.order.begin(), s.order.end(), std::size_t{0});
  std::sort(s.order.begin(), s.order.end(), [&](std::size_t i, std::size_t j) { return selected_before(s, i, j); });
  return s;
}

}  // namespace ranktune::search
