// MOTPE: the split of search/motpe_split.h on hand-built fronts (rank order, the hypervolume
// cut of the last front, infeasible and failed points, depths, weights), the "tpe" searcher
// with several objectives (search/tpe_searcher.h): determinism, what counts as an
// observation, the constant liar, save/restore, and ZDT1 against random search; and "bohb"
// with several objectives (search/bohb_searcher.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>

#include "search/bohb_searcher.h"
#include "search/hypervolume.h"
#include "search/motpe_split.h"
#include "search/random_searcher.h"
#include "search/searcher.h"
#include "search/tpe_searcher.h"
#include "tests/unit/search/searcher_fixtures.h"
#include "train/synthetic.h"

using namespace ranktune::search;
using namespace ranktune::search::searcher_fixtures;

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

// ---------------------------------------------------------------- ZDT1 through the searcher

Objectives zdt_objectives() { return {{"f1", "f2"}, {Mode::Min, Mode::Min}, {}}; }

SearcherOptions mo_opts(std::uint64_t seed, std::int64_t n, const Objectives& o) {
  SearcherOptions s;
  s.seed = seed;
  s.num_samples = n;
  s.metric = o.metrics[0];
  s.mode = o.modes[0];
  s.objectives = o;
  return s;
}

/// "x1", "x2", ...: the synthetic functions' parameters. (Appended rather than "x" + a
/// string, which GCC 12 warns about wrongly, -Wrestrict.)
std::string param(int i) {
  std::string name = "x";
  name += std::to_string(i);
  return name;
}

Space cube(int dims) {
  Space s;
  for (int i = 1; i <= dims; ++i) s.params.push_back({param(i), uniform(0, 1)});
  return s;
}

std::vector<double> coords(const Config& c, int dims) {
  std::vector<double> x;
  for (int i = 1; i <= dims; ++i) x.push_back(std::get<double>(c.at(param(i))));
  return x;
}

Metrics zdt1_metrics(const Config& c, int dims) {
  const auto f = ranktune::train::zdt1(coords(c, dims));
  return {{"f1", f[0]}, {"f2", f[1]}};
}

/// The sequential loop on ZDT1: suggest, evaluate, complete. The configs in order.
std::vector<Config> drive_zdt1(Searcher& s, int dims, int trials) {
  std::vector<Config> out;
  for (TrialId id = 1; id <= trials; ++id) {
    auto sug = s.suggest(id);
    if (sug.kind != Suggestion::Kind::Config) break;
    s.on_trial_complete(id, zdt1_metrics(sug.config, dims), false);
    out.push_back(std::move(sug.config));
  }
  return out;
}

/// BOHB's loop: trial i runs 1 + (i % 3) * 4 iterations, reporting ZDT1 plus 1 / t in both
/// objectives at iteration t, so that budgets 1..9 fill at different rates.
std::vector<Config> drive_bohb_zdt1(Searcher& s, int dims, TrialId first, TrialId last) {
  std::vector<Config> out;
  for (TrialId id = first; id <= last; ++id) {
    auto sug = s.suggest(id);
    if (sug.kind != Suggestion::Kind::Config) break;
    const std::int64_t iterations = 1 + (id % 3) * 4;
    Metrics m;
    for (std::int64_t t = 1; t <= iterations; ++t) {
      m = zdt1_metrics(sug.config, dims);
      for (auto& [name, v] : m) v += 1.0 / static_cast<double>(t);
      s.on_trial_result(id, t, m);
    }
    s.on_trial_complete(id, m, false);
    out.push_back(std::move(sug.config));
  }
  return out;
}

/// f1 + f2 of ZDT1 summed over configs[from..]: where a run's suggestions went.
double objective_sum(const std::vector<Config>& configs, std::size_t from, int dims) {
  double sum = 0;
  for (std::size_t i = from; i < configs.size(); ++i) {
    const auto f = zdt1_metrics(configs[i], dims);
    sum += f.at("f1") + f.at("f2");
  }
  return sum;
}

