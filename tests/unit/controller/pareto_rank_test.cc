// Controller::rank_pareto (issue 30): the finished trials of a multi-objective experiment
// ranked by their last results, and the changed ranks reported for the results file.

#include <gtest/gtest.h>

#include <map>

#include "controller/controller.h"
#include "search/scheduler.h"
#include "search/searcher.h"
#include "tests/unit/controller/controller_fixtures.h"

namespace ranktune::search::fixtures {
namespace {

struct Ranks : ControllerObserver {
  std::map<TrialId, int> changed;  ///< the rank each change reported, per trial
  int calls = 0;
  void on_trial_changed(const Trial& t) override {
    if (t.pareto_rank != -1 || changed.contains(t.id)) changed[t.id] = t.pareto_rank;
    ++calls;
  }
};

Objectives two_min() {
  Objectives o;
  o.metrics = {"a", "b"};
  o.modes = {Mode::Min, Mode::Min};
  return o;
}

// Runs one trial per result in `points` on one worker to max_t = 1; results as given.
Controller run(const Objectives& objectives, const std::vector<Metrics>& points, Ranks& ranks) {
  ControllerOptions o = opts(1);
  o.metric = "a";
  o.objectives = objectives;
  SearcherOptions so{1, static_cast<std::int64_t>(points.size())};
  so.metric = "a";
  so.mode = Mode::Min;
  so.objectives = objectives;
  SchedulerContext ctx{"a", Mode::Min, 1};
  ctx.objectives = objectives;
  Controller c(o, make_searcher("random", one_param(), so), make_scheduler("fifo", ctx), &ranks);
  auto cmds = c.on_worker_free(1, 0);
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(cmds.size(), 1u);
    if (cmds.empty()) break;
    const Instruction start = cmds.front();
    cmds = c.on_result(start.trial, start.attempt, points[i], static_cast<double>(i + 1));
    // The Stop at max_t, then the next Start.
    cmds.erase(std::remove_if(cmds.begin(), cmds.end(), [](const Instruction& x) { return x.kind != Instruction::Kind::Start; }),
               cmds.end());
  }
  return c;
}

TEST(ParetoRank, FinishedTrialsAreRankedByTheirLastResults) {
  Ranks ranks;
  // 3 is dominated by 2; 5 reported none of the objectives; 6 lacks b: a failed point, last.
  Controller c = run(two_min(), {{{"a", 1}, {"b", 4}}, {{"a", 2}, {"b", 2}}, {{"a", 3}, {"b", 3}},
                                 {{"a", 4}, {"b", 1}}, {{"c", 0}}, {{"a", 0}}},
                     ranks);
  ASSERT_TRUE(c.finished());
  // Nothing is ranked until asked: the driver asks before each flush.
  for (const Trial& t : c.trials()) EXPECT_EQ(t.pareto_rank, -1);
  ranks.changed.clear();
  c.rank_pareto();
  const std::vector<int> expected = {0, 0, 1, 0, -1, 2};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(c.trials()[i].pareto_rank, expected[i]) << "trial " << i + 1;
  // Each changed trial was reported once; the unranked one was not.
  EXPECT_EQ(ranks.changed, (std::map<TrialId, int>{{1, 0}, {2, 0}, {3, 1}, {4, 0}, {6, 2}}));
  const int calls = ranks.calls;
  c.rank_pareto();  // nothing ended since: no work, no report
  EXPECT_EQ(ranks.calls, calls);
}

TEST(ParetoRank, ConstraintsRankInfeasibleTrialsBehindFeasibleOnes) {
  Objectives o = two_min();
  o.constraints = {{"b", true, 2.5}};  // b <= 2.5
  Ranks ranks;
  Controller c = run(o, {{{"a", 1}, {"b", 4}}, {{"a", 2}, {"b", 2}}, {{"a", 4}, {"b", 1}}, {{"a", 0}, {"b", 3}}}, ranks);
  c.rank_pareto();
  // Feasible: 2 and 3 (the front). Infeasible: 4 (violation 0.5) before 1 (1.5).
  const std::vector<int> expected = {2, 0, 0, 1};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(c.trials()[i].pareto_rank, expected[i]) << "trial " << i + 1;
}

TEST(ParetoRank, OneObjectiveRanksNothing) {
  Ranks ranks;
  Controller c = run(Objectives{}, {{{"a", 1}, {"b", 4}}, {{"a", 2}, {"b", 2}}}, ranks);
  c.rank_pareto();
  for (const Trial& t : c.trials()) EXPECT_EQ(t.pareto_rank, -1);
}

TEST(ParetoRank, AResultWithSomeObjectivesOnlyIsWarnedAboutOnce) {
  struct Warnings : Ranks {
    std::vector<std::string> lines;
    void on_event(double, TrialId, int, EventKind kind, const std::string& msg) override {
      if (kind == EventKind::Warning) lines.push_back(msg);
    }
  } w;
  Objectives o = two_min();
  o.constraints = {{"lat", true, 2}};
  run(o, {{{"a", 1}, {"b", 4}, {"lat", 1}}, {{"a", 1}}, {{"a", 2}, {"b", 1}}}, w);
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_EQ(w.lines[0].rfind("trial 2 reported some objectives but not b, lat at iteration 1: such a result ranks as failed", 0),
            0u) << w.lines[0];
}

}  // namespace
}  // namespace ranktune::search::fixtures
