// The virtual-time simulator (controller/simulator.h): hand-computed schedules, overhead, seeds,
// the time budget and the target, progress calls, idle workers and bad options.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "controller/simulator.h"
#include "tests/unit/controller/controller_fixtures.h"

using namespace ranktune::search;
using namespace ranktune::controller;
using namespace ranktune::search::fixtures;

namespace {

Controller fifo(ControllerOptions o, std::int64_t trials) {
  return Controller(std::move(o), make_searcher("random", one_param(), {1, trials}), make_scheduler("fifo", {}));
}

// Trial k reports loss = k + 1/t: it improves with t, and lower ids are better.
Metrics simple(const Config&, TrialId trial, int, ModelState& state) {
  return {{"loss", static_cast<double>(trial) + 1.0 / static_cast<double>(state.t)}};
}

SimulatorOptions sim(int workers) {
  SimulatorOptions o;
  o.workers = workers;
  o.seconds_per_step = 1.0;
  return o;
}

}  // namespace

TEST(Simulator, FifoEndTimeIsTrialsTimesStepsOverWorkers) {
  Controller c = fifo(opts(10), 8);
  const auto s = simulate(c, simple, sim(4));
  // Two waves of 4 trials, 10 steps of 1 s each.
  EXPECT_DOUBLE_EQ(s.end_time, 20.0);
  EXPECT_EQ(s.results, 80);
  EXPECT_EQ(s.dropped, 0);
  EXPECT_EQ(s.end_reason, EndReason::Completed);
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.counts()[static_cast<std::size_t>(TrialStatus::Terminated)], 8);
  EXPECT_DOUBLE_EQ(s.best, 1.1);
  EXPECT_EQ(s.best_trial, 1);
  for (const auto& t : c.trials()) {
    EXPECT_EQ(t.iterations, 10);
    EXPECT_DOUBLE_EQ(t.end_time - t.start_time, 10.0);
  }
}

TEST(Simulator, HeterogeneousSpeedsGiveAHandComputedSchedule) {
  // Worker 1 has speed 1 (1 s steps), worker 2 speed 2 (0.5 s steps); 4 trials of 3 steps.
  // Trial 1 runs on worker 1 over [0, 3]. Worker 2 runs trial 2 over [0, 1.5] and trial 3
  // over [1.5, 3]. At t = 3 both workers free up; worker 1's step end was scheduled first
  // (at t = 2, against 2.5), so it is handled first and takes trial 4: [3, 6].
  Controller c = fifo(opts(3), 4);
  auto o = sim(2);
  o.speeds = {1.0, 2.0};
  const auto s = simulate(c, simple, o);
  EXPECT_DOUBLE_EQ(s.end_time, 6.0);
  ASSERT_EQ(c.trials().size(), 4u);
  const double want[4][2] = {{0, 3}, {0, 1.5}, {1.5, 3}, {3, 6}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(c.trials()[i].start_time, want[i][0]) << "trial " << i + 1;
    EXPECT_DOUBLE_EQ(c.trials()[i].end_time, want[i][1]) << "trial " << i + 1;
  }
  EXPECT_EQ(s.speeds, (std::vector<double>{1.0, 2.0}));
}

TEST(Simulator, OverheadIsAddedToEveryStep) {
  Controller c = fifo(opts(3), 1);
  auto o = sim(1);
  o.overhead_s = 0.25;
  EXPECT_DOUBLE_EQ(simulate(c, simple, o).end_time, 3.75);
}

struct SimRun {
  SimulationSummary summary;
  std::vector<Trial> trials;
};

SimRun jittered(std::uint64_t seed) {
  Controller c = fifo(opts(5), 20);
  auto o = sim(3);
  o.jitter = 0.3;
  o.speed_spread = 0.5;
  o.seed = seed;
  auto s = simulate(c, simple, o);
  return {std::move(s), c.trials()};
}

TEST(Simulator, SameSeedSameRunOtherSeedOtherTimes) {
  const SimRun a = jittered(7), b = jittered(7), other = jittered(8);
  EXPECT_EQ(a.summary.end_time, b.summary.end_time);
  EXPECT_EQ(a.summary.speeds, b.summary.speeds);
  ASSERT_EQ(a.trials.size(), b.trials.size());
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    EXPECT_EQ(a.trials[i].start_time, b.trials[i].start_time);
    EXPECT_EQ(a.trials[i].end_time, b.trials[i].end_time);
    EXPECT_EQ(a.trials[i].iterations, b.trials[i].iterations);
    EXPECT_EQ(a.trials[i].best, b.trials[i].best);
    EXPECT_EQ(a.trials[i].config, b.trials[i].config);
  }
  EXPECT_NE(a.summary.end_time, other.summary.end_time);
  EXPECT_NE(a.summary.speeds, other.summary.speeds);
  // The jitter matters: without it, 20 trials x 5 steps on 3 equal workers end at 35.
  EXPECT_NE(a.summary.end_time, 35.0);
}

