// HyperBand (search/hyperband_scheduler.h): bracket shapes, promotion at a full rung, save and
// restore, and the rungs trials end at in a whole simulated experiment.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "search/hyperband_scheduler.h"
#include "search/pareto.h"
#include "tests/unit/controller/controller_fixtures.h"

using namespace ranktune::search;
using namespace ranktune::controller;
using namespace ranktune::search::fixtures;

namespace {

using Kind = Instruction::Kind;

}  // namespace

TEST(HyperBand, BracketsOfTheJmlrPaper) {
  // Table 1 of Li et al. (2018), R = 81, eta = 3.
  HyperBandScheduler hb({"loss", Mode::Min, 81}, {});
  ASSERT_EQ(hb.s_max(), 4);
  const std::map<int, std::pair<std::int64_t, std::vector<std::int64_t>>> expected = {
      {4, {81, {1, 3, 9, 27, 81}}}, {3, {34, {3, 9, 27, 81}}}, {2, {15, {9, 27, 81}}},
      {1, {8, {27, 81}}},           {0, {5, {81}}}};
  for (const auto& [s, e] : expected) {
    const auto shape = hb.shape(s);
    EXPECT_EQ(shape.trials, e.first) << "s=" << s;
    EXPECT_EQ(shape.milestones, e.second) << "s=" << s;
  }
  HyperBandScheduler small({"loss", Mode::Min, 9}, {{"reduction_factor", 3.0}});
  ASSERT_EQ(small.s_max(), 2);
  EXPECT_EQ(small.shape(2).trials, 9);
  EXPECT_EQ(small.shape(2).milestones, (std::vector<std::int64_t>{1, 3, 9}));
  EXPECT_EQ(small.shape(1).trials, 5);
  EXPECT_EQ(small.shape(0).trials, 3);
}

// The brackets as the report rebuilds them (search::BracketLayout) are the ones trials fill.
TEST(HyperBand, OpenedBracketsAreTheOnesTrialsFill) {
  HyperBandScheduler hb({"loss", Mode::Min, 9}, {{"reduction_factor", 3.0}});  // s_max 2: 9, 5, 3 trials
  const std::vector<int> s = {2, 1, 0, 2, 1};
  for (int k = 0; k < 5; ++k) {
    const OpenedBracket b = hb.opened_bracket(k);
    EXPECT_EQ(b.s, s[static_cast<std::size_t>(k)]) << k;
    EXPECT_EQ(b.shape.trials, hb.shape(b.s).trials) << k;
    EXPECT_EQ(b.shape.milestones, hb.shape(b.s).milestones) << k;
  }
  for (TrialId id = 1; id <= 18; ++id) {
    Trial t;
    t.id = id;
    hb.on_trial_add(t);
  }
  // Trials 1-9 in bracket 0, 10-14 in 1, 15-17 in 2, 18 opens bracket 3 (s = 2 again).
  const std::map<TrialId, int> expected = {{1, 0}, {9, 0}, {10, 1}, {14, 1}, {15, 2}, {17, 2}, {18, 3}};
  for (const auto& [id, bracket] : expected) EXPECT_EQ(hb.bracket_of(id), bracket) << "trial " << id;
}

TEST(HyperBand, FullRungPromotesTheTopThirdAndAbandonsTheRest) {
  // R = 9, eta = 3: the first bracket (s = 2) takes 9 trials, 1 iteration each at rung 0.
  Controller c = with(make_scheduler("hyperband", {"loss", Mode::Min, 9}), 9, 9);
  for (int w = 1; w <= 9; ++w) c.on_worker_free(w, 0);
  // Trial k reports loss k: trials 1, 2 and 3 are the best third.
  for (int k = 1; k <= 9; ++k) {
    const auto out = c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 1);
    if (k < 9) {
      ASSERT_EQ(out[0].kind, Kind::Pause) << k;
      c.on_checkpoint(k, 0, 1, 1);
    } else {
      ASSERT_EQ(out[0].kind, Kind::Stop) << "the last one settles the rung and loses";
    }
  }
  for (int k = 1; k <= 3; ++k) EXPECT_EQ(c.find(k)->status, TrialStatus::Running) << k;
  for (int k = 4; k <= 9; ++k) EXPECT_EQ(c.find(k)->status, TrialStatus::Terminated) << k;
  EXPECT_EQ(c.find(1)->restore_checkpoint, 1);
}

