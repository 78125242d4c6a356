// ASHA's promotion variant (search/asha_promotion.h): pausing at rungs and promoting the
// top fraction, through the controller.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "search/asha_promotion.h"
#include "tests/unit/controller/controller_fixtures.h"

using namespace ranktune::search;
using namespace ranktune::controller;
using namespace ranktune::search::fixtures;

namespace {

using Kind = Instruction::Kind;

}  // namespace

TEST(AshaPromotion, PausesAtRungsAndPromotesTheTopFraction) {
  // rf = 2, rungs at 1 and 2, max_t 4. Two trials at rung 0: the better one (trial 2) is
  // promoted as soon as both are there; trial 1 stays paused and ends with the experiment.
  Controller c(opts(4), make_searcher("random", one_param(), {1, 2}),
               make_scheduler("asha", {"loss", Mode::Min, 4},
                              {{"variant", std::string("promotion")}, {"reduction_factor", 2.0}}));
  c.on_worker_free(1, 0);
  c.on_worker_free(2, 0);
  auto out = c.on_result(1, 0, {{"loss", 5.0}}, 1);
  EXPECT_EQ(out[0].kind, Kind::Pause);
  c.on_checkpoint(1, 0, 1, 1);
  out = c.on_result(2, 0, {{"loss", 3.0}}, 1);
  ASSERT_EQ(out[0].kind, Kind::Pause);
  out = c.on_checkpoint(2, 0, 1, 1);
  // Rung 0 holds 2 trials: the top floor(2 / 2) = 1, trial 2, resumes.
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Start);
  EXPECT_EQ(out[0].trial, 2);
  EXPECT_EQ(out[0].restore_checkpoint, 1);
  out = c.on_result(2, 0, {{"loss", 2.0}}, 2);  // rung 1 (iteration 2): alone, so paused
  EXPECT_EQ(out[0].kind, Kind::Pause);
  c.on_checkpoint(2, 0, 2, 2);
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  EXPECT_EQ(c.find(2)->status, TrialStatus::Terminated);
  EXPECT_EQ(c.find(1)->iterations, 1);
  EXPECT_EQ(c.find(2)->iterations, 2);
  AshaPromotionScheduler a({"loss", Mode::Min, 4}, {{"variant", std::string("promotion")}, {"reduction_factor", 2.0}});
  EXPECT_THROW(AshaPromotionScheduler({"loss", Mode::Min, 4}, {{"brackets", std::int64_t{2}}}), OptionError);
  EXPECT_THROW(make_scheduler("asha", {"loss", Mode::Min, 4}, {{"variant", std::string("bogus")}}), OptionError);
}

namespace {

// rf = 2, grace 2, max_t 8: rungs at 2 and 4. Two trials on two workers.
Controller two_at_rung_2() {
  ControllerOptions o = opts(8);
  o.non_finite = NonFinitePolicy::Worst;  // NaN reaches the scheduler
  Controller c(o, make_searcher("random", one_param(), {1, 2}),
               make_scheduler("asha", {"loss", Mode::Min, 8},
                              {{"variant", std::string("promotion")}, {"reduction_factor", 2.0},
                               {"grace_period", std::int64_t{2}}}));
  c.on_worker_free(1, 0);
  c.on_worker_free(2, 0);
  return c;
}

}  // namespace

TEST(AshaPromotion, ANaNAtTheRungIsTheWorstNotTheValueBefore) {
  Controller c = two_at_rung_2();
  c.on_result(1, 0, {{"loss", 0.1}}, 1);
  ASSERT_EQ(c.on_result(1, 0, {{"loss", NAN}}, 2)[0].kind, Kind::Pause);
  c.on_checkpoint(1, 0, 2, 2);
  c.on_result(2, 0, {{"loss", 5.0}}, 3);
  ASSERT_EQ(c.on_result(2, 0, {{"loss", 1.0}}, 4)[0].kind, Kind::Pause);
  // Rung 2 holds both: the top 1 is trial 2 (loss 1), not trial 1 (NaN, though 0.1 before).
  const auto out = c.on_checkpoint(2, 0, 2, 4);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Start);
  EXPECT_EQ(out[0].trial, 2);
}

TEST(AshaPromotion, AResultWithoutTheMetricRecordsNothing) {
  Controller c = two_at_rung_2();
  c.on_result(1, 0, {{"loss", 0.1}}, 1);
  c.on_result(1, 0, {{"epoch_s", 3.0}}, 2);  // at rung 2 without the metric: runs on
  EXPECT_EQ(c.find(1)->status, TrialStatus::Running);
  c.on_result(1, 0, {{"loss", 0.3}}, 3);  // recorded at rung 2 now, alone there
  EXPECT_EQ(c.find(1)->status, TrialStatus::Paused);
  c.on_checkpoint(1, 0, 3, 3);
  c.on_result(2, 0, {{"epoch_s", 3.0}}, 4);
  c.on_result(2, 0, {{"epoch_s", 3.0}}, 5);
  c.on_result(2, 0, {{"epoch_s", 3.0}}, 6);
  // Trial 2 passed both rungs without the metric; its first loss is recorded at the highest
  // rung it reached (4), where it is alone: paused, and rung 2's top 1 of 1... is none
  // (floor(1 / 2) = 0), so nothing resumes and the experiment ends.
  ASSERT_EQ(c.on_result(2, 0, {{"loss", 2.0}}, 7)[0].kind, Kind::Pause);
  c.on_checkpoint(2, 0, 4, 7);
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.find(2)->iterations, 4);
  EXPECT_EQ(c.find(1)->iterations, 3);
}
