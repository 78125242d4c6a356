// Live control beyond stop, set and add (issue 31): `ctl pause` and `ctl resume`, `ctl
// budget` (new stopping rules, checked against the scheduler and kept across a resume) and
// `ctl stop-experiment` (the graceful stop of SIGTERM), without MPI.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/common/expect_text.h"
#include "controller/control.h"
#include "controller/controller.h"
#include "tests/unit/controller/control_fixtures.h"
#include "tests/unit/controller/controller_fixtures.h"

namespace ranktune::search {
using namespace ranktune::controller;
namespace {

using fixtures::opts;
using fixtures::request;
using Kind = ControlRequest::Kind;

Controller make(ControllerOptions o, std::int64_t n, const std::string& scheduler = "fifo") {
  SchedulerContext ctx{o.metric, o.mode, o.max_t};
  return Controller(std::move(o), make_searcher("random", fixtures::one_param(), {1, n}), make_scheduler(scheduler, ctx));
}

ControllerOptions checkpointing(std::int64_t max_t) {
  ControllerOptions o = opts(max_t);
  o.checkpoint_on_stop = true;
  return o;
}

std::size_t count(const std::vector<Instruction>& cmds, Instruction::Kind k, TrialId trial) {
  return static_cast<std::size_t>(
      std::count_if(cmds.begin(), cmds.end(), [&](const Instruction& c) { return c.kind == k && c.trial == trial; }));
}

ControlRequest budget(std::optional<double> time, std::optional<std::int64_t> samples, std::optional<std::int64_t> max_t) {
  ControlRequest r = request(Kind::Budget, 0);
  r.time_budget_s = time;
  r.num_samples = samples;
  r.max_t = max_t;
  return r;
}

// Runs every command to completion (loss 1 per iteration; a Pause's checkpoint is stored at
// once); returns the trials made.
std::size_t run_all(Controller& c, std::vector<Instruction> pending) {
  for (int guard = 0; !pending.empty() && guard < 10000; ++guard) {
    const Instruction cmd = pending.front();
    pending.erase(pending.begin());
    if (cmd.kind == Instruction::Kind::Pause) {
      auto more = c.on_checkpoint(cmd.trial, cmd.attempt, c.find(cmd.trial)->iterations, guard);
      pending.insert(pending.end(), more.begin(), more.end());
      continue;
    }
    if (cmd.kind != Instruction::Kind::Start && cmd.kind != Instruction::Kind::Continue) continue;
    auto more = c.on_result(cmd.trial, cmd.attempt, {{"loss", 1.0}}, guard);
    pending.insert(pending.end(), more.begin(), more.end());
  }
  return c.trials().size();
}

TEST(ControlPause, ARunningTrialCheckpointsStaysPausedAndItsWorkerTakesTheNextTrial) {
  Controller c = make(checkpointing(10), 2);
  c.on_worker_free(1, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  c.on_result(1, 0, {{"loss", 0.9}}, 2);
  std::vector<Instruction> out;
  const ControlOutcome o = c.on_control(request(Kind::Pause, 1), 3, out);
  ASSERT_TRUE(o.applied) << o.message;
  EXPECT_CONTAINS(o.message, "trial 1 pauses at iteration 2 (it checkpoints first");
  EXPECT_EQ(count(out, Instruction::Kind::Pause, 1), 1u);
  EXPECT_EQ(count(out, Instruction::Kind::Start, 2), 1u);  // its worker goes to other work at once
  EXPECT_EQ(c.find(1)->status, TrialStatus::Paused);
  // Its checkpoint lands: it stays paused, and nothing restarts it (the worker ends trial 2
  // and is offered again).
  EXPECT_EQ(count(c.on_checkpoint(1, 0, 2, 4), Instruction::Kind::Start, 1), 0u);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Paused);
  for (int i = 1; i <= 10; ++i) c.on_result(2, 0, {{"loss", 0.5}}, 4 + i);
  EXPECT_EQ(c.find(2)->status, TrialStatus::Terminated);
  EXPECT_EQ(count(c.on_worker_free(1, 20), Instruction::Kind::Start, 1), 0u);
  EXPECT_FALSE(c.finished());  // the run waits for the trial the operator paused
  // Pausing it again, or resuming a trial that is not paused, is refused.
  EXPECT_CONTAINS(c.on_control(request(Kind::Pause, 1), 21, out).message, "already paused by ctl pause");
  const ControlOutcome not_paused = c.on_control(request(Kind::Resume, 2), 21, out);
  EXPECT_FALSE(not_paused.applied);
  EXPECT_EQ(not_paused.message, "trial 2 already ended (TERMINATED)");
  // Resumed: back in the queue, it goes on from its checkpoint on the idle worker.
  out.clear();
  const ControlOutcome r = c.on_control(request(Kind::Resume, 1), 22, out);
  ASSERT_TRUE(r.applied) << r.message;
  EXPECT_EQ(r.message, "trial 1 is back in the queue (it goes on from its checkpoint at iteration 2)");
  ASSERT_EQ(count(out, Instruction::Kind::Start, 1), 1u);
  EXPECT_EQ(out.back().restore_checkpoint, 2);
  EXPECT_EQ(out.back().iterations, 2);
  EXPECT_EQ(out.back().attempt, 0);
  for (int i = 3; i <= 10; ++i) c.on_result(1, 0, {{"loss", 0.5}}, 22 + i);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  EXPECT_TRUE(c.finished());
}

TEST(ControlPause, RefusedForARunningTrialThatCannotCheckpointAndForAnEndedOrUnknownOne) {
  Controller c = make(opts(3), 2);
  c.on_worker_free(1, 0);
  std::vector<Instruction> out;
  const ControlOutcome o = c.on_control(request(Kind::Pause, 1), 1, out);
  EXPECT_FALSE(o.applied);
  EXPECT_CONTAINS(o.message, "trial 1 is running and its trainable cannot checkpoint, so a pause would lose its 0 iterations");
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(c.find(1)->status, TrialStatus::Running);
  for (int i = 1; i <= 3; ++i) c.on_result(1, 0, {{"loss", 1.0}}, i);
  EXPECT_EQ(c.on_control(request(Kind::Pause, 1), 4, out).message, "trial 1 already ended (TERMINATED)");
  EXPECT_CONTAINS(c.on_control(request(Kind::Pause, 7), 4, out).message, "no trial 7");
}

TEST(ControlPause, APendingTrialDoesNotStartUntilResumedAndTheHoldSurvivesAResume) {
  Controller c = make(checkpointing(2), 3);
  c.on_worker_free(1, 0);  // trial 1 runs; trial 2 does not exist yet
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(request(Kind::Add, 0, {{"x", 0.5}}), 1, out).applied);  // trial 2, pending
  ASSERT_EQ(c.find(2)->status, TrialStatus::Pending);
  const ControlOutcome o = c.on_control(request(Kind::Pause, 2), 1, out);
  ASSERT_TRUE(o.applied) << o.message;
  EXPECT_EQ(o.message, "trial 2 will not start until `ctl resume`");
  EXPECT_EQ(c.find(2)->status, TrialStatus::Paused);
  // Trial 1 ends: the worker skips trial 2 and takes the searcher's next.
  c.on_result(1, 0, {{"loss", 1.0}}, 2);
  const auto next = c.on_result(1, 0, {{"loss", 1.0}}, 3);
  EXPECT_EQ(count(next, Instruction::Kind::Start, 2), 0u);
  EXPECT_EQ(count(next, Instruction::Kind::Start, 3), 1u);
  // The run stops and resumes: trial 2 is still held.
  const std::string state = c.save_state();
  EXPECT_EQ(state.rfind("controller 5\nextended 0\nadded 1\nheld 1 2 1\nbudget -1 -1 -1\n", 0), 0u) << state;
  Controller resumed = make(checkpointing(2), 3);
  resumed.resume(c.trials(), {}, state, "test", 5);
  EXPECT_EQ(resumed.find(2)->status, TrialStatus::Paused);
  EXPECT_EQ(resumed.counts()[static_cast<std::size_t>(TrialStatus::Paused)], 1);
  run_all(resumed, resumed.on_worker_free(1, 5));
  EXPECT_EQ(resumed.find(2)->status, TrialStatus::Paused);
  EXPECT_EQ(resumed.find(3)->status, TrialStatus::Terminated);
  EXPECT_FALSE(resumed.finished());
  // `ctl resume` in the resumed run: it runs, and the experiment completes.
  out.clear();
  ASSERT_TRUE(resumed.on_control(request(Kind::Resume, 2), 6, out).applied);
  EXPECT_EQ(count(out, Instruction::Kind::Start, 2), 1u);
  run_all(resumed, out);
  EXPECT_EQ(resumed.find(2)->status, TrialStatus::Terminated);
  EXPECT_TRUE(resumed.finished());
}

TEST(ControlPause, AScheduledPauseHeldByCtlGoesBackToItsSchedulerOnResume) {
  // HyperBand pauses trials at its rungs; `ctl pause` keeps one from being promoted.
  ControllerOptions o = checkpointing(9);
  Controller c = make(o, 9, "hyperband");
  const TrialId paused = fixtures::run_until_paused(c, c.on_worker_free(1, 0));
  ASSERT_NE(paused, 0) << "HyperBand paused no trial";
  std::vector<Instruction> out;
  const ControlOutcome p = c.on_control(request(Kind::Pause, paused), 300, out);
  ASSERT_TRUE(p.applied) << p.message;
  EXPECT_FALSE(c.find(paused)->runnable());
  EXPECT_EQ(c.find(paused)->held, Trial::Hold::Scheduler);
  ASSERT_TRUE(c.on_control(request(Kind::Resume, paused), 301, out).applied);
  EXPECT_EQ(c.find(paused)->status, TrialStatus::Paused);  // still the scheduler's to resume
  EXPECT_TRUE(c.find(paused)->runnable());
}

TEST(ControlBudget, TimeBudgetNumSamplesAndMaxTChangeAndSurviveAResume) {
  Controller c = make(checkpointing(10), 4);
  c.on_worker_free(1, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  std::vector<Instruction> out;
  const ControlOutcome o = c.on_control(budget(600, 2, 5), 2, out);
  ASSERT_TRUE(o.applied) << o.message;
  EXPECT_EQ(o.message,
            "time_budget_s none -> 600, num_samples 4 -> 2, max_t 10 -> 5; stopping rules now: time_budget_s=600 "
            "num_samples=2 max_t=5");
  EXPECT_EQ(c.expected_trials(), 2);
  EXPECT_EQ(c.options().max_t, 5);
  // The stored answer reads back as the rules in effect (ctl status).
  const auto rules = parse_budget_text("#r1 applied: " + o.message);
  ASSERT_TRUE(rules.has_value());
  EXPECT_EQ(rules->time_budget_s, 600);
  EXPECT_EQ(rules->num_samples, 2);
  EXPECT_EQ(rules->max_t, 5);
  const std::string state = c.save_state();
  EXPECT_CONTAINS(state, "\nbudget 600 5 2\n");
  // Resumed from that state, the run goes by the new rules: two trials of 5 iterations.
  Controller resumed = make(checkpointing(10), 4);
  resumed.resume(c.trials(), {}, state, "test", 3);
  EXPECT_EQ(resumed.options().max_t, 5);
  EXPECT_EQ(resumed.options().time_budget_s, 600);
  EXPECT_EQ(run_all(resumed, resumed.on_worker_free(1, 3)), 2u);
  for (const Trial& t : resumed.trials()) EXPECT_EQ(t.iterations, 5) << t.id;
  EXPECT_TRUE(resumed.finished());
  // The time budget ends the experiment at its new value.
  Controller timed = make(checkpointing(10), 4);
  timed.on_worker_free(1, 0);
  ASSERT_TRUE(timed.on_control(budget(50, std::nullopt, std::nullopt), 1, out).applied);
  EXPECT_TRUE(timed.on_tick(49).empty());
  EXPECT_FALSE(timed.on_tick(50).empty());
  EXPECT_EQ(timed.end_reason(), EndReason::TimeBudget);
}

TEST(ControlBudget, MoreSamplesExtendTheSearcherAndALowerMaxTEndsTrialsPastIt) {
  Controller c = make(checkpointing(10), 2);
  c.on_worker_free(1, 0);
  for (int i = 1; i <= 6; ++i) c.on_result(1, 0, {{"loss", 1.0}}, i);
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(budget(std::nullopt, 3, std::nullopt), 7, out).applied);
  EXPECT_EQ(c.expected_trials(), 3);
  EXPECT_CONTAINS(c.save_state(), "\nextended 1\n");
  // Trial 1 is at iteration 6: max_t 4 ends it now, at max_t.
  out.clear();
  ASSERT_TRUE(c.on_control(budget(std::nullopt, std::nullopt, 4), 8, out).applied);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  EXPECT_EQ(c.find(1)->end_reason, TrialEnd::MaxT);
  EXPECT_EQ(count(out, Instruction::Kind::Stop, 1), 1u);
  EXPECT_EQ(count(out, Instruction::Kind::Start, 2), 1u);
  EXPECT_EQ(run_all(c, out), 3u);
  for (const TrialId id : {2, 3}) EXPECT_EQ(c.find(id)->iterations, 4);
}

TEST(ControlBudget, RefusalsSayWhyAndChangeNothing) {
  Controller c = make(checkpointing(9), 4);
  c.on_worker_free(1, 0);
  c.on_worker_free(2, 0);  // trials 1 and 2 exist
  std::vector<Instruction> out;
  const auto refused = [&](ControlRequest r, double now) {
    const ControlOutcome o = c.on_control(r, now, out);
    EXPECT_FALSE(o.applied);
    return o.message;
  };
  EXPECT_CONTAINS(refused(budget(std::nullopt, 1, std::nullopt), 1),
                  "num_samples 1 is below the 2 trials the search algorithm has proposed already");
  EXPECT_CONTAINS(refused(budget(30, std::nullopt, std::nullopt), 40),
                  "the experiment has run 40 s (since it was created, over all its runs): a time budget of 30 s would end it");
  EXPECT_CONTAINS(refused(budget(std::nullopt, std::nullopt, std::nullopt), 1), "no stopping rule to change");
  // Checked whole: the good time budget of a request with a bad num_samples is not applied.
  EXPECT_CONTAINS(refused(budget(100, 1, std::nullopt), 1), "num_samples 1 is below");
  EXPECT_EQ(c.options().time_budget_s, 0);
  EXPECT_EQ(c.expected_trials(), 4);
  // HyperBand's brackets derive from max_t: refused, saying why.
  Controller hb = make(checkpointing(9), 9, "hyperband");
  hb.on_worker_free(1, 0);
  const ControlOutcome h = hb.on_control(budget(std::nullopt, std::nullopt, 27), 1, out);
  EXPECT_FALSE(h.applied);
  EXPECT_CONTAINS(h.message, "max_t: HyperBand's brackets were laid out for max_t = 9");
  EXPECT_EQ(hb.options().max_t, 9);
  // ... but its other rules change.
  EXPECT_TRUE(hb.on_control(budget(std::nullopt, 12, std::nullopt), 1, out).applied);
  // ASHA keeps the rungs it laid out and takes any max_t: its survivors run on past the old one.
  Controller asha = make(checkpointing(9), 1, "asha");
  std::vector<Instruction> first = asha.on_worker_free(1, 0);
  ASSERT_TRUE(asha.on_control(budget(std::nullopt, std::nullopt, 20), 1, out).applied);
  run_all(asha, first);
  EXPECT_EQ(asha.find(1)->iterations, 20);
  // The promotion variant names its own max_t as the decision after its last rung (here 2,
  // its option): the lease past it still grants an iteration, so a promoted trial runs to the
  // new max_t instead of being cut as if no step were left of a budget.
  ControllerOptions po = checkpointing(9);
  Controller promo(po, make_searcher("random", fixtures::one_param(), {1, 4}),
                   make_scheduler("asha", {po.metric, po.mode, po.max_t},
                                  {{"variant", std::string("promotion")}, {"max_t", std::int64_t{2}},
                                   {"grace_period", std::int64_t{1}}, {"reduction_factor", 2.0}}));
  first = promo.on_worker_free(1, 0);
  ASSERT_TRUE(promo.on_control(budget(std::nullopt, std::nullopt, 20), 1, out).applied);
  run_all(promo, first);
  const auto deepest = std::max_element(promo.trials().begin(), promo.trials().end(),
                                        [](const Trial& a, const Trial& b) { return a.iterations < b.iterations; });
  EXPECT_EQ(deepest->iterations, 20);
  EXPECT_EQ(deepest->end_reason, TrialEnd::MaxT);
}

TEST(ControlBudget, LoweredNumSamplesFinishesTheSearchAndARaisePastItThenIsRefused) {
  Controller c = make(checkpointing(2), 5);
  c.on_worker_free(1, 0);
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(budget(std::nullopt, 2, std::nullopt), 1, out).applied);
  EXPECT_EQ(run_all(c, {Instruction{Instruction::Kind::Continue, 1, 1, 0}}), 2u);
  EXPECT_TRUE(c.finished());
  const ControlOutcome late = c.on_control(budget(std::nullopt, 3, std::nullopt), 9, out);
  EXPECT_FALSE(late.applied);
  EXPECT_CONTAINS(late.message, "num_samples: the search algorithm has proposed all its trials");
}

TEST(ControlStopExperiment, IsTheGracefulStopOfASignal) {
  Controller c = make(checkpointing(10), 3);
  c.on_workers_free({1, 2}, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  std::vector<Instruction> out;
  const ControlOutcome o = c.on_control(request(Kind::StopExperiment, 0), 2, out);
  ASSERT_TRUE(o.applied) << o.message;
  EXPECT_CONTAINS(o.message, "the experiment stops, as on SIGTERM: 2 running trial(s) pause with a checkpoint");
  EXPECT_EQ(count(out, Instruction::Kind::Pause, 1), 1u);
  EXPECT_EQ(count(out, Instruction::Kind::Pause, 2), 1u);
  EXPECT_EQ(c.end_reason(), EndReason::Interrupted);  // the driver exits 4 for it
  EXPECT_FALSE(c.finished());  // until the checkpoints land
  c.on_checkpoint(1, 0, 1, 3);
  c.on_checkpoint(2, 0, 1, 3);
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.find(1)->status, TrialStatus::Pending);  // resumable: it runs again on resume
  EXPECT_CONTAINS(c.on_control(request(Kind::StopExperiment, 0), 4, out).message, "the experiment is ending");
}

}  // namespace
}  // namespace ranktune::search
