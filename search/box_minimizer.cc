// Projected L-BFGS over a box (search/box_minimizer.h: the method and its papers).
#include "search/box_minimizer.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

namespace ranktune::search {

namespace {

struct Pair {
  Eigen::VectorXd s, y;
  double rho;  // 1 / (y . s)
};

// -H g by the two-loop recursion over `memory`, H0 = (s.y / y.y) I from the newest pair.
Eigen::VectorXd lbfgs_direction(const std::deque<Pair>& memory, const Eigen::VectorXd& g) {
  Eigen::VectorXd q = g;
  std::vector<double> a(memory.size());
  for (std::size_t i = memory.size(); i-- > 0;) {
    a[i] = memory[i].rho * memory[i].s.dot(q);
    q -= a[i] * memory[i].y;
  }
  if (!memory.empty()) q *= 1.0 / (memory.back().rho * memory.back().y.squaredNorm());
  for (std::size_t i = 0; i < memory.size(); ++i) {
    const double b = memory[i].rho * memory[i].y.dot(q);
    q += (a[i] - b) * memory[i].s;
  }
  return -q;
}

}  // namespace

BoxMinimum minimize_in_box(const BoxObjective& f, Eigen::VectorXd start, const Eigen::VectorXd& lower,
                           const Eigen::VectorXd& upper, const BoxMinimizerOptions& options) {
  const auto project = [&](const Eigen::VectorXd& v) { return v.cwiseMax(lower).cwiseMin(upper).eval(); };
  // A non-finite value is worse than anything: the search backs off from it.
  const auto value = [](double v) { return std::isfinite(v) ? v : std::numeric_limits<double>::infinity(); };
  BoxMinimum best;
  best.x = project(start);
  Eigen::VectorXd g(best.x.size());
  best.f = value(f(best.x, g));
  best.evaluations = 1;
  if (!std::isfinite(best.f) || !g.allFinite()) return best;
  std::deque<Pair> memory;
  const Eigen::Index n = best.x.size();
  Eigen::VectorXd gn(n);
  for (int it = 0; it < options.max_iterations && best.evaluations < options.max_evaluations; ++it) {
    // Held coordinates: on a bound with the gradient pushing outwards (or a fixed one).
    Eigen::VectorXd free_g = g;
    for (Eigen::Index i = 0; i < n; ++i) {
      const bool held = lower[i] == upper[i] || (best.x[i] <= lower[i] && g[i] > 0) ||
                        (best.x[i] >= upper[i] && g[i] < 0);
      if (held) free_g[i] = 0;
    }
    if (free_g.lpNorm<Eigen::Infinity>() <= options.gradient_tolerance) break;
    bool accepted = false;
    Eigen::VectorXd xn;
    double fn = 0;
    // Try the quasi-Newton direction; if its search fails, forget the memory and try the
    // steepest descent once before giving up.
    for (int attempt = 0; attempt < 2 && !accepted; ++attempt) {
      Eigen::VectorXd d = memory.empty() ? Eigen::VectorXd(-free_g) : lbfgs_direction(memory, free_g);
      for (Eigen::Index i = 0; i < n; ++i)
        if (free_g[i] == 0) d[i] = 0;
      if (!(d.dot(free_g) < 0)) {
        memory.clear();
        d = -free_g;
      }
      // Without curvature information the first step moves the largest coordinate by 1
      // at most.
      double t = memory.empty() ? std::min(1.0, 1.0 / d.lpNorm<Eigen::Infinity>()) : 1.0;
      for (int k = 0; k < 40 && best.evaluations < options.max_evaluations; ++k, t *= 0.5) {
        xn = project(best.x + t * d);
        const Eigen::VectorXd s = xn - best.x;
        if (s.lpNorm<Eigen::Infinity>() == 0) break;  // the step vanished: nothing to gain
        fn = value(f(xn, gn));
        ++best.evaluations;
        if (fn <= best.f + 1e-4 * g.dot(s) && gn.allFinite()) {
          accepted = true;
          break;
        }
      }
      if (!accepted) {
        if (memory.empty()) break;
        memory.clear();
      }
    }
    if (!accepted) break;
    Pair p{xn - best.x, gn - g, 0};
    const double sy = p.s.dot(p.y);
    // Keep only pairs with positive curvature, so that H stays positive definite.
    if (sy > 1e-12 * p.s.norm() * p.y.norm()) {
      p.rho = 1.0 / sy;
      memory.push_back(std::move(p));
      if (static_cast<int>(memory.size()) > options.memory) memory.pop_front();
    }
    const double gain = best.f - fn, scale = std::max({std::abs(best.f), std::abs(fn), 1.0});
    best.x = xn;
    best.f = fn;
    g = gn;
    if (gain <= options.relative_tolerance * scale) break;
  }
  return best;
}

}  // namespace ranktune::search
