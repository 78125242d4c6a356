// Decision sequences for the promotion variant of multi-objective ASHA
// (search/mo_asha_promotion.h): trials built by hand, results fed one by one, each promotion
// checked against ranks and crowding distances computed by hand in the comments; results that
// report no objective; the reduction to AshaPromotionScheduler with one objective over whole
// runs; the saved state; the factory.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "search/asha_promotion.h"
#include "search/mo_asha_promotion.h"
#include "tests/unit/search/scheduler_fixtures.h"

namespace ranktune::search {
namespace {

using namespace fixtures;  // kNaN, C, P, acc_size, PausingFeed, PausingRun, random_results,
                           // count_of, same_future_after_restore, expect_refused, replaced


const Options kRf2{{"variant", std::string("promotion")}, {"reduction_factor", 2.0}};

std::unique_ptr<Scheduler> mo_promotion(Objectives o, std::int64_t max_t = 8, Options options = kRf2) {
  return make_mo_asha_promotion(SchedulerContext{"acc", Mode::Max, max_t}, o, options);
}

TEST(MoAshaPromotion, TwoObjectivesDecisionSequence) {
  // rf 2, max_t 8: rungs at 1, 2 and 4. Of the n entries at a rung, the first floor(n/2) of
  // the selection order (front, then crowding descending, then id) may be promoted; the
  // highest rung is looked at first.
  PausingFeed f(mo_promotion(acc_size()));
  f.add(6);
  EXPECT_EQ(f.report(1, 0.80, 10), P);
  EXPECT_EQ(f.resume(), std::nullopt);  // n = 1: a top of 0
  EXPECT_EQ(f.report(2, 0.70, 5), P);
  // n = 2, top 1. T1 and T2 do not dominate each other: a front of two, both crowding inf,
  // and the tie goes to the lower id (by size alone, T2 would go).
  EXPECT_EQ(f.resume(), 1);
  EXPECT_EQ(f.report(3, 0.90, 20, 3.0), P);  // infeasible: behind both
  EXPECT_EQ(f.resume(), std::nullopt);        // the top 1 is T1, running again
  // T4 (0.85, 9) dominates T1 (0.8, 10). Fronts {T2, T4}, {T1}, {T3}: the top 2 are T2 and
  // T4 (the ends of their front, inf, by id).
  EXPECT_EQ(f.report(4, 0.85, 9), P);
  EXPECT_EQ(f.resume(), 2);
  EXPECT_EQ(f.resume(), 4);
  EXPECT_EQ(f.resume(), std::nullopt);
  EXPECT_EQ(f.report(1, 0.82, 9), P);  // rung 2, alone there
  EXPECT_EQ(f.resume(), std::nullopt);
  // No objective at all: nothing is recorded, and T5 is recorded by its next result that
  // reports one, at the highest rung it has reached (2).
  EXPECT_EQ(f.report(5, Metrics{{"loss", 0.3}}), C);
  EXPECT_EQ(f.sched->next_decision(f.trial(5)), 2);
  EXPECT_EQ(f.report(5, 0.95, 1), P);
  // Rung 2: T5 dominates T1, the top 1 of 2: promoted before anything at rung 1.
  EXPECT_EQ(f.resume(), 5);
  // A NaN objective: a failed point at rung 1, behind all; its top 2 are still T2 and T4.
  EXPECT_EQ(f.report(6, kNaN, 3), P);
  EXPECT_EQ(f.resume(), std::nullopt);
  EXPECT_EQ(f.report(2, 0.75, 4), P);  // rung 2: T5 (0.95, 1) dominates it; top 1 of 3 is T5
  EXPECT_EQ(f.resume(), std::nullopt);
  // T4 (0.99, 0.5) dominates every point at rung 2: fronts {T4}, {T5}, {T1, T2}: the top 2
  // are T4 and T5, and T4 waits.
  EXPECT_EQ(f.report(4, 0.99, 0.5), P);
  EXPECT_EQ(f.resume(), 4);
  EXPECT_EQ(f.resume(), std::nullopt);
}

TEST(MoAshaPromotion, AResultWithoutAnyObjectiveRecordsNothing) {
  // The only objective is a latency measured at the end, with a constraint on acc: results of
  // acc alone record nothing, so no trial pauses before it reports latency.
  PausingFeed f(mo_promotion(Objectives{{"latency"}, {Mode::Min}, {{"acc", false, 0.5}}}));
  f.add(4);
  for (int it = 1; it <= 7; ++it) {
    for (TrialId id = 1; id <= 4; ++id) {
      EXPECT_EQ(f.report(id, {{"acc", 0.2 * static_cast<double>(id)}}), C) << id << "@" << it;
      EXPECT_EQ(f.sched->next_decision(f.trial(id)), it + 1);
    }
  }
  // A latency at iteration 8 would be max_t's; at 7 one is recorded at rung 4, the highest.
  PausingFeed g(mo_promotion(Objectives{{"latency"}, {Mode::Min}, {{"acc", false, 0.5}}}));
  g.add(1);
  for (int it = 1; it <= 6; ++it) g.report(1, {{"acc", 0.9}});
  EXPECT_EQ(g.report(1, {{"acc", 0.9}, {"latency", 1.0}}), P);
  EXPECT_EQ(g.sched->next_decision(g.trial(1)), 8);  // past the last rung: max_t
}

// The strong check: with one objective and no constraint, whole runs (pauses, promotions from
// every rung, errors, results without the metric, NaN and ±inf) decide as
// AshaPromotionScheduler's.
TEST(MoAshaPromotion, OneObjectiveDecidesAsAshaPromotion) {
  std::size_t pauses = 0, resumed = 0;
  std::uint64_t seed = 100;
  for (const Mode mode : {Mode::Max, Mode::Min})
    for (const double rf : {2.0, 3.0})
      for (const std::int64_t grace : {1, 2})
        for (const int workers : {3, 10}) {
          ++seed;
          const SchedulerContext ctx{"loss", mode, 20};
          const Options o{{"variant", std::string("promotion")}, {"reduction_factor", rf}, {"grace_period", grace}};
          PausingRun asha(std::make_unique<AshaPromotionScheduler>(ctx, o), random_results(seed, false), 80, 20, workers);
          PausingRun mo(make_mo_asha_promotion(ctx, Objectives{{"loss"}, {mode}, {}}, o), random_results(seed, false),
                        80, 20, workers);
          asha.run();
          mo.run();
          ASSERT_EQ(asha.log, mo.log) << "seed " << seed;
          pauses += count_of(asha.log, " pause ");
          for (const Trial& t : asha.trials) resumed += t.iterations > static_cast<std::int64_t>(grace) ? 1 : 0;
        }
  EXPECT_GT(pauses, 300u);  // the runs did rank rungs (471 pauses, 113 promoted past the first rung)
  EXPECT_GT(resumed, 80u);
}

TEST(MoAshaPromotion, SaveRestoreMidRunGivesTheSameNextDecisions) {
  const Objectives obj{{"loss", "size"}, {Mode::Min, Mode::Min}, {{"latency", true, 3.0}}};
  const auto log = same_future_after_restore([&] { return mo_promotion(obj, 16); }, random_results(12, true), 60,
                                             16, 5, 12, "mo_asha_promotion 1\n");
  EXPECT_GT(count_of(log, " pause "), 5u);
}

TEST(MoAshaPromotion, RestoreRefusesBadState) {
  PausingFeed f(mo_promotion(acc_size()));
  f.add(3);
  f.report(1, 0.8, 10);
  f.report(2, 0.7, 5, 3.0);  // infeasible: violation 1
  const std::string good = f.sched->save();
  // Rung 1: T1 and T2's points (violation, -acc, size), none promoted.
  ASSERT_NE(good.find("\n2 1 0 -0.8 10 2 1 -0.7 5 0\n"), std::string::npos) << good;
  Scheduler& s = *f.sched;
  expect_refused(s, "garbage", "mo_asha_promotion");
  expect_refused(s, replaced(good, "mo_asha_promotion 1", "mo_asha_promotion 2"), "version");
  expect_refused(s, good.substr(0, good.size() - 4), "saved state");
  expect_refused(s, replaced(good, " 2 1 -0.7 5 0\n", " 2 -1 -0.7 5 0\n"), "violation must be >= 0");
  expect_refused(s, replaced(good, " 2 1 -0.7 5 0\n", " 1 1 -0.7 5 0\n"), "trial 1 twice at rung 0");
  expect_refused(s, replaced(good, "\n2 1 0 -0.8 10 2 1 -0.7 5 0\n", "\n1 1 0 -0.8 10 0\n"),
                 "trial 2 reached rung 0 but has no entry there");
  expect_refused(*mo_promotion(acc_size(), 16), good, "saved with 3 rungs, this config has 4");
  expect_refused(s, mo_promotion(Objectives{{"acc"}, {Mode::Max}, {{"latency", true, 2.0}}})->save(),
                 "other objectives (acc max; latency <= 2; this experiment has acc max, size min; latency <= 2)");
  // The single-objective variant's state and the stopping variant's are not one.
  AshaPromotionScheduler single({"acc", Mode::Max, 8}, kRf2);
  expect_refused(s, single.save(), "mo_asha_promotion");
  expect_refused(single, good, "asha_promotion");
  expect_refused(s, make_scheduler("asha", {"acc", Mode::Max, 8, nullptr, 0, acc_size()})->save(), "mo_asha_promotion");
  // And the good state reads back.
  const auto fresh = mo_promotion(acc_size());
  fresh->restore(good);
  EXPECT_EQ(fresh->save(), good);
}

TEST(MoAshaPromotion, TheFactoryMakesItForSeveralObjectives) {
  SchedulerContext ctx{"acc", Mode::Max, 8};
  ctx.objectives = acc_size();
  EXPECT_EQ(make_scheduler("asha", ctx, kRf2)->save().rfind("mo_asha_promotion 1\n", 0), 0u);
  EXPECT_EQ(make_scheduler("asha", ctx, {{"reduction_factor", 2.0}})->save().rfind("mo_asha 1\n", 0), 0u);
  Options two_brackets = kRf2;
  two_brackets["brackets"] = std::int64_t{2};
  EXPECT_THROW(make_scheduler("asha", ctx, two_brackets), OptionError);
  ctx.objectives.metrics.push_back("acc");
  ctx.objectives.modes.push_back(Mode::Max);
  EXPECT_THROW(make_scheduler("asha", ctx, kRf2), std::invalid_argument);  // acc twice
}

}  // namespace
}  // namespace ranktune::search
