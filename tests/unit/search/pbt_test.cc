// PBT (search/pbt_scheduler.h): exploit and explore through the controller, the revert of
// an exploit whose checkpoint does not load (to the trial's own checkpoint, or to its start
// without one), and the bounds of explore.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "search/pbt_scheduler.h"
#include "tests/unit/controller/controller_fixtures.h"

using namespace ranktune::search;
using namespace ranktune::controller;
using namespace ranktune::search::fixtures;

namespace {

using Kind = Instruction::Kind;

// Four random trials of `space` (seed 7) under PBT: a decision every 2 iterations, the worst
// quarter exploits the best, perturbing (never resampling) its values. `space` must outlive it.
Controller four_under_pbt(const Space& space, ControllerObserver* observer = nullptr) {
  return Controller(opts(100), make_searcher("random", space, {7, 4}),
                    make_scheduler("pbt", {"loss", Mode::Min, 100, &space, 7},
                                   {{"perturbation_interval", std::int64_t{2}}, {"quantile_fraction", 0.25},
                                    {"resample_probability", 0.0}}),
                    observer);
}

}  // namespace

TEST(Pbt, BottomQuantileExploitsATopTrialWithAPerturbedConfig) {
  const Space space = one_param();
  Controller c = four_under_pbt(space);
  for (int w = 1; w <= 4; ++w) c.on_worker_free(w, 0);
  // Iteration 1: no decision point. Iteration 2: trials 1..3 checkpoint; trial 4 is worst.
  for (int k = 1; k <= 4; ++k) c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 1);
  for (int k = 1; k <= 3; ++k) {
    const auto out = c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 2);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].kind, Kind::Continue);
    EXPECT_TRUE(out[0].save) << k;
    c.on_checkpoint(k, 0, 2, 2);
  }
  const double before = std::get<double>(c.find(4)->config.at("x"));
  const double donor_x = std::get<double>(c.find(1)->config.at("x"));
  const auto out = c.on_result(4, 0, {{"loss", 4.0}}, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, Kind::Stop);
  EXPECT_EQ(out[1].kind, Kind::Start);
  EXPECT_EQ(out[1].worker, 4);
  EXPECT_EQ(out[1].restore_trial, 1);  // the top quarter of 4 is trial 1
  EXPECT_EQ(out[1].restore_checkpoint, 2);
  EXPECT_EQ(out[1].iterations, 2);
  // The trial log's separator names the cause (issue 12 item 2): the worker appends the run
  // after "goes on at iteration 3 (exploit of trial 1 at its iteration 2)".
  EXPECT_EQ(out[1].cause, "exploit of trial 1 at its iteration 2");
  const double after = std::get<double>(c.find(4)->config.at("x"));
  EXPECT_NE(after, before);
  EXPECT_TRUE(std::abs(after - std::min(1.0, donor_x * 0.8)) < 1e-12 ||
              std::abs(after - std::min(1.0, donor_x * 1.2)) < 1e-12)
      << donor_x << " -> " << after;
}

// Issue 12 item 12: a donor's checkpoint that does not load with the perturbed values (a
// shape-changing parameter) fails the attempt before its first result. The trial goes back to
// its own checkpoint with its old values, and the event and error name the exploit's change.
TEST(Pbt, ARestoreThatFailsAfterAnExploitGoesBackToTheTrialsOwnCheckpointOnce) {
  Events ev;
  const Space space = one_param();
  Controller c = four_under_pbt(space, &ev);
  for (int w = 1; w <= 4; ++w) c.on_worker_free(w, 0);
  for (int k = 1; k <= 4; ++k) c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 1);
  c.on_checkpoint(4, 0, 1, 1);  // trial 4's own state at iteration 1
  for (int k = 1; k <= 3; ++k) {
    c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 2);
    c.on_checkpoint(k, 0, 2, 2);
  }
  const Config before = c.find(4)->config;
  const auto out = c.on_result(4, 0, {{"loss", 4.0}}, 2);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[1].restore_trial, 1);  // exploited trial 1's checkpoint
  ASSERT_NE(c.find(4)->config, before);
  // The new attempt fails before it reports anything.
  const auto back = c.on_trial_failed(4, 0, "exited with code 1", "size mismatch for c1.weight", 3);
  const Trial& t = *c.find(4);
  EXPECT_EQ(t.config, before);  // its old values
  EXPECT_EQ(t.failures, 0);      // not counted as a failure
  EXPECT_EQ(t.attempt, 1);       // iteration 2 is recorded: going back to 1 is a new attempt
  EXPECT_NE(t.status, TrialStatus::Error);
  EXPECT_NE(t.error.find("exploit of trial 1 (iteration 2): x "), std::string::npos) << t.error;
  EXPECT_EQ(t.log_tail, "size mismatch for c1.weight");
  const auto revert = std::find_if(ev.lines.begin(), ev.lines.end(), [](const std::string& l) { return l.rfind("revert:4:", 0) == 0; });
  ASSERT_NE(revert, ev.lines.end());
  EXPECT_NE(revert->find("after exploit of trial 1 (iteration 2): x "), std::string::npos) << *revert;
  EXPECT_NE(revert->find("it goes back to its own checkpoint at iteration 1 with its old values"), std::string::npos) << *revert;
  // Its worker is free again, and it restarts there from its own checkpoint.
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].kind, Kind::Start);
  EXPECT_EQ(back[0].trial, 4);
  EXPECT_EQ(back[0].restore_trial, 4);
  EXPECT_EQ(back[0].restore_checkpoint, 1);
  EXPECT_EQ(back[0].iterations, 1);
  EXPECT_EQ(back[0].config, before);
  // Once: if that fails too, it fails as usual (max_failures = 0: ERROR).
  c.on_trial_failed(4, 1, "exited with code 1", "", 4);
  EXPECT_EQ(c.find(4)->status, TrialStatus::Error);
}