double zdt1_hypervolume(const std::vector<Config>& configs, int dims) {
  std::vector<std::vector<double>> points;
  for (const auto& c : configs) points.push_back(ranktune::train::zdt1(coords(c, dims)));
  return hypervolume(points, {1.1, 11.0});
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void expect_refused(Searcher& s, const std::string& state, const std::string& text) {
  try {
    s.restore(state);
    ADD_FAILURE() << "restored: " << state;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

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

// The split finds the fronts one at a time (motpe_split.cc); they must be the non-dominated
// sort's: every good point ranks no worse than every other one, on random sets with ties.
TEST(MotpeSplit, FrontsAreTheNonDominatedSorts) {
  Rng rng(5);
  std::uniform_int_distribution<int> value(0, 6);  // few values: many ties and equal points
  for (std::size_t m : {2u, 3u}) {
    for (int round = 0; round < 20; ++round) {
      std::vector<motpe::Observation> o;
      std::vector<ParetoPoint> points;
      for (int i = 0; i < 40; ++i) {
        std::vector<double> v(m);
        for (auto& x : v) x = value(rng);
        o.push_back({{v, 0.0}, 0});
        points.push_back(o.back().point);
      }
      const auto rank = nondominated_sort(points).rank;
      for (std::size_t n_good : {1u, 5u, 12u, 25u}) {
        const auto s = motpe::split(o, n_good);
        ASSERT_EQ(good_of(s).size(), n_good);
        std::size_t worst_good = 0, best_other = SIZE_MAX;
        for (std::size_t i = 0; i < o.size(); ++i) {
          if (s.good[i]) worst_good = std::max(worst_good, rank[i]);
          else best_other = std::min(best_other, rank[i]);
        }
        EXPECT_LE(worst_good, best_other) << "m " << m << ", round " << round << ", n_good " << n_good;
      }
    }
  }
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

// The lazy evaluation chooses what a full scan of every gain in every round chooses, on
// fronts (what the split cuts: random points of the unit sphere's positive part, mutually
// non-dominated), where every gain is positive. (Among dominated points gains are zero, and
// which one a full scan takes is decided by rounding.)
TEST(MotpeSplit, LazyGreedyChoosesAsTheFullScan) {
  Rng rng(8);
  std::uniform_real_distribution<double> u(0.01, 1);
  for (std::size_t m : {2u, 3u, 4u}) {
    for (int round = 0; round < 10; ++round) {
      std::vector<std::vector<double>> pts(30, std::vector<double>(m));
      for (auto& p : pts) {
        for (auto& x : p) x = u(rng);
        const double norm = std::sqrt(std::inner_product(p.begin(), p.end(), p.begin(), 0.0));
        for (auto& x : p) x /= norm;
      }
      const auto ref = motpe::reference_point(pts);
      std::vector<std::size_t> full;
      std::vector<std::vector<double>> selected;
      for (int k = 0; k < 12; ++k) {
        std::size_t best = 0;
        double best_gain = -1;
        const double before = hypervolume(selected, ref);
        for (std::size_t i = 0; i < pts.size(); ++i) {
          if (std::find(full.begin(), full.end(), i) != full.end()) continue;
          selected.push_back(pts[i]);
          if (const double gain = hypervolume(selected, ref) - before; gain > best_gain) best = i, best_gain = gain;
          selected.pop_back();
        }
        full.push_back(best);
        selected.push_back(pts[best]);
      }
      EXPECT_EQ(motpe::greedy_hypervolume_subset(pts, 12, ref), full) << "m " << m << ", round " << round;
    }
  }
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

// ---------------------------------------------------------------- the searcher

TEST(Motpe, TpeAndBohbAreRegisteredForSeveralObjectives) {
  const auto o = zdt_objectives();
  const auto names = multi_objective_searcher_names();
  for (const char* name : {"tpe", "bohb"}) {
    EXPECT_NO_THROW(make_searcher(name, cube(2), mo_opts(1, 10, o), {})) << name;
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

TEST(Motpe, SameSeedSameSuggestionsAndTheModelFollowsTheObjectives) {
  const int dims = 4;
  const auto o = zdt_objectives();
  TpeSearcher a(cube(dims), mo_opts(11, 60, o), {.n_startup = 10}), b(cube(dims), mo_opts(11, 60, o), {.n_startup = 10}),
      c(cube(dims), mo_opts(12, 60, o), {.n_startup = 10});
  const auto ca = drive_zdt1(a, dims, 60), cb = drive_zdt1(b, dims, 60), cc = drive_zdt1(c, dims, 60);
  ASSERT_EQ(ca.size(), 60u);
  EXPECT_EQ(ca, cb);
  EXPECT_NE(std::vector<Config>(ca.begin() + 10, ca.end()), std::vector<Config>(cc.begin() + 10, cc.end()));
  EXPECT_EQ(a.observations(), 60u);
  // Maximizing both instead: the same startup draws, then other suggestions.
  const Objectives flipped{{"f1", "f2"}, {Mode::Max, Mode::Max}, {}};
  TpeSearcher d(cube(dims), mo_opts(11, 60, flipped), {.n_startup = 10});
  const auto cd = drive_zdt1(d, dims, 60);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(ca[i], cd[i]) << "startup suggestion " << i;
  int differ = 0;
  for (std::size_t i = 10; i < 60; ++i) differ += ca[i] != cd[i];
  EXPECT_GE(differ, 45);
  // And the model does what the modes ask: the later half of the maximizing run has larger
  // objectives on average.
  EXPECT_GT(objective_sum(cd, 30, dims), objective_sum(ca, 30, dims));
}

TEST(Motpe, WhatCountsAsAnObservation) {
  const auto o = zdt_objectives();
  TpeSearcher s(cube(2), mo_opts(3, 20, o), {.n_startup = 3});
  for (TrialId id = 1; id <= 6; ++id) s.suggest(id);
  s.on_trial_complete(1, {{"f1", 0.5}, {"f2", 0.5}}, false);
  s.on_trial_complete(2, {{"f1", 0.5}, {"f2", 0.5}}, true);  // errored: not an observation
  s.on_trial_complete(3, {{"other", 1.0}}, false);           // none of the objectives: not one
  s.on_trial_complete(4, {{"f1", 0.5}}, false);              // f2 missing: a failed one
  s.on_trial_complete(5, {{"f1", kNaN}, {"f2", 1}}, false);  // NaN: a failed one
  s.on_trial_complete(99, {{"f1", 0.1}, {"f2", 0.1}}, false);  // never suggested
  EXPECT_EQ(s.observations(), 3u);
  // Past n_startup with only one good observation and two failed: the model proposes.
  const auto next = s.suggest(7);
  ASSERT_EQ(next.kind, Suggestion::Kind::Config);
  EXPECT_EQ(next.config.size(), 2u);
}

// With the constant liar, trials still running join g(x): a searcher that holds three
// running trials proposes otherwise than one that holds none; without it, the same. adopt()
// adds the running trials without taking a suggestion index, so both make suggestion 41.
TEST(Motpe, ConstantLiarPutsRunningTrialsInTheBadSet) {
  const int dims = 3;
  const auto o = zdt_objectives();
  for (const bool liar : {true, false}) {
    SCOPED_TRACE(liar ? "constant_liar" : "no liar");
    TpeSearcher a(cube(dims), mo_opts(5, 100, o), {.n_startup = 10, .constant_liar = liar});
    TpeSearcher b(cube(dims), mo_opts(5, 100, o), {.n_startup = 10, .constant_liar = liar});
    drive_zdt1(a, dims, 40);
    drive_zdt1(b, dims, 40);
    for (TrialId id = 101; id <= 103; ++id)
      a.adopt(id, {{"x1", 0.1 * static_cast<double>(id - 100)}, {"x2", 0.0}, {"x3", 0.0}});
    int differ = 0;
    for (TrialId id = 41; id <= 50; ++id) differ += a.suggest(id).config != b.suggest(id).config;
    if (liar) EXPECT_GE(differ, 8);
    else EXPECT_EQ(differ, 0);
  }
}

// 40 workers asking at once after 15 completed trials: with the liar the suggestions spread
// out (each running one makes its neighbourhood bad for the next), without it they crowd
// l(x)'s modes. The mean distance to the nearest other suggestion, in [0, 1]^2.
double mo_spread(bool liar) {
  const auto o = zdt_objectives();
  TpeSearcher s(cube(2), mo_opts(9, 100, o), {.n_startup = 10, .constant_liar = liar});
  drive_zdt1(s, 2, 15);
  std::vector<std::vector<double>> xs;
  for (TrialId id = 16; id < 56; ++id) xs.push_back(coords(s.suggest(id).config, 2));
  double sum = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double nearest = 2;
    for (std::size_t j = 0; j < xs.size(); ++j)
      if (j != i) nearest = std::min(nearest, std::hypot(xs[i][0] - xs[j][0], xs[i][1] - xs[j][1]));
    sum += nearest;
  }
  return sum / static_cast<double>(xs.size());
}

TEST(Motpe, ConstantLiarSpreadsSimultaneousSuggestions) {
  const double with = mo_spread(true), without = mo_spread(false);
  std::printf("mean nearest-neighbour distance of 40 simultaneous suggestions: %.4f with the liar, %.4f without\n",
              with, without);
  EXPECT_GT(with, 1.3 * without);
}

TEST(Motpe, SaveRestoreMidRunContinuesIdentically) {
  const int dims = 3;
  // A constraint too, so that violations go through the state: f1 >= 0.2.
  Objectives o = zdt_objectives();
  o.constraints.push_back({"f1", false, 0.2});
  TpeSearcher a(cube(dims), mo_opts(21, 100, o), {.n_startup = 5});
  drive_zdt1(a, dims, 25);
  a.on_trial_result(30, 1, {});  // not ours: ignored
  const auto p26 = a.suggest(26).config, p27 = a.suggest(27).config;  // running at save time
  a.on_trial_result(26, 2, zdt1_metrics(p26, dims));
  const std::string state = a.save();
  EXPECT_EQ(state.rfind("tpe 3\n", 0), 0u) << state;

  TpeSearcher b(cube(dims), mo_opts(21, 100, o), {.n_startup = 5});
  b.restore(state);
  EXPECT_EQ(b.save(), state);
  EXPECT_EQ(b.observations(), 25u);
  EXPECT_EQ(a.suggest(28).config, b.suggest(28).config);
  for (auto* s : {&a, &b}) {
    s->on_trial_complete(26, zdt1_metrics(p26, dims), false);
    s->on_trial_complete(27, zdt1_metrics(p27, dims), false);
  }
  for (TrialId id = 29; id < 40; ++id) {
    const auto ca = a.suggest(id).config, cb = b.suggest(id).config;
    ASSERT_EQ(ca, cb) << "suggestion " << id;
    a.on_trial_complete(id, zdt1_metrics(ca, dims), false);
    b.on_trial_complete(id, zdt1_metrics(cb, dims), false);
  }
  EXPECT_EQ(a.save(), b.save());
}

TEST(Motpe, RestoreRefusesOtherObjectivesAndDamage) {
  const int dims = 2;
  const auto o = zdt_objectives();
  TpeSearcher a(cube(dims), mo_opts(1, 50, o), {.n_startup = 3});
  drive_zdt1(a, dims, 6);
  const std::string state = a.save();
  // Other modes, another constraint, one objective.
  TpeSearcher other_mode(cube(dims), mo_opts(1, 50, {{"f1", "f2"}, {Mode::Min, Mode::Max}, {}}));
  expect_refused(other_mode, state, "saved with other objectives (f1 min, f2 min; this experiment has f1 min, f2 max)");
  TpeSearcher constrained(cube(dims), mo_opts(1, 50, {{"f1", "f2"}, {Mode::Min, Mode::Min}, {{"f1", true, 0.5}}}));
  expect_refused(constrained, state, "this experiment has f1 min, f2 min; f1 <= 0.5");
  TpeSearcher single(cube(dims), {1, 50, "f1", Mode::Min});
  expect_refused(single, state, "saved with other objectives (f1 min, f2 min; this experiment has a single objective)");
  drive_zdt1(single, dims, 3);
  TpeSearcher multi(cube(dims), mo_opts(1, 50, o));
  expect_refused(multi, single.save(), "this experiment has f1 min, f2 min)");
  // A state of the version before objectives were recorded is of one metric.
  expect_refused(multi, "tpe 2\nnext 0\nlegacy_ranking 0\npending 0\nobserved 0\n",
                 "saved by a single-objective run (version 2); this experiment has f1 min, f2 min");
  // Damaged points: a negative or NaN violation, a row cut short.
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = state;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from << " in " << s;
    return s.replace(at, from.size(), to);
  };
  const std::string row = "\n1 0 ";  // trial 1: violation 0
  expect_refused(multi, replaced(row, "\n1 -1 "), "violation must be >= 0");
  expect_refused(multi, replaced(row, "\n1 nan "), "violation must be >= 0");
  expect_refused(multi, state.substr(0, state.rfind(' ')), "tpe searcher: saved state");  // a coordinate short
  // Refused states change nothing, and the good one reads back.
  EXPECT_EQ(multi.save(), TpeSearcher(cube(dims), mo_opts(1, 50, o)).save());
  multi.restore(state);
  EXPECT_EQ(multi.save(), state);
}

// ZDT1 in 10 dimensions, 200 trials each, 5 seeds: the median hypervolume of MOTPE's
// trials beats random search's (reference point (1.1, 11), past every value ZDT1 takes).
TEST(Motpe, BeatsRandomSearchOnZdt1) {
  const int dims = 10, trials = 200;
  const auto o = zdt_objectives();
  std::vector<double> motpe_hv, random_hv;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    TpeSearcher t(cube(dims), mo_opts(seed, trials, o));
    RandomSearcher r(cube(dims), mo_opts(seed, trials, o));
    motpe_hv.push_back(zdt1_hypervolume(drive_zdt1(t, dims, trials), dims));
    random_hv.push_back(zdt1_hypervolume(drive_zdt1(r, dims, trials), dims));
    std::printf("seed %d: hypervolume MOTPE %.4f, random %.4f\n", static_cast<int>(seed), motpe_hv.back(),
                random_hv.back());
  }
  EXPECT_GT(median(motpe_hv), median(random_hv));
}

// ---------------------------------------------------------------- bohb

// BOHB's model at its model budget takes MOTPE's split: the same seed gives the same
// suggestions, and the model follows the objectives' modes.
TEST(MotpeBohb, SameSeedSameSuggestionsAndTheModelFollowsTheObjectives) {
  const int dims = 3;
  const BohbOptions random_never{4, 0.0, {0.15, 0, 64, 1.0, true}};
  BohbSearcher a(cube(dims), mo_opts(2, 80, zdt_objectives()), random_never),
      b(cube(dims), mo_opts(2, 80, zdt_objectives()), random_never);
  const auto ca = drive_bohb_zdt1(a, dims, 1, 80), cb = drive_bohb_zdt1(b, dims, 1, 80);
  EXPECT_EQ(ca, cb);
  EXPECT_EQ(a.model_budget(), std::optional<std::int64_t>{9});
  EXPECT_EQ(a.random_suggestions(), 4);  // until budget 1 has 4 observations
  BohbSearcher d(cube(dims), mo_opts(2, 80, {{"f1", "f2"}, {Mode::Max, Mode::Max}, {}}), random_never);
  const auto cd = drive_bohb_zdt1(d, dims, 1, 80);
  EXPECT_GT(objective_sum(cd, 40, dims), objective_sum(ca, 40, dims));
}

TEST(MotpeBohb, SaveRestoreMidRunAndRefusals) {
  const int dims = 3;
  Objectives o = zdt_objectives();
  o.constraints.push_back({"f1", false, 0.2});
  BohbSearcher a(cube(dims), mo_opts(21, 100, o));
  drive_bohb_zdt1(a, dims, 1, 25);
  const auto p26 = a.suggest(26).config;  // running, with a result
  a.on_trial_result(26, 1, zdt1_metrics(p26, dims));
  const std::string state = a.save();
  EXPECT_EQ(state.rfind("bohb 2\n", 0), 0u) << state;
  BohbSearcher b(cube(dims), mo_opts(21, 100, o));
  b.restore(state);
  EXPECT_EQ(b.save(), state);
  ASSERT_TRUE(a.model_budget().has_value());
  EXPECT_EQ(a.model_budget(), b.model_budget());
  for (auto* s : {&a, &b}) s->on_trial_complete(26, zdt1_metrics(p26, dims), false);
  EXPECT_EQ(drive_bohb_zdt1(a, dims, 27, 45), drive_bohb_zdt1(b, dims, 27, 45));
  EXPECT_EQ(a.save(), b.save());
  // Other objectives, one objective, and a single-objective state.
  BohbSearcher unconstrained(cube(dims), mo_opts(21, 100, zdt_objectives()));
  expect_refused(unconstrained, state, "saved with other objectives (f1 min, f2 min; f1 >= 0.2; this experiment has "
                                       "f1 min, f2 min)");
  BohbSearcher single(cube(dims), {21, 100, "f1", Mode::Min});
  expect_refused(single, state, "this experiment has a single objective");
  expect_refused(a, "bohb 1\nnext 0\nrandom 0\nbudget -1\nruns 0\nbudgets 0\n",
                 "saved by a single-objective run (version 1); this experiment has f1 min, f2 min; f1 >= 0.2");
}
