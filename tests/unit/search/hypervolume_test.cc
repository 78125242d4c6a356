// Hypervolume (search/hypervolume.h): hand-computed values in 1, 2 and 3 objectives, the points
// that count, agreement with inclusion-exclusion (exact, any dimension) and with a seeded Monte
// Carlo estimate on random sets, exclusive contributions against HV(all) - HV(all but one), the
// work cap of 4 objectives or more and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "search/hypervolume.h"
#include "tests/unit/common/expect_text.h"

using namespace ranktune::search;

namespace {

using Points = std::vector<std::vector<double>>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();


/// Inclusion-exclusion over every subset: the union of the points' boxes, exactly, in any
/// dimension; 2^n terms, so only for small sets. Shares no code with the library.
double inclusion_exclusion(const Points& pts, const std::vector<double>& ref) {
  Points in;
  for (const auto& p : pts) {
    bool counts = true;
    for (std::size_t j = 0; j < ref.size(); ++j) counts = counts && std::isfinite(p[j]) && p[j] < ref[j];
    if (counts) in.push_back(p);
  }
  double total = 0;
  for (std::uint32_t mask = 1; mask < (1u << in.size()); ++mask) {
    std::vector<double> corner(ref.size(), -kInf);
    int members = 0;
    for (std::size_t i = 0; i < in.size(); ++i)
      if (mask >> i & 1u) {
        ++members;
        for (std::size_t j = 0; j < ref.size(); ++j) corner[j] = std::max(corner[j], in[i][j]);
      }
    double box = 1;
    for (std::size_t j = 0; j < ref.size(); ++j) box *= ref[j] - corner[j];
    total += members % 2 ? box : -box;
  }
  return total;
}

/// n points with coordinates on a grid of `levels` steps in [0, 1) (so that ties, duplicates and
/// dominated points occur), a few outside the reference or NaN.
Points random_set(std::mt19937_64& rng, std::size_t n, std::size_t d, int levels) {
  std::uniform_int_distribution<int> level(0, levels - 1), odd(0, 19);
  Points pts(n, std::vector<double>(d));
  for (auto& p : pts) {
    for (auto& x : p) x = double(level(rng)) / levels;
    const int what = odd(rng);
    if (what == 0) p[0] = 1.5;  // beyond the reference
    if (what == 1) p[d - 1] = 1.0;  // on it: not strictly dominating
    if (what == 2) p[0] = kNaN;
  }
  return pts;
}

/// Calls f(points, reference, "D objectives, round R") for `rounds` sets of n random points
/// (random_set, alternating a coarse grid, for ties, and a fine one) in each dimension 1..max_d,
/// the reference at 1 in every objective.
template <class F>
void each_random_set(std::uint64_t seed, std::size_t max_d, int rounds, std::size_t n, F&& f) {
  std::mt19937_64 rng(seed);
  for (std::size_t d = 1; d <= max_d; ++d)
    for (int round = 0; round < rounds; ++round)
      f(random_set(rng, n, d, round % 2 ? 4 : 1000), std::vector<double>(d, 1.0),
        std::to_string(d) + " objectives, round " + std::to_string(round));
}

}  // namespace

TEST(Hypervolume, TwoObjectivesHandComputed) {
  // (1,3): 3*1, (2,2): 2*1, (3,1): 1*1.
  const std::vector<double> ref{4, 4};
  Points pts{{2, 2}, {1, 3}, {3, 1}};
  EXPECT_DOUBLE_EQ(hypervolume(pts, ref), 6.0);
  pts.push_back({3, 3});    // dominated
  pts.push_back({2, 2});    // a duplicate
  pts.push_back({5, 0});    // beyond the reference in one objective
  pts.push_back({0, 4});    // on the reference: not strictly dominating it
  pts.push_back({kNaN, 0});  // failed
  pts.push_back({-kInf, 1});  // failed, though "better" than everything
  EXPECT_DOUBLE_EQ(hypervolume(pts, ref), 6.0);
  EXPECT_EQ(hypervolume(Points{}, ref), 0.0);
  EXPECT_DOUBLE_EQ(hypervolume(Points{{1, 1}}, ref), 9.0);
}

