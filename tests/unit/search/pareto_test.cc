// Pareto ranking (search/pareto.h): minimization form, constraint violation, Deb's constrained
// domination case by case, the failed-value rule, non-dominated sorting and crowding distance
// against hand-computed fronts, and the selection order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "search/pareto.h"
#include "tests/unit/common/expect_text.h"

using namespace ranktune::search;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<Mode> kMinMin{Mode::Min, Mode::Min};

ParetoPoint pt(std::vector<double> f, std::vector<double> c = {}) { return make_pareto_point(f, kMinMin, c); }

}  // namespace

TEST(Pareto, MinimizationFormNegatesMaxObjectives) {
  const std::vector<double> v{0.9, 12.0, -3.0};
  const std::vector<Mode> modes{Mode::Max, Mode::Min, Mode::Max};
  EXPECT_EQ(to_minimization(v, modes), (std::vector<double>{-0.9, 12.0, 3.0}));
  EXPECT_CONTAINS(error_message_of([&] { to_minimization(v, kMinMin); }), "3 objective values for 2 modes");
  EXPECT_CONTAINS(error_message_of([&] { to_minimization({}, {}); }), "no objective value");
}

TEST(Pareto, TotalViolationSumsThePositivePartsAndNaNIsInfinite) {
  EXPECT_EQ(total_violation({}), 0.0);
  EXPECT_EQ(total_violation(std::vector<double>{-1.0, 0.0}), 0.0);  // c <= 0 holds, 0 included
  EXPECT_EQ(total_violation(std::vector<double>{2.0, -1.0, 0.5}), 2.5);
  EXPECT_EQ(total_violation(std::vector<double>{-1.0, kNaN}), kInf);
  EXPECT_EQ(total_violation(std::vector<double>{kInf}), kInf);
}

TEST(Pareto, MakePointAppliesModesConstraintsAndTheFailedValueRule) {
  const std::vector<Mode> max_min{Mode::Max, Mode::Min};
  const auto p = make_pareto_point(std::vector<double>{0.8, 3.0}, max_min, std::vector<double>{0.5, -2.0});
  EXPECT_EQ(p.objectives, (std::vector<double>{-0.8, 3.0}));
  EXPECT_EQ(p.violation, 0.5);
  EXPECT_FALSE(p.feasible());
  EXPECT_TRUE(pt({1, 1}, {0.0}).feasible());
  EXPECT_EQ(pt({kNaN, 1}).violation, kInf);
  EXPECT_EQ(pt({1, kInf}).violation, kInf);
  EXPECT_EQ(pt({1, -kInf}).violation, kInf);  // a "perfect" -inf loss is a failure too
  EXPECT_EQ(pt({1, 1}, {kNaN}).violation, kInf);
}

TEST(Pareto, FeasiblePointsUseParetoDomination) {
  EXPECT_TRUE(dominates(pt({1, 1}), pt({2, 2})));   // better in both
  EXPECT_TRUE(dominates(pt({1, 2}), pt({1, 3})));   // equal in one, better in the other
  EXPECT_FALSE(dominates(pt({1, 3}), pt({1, 2})));
  EXPECT_FALSE(dominates(pt({1, 2}), pt({1, 2})));  // equal: neither
  EXPECT_FALSE(dominates(pt({1, 3}), pt({2, 1})));  // a trade-off: neither
  EXPECT_FALSE(dominates(pt({2, 1}), pt({1, 3})));
  // Max mode: higher accuracy with the same size dominates.
  const std::vector<Mode> max_min{Mode::Max, Mode::Min};
  EXPECT_TRUE(dominates(make_pareto_point(std::vector<double>{0.9, 5}, max_min),
                        make_pareto_point(std::vector<double>{0.8, 5}, max_min)));
  EXPECT_FALSE(dominates(make_pareto_point(std::vector<double>{0.8, 5}, max_min),
                         make_pareto_point(std::vector<double>{0.9, 5}, max_min)));
  EXPECT_CONTAINS(error_message_of([] { dominates(ParetoPoint{{1, 2}, 0}, ParetoPoint{{1, 2, 3}, 0}); }),
                  "points of 2 and 3 objectives");
}

TEST(Pareto, FeasibleDominatesInfeasibleWhateverTheObjectives) {
  const auto feasible_bad = pt({100, 100}, {0.0});  // c = 0 holds
  const auto infeasible_good = pt({0, 0}, {0.1});
  EXPECT_TRUE(dominates(feasible_bad, infeasible_good));
  EXPECT_FALSE(dominates(infeasible_good, feasible_bad));
}

TEST(Pareto, BetweenInfeasiblePointsTheSmallerViolationWins) {
  const auto slight = pt({100, 100}, {0.5, -3.0});
  const auto worse = pt({0, 0}, {0.25, 0.5});  // total 0.75
  EXPECT_TRUE(dominates(slight, worse));
  EXPECT_FALSE(dominates(worse, slight));
  // Equal violations: neither, whatever the objectives.
  EXPECT_FALSE(dominates(pt({0, 0}, {1.0}), pt({5, 5}, {1.0})));
  EXPECT_FALSE(dominates(pt({5, 5}, {1.0}), pt({0, 0}, {1.0})));
}

