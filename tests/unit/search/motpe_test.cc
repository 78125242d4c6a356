// MOTPE: the split of search/motpe_split.h on hand-built fronts (rank order, the hypervolume
// cut of the last front, infeasible and failed points, depths, weights).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "search/motpe_split.h"

using namespace ranktune::search;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

motpe::Observation feasible(double a, double b, std::int64_t depth = 0) { return {{{a, b}, 0.0}, depth}; }
motpe::Observation infeasible(double a, double b, double violation) { return {{{a, b}, violation}, 0}; }

std::vector<std::size_t> good_of(const motpe::Split& s) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < s.good.size(); ++i)
    if (s.good[i]) out.push_back(i);
  return out;
}

using Indices = std::vector<std::size_t>;

}  // namespace

// ---------------------------------------------------------------- the split

TEST(MotpeSplit, WholeFrontsInRankOrder) {
  // Front 0: 0, 2, 3. Front 1: 1 (under 0) and 5 (under 3). Front 2: 4 (under 1).
  const std::vector<motpe::Observation> o = {feasible(1, 5), feasible(2, 6), feasible(5, 1),
                                             feasible(3, 3), feasible(6, 6), feasible(4, 4)};
  EXPECT_EQ(good_of(motpe::split(o, 3)), (Indices{0, 2, 3}));
  EXPECT_EQ(good_of(motpe::split(o, 5)), (Indices{0, 1, 2, 3, 5}));
  EXPECT_EQ(good_of(motpe::split(o, 6)), (Indices{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(good_of(motpe::split(o, 9)), (Indices{0, 1, 2, 3, 4, 5}));  // no more than there are
  EXPECT_EQ(good_of(motpe::split(o, 0)), Indices{});
  EXPECT_TRUE(good_of(motpe::split({}, 3)).empty());
}

TEST(MotpeSplit, TheLastFrontIsCutByGreedyHypervolume) {
  // The front P0 (1, 9), P1 (2, 4), P2 (3, 3.5), P3 (9, 1): worst (9, 9), reference (9.9, 9.9).
  // Boxes: P0 8.9 * 0.9 = 8.01, P1 7.9 * 5.9 = 46.61, P2 6.9 * 6.4 = 44.16, P3 0.9 * 8.9 = 8.01,
  // so P1 first. Then the gains beside P1: P0 8.01 - 7.9 * 0.9 = 0.9, P2 44.16 - 6.9 * 5.9 =
  // 3.45, P3 8.01 - 0.9 * 5.9 = 2.7: P2, not the extreme P3.
  const std::vector<std::vector<double>> front = {{1, 9}, {2, 4}, {3, 3.5}, {9, 1}};
  const auto ref = motpe::reference_point(front);
  EXPECT_DOUBLE_EQ(ref[0], 9.9);
  EXPECT_DOUBLE_EQ(ref[1], 9.9);
  EXPECT_EQ(motpe::greedy_hypervolume_subset(front, 2, ref), (Indices{1, 2}));
  EXPECT_EQ(motpe::greedy_hypervolume_subset(front, 3, ref), (Indices{1, 2, 3}));  // P3's 2.7 over P0's 0.9
  // In the split, behind a whole front (5 and 6 dominate the four) that fits.
  std::vector<motpe::Observation> o;
  for (const auto& p : front) o.push_back(feasible(p[0], p[1]));
  o.push_back(feasible(0.5, 0.5));
  o.push_back(feasible(0.4, 0.6));
  o.push_back(feasible(10, 10));  // front 2
  EXPECT_EQ(good_of(motpe::split(o, 4)), (Indices{1, 2, 4, 5}));
  EXPECT_EQ(good_of(motpe::split(o, 5)), (Indices{1, 2, 3, 4, 5}));
  // Equal gains go to the smaller index: a front of two equal boxes.
  EXPECT_EQ(motpe::greedy_hypervolume_subset(std::vector<std::vector<double>>{{1, 2}, {2, 1}}, 1, {3, 3}), Indices{0});
  // Negative objectives (a maximized metric): the reference moves outwards too, 0.9 w.
  const auto neg = motpe::reference_point(std::vector<std::vector<double>>{{-5, -1}, {-2, 0}});
  EXPECT_DOUBLE_EQ(neg[0], -1.8);
  EXPECT_DOUBLE_EQ(neg[1], 1e-12);
}

TEST(MotpeSplit, InfeasibleOnlyAfterTheFeasibleAndFailedNever) {
  // 0 and 3 feasible; 1, 2 and 4 infeasible (violations 2, 0.5, 1; 2 dominates everything in
  // its objectives); 5 failed (a NaN objective), 6 failed (an infinite violation).
  std::vector<motpe::Observation> o = {feasible(3, 3), infeasible(1, 1, 2.0), infeasible(0, 0, 0.5),
                                       feasible(4, 2), infeasible(2, 2, 1.0), feasible(kNaN, 0),
                                       infeasible(0, 0, INFINITY)};
  // The feasible front {0, 3} first, cut to one by its reference (4.4, 3.3): box 1.4 * 0.3
  // for 0, 0.4 * 1.3 for 3.
  EXPECT_EQ(good_of(motpe::split(o, 1)), (Indices{3}));
  EXPECT_EQ(good_of(motpe::split(o, 2)), (Indices{0, 3}));
  EXPECT_EQ(good_of(motpe::split(o, 3)), (Indices{0, 2, 3}));  // then the least violation
  EXPECT_EQ(good_of(motpe::split(o, 4)), (Indices{0, 2, 3, 4}));
  EXPECT_EQ(good_of(motpe::split(o, 7)), (Indices{0, 1, 2, 3, 4}));  // failed ones never
  // Infeasible ones of equal violation: by index.
  const std::vector<motpe::Observation> tie = {infeasible(5, 5, 1.0), infeasible(1, 1, 1.0), infeasible(0, 0, 3.0)};
  EXPECT_EQ(good_of(motpe::split(tie, 1)), (Indices{0}));
}

TEST(MotpeSplit, DeeperTrialsRankFirst) {
  // Trials stopped at depth 3 dominate those that ran to 9 in their objectives, but a result
  // after 3 iterations does not compete with one after 9 (TPE's depth ranking).
  const std::vector<motpe::Observation> o = {feasible(0.1, 0.1, 3), feasible(5, 1, 9), feasible(1, 5, 9),
                                             feasible(6, 6, 9), feasible(0.3, 0.05, 3)};
  EXPECT_EQ(good_of(motpe::split(o, 2)), (Indices{1, 2}));
  EXPECT_EQ(good_of(motpe::split(o, 3)), (Indices{1, 2, 3}));
  // Reference (0.33, 0.11): (0.1, 0.1) covers 0.23 * 0.01, (0.3, 0.05) 0.03 * 0.06.
  EXPECT_EQ(good_of(motpe::split(o, 4)), (Indices{0, 1, 2, 3}));
}

TEST(MotpeSplit, GoodWeightsAreHypervolumeContributions) {
  // Good: (1, 3), (2, 2), (3, 1), the dominated (3, 3), and an infeasible one. Worst of the
  // feasible (3, 3): reference (3.3, 3.3). Exclusive contributions: (1, 3) 1 * 0.3, (2, 2)
  // 1 * 1, (3, 1) 0.3 * 1, (3, 3) 0. Each plus 1e-12, over the largest; infeasible: 1e-12.
  const std::vector<motpe::Observation> o = {feasible(1, 3), feasible(2, 2), feasible(3, 1), feasible(3, 3),
                                             infeasible(0, 0, 1.0), feasible(kNaN, 1)};
  const auto s = motpe::split(o, 5);
  EXPECT_EQ(good_of(s), (Indices{0, 1, 2, 3, 4}));
  const double eps = 1e-12, top = 1 + eps;
  EXPECT_NEAR(s.weights[0], (0.3 + eps) / top, 1e-12);
  EXPECT_DOUBLE_EQ(s.weights[1], 1.0);
  EXPECT_NEAR(s.weights[2], (0.3 + eps) / top, 1e-12);
  EXPECT_DOUBLE_EQ(s.weights[3], eps / top);
  EXPECT_DOUBLE_EQ(s.weights[4], eps);
  EXPECT_EQ(s.weights[5], 0.0);  // not good
  // A lone feasible good point weighs 1; only infeasible ones, 1e-12 each.
  EXPECT_EQ(motpe::good_weights(std::vector<ParetoPoint>{{{1, 1}, 0}, {{0, 0}, 2}}), (std::vector<double>{1, eps}));
  EXPECT_EQ(motpe::good_weights(std::vector<ParetoPoint>{{{0, 0}, 2}}), (std::vector<double>{eps}));
}

TEST(MotpeSplit, HugeValuesFallBackInsteadOfFailing) {
  // 1.1 * 1e308 overflows: the cut takes the front by index, the weights are all 1.
  const std::vector<motpe::Observation> o = {feasible(1e308, 1), feasible(1, 1e308), feasible(2, 1e307)};
  const auto s = motpe::split(o, 2);
  EXPECT_EQ(good_of(s), (Indices{0, 1}));
  EXPECT_EQ(s.weights[0], 1.0);
  EXPECT_EQ(s.weights[1], 1.0);
}