TEST(HyperBand, LastTrialOfARungThatWinsGoesOnWithoutPausing) {
  Controller c = with(make_scheduler("hyperband", {"loss", Mode::Min, 9}), 9, 9);
  for (int w = 1; w <= 9; ++w) c.on_worker_free(w, 0);
  for (int k = 1; k <= 8; ++k) {
    c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 1);
    c.on_checkpoint(k, 0, 1, 1);
  }
  const auto out = c.on_result(9, 0, {{"loss", 0.0}}, 1);  // the best
  EXPECT_EQ(out[0].kind, Kind::Continue);
  EXPECT_EQ(c.find(9)->status, TrialStatus::Running);
}

namespace {

// R = 5, eta = 3: s_max = 1, and the first bracket (s = 1) takes 3 trials with rungs at 2 and
// 5 iterations; one of the 3 goes on from rung 2.
Controller small_bracket() {
  ControllerOptions o = opts(5);
  o.non_finite = NonFinitePolicy::Worst;  // NaN reaches the scheduler
  Controller c(o, make_searcher("random", one_param(), {1, 3}), make_scheduler("hyperband", {"loss", Mode::Min, 5}));
  for (int w = 1; w <= 3; ++w) c.on_worker_free(w, 0);
  return c;
}

}  // namespace

TEST(HyperBand, ANaNAtTheRungIsTheWorstNotTheValueBefore) {
  Controller c = small_bracket();
  c.on_result(1, 0, {{"loss", 0.1}}, 1);  // the best loss of all, at iteration 1
  ASSERT_EQ(c.on_result(1, 0, {{"loss", NAN}}, 2)[0].kind, Kind::Pause);  // diverged at the rung
  c.on_checkpoint(1, 0, 2, 2);
  c.on_result(2, 0, {{"loss", 1.0}}, 3);
  ASSERT_EQ(c.on_result(2, 0, {{"loss", 1.0}}, 4)[0].kind, Kind::Pause);
  c.on_checkpoint(2, 0, 2, 4);
  c.on_result(3, 0, {{"loss", 2.0}}, 5);
  // The last one settles the rung: trial 2 (loss 1) goes on, trial 1 (NaN) ends. Judged by
  // its last finite value (0.1), trial 1 would have gone on.
  EXPECT_EQ(c.on_result(3, 0, {{"loss", 2.0}}, 6)[0].kind, Kind::Stop);
  EXPECT_EQ(c.find(2)->status, TrialStatus::Running);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
}

TEST(HyperBand, AResultWithoutTheMetricAtTheRungJudgesNothing) {
  Controller c = small_bracket();
  c.on_result(1, 0, {{"loss", 0.1}}, 1);
  // Trial 1 reaches the rung with a result that lacks the metric: it runs on, unjudged.
  c.on_result(1, 0, {{"epoch_s", 3.0}}, 2);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Running);
  for (TrialId id : {2, 3}) {
    c.on_result(id, 0, {{"loss", 1.0 + id}}, 3);
    ASSERT_EQ(c.on_result(id, 0, {{"loss", 1.0 + id}}, 4)[0].kind, Kind::Pause);
    c.on_checkpoint(id, 0, 2, 4);
  }
  // Its next result with the metric is its entry at rung 2, and the last one: the best of
  // the three, it goes on without pausing; 2 and 3 end.
  EXPECT_EQ(c.on_result(1, 0, {{"loss", 0.5}}, 5)[0].kind, Kind::Continue);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Running);
  EXPECT_EQ(c.find(2)->status, TrialStatus::Terminated);
  EXPECT_EQ(c.find(3)->status, TrialStatus::Terminated);
}

TEST(HyperBand, SaveRestoreKeepsBracketsAndPromotions) {
  HyperBandScheduler a({"loss", Mode::Min, 9}, {});
  std::vector<Trial> trials(3);
  for (int i = 0; i < 3; ++i) {
    trials[i].id = i + 1;
    a.on_trial_add(trials[i]);
  }
  HyperBandScheduler b({"loss", Mode::Min, 9}, {});
  b.restore(a.save());
  EXPECT_EQ(b.save(), a.save());
  EXPECT_EQ(b.bracket_of(2), 0);
  EXPECT_THROW(b.restore("hyperband 2 0"), std::invalid_argument);
}