TEST(Pareto, FailedPointsAreDominatedByEveryOtherAndTieAmongThemselves) {
  const auto nan_objective = pt({kNaN, 0});
  const auto inf_objective = pt({0, kInf});
  const auto nan_constraint = pt({0, 0}, {kNaN});
  for (const auto* failed : {&nan_objective, &inf_objective, &nan_constraint}) {
    EXPECT_TRUE(dominates(pt({9, 9}), *failed));
    EXPECT_TRUE(dominates(pt({9, 9}, {1e300}), *failed));  // infeasible, but a finite violation
    EXPECT_FALSE(dominates(*failed, pt({9, 9}, {1e300})));
    for (const auto* other : {&nan_objective, &inf_objective, &nan_constraint})
      EXPECT_FALSE(dominates(*failed, *other));
  }
  // A point built by hand with a NaN objective and no violation follows the same rule.
  const ParetoPoint by_hand{{kNaN, 0}, 0};
  EXPECT_FALSE(by_hand.feasible());
  EXPECT_TRUE((ParetoPoint{{1, 0}, -0.5}).feasible());  // a negative violation by hand counts as none
  EXPECT_TRUE(dominates(pt({9, 9}), by_hand));
  EXPECT_FALSE(dominates(by_hand, pt({9, 9})));
}

namespace {

// The hand-computed example (minimization): ranks in the comments.
std::vector<ParetoPoint> example() {
  return {
      pt({1, 5}),          // 0: front
      pt({2, 3}),          // 1: front
      pt({3, 1}),          // 2: front
      pt({2, 4}),          // 3: rank 1 (by 1)
      pt({4, 4}),          // 4: rank 2 (by 3 and 5)
      pt({3, 3}),          // 5: rank 1 (by 1)
      pt({0, 0}, {1.0}),   // 6: infeasible, violation 1: rank 4 (by 7)
      pt({9, 9}, {0.5}),   // 7: infeasible, violation 0.5: rank 3 (after every feasible rank)
      pt({kNaN, 0}),       // 8: failed: rank 5
      pt({0, 0}, {kNaN}),  // 9: failed: rank 5
  };
}

}  // namespace

TEST(Pareto, NondominatedSortMatchesTheHandComputedFronts) {
  const auto pts = example();
  const auto r = nondominated_sort(pts);
  EXPECT_EQ(r.rank, (std::vector<std::size_t>{0, 0, 0, 1, 2, 1, 4, 3, 5, 5}));
  EXPECT_EQ(r.fronts, (std::vector<std::vector<std::size_t>>{{0, 1, 2}, {3, 5}, {4}, {7}, {6}, {8, 9}}));
  EXPECT_TRUE(nondominated_sort({}).fronts.empty());
  // Max mode: the same front seen as maximization of the negated values.
  const std::vector<Mode> max_max{Mode::Max, Mode::Max};
  std::vector<ParetoPoint> flipped;
  for (const auto& p : pts)
    flipped.push_back(make_pareto_point(std::vector<double>{-p.objectives[0], -p.objectives[1]}, max_max,
                                        p.violation == 0 ? std::vector<double>{} : std::vector<double>{p.violation}));
  EXPECT_EQ(nondominated_sort(flipped).rank, r.rank);
}

TEST(Pareto, NondominatedSortNamesAPointOfAnotherDimension) {
  const std::vector<ParetoPoint> pts{pt({1, 2}), pt({2, 1}), ParetoPoint{{1, 2, 3}, 0}};
  EXPECT_CONTAINS(error_message_of([&] { nondominated_sort(pts); }), "point 2 has 3 objectives, point 0 has 2");
}

TEST(Pareto, NondominatedSortAgreesWithThePairwiseDefinitionOnRandomSets) {
  // rank(p) = 0 when nothing dominates p, else 1 + the largest rank of its dominators. Every
  // number of objectives from 1 to 4 (2 takes the sort's shortcut), with duplicate points,
  // tied violations and failed points.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> small(0, 4);
  for (int round = 0; round < 80; ++round) {
    const std::size_t m = 1 + round % 4;
    std::vector<Mode> modes(m, Mode::Min);
    modes[0] = Mode::Max;
    std::vector<ParetoPoint> pts;
    for (int i = 0; i < 60; ++i) {
      std::vector<double> c, x(m);
      if (small(rng) == 0) c.push_back(small(rng) - 1);  // some infeasible, with tied violations
      for (double& v : x) v = small(rng);
      if (small(rng) == 0 && small(rng) == 0) x[m - 1] = kNaN;  // a failed one now and then
      pts.push_back(make_pareto_point(x, modes, c));
    }
    const auto r = nondominated_sort(pts);
    for (std::size_t p = 0; p < pts.size(); ++p) {
      std::size_t expected = 0;
      for (std::size_t q = 0; q < pts.size(); ++q)
        if (dominates(pts[q], pts[p])) expected = std::max(expected, r.rank[q] + 1);
      EXPECT_EQ(r.rank[p], expected) << "round " << round << " point " << p;
    }
    // The fronts list every point once, at its rank, in ascending order.
    std::size_t listed = 0;
    for (std::size_t rank = 0; rank < r.fronts.size(); ++rank) {
      EXPECT_TRUE(std::is_sorted(r.fronts[rank].begin(), r.fronts[rank].end())) << "round " << round;
      for (const std::size_t p : r.fronts[rank]) EXPECT_EQ(r.rank[p], rank);
      listed += r.fronts[rank].size();
    }
    EXPECT_EQ(listed, pts.size());
  }
}

