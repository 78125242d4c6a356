// Decision sequences for multi-objective HyperBand (search/mo_hyperband_ranking.h): trials built
// by hand, results fed one by one, each promotion checked against ranks and crowding distances
// computed by hand in the comments; results that report no objective; the reduction to
// HyperBand with one objective over whole runs; the saved state; the factory.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "search/hyperband_scheduler.h"
#include "search/mo_hyperband_ranking.h"
#include "tests/unit/search/scheduler_fixtures.h"

namespace ranktune::search {
namespace {

using namespace fixtures;  // kNaN, kInf, C, S, P, acc_size, PausingFeed, PausingRun,
                           // random_results, count_of, same_future_after_restore,
                           // expect_refused, replaced


std::unique_ptr<Scheduler> mo_hyperband(Objectives o, std::int64_t max_t, Options options = {}) {
  return make_mo_hyperband(SchedulerContext{"acc", Mode::Max, max_t}, o, options);
}

TEST(MoHyperBand, TwoObjectivesDecisionSequence) {
  // R = 9, eta = 3: the first bracket takes 9 trials, rungs at 1, 3 and 9; 3 go on from rung
  // 1, and 1 from rung 3.
  PausingFeed f(mo_hyperband(acc_size(), 9));
  f.add(9);
  EXPECT_EQ(f.report(1, 0.80, 10), P);
  EXPECT_EQ(f.report(2, 0.70, 5), P);
  EXPECT_EQ(f.report(3, 0.60, 12), P);
  EXPECT_EQ(f.report(4, 0.90, 20), P);
  EXPECT_EQ(f.report(5, 0.75, 8), P);
  EXPECT_EQ(f.report(6, 0.95, 1, 3.0), P);                         // infeasible: violation 1
  EXPECT_EQ(f.report(7, kNaN, 4), P);                              // failed
  EXPECT_EQ(f.report(8, Metrics{{"acc", 0.99}, {"latency", 1.0}}), P);  // size missing: failed
  // No objective at all: not judged, and the rung waits for T9's next result.
  EXPECT_EQ(f.report(9, Metrics{{"loss", 0.1}}), C);
  EXPECT_EQ(f.sched->next_decision(f.trial(9)), 2);
  EXPECT_TRUE(f.abandoned().empty());
  // T9 (0.85, 9) completes the rung. It dominates T1 (0.8, 10), and T1, T2, T5 and T9 each
  // dominate T3 (0.6, 12). Fronts: {T2, T4, T5, T9}, {T1}, {T3}, then T6 (violation 1), then
  // T7 and T8 (failed). Crowding in the first front: -acc sorted T4 -.9, T9 -.85, T5 -.75,
  // T2 -.7 (range .2): T9 .15/.2 = .75, T5 .15/.2 = .75; size sorted T2 5, T5 8, T9 9, T4 20
  // (range 15): T5 4/15, T9 12/15. T2 and T4 inf, T9 1.55, T5 1.02. The best 3 of 9: T2, T4,
  // T9 (which goes on at once); T5 is on the front but loses on crowding.
  EXPECT_EQ(f.report(9, 0.85, 9), C);
  EXPECT_EQ(f.abandoned(), (std::vector<TrialId>{5, 1, 3, 6, 7, 8}));
  EXPECT_EQ(f.resume(), 2);
  EXPECT_EQ(f.resume(), 4);
  EXPECT_EQ(f.resume(), std::nullopt);
  // Rung 3.
  EXPECT_EQ(f.report(9, 0.90, 9), P);  // at iteration 3
  EXPECT_EQ(f.report(2, 0.10, 99), C);  // iteration 2: between rungs, however bad
  EXPECT_EQ(f.sched->next_decision(f.trial(2)), 3);
  EXPECT_EQ(f.report(2, 0.80, 4), P);
  EXPECT_EQ(f.report(4, 0.99, 1), C);
  // T4 dominates both others' objectives but breaks latency <= 2. T9 (0.9, 9) and T2 (0.8,
  // 4) make a front of two, both crowding inf: the tie goes to the lower id, T2.
  EXPECT_EQ(f.report(4, 0.92, 30, 2.5), S);
  EXPECT_EQ(f.abandoned(), (std::vector<TrialId>{9}));
  EXPECT_EQ(f.resume(), 2);
  EXPECT_EQ(f.report(2, 0.5, 50), C);  // rung 9 is max_t's: never paused again
  EXPECT_EQ(f.report(2, 0.5, 50), C);
}

TEST(MoHyperBand, AnObjectiveReportedOnlyAtTheEnd) {
  // The objectives are acc and a latency measured once, at the end (max_t). At rung 1 every
  // result reports acc but no latency: each is a failed point, all tied, and the rung keeps the
  // lowest ids, whatever their accuracy (the documented limit).
  PausingFeed f(mo_hyperband(Objectives{{"acc", "latency"}, {Mode::Max, Mode::Min}, {}}, 9));
  f.add(9);
  for (TrialId id = 1; id <= 8; ++id) EXPECT_EQ(f.report(id, {{"acc", 0.1 * static_cast<double>(id)}}), P) << id;
  EXPECT_EQ(f.report(9, {{"acc", 0.95}}), S);
  EXPECT_EQ(f.abandoned(), (std::vector<TrialId>{4, 5, 6, 7, 8}));
  // With latency the only objective (and a constraint on acc), results without it judge
  // nothing: no trial is paused, every one runs on, and the brackets wait for none of them.
  PausingFeed g(mo_hyperband(Objectives{{"latency"}, {Mode::Min}, {{"acc", false, 0.5}}}, 9));
  g.add(9);
  for (int it = 1; it <= 8; ++it) {
    for (TrialId id = 1; id <= 9; ++id) {
      EXPECT_EQ(g.report(id, {{"acc", 0.1 * static_cast<double>(id)}}), C) << id << "@" << it;
      EXPECT_EQ(g.sched->next_decision(g.trial(id)), it + 1);  // judged by its very next result
    }
  }
  EXPECT_TRUE(g.abandoned().empty());
}

// The strong check: with one objective and no constraint, whole runs (pauses, promotions,
// abandoned trials, errors, results without the metric, NaN and ±inf) decide as HyperBand's.
TEST(MoHyperBand, OneObjectiveDecidesAsHyperBand) {
  std::size_t pauses = 0, abandoned = 0;
  std::uint64_t seed = 0;
  for (const Mode mode : {Mode::Max, Mode::Min})
    for (const double eta : {2.0, 3.0})
      for (const std::int64_t max_t : {9, 16})
        for (const int workers : {3, 10}) {
          ++seed;
          const SchedulerContext ctx{"loss", mode, max_t};
          const Options o{{"reduction_factor", eta}};
          PausingRun hb(std::make_unique<HyperBandScheduler>(ctx, o), random_results(seed, false), 80, max_t, workers);
          PausingRun mo(make_mo_hyperband(ctx, Objectives{{"loss"}, {mode}, {}}, o), random_results(seed, false), 80,
                        max_t, workers);
          hb.run();
          mo.run();
          ASSERT_EQ(hb.log, mo.log) << "seed " << seed;
          pauses += count_of(hb.log, " pause ");
          abandoned += count_of(hb.log, "abandon");
        }
  EXPECT_GT(pauses, 200u);  // the runs did rank rungs (475 pauses, 261 abandoned)
  EXPECT_GT(abandoned, 200u);
}

TEST(MoHyperBand, SaveRestoreMidRunGivesTheSameNextDecisions) {
  const Objectives obj{{"loss", "size"}, {Mode::Min, Mode::Min}, {{"latency", true, 3.0}}};
  const auto log = same_future_after_restore([&] { return mo_hyperband(obj, 9); }, random_results(11, true), 60, 9,
                                             6, 7, "mo_hyperband 1\n");
  EXPECT_GT(count_of(log, " pause "), 5u);
  EXPECT_GT(count_of(log, "abandon"), 5u);
}

TEST(MoHyperBand, RestoreRefusesBadState) {
  PausingFeed f(mo_hyperband(acc_size(), 9));
  f.add(3);
  f.report(1, 0.8, 10);
  f.report(2, 0.7, 5, 3.0);  // infeasible: violation 1
  const std::string good = f.sched->save();
  // T2's entry: at the rung (1), violation 1, -acc, size; T3 is not there yet (0).
  ASSERT_NE(good.find(" 2 1 1 -0.7 5 3 0\n"), std::string::npos) << good;
  Scheduler& s = *f.sched;
  expect_refused(s, "garbage", "mo_hyperband");
  expect_refused(s, replaced(good, "mo_hyperband 1", "mo_hyperband 2"), "version");
  expect_refused(s, good.substr(0, good.size() - 4), "saved state");
  expect_refused(s, replaced(good, " 2 1 1 -0.7 5 ", " 2 1 -1 -0.7 5 "), "violation must be >= 0");
  expect_refused(s, replaced(good, " 2 1 1 -0.7 5 ", " 2 2 1 -0.7 5 "), "at its rung");
  PausingFeed other(mo_hyperband(Objectives{{"acc", "size"}, {Mode::Max, Mode::Max}, {{"latency", true, 2.0}}}, 9));
  expect_refused(s, other.sched->save(), "other objectives (acc max, size max; latency <= 2; this experiment has "
                                         "acc max, size min; latency <= 2)");
  // A single-objective HyperBand state is not one, nor the other way round.
  HyperBandScheduler hb({"acc", Mode::Max, 9}, {});
  expect_refused(s, hb.save(), "mo_hyperband");
  expect_refused(hb, good, "hyperband");
  // And the good state reads back.
  PausingFeed fresh(mo_hyperband(acc_size(), 9));
  fresh.sched->restore(good);
  EXPECT_EQ(fresh.sched->save(), good);
}

TEST(MoHyperBand, TheFactoryRanksByTheObjectives) {
  EXPECT_TRUE(scheduler_traits("hyperband").multi_objective);
  const auto names = multi_objective_scheduler_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "hyperband"), names.end());
  SchedulerContext ctx{"acc", Mode::Max, 9};
  EXPECT_EQ(make_scheduler("hyperband", ctx)->save().rfind("hyperband 2\n", 0), 0u);
  ctx.objectives = acc_size();
  const auto s = make_scheduler("hyperband", ctx, {{"reduction_factor", 3.0}});
  EXPECT_EQ(s->save().rfind("mo_hyperband 1\n", 0), 0u) << s->save();
  // Its brackets are HyperBand's, for the report.
  const auto* layout = dynamic_cast<const BracketLayout*>(s.get());
  ASSERT_NE(layout, nullptr);
  EXPECT_EQ(layout->opened_bracket(0).shape.milestones, (std::vector<std::int64_t>{1, 3, 9}));
  ctx.objectives.modes.pop_back();
  EXPECT_THROW(make_scheduler("hyperband", ctx), std::invalid_argument);
  ctx.objectives = acc_size();
  EXPECT_THROW(make_scheduler("hyperband", ctx, {{"reduction_factr", 3.0}}), OptionError);
}

}  // namespace
}  // namespace ranktune::search
