// bench_pareto: the cost of ranking N points by Pareto domination (search/pareto.h's
// pareto_selection: non-dominated sort, crowding distance, selection order), which MO-ASHA
// pays on every decision over the points of a rung, multi-objective HyperBand over a
// bracket's rung, NSGA-II over its population and the controller over every finished trial
// before each flush. Baseline, in the same run: Deb's fast non-dominated sort as the NSGA-II
// paper gives it (every pair compared, O(M N^2)), which ranktune used until the efficient
// non-dominated sort replaced it; both must give the same ranks, which is checked.
// Points: N uniform in [0, 1]^M (seed 1), every 10th infeasible with a violation in {1, 2, 3}.
// Usage: bench_pareto [max_n [baseline_max_n]]   (defaults 100000 and 10000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "search/pareto.h"

namespace {

using namespace ranktune::search;
using Clock = std::chrono::steady_clock;

// Deb's constrained domination on violations computed once (the points here are finite), as
// the replaced sort did.
bool dominates_v(const ParetoPoint& a, double va, const ParetoPoint& b, double vb) {
  if (va == 0 && vb == 0) {
    bool better = false;
    for (std::size_t i = 0; i < a.objectives.size(); ++i) {
      if (a.objectives[i] > b.objectives[i]) return false;
      if (a.objectives[i] < b.objectives[i]) better = true;
    }
    return better;
  }
  if (va == 0) return true;
  if (vb == 0) return false;
  return va < vb;
}

// Deb et al. 2002, section III-A, with domination counts (O(N) memory): the baseline.
std::vector<std::size_t> deb_ranks(const std::vector<ParetoPoint>& points) {
  const std::size_t n = points.size();
  std::vector<double> v(n);
  for (std::size_t p = 0; p < n; ++p) v[p] = points[p].violation;
  std::vector<std::size_t> count(n, 0), rank(n, 0), current, next;
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t q = 0; q < n; ++q)
      if (q != p && dominates_v(points[q], v[q], points[p], v[p])) ++count[p];
  for (std::size_t p = 0; p < n; ++p)
    if (count[p] == 0) current.push_back(p);
  for (std::size_t r = 0; !current.empty(); ++r) {
    next.clear();
    for (const std::size_t p : current) {
      rank[p] = r;
      for (std::size_t q = 0; q < n; ++q)
        if (q != p && dominates_v(points[p], v[p], points[q], v[q]) && --count[q] == 0) next.push_back(q);
    }
    current.swap(next);
  }
  return rank;
}

template <class F>
double seconds(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t max_n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const std::size_t baseline_max_n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10000;
  std::printf("| objectives | points | fronts | pareto_selection (s) | Deb's O(M N^2) sort alone (s) | ratio |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const std::size_t m : {2u, 3u}) {
    for (std::size_t n = 1000; n <= max_n; n *= 10) {
      std::mt19937_64 rng(1);
      std::uniform_real_distribution<double> u(0, 1);
      std::uniform_int_distribution<int> violation(1, 3);
      std::vector<ParetoPoint> points(n);
      for (std::size_t i = 0; i < n; ++i) {
        points[i].objectives.resize(m);
        for (double& x : points[i].objectives) x = u(rng);
        if (i % 10 == 9) points[i].violation = violation(rng);
      }
      ParetoSelection s;
      const double ours = seconds([&] { s = pareto_selection(points); });
      if (n <= baseline_max_n) {
        std::vector<std::size_t> ranks;
        const double deb = seconds([&] { ranks = deb_ranks(points); });
        if (ranks != s.ranking.rank) {
          std::fprintf(stderr, "bench_pareto: the ranks differ from Deb's sort at M = %zu, N = %zu\n", m, n);
          return 1;
        }
        std::printf("| %zu | %zu | %zu | %.4f | %.4f | %.0fx |\n", m, n, s.ranking.fronts.size(), ours, deb, deb / ours);
      } else {
        std::printf("| %zu | %zu | %zu | %.4f | not run | |\n", m, n, s.ranking.fronts.size(), ours);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