// The same before the trial saved a checkpoint of its own (PBT's first perturbation): there
// is nothing of its own to go back to, so it starts again from scratch with its old values,
// as a new attempt (its iterations 1-2 are recorded), and the revert event says so.
TEST(Pbt, ARevertedExploitOfATrialWithoutACheckpointRestartsItFromScratch) {
  Events ev;
  const Space space = one_param();
  Controller c = four_under_pbt(space, &ev);
  for (int w = 1; w <= 4; ++w) c.on_worker_free(w, 0);
  for (int k = 1; k <= 4; ++k) c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 1);
  for (int k = 1; k <= 3; ++k) {
    c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 2);
    c.on_checkpoint(k, 0, 2, 2);
  }
  const Config before = c.find(4)->config;
  ASSERT_EQ(c.on_result(4, 0, {{"loss", 4.0}}, 2).size(), 2u);  // exploits trial 1, no checkpoint of its own
  ASSERT_EQ(c.find(4)->restore_trial, 1);
  const auto back = c.on_trial_failed(4, 0, "exited with code 1", "size mismatch", 3);
  const Trial& t = *c.find(4);
  EXPECT_EQ(t.config, before);
  EXPECT_EQ(t.failures, 0);
  EXPECT_EQ(t.attempt, 1);
  EXPECT_NE(t.error.find("(after exploit of trial 1 (iteration 2): x "), std::string::npos) << t.error;
  const auto revert = std::find_if(ev.lines.begin(), ev.lines.end(), [](const std::string& l) { return l.rfind("revert:4:", 0) == 0; });
  ASSERT_NE(revert, ev.lines.end());
  EXPECT_NE(revert->find("it goes back to the start with its old values"), std::string::npos) << *revert;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].kind, Kind::Start);
  EXPECT_EQ(back[0].trial, 4);
  EXPECT_EQ(back[0].attempt, 1);
  EXPECT_EQ(back[0].restore_trial, 0);
  EXPECT_EQ(back[0].iterations, 0);
  EXPECT_EQ(back[0].config, before);
}

TEST(Pbt, ExploreStaysInBoundsAndMovesListedValuesByOne) {
  Space space = one_param();
  Domain choice;
  choice.kind = DomainKind::Choice;
  choice.values = {Value{std::int64_t{16}}, Value{std::int64_t{32}}, Value{std::int64_t{64}}};
  space.params.push_back({"batch", choice});
  PbtScheduler pbt({"loss", Mode::Min, 10, &space, 1},
                   {{"resample_probability", 0.0}, {"bounds.x.low", 0.2}, {"bounds.x.high", 0.5}});
  for (std::uint64_t i = 0; i < 200; ++i) {
    const Config c = pbt.explore({{"x", 0.45}, {"batch", std::int64_t{32}}}, i);
    const double x = std::get<double>(c.at("x"));
    EXPECT_GE(x, 0.2);
    EXPECT_LE(x, 0.5);
    const auto b = std::get<std::int64_t>(c.at("batch"));
    EXPECT_TRUE(b == 16 || b == 64);
  }
  EXPECT_THROW(PbtScheduler({"loss", Mode::Min, 10, &space, 1}, {{"bounds.y.low", 0.1}}), OptionError);
  EXPECT_THROW(PbtScheduler({"loss", Mode::Min, 10, &space, 1}, {{"quantile_fraction", 0.7}}), OptionError);
}
