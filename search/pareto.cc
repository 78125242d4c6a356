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

// Deb's algorithm keeps, for every point p, the list S_p of the points it dominates: O(N^2)
// memory in the worst case (a total order), which for the tens of thousands of trials a rung can
// hold is gigabytes. Here the domination counts are computed first, and each front's points
// then scan all points again to decrement the counts of those they dominate, which is the same
// O(M N^2) time (every point is in exactly one front, so it scans once) in O(N) memory.
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
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = effective_violation(points[i]);

  std::vector<std::size_t> dominated_by(n, 0);  // n_p: how many points dominate p
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t q = 0; q < n; ++q)
      if (p != q && constrained_dominates(points[q], v[q], points[p], v[p])) ++dominated_by[p];

  std::vector<std::size_t> current;
  for (std::size_t p = 0; p < n; ++p)
    if (dominated_by[p] == 0) current.push_back(p);
  for (std::size_t rank = 0; !current.empty(); ++rank) {
    std::vector<std::size_t> next;
    for (const std::size_t p : current) {
      r.rank[p] = rank;
      for (std::size_t q = 0; q < n; ++q)
        if (q != p && constrained_dominates(points[p], v[p], points[q], v[q]) && --dominated_by[q] == 0)
          next.push_back(q);
    }
    std::sort(next.begin(), next.end());
    r.fronts.push_back(std::move(current));
    current = std::move(next);
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