TEST(Hypervolume, OneObjective) {
  EXPECT_DOUBLE_EQ(hypervolume(Points{{0.5}, {0.25}, {2.0}}, {1.0}), 0.75);
}

TEST(Hypervolume, ThreeObjectivesHandComputed) {
  // Two boxes: 0.5 + 0.25 - the overlap (0.5,0.5,0.5)..(1,1,1) = 0.125.
  EXPECT_DOUBLE_EQ(hypervolume(Points{{0, 0, 0.5}, {0.5, 0.5, 0}}, {1, 1, 1}), 0.625);
  // Three boxes of 2 whose pairwise and triple overlaps are the unit cube at (1,1,1): 6 - 3 + 1.
  EXPECT_DOUBLE_EQ(hypervolume(Points{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}, {2, 2, 2}), 4.0);
  // A staircase that a later (higher z) point reshapes: (0,2,0) and (2,0,0) at z = 0 cover
  // 2*4 + 2*4 - 2*2 = 12 of the 4x4 cross-section; from z = 1, (1,1,1) adds 1*1 more; ref z 2.
  EXPECT_DOUBLE_EQ(hypervolume(Points{{1, 1, 1}, {0, 2, 0}, {2, 0, 0}}, {4, 4, 2}), 12.0 * 1 + 13.0 * 1);
  // A point that removes two steps of the staircase at once.
  EXPECT_DOUBLE_EQ(hypervolume(Points{{1, 2, 0}, {2, 1, 0}, {0, 0, 1}}, {3, 3, 2}), 3.0 * 1 + 9.0 * 1);
}

TEST(Hypervolume, AgreesWithInclusionExclusionOnRandomSets) {
  each_random_set(11, 5, 30, 10, [](const Points& pts, const std::vector<double>& ref, const std::string& where) {
    EXPECT_NEAR(hypervolume(pts, ref), inclusion_exclusion(pts, ref), 1e-12) << where;
  });
}

TEST(Hypervolume, AgreesWithAMonteCarloEstimate) {
  // Uniform samples in the box [0, ref]: the fraction dominated by a point of the set estimates
  // HV / box. Seeded, so the test is deterministic; 5 standard errors apart would be a real
  // disagreement (a one-in-a-million draw otherwise).
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t d = 2; d <= 4; ++d)
    for (int round = 0; round < 3; ++round) {
      Points pts(40, std::vector<double>(d));
      for (auto& p : pts) {
        // Points near the simplex sum(x) = 1, so that most of them are on the front.
        double sum = 0;
        for (auto& x : p) sum += x = -std::log(u(rng));
        for (auto& x : p) x = x / sum + 0.1 * u(rng);
      }
      const std::vector<double> ref(d, 1.1);
      const int samples = 200000;
      int inside = 0;
      std::vector<double> s(d);
      for (int k = 0; k < samples; ++k) {
        for (auto& x : s) x = 1.1 * u(rng);
        for (const auto& p : pts) {
          bool dominated = true;
          for (std::size_t j = 0; j < d && dominated; ++j) dominated = p[j] <= s[j];
          if (dominated) {
            ++inside;
            break;
          }
        }
      }
      const double box = std::pow(1.1, double(d)), f = double(inside) / samples;
      const double se = box * std::sqrt(f * (1 - f) / samples);
      EXPECT_NEAR(hypervolume(pts, ref), box * f, 5 * se) << d << " objectives, round " << round;
    }
}