TEST(Pareto, CrowdingDistanceMatchesTheHandComputedValues) {
  // Both ranges are 4. f1 order: interior (1,2) (2-0)/4, (2,1.5) (3-1)/4, (3,1) (4-2)/4.
  // f2 order (4,0) (3,1) (2,1.5) (1,2) (0,4): (3,1) 1.5/4, (2,1.5) 1/4, (1,2) 2.5/4.
  const std::vector<ParetoPoint> pts{pt({2, 1.5}), pt({0, 4}), pt({4, 0}), pt({1, 2}), pt({3, 1})};
  const std::vector<std::size_t> front{0, 1, 2, 3, 4};
  const auto d = crowding_distance(pts, front);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_DOUBLE_EQ(d[0], 0.75);
  EXPECT_EQ(d[1], kInf);
  EXPECT_EQ(d[2], kInf);
  EXPECT_DOUBLE_EQ(d[3], 1.125);
  EXPECT_DOUBLE_EQ(d[4], 0.875);
  // In the order of `front`, over a subset.
  const std::vector<std::size_t> part{4, 1, 2};
  EXPECT_EQ(crowding_distance(pts, part), (std::vector<double>{2.0, kInf, kInf}));  // (4-0)/4 + (4-0)/4
}

TEST(Pareto, CrowdingSkipsAnObjectiveWithoutSpreadAndSmallFrontsAreInfinite) {
  // f2 is 1 everywhere. Were it measured, its tie order (by index) would make point 0 an end.
  const std::vector<ParetoPoint> pts{pt({1, 1}), pt({0, 1}), pt({2, 1})};
  const std::vector<std::size_t> all{0, 1, 2};
  EXPECT_EQ(crowding_distance(pts, all), (std::vector<double>{1.0, kInf, kInf}));
  // Every objective without spread: all zero, so the index decides.
  const std::vector<ParetoPoint> same{pt({1, 1}), pt({1, 1}), pt({1, 1})};
  EXPECT_EQ(crowding_distance(same, all), (std::vector<double>{0, 0, 0}));
  const std::vector<std::size_t> two{0, 2};
  EXPECT_EQ(crowding_distance(pts, two), (std::vector<double>{kInf, kInf}));
  const std::vector<std::size_t> bad{0, 7};
  EXPECT_CONTAINS(error_message_of([&] { crowding_distance(pts, bad); }), "index 7 past the 3 points");
}

TEST(Pareto, CrowdingGivesFailedPointsZeroAndLeavesThemOut) {
  const std::vector<ParetoPoint> pts{pt({0, 0}, {kNaN}), pt({kNaN, 1}), pt({1, kInf}), pt({2, 2}, {kNaN})};
  const std::vector<std::size_t> all{0, 1, 2, 3};
  // Two finite points: both ends. Without the rule, NaN would poison the ranges.
  EXPECT_EQ(crowding_distance(pts, all), (std::vector<double>{kInf, 0, 0, kInf}));
}

TEST(Pareto, SelectionOrderIsRankThenCrowdingThenIndex) {
  const auto pts = example();
  const auto s = pareto_selection(pts);
  // Front 0: 0 and 2 are ends (inf, by index), 1 is interior (2/2 + 4/4 = 2). Front 1: two
  // points, both inf. Then one point per rank, and the failed pair: 9 has finite objectives
  // (only its constraint is NaN), so it is its front's one spread point (inf); 8 gets 0.
  EXPECT_DOUBLE_EQ(s.crowding[1], 2.0);
  EXPECT_EQ(s.order, (std::vector<std::size_t>{0, 2, 1, 3, 5, 4, 7, 6, 9, 8}));
  for (std::size_t a = 0; a < s.order.size(); ++a)
    for (std::size_t b = 0; b < s.order.size(); ++b)
      EXPECT_EQ(selected_before(s, s.order[a], s.order[b]), a < b);
  // Equal points: by index.
  const std::vector<ParetoPoint> same{pt({1, 1}), pt({1, 1}), pt({1, 1}), pt({1, 1})};
  EXPECT_EQ(pareto_selection(same).order, (std::vector<std::size_t>{0, 1, 2, 3}));
}
