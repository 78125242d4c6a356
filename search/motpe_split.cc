// MOTPE's good/bad split and the weights of its good set (search/motpe_split.h: the rules
// and their papers, Ozaki et al., GECCO 2020 and JAIR 2022).
#include "search/motpe_split.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "search/hypervolume.h"

namespace ranktune::search::motpe {

namespace {

// Optuna's epsilon: the floor of a weight, and the reference coordinate where the worst value is 0.
constexpr double kEps = 1e-12;

// What the failed-value rule of pareto.h makes of a point: +inf for a failure, else its
// violation (0 when feasible).
double violation_of(const ParetoPoint& p) {
  if (std::isnan(p.violation)) return INFINITY;
  for (const double v : p.objectives)
    if (!std::isfinite(v)) return INFINITY;
  return std::max(0.0, p.violation);
}

bool all_finite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

// `f()` (a std::optional<T>), or nothing where the exact hypervolume is not available: values
// too large for a double, or a set past the cap of the algorithm for 4 objectives or more
// (hypervolume.h throws). The split then falls back to the indices' order or to equal
// weights, so that a suggestion never fails on it.
template <class T, class F>
std::optional<T> if_computable(F f) {
  try {
    return f();
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// Pareto domination of two feasible points (pareto.h's rule for them; the split has checked
// feasibility once, so the pair test is only the comparisons). Throws when the counts differ.
bool feasible_dominates(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw std::invalid_argument("MOTPE split: points of " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) + " objectives cannot be compared");
  bool better = false;
  for (std::size_t j = 0; j < a.size(); ++j) {
    if (a[j] > b[j]) return false;
    better = better || a[j] < b[j];
  }
  return better;
}

// The non-dominated ones of `rest` (indices into `points`, all feasible), ascending, and
// removes them from `rest`: the next front of the non-dominated sort (search/pareto.h), found
// alone. The split needs only the first few fronts (the good set holds 25 points by default),
// and peeling them costs O(N F) for a front of F points, where the full sort is O(N^2):
// at 10,000 observations, about 3 s a suggestion.
std::vector<std::size_t> peel_front(const std::vector<ParetoPoint>& points, std::vector<std::size_t>& rest) {
  // An archive of the points no point seen so far dominates: a point joins unless one of the
  // archive dominates it, and drives out those it dominates. A point dominated by one that
  // was driven out is dominated by the one that drove it out (domination is transitive), so
  // the archive ends as exactly the non-dominated set.
  std::vector<std::size_t> archive;
  for (const std::size_t p : rest) {
    const auto& x = points[p].objectives;
    if (std::any_of(archive.begin(), archive.end(),
                    [&](std::size_t q) { return feasible_dominates(points[q].objectives, x); }))
      continue;
    std::erase_if(archive, [&](std::size_t q) { return feasible_dominates(x, points[q].objectives); });
    archive.push_back(p);
  }
  std::sort(archive.begin(), archive.end());
  std::vector<std::size_t> left;
  left.reserve(rest.size() - archive.size());
  std::set_difference(rest.begin(), rest.end(), archive.begin(), archive.end(), std::back_inserter(left));
  rest = std::move(left);
  return archive;
}

}  // namespace

std::vector<double> reference_point(std::span<const std::vector<double>> points) {
  if (points.empty()) throw std::invalid_argument("MOTPE reference point: no point");
  std::vector<double> ref = points[0];
  for (const auto& p : points)
    for (std::size_t j = 0; j < ref.size(); ++j) ref[j] = std::max(ref[j], p[j]);
  // Outwards by 10% of the worst value's size, so that the worst points still add volume.
  for (double& r : ref) r = r == 0 ? kEps : std::max(1.1 * r, 0.9 * r);
  return ref;
}

std::vector<std::size_t> greedy_hypervolume_subset(std::span<const std::vector<double>> points, std::size_t count,
                                                   const std::vector<double>& reference) {
  count = std::min(count, points.size());
  // Lazy greedy (as Optuna's own does since 4.0): a point's gain can only shrink as the
  // selection grows (the hypervolume is submodular), so a gain computed in an earlier round
  // bounds today's. The candidates wait in a heap by bound, largest first, ties by index; the
  // top is recomputed against the current selection unless its bound is of this round, in
  // which case it is the point the full scan would choose. Most bounds are never refreshed.
  struct Entry {
    double gain;         ///< hv(selection + point) - hv(selection), as of `round`
    double hv;           ///< hv(selection + point)
    std::size_t index;
    std::size_t round;
  };
  const auto below = [](const Entry& a, const Entry& b) { return a.gain != b.gain ? a.gain < b.gain : a.index > b.index; };
  std::vector<std::vector<double>> selected;
  std::vector<Entry> heap;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double hv = hypervolume(std::span(&points[i], 1), reference);
    if (!std::isfinite(hv)) throw std::invalid_argument("greedy hypervolume subset: a volume is not finite");
    heap.push_back({hv, hv, i, 0});
  }
  std::make_heap(heap.begin(), heap.end(), below);
  std::vector<std::size_t> chosen;
  double selected_hv = 0;
  while (chosen.size() < count) {
    std::pop_heap(heap.begin(), heap.end(), below);
    Entry top = heap.back();
    heap.pop_back();
    if (top.round == chosen.size()) {
      chosen.push_back(top.index);
      selected.push_back(points[top.index]);
      selected_hv = top.hv;
      continue;
    }
    selected.push_back(points[top.index]);
    top.hv = hypervolume(selected, reference);
    selected.pop_back();
    top.gain = top.hv - selected_hv;
    if (!std::isfinite(top.gain)) throw std::invalid_argument("greedy hypervolume subset: a volume is not finite");
    top.round = chosen.size();
    heap.push_back(top);
    std::push_heap(heap.begin(), heap.end(), below);
  }
  return chosen;
}

std::vector<double> good_weights(std::span<const ParetoPoint> good) {
  std::vector<double> weights(good.size(), kEps);  // infeasible ones keep the floor
  std::vector<std::size_t> feasible;
  std::vector<std::vector<double>> values;
  for (std::size_t i = 0; i < good.size(); ++i) {
    if (violation_of(good[i]) != 0) continue;
    feasible.push_back(i);
    values.push_back(good[i].objectives);
  }
  if (feasible.size() == 1) weights[feasible[0]] = 1;
  if (feasible.size() <= 1) return weights;
  const auto ref = reference_point(values);
  const auto contributions = if_computable<std::vector<double>>([&]() -> std::optional<std::vector<double>> {
    if (!all_finite(ref) || !std::isfinite(hypervolume(values, ref))) return std::nullopt;
    auto c = hypervolume_contributions(values, ref);
    if (!all_finite(c)) return std::nullopt;
    return c;
  });
  if (!contributions) {
    for (const std::size_t i : feasible) weights[i] = 1;
    return weights;
  }
  const std::vector<double>& c = *contributions;
  const double top = *std::max_element(c.begin(), c.end()) + kEps;
  for (std::size_t k = 0; k < feasible.size(); ++k) weights[feasible[k]] = std::clamp((c[k] + kEps) / top, 0.0, 1.0);
  return weights;
}

Split split(std::span<const Observation> observations, std::size_t n_good) {
  const std::size_t n = observations.size();
  Split out;
  out.good.assign(n, false);
  out.weights.assign(n, 0.0);
  std::size_t left = n_good;
  std::vector<std::size_t> good;  // in the order they were taken
  const auto take = [&](std::size_t i) {
    out.good[i] = true;
    good.push_back(i);
    --left;
  };

  // 1. The feasible ones, deepest group first, front by front.
  std::map<std::int64_t, std::vector<std::size_t>, std::greater<>> by_depth;
  std::vector<std::size_t> infeasible;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = violation_of(observations[i].point);
    if (v == 0) by_depth[observations[i].depth].push_back(i);
    else if (std::isfinite(v)) infeasible.push_back(i);
  }
  for (const auto& [depth, group] : by_depth) {
    if (left == 0) break;
    std::vector<ParetoPoint> points;
    points.reserve(group.size());
    for (const std::size_t i : group) points.push_back(observations[i].point);
    std::vector<std::size_t> rest(group.size());
    std::iota(rest.begin(), rest.end(), std::size_t{0});
    while (left > 0 && !rest.empty()) {
      const std::vector<std::size_t> front = peel_front(points, rest);
      if (front.size() <= left) {
        for (const std::size_t k : front) take(group[k]);
        continue;
      }
      // The front that does not fit: its points of most hypervolume.
      std::vector<std::vector<double>> values;
      for (const std::size_t k : front) values.push_back(points[k].objectives);
      const auto ref = reference_point(values);
      const std::size_t count = left;
      const auto chosen = if_computable<std::vector<std::size_t>>([&]() -> std::optional<std::vector<std::size_t>> {
        if (!all_finite(ref)) return std::nullopt;
        return greedy_hypervolume_subset(values, count, ref);
      });
      if (chosen) {
        for (const std::size_t k : *chosen) take(group[front[k]]);
      } else {
        for (std::size_t k = 0; k < count; ++k) take(group[front[k]]);
      }
    }
  }

  // 2. The infeasible ones, least violation first.
  std::stable_sort(infeasible.begin(), infeasible.end(), [&](std::size_t a, std::size_t b) {
    return violation_of(observations[a].point) < violation_of(observations[b].point);
  });
  for (std::size_t k = 0; k < infeasible.size() && left > 0; ++k) take(infeasible[k]);

  // 3. Failed ones are never good. The weights, over the good set in index order.
  std::sort(good.begin(), good.end());
  std::vector<ParetoPoint> good_points;
  for (const std::size_t i : good) good_points.push_back(observations[i].point);
  const auto w = good_weights(good_points);
  for (std::size_t k = 0; k < good.size(); ++k) out.weights[good[k]] = w[k];
  return out;
}

}  // namespace ranktune::search::motpe