TEST(Hypervolume, ContributionsHandComputed) {
  const std::vector<double> ref{4, 4};
  // Each of the three front points adds a unit square; the dominated one, the one beyond the
  // reference and the two equal ones add nothing.
  const Points pts{{2, 2}, {1, 3}, {3, 1}, {3, 3}, {5, 0}};
  EXPECT_EQ(hypervolume_contributions(pts, ref), (std::vector<double>{1, 1, 1, 0, 0}));
  const Points twins{{1, 3}, {2, 2}, {2, 2}};
  EXPECT_EQ(hypervolume_contributions(twins, ref), (std::vector<double>{1, 0, 0}));  // [1,2) x [3,4)
  // A dominated point still covers part of what its dominator alone covers among the front:
  // (0.5,0) owns its box 0.5 less the 0.1875 of (0.75,0.25), which it dominates.
  const auto c2 = hypervolume_contributions(Points{{0.75, 0.25}, {0.5, 0}}, {1, 1});
  EXPECT_EQ(c2[0], 0.0);
  EXPECT_DOUBLE_EQ(c2[1], 0.3125);
  // 3 objectives: (0,0,0.5) alone owns 0.5 - 0.125, (0.5,0.5,0) owns 0.25 - 0.125.
  const auto c3 = hypervolume_contributions(Points{{0, 0, 0.5}, {0.5, 0.5, 0}}, {1, 1, 1});
  EXPECT_DOUBLE_EQ(c3[0], 0.375);
  EXPECT_DOUBLE_EQ(c3[1], 0.125);
}

TEST(Hypervolume, ContributionsAreTheVolumeLostWithoutEachPoint) {
  each_random_set(5, 4, 20, 25, [](const Points& pts, const std::vector<double>& ref, const std::string& where) {
    const double all = hypervolume(pts, ref);
    const auto c = hypervolume_contributions(pts, ref);
    ASSERT_EQ(c.size(), pts.size());
    for (std::size_t i = 0; i < pts.size(); ++i) {
      Points rest = pts;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
      EXPECT_NEAR(c[i], all - hypervolume(rest, ref), 1e-12) << where << " point " << i;
    }
  });
}

TEST(Hypervolume, FourObjectivesOrMorePastTheCapIsAClearError) {
  // 300 points on the simplex of 5 objectives are all non-dominated: C(300, 2) * 300 = 1.3e7 steps.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Points pts(300, std::vector<double>(5));
  for (auto& p : pts) {
    double sum = 0;
    for (auto& x : p) sum += x = -std::log(u(rng));
    for (auto& x : p) x /= sum;
  }
  const std::vector<double> ref(5, 1.0);
  const auto message = error_message_of([&] { hypervolume(pts, ref); });
  EXPECT_CONTAINS(message, "300 non-dominated points in 5 objectives");
  EXPECT_CONTAINS(message, "give fewer points");
  EXPECT_CONTAINS(error_message_of([&] { hypervolume_contributions(pts, ref); }), "300 non-dominated points");
  // Under the cap (150 points: 1.7e6 steps) it answers, and dominated copies do not count.
  pts.resize(150);
  const double hv = hypervolume(pts, ref);
  EXPECT_GT(hv, 0.0);
  for (std::size_t i = 0; i < 150; ++i) {
    auto worse = pts[i];
    for (auto& x : worse) x += 0.01;
    pts.push_back(worse);
  }
  EXPECT_NEAR(hypervolume(pts, ref), hv, 1e-12);
}

TEST(Hypervolume, BadInputIsAClearError) {
  EXPECT_CONTAINS(error_message_of([] { hypervolume(Points{{1, 2}}, {}); }), "reference point has no coordinate");
  EXPECT_CONTAINS(error_message_of([] { hypervolume(Points{{1, 2}}, {3, kNaN}); }), "coordinate 1 of the reference point");
  EXPECT_CONTAINS(error_message_of([] { hypervolume(Points{{1, 2}}, {kInf, 3}); }), "coordinate 0 of the reference point");
  EXPECT_CONTAINS(error_message_of([] { hypervolume(Points{{1, 2}, {1, 2, 3}}, {3, 3}); }),
                  "point 1 has 3 coordinates, the reference point 2");
  EXPECT_CONTAINS(error_message_of([] { hypervolume_contributions(Points{{1}}, {3, 3}); }), "point 0 has 1 coordinates");
}