TEST(Simulator, TimeBudgetStopsRunningTrialsAtTheBudget) {
  auto co = opts(10);
  co.time_budget_s = 4.5;
  Controller c = fifo(co, 8);
  const auto s = simulate(c, simple, sim(4));
  EXPECT_DOUBLE_EQ(s.end_time, 4.5);
  EXPECT_EQ(s.end_reason, EndReason::TimeBudget);
  EXPECT_EQ(s.results, 16);
  EXPECT_EQ(s.dropped, 4);  // the fifth step of each trial was in flight
  ASSERT_EQ(c.trials().size(), 4u);  // nothing new starts after the budget
  for (const auto& t : c.trials()) {
    EXPECT_EQ(t.status, TrialStatus::Terminated);
    EXPECT_EQ(t.iterations, 4);
    EXPECT_DOUBLE_EQ(t.end_time, 4.5);
  }
  EXPECT_DOUBLE_EQ(s.best_at_budget, 1.25);
}

TEST(Simulator, StepsEndingAtTheBudgetStillCount) {
  auto co = opts(10);
  co.time_budget_s = 5.0;
  Controller c = fifo(co, 8);
  const auto s = simulate(c, simple, sim(4));
  EXPECT_DOUBLE_EQ(s.end_time, 5.0);
  for (const auto& t : c.trials()) EXPECT_EQ(t.iterations, 5);
}

// Only trial 3 improves: loss = 10 - t; every other trial reports 10.
Metrics trial3_improves(const Config&, TrialId trial, int, ModelState& state) {
  return {{"loss", trial == 3 ? 10.0 - static_cast<double>(state.t) : 10.0}};
}

TEST(Simulator, TargetEndsTheExperimentAtTheExactTime) {
  // 2 workers: trials 1 and 2 run over [0, 10]; trial 3 starts at 10 on worker 1 and
  // reports 7 at its third step, at t = 13. Trial 4 (worker 2) has run 2 steps by then.
  auto co = opts(10);
  co.target = 7.0;
  Controller c = fifo(co, 4);
  const auto s = simulate(c, trial3_improves, sim(2));
  ASSERT_TRUE(s.time_to_target);
  EXPECT_DOUBLE_EQ(*s.time_to_target, 13.0);
  EXPECT_DOUBLE_EQ(s.end_time, 13.0);
  EXPECT_EQ(s.end_reason, EndReason::TargetReached);
  EXPECT_EQ(s.best_trial, 3);
  EXPECT_DOUBLE_EQ(s.best, 7.0);
  EXPECT_EQ(c.trials()[3].iterations, 2);
  EXPECT_EQ(c.trials()[3].status, TrialStatus::Terminated);
  EXPECT_EQ(s.dropped, 1);
}

TEST(Simulator, TargetCanBeMeasuredWithoutStopping) {
  Controller c = fifo(opts(10), 4);
  auto o = sim(2);
  o.target = 7.0;
  const auto s = simulate(c, trial3_improves, o);
  ASSERT_TRUE(s.time_to_target);
  EXPECT_DOUBLE_EQ(*s.time_to_target, 13.0);
  EXPECT_DOUBLE_EQ(s.end_time, 20.0);
  EXPECT_EQ(s.end_reason, EndReason::Completed);
  EXPECT_DOUBLE_EQ(s.best, 0.0);
}

TEST(Simulator, ProgressIsCalledEveryNResults) {
  Controller c = fifo(opts(10), 8);
  auto o = sim(4);
  std::vector<double> calls;
  o.progress_every = 30;
  o.on_progress = [&](double now) { calls.push_back(now); };
  simulate(c, simple, o);
  EXPECT_EQ(calls.size(), 2u);  // after results 30 and 60 of 80
}

TEST(Simulator, ManyWorkersFewTrialsLeavesWorkersIdle) {
  Controller c = fifo(opts(3), 5);
  const auto s = simulate(c, simple, sim(64));
  EXPECT_DOUBLE_EQ(s.end_time, 3.0);
  EXPECT_EQ(s.results, 15);
  EXPECT_EQ(s.speeds.size(), 64u);
}

TEST(Simulator, RefusesBadOptions) {
  Controller c = fifo(opts(1), 1);
  auto o = sim(0);
  EXPECT_THROW(simulate(c, simple, o), std::invalid_argument);
  o = sim(2);
  o.speeds = {1.0};
  EXPECT_THROW(simulate(c, simple, o), std::invalid_argument);
  o.speeds = {1.0, 0.0};
  EXPECT_THROW(simulate(c, simple, o), std::invalid_argument);
  o = sim(2);
  o.jitter = -1;
  EXPECT_THROW(simulate(c, simple, o), std::invalid_argument);
  EXPECT_THROW(simulate(c, StepModel{}, sim(1)), std::invalid_argument);
}

// Issue 29: a budget in steps, the same at any number of workers, with every scheduler.
TEST(Simulator, StepBudgetIsExactAtAnyWorkerCount) {
  for (const char* scheduler : {"fifo", "asha", "hyperband"}) {
    for (int workers : {1, 3, 8, 64}) {
      auto o = opts(27);
      o.max_total_steps = 500;
      Controller c(o, make_searcher("random", one_param(), {7, 100000}),
                   make_scheduler(scheduler, {"loss", Mode::Min, 27, nullptr, 7}));
      auto so = sim(workers);
      so.jitter = 0.3;
      so.seed = 7;
      const auto s = simulate(c, simple, so);
      EXPECT_EQ(s.results, 500) << scheduler << " on " << workers;
      EXPECT_EQ(s.dropped, 0) << scheduler << " on " << workers;
      EXPECT_EQ(s.end_reason, EndReason::StepBudget) << scheduler << " on " << workers;
      EXPECT_EQ(c.steps_done(), 500);
    }
  }
}