namespace {

/// Simulates `c` on `workers` workers (jitter 0.3) until it is done; every trial must end
/// TERMINATED.
void simulate_to_the_end(Controller& c, int workers, const StepModel& model) {
  SimulatorOptions so;
  so.workers = workers;
  so.jitter = 0.3;
  simulate(c, model, so);
  for (const auto& t : c.trials()) EXPECT_EQ(t.status, TrialStatus::Terminated) << t.id << ": " << t.error;
}

/// How many trials ended at each iteration count.
std::map<std::int64_t, int> ends_of(const Controller& c) {
  std::map<std::int64_t, int> ends;
  for (const auto& t : c.trials()) ++ends[t.iterations];
  return ends;
}

/// R = 27, eta = 3 (the test below).
const std::map<std::int64_t, int> kHandComputedEnds = {{1, 18}, {3, 14}, {9, 9}, {27, 8}};

}  // namespace

TEST(SimulatedSearch, HyperBandTrialsEndAtTheHandComputedRungs) {
  // R = 27, eta = 3: brackets (27 trials from 1 iteration), (12 from 3), (6 from 9), (4 from
  // 27); a third of each full rung goes on. So trials end at 1, 3, 9 and 27 iterations:
  // 18; 6 + 8; 2 + 3 + 4; 1 + 1 + 2 + 4. Also with fewer workers than a bracket's trials,
  // where promoted trials pause and resume many times.
  Space space;
  for (const char* name : {"x1", "x2"}) {
    Domain d;
    d.low = name[1] == '1' ? -5 : 0;
    d.high = name[1] == '1' ? 10 : 15;
    space.params.push_back({name, d});
  }
  for (int workers : {3, 16, 64}) {
    Controller c(opts(27), make_searcher("random", space, {5, 49}),
                 make_scheduler("hyperband", {"loss", Mode::Min, 27, &space, 5}, {}));
    simulate_to_the_end(c, workers, synthetic_model("branin", 0.05, 5));
    EXPECT_EQ(ends_of(c), kHandComputedEnds) << workers << " workers";
  }
}

TEST(SimulatedSearch, MultiObjectiveHyperBandOnZdt1EndsTrialsAtTheSameRungs) {
  // The brackets of the test above, ranked by ZDT1's two objectives (f1, f2 minimized, and a
  // constraint on f1 that most trials break at rung 1): pauses, resumes and abandons through
  // the controller end the trials at the same rungs, and the trials kept past rung 1 are the
  // first of their points' selection order (for the random searcher's trials, f1 alone would
  // keep 13 and 23 instead of 14 and 21).
  Space space;
  for (const char* name : {"x1", "x2", "x3"}) space.params.push_back({name, Domain{DomainKind::Uniform, 0, 1, 0, {}}});
  SchedulerContext ctx{"f1", Mode::Min, 27, &space, 5};
  ctx.objectives = Objectives{{"f1", "f2"}, {Mode::Min, Mode::Min}, {{"f1", true, 2.3}}};
  // BOHB-style too: bohb's model takes the budgets of whatever the brackets run (here on f1
  // alone, as bohb takes one objective so far).
  for (const auto& [searcher, workers] : {std::pair{"random", 3}, std::pair{"random", 16}, std::pair{"bohb", 16}}) {
    ControllerOptions o = opts(27);
    o.metric = "f1";
    Controller c(o, make_searcher(searcher, space, {5, 49, "f1", Mode::Min}), make_scheduler("hyperband", ctx, {}));
    simulate_to_the_end(c, workers, synthetic_model("zdt1", 0.0, 5));
    EXPECT_EQ(ends_of(c), kHandComputedEnds) << searcher << ", " << workers << " workers";
    // In the first bracket (trials 1-27), the 9 that went past rung 1 are the first 9 of the
    // selection order of their points there (noise-free, so the points are known).
    std::vector<ParetoPoint> points;
    for (TrialId id = 1; id <= 27; ++id) {
      const auto p = ranktune::train::evaluate_synthetic(*ranktune::train::find_synthetic_function("zdt1"),
                                                         c.find(id)->config);
      points.push_back(ctx.objectives.point(ranktune::train::synthetic_step(p, 0.0, 5, id, 0, 1)));
    }
    const ParetoSelection s = pareto_selection(points);
    std::set<TrialId> expected, kept;
    for (std::size_t i = 0; i < 9; ++i) expected.insert(static_cast<TrialId>(s.order[i] + 1));
    for (TrialId id = 1; id <= 27; ++id)
      if (c.find(id)->iterations > 1) kept.insert(id);
    EXPECT_EQ(kept, expected) << searcher << ", " << workers << " workers";
  }
}
