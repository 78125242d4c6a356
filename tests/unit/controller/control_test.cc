// Live control (`ranktune ctl`) without MPI: the checks a request's values pass, and what
// the controller does with stop, set and add in every state of a trial.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/unit/common/expect_text.h"
#include "controller/control.h"
#include "controller/controller.h"
#include "tests/unit/controller/control_fixtures.h"
#include "tests/unit/controller/controller_fixtures.h"

namespace ranktune::search {
using namespace ranktune::controller;
namespace {

using fixtures::Events;
using fixtures::opts;
using fixtures::request;
using fixtures::space;

TEST(ControlConfig, TypesDomainsAndCompleteness) {
  Config c = {{"lr", std::int64_t{0}}};
  // An integer for a float parameter becomes a double, then the domain applies.
  EXPECT_CONTAINS(check_control_config(space(), c, false, false), "'lr' = 0 is outside its domain (in [0.0001, 0.1])");
  EXPECT_TRUE(std::holds_alternative<double>(c.at("lr")));
  EXPECT_EQ(check_control_config(space(), c, false, true), "");  // --force
  c = {{"layers", std::int64_t{5}}};
  EXPECT_CONTAINS(check_control_config(space(), c, false, false), "an integer in [1, 5)");
  c = {{"layers", 2.5}};
  EXPECT_CONTAINS(check_control_config(space(), c, false, true), "'layers' takes an integer (got 2.5)");
  c = {{"act", std::string("gelu")}};
  EXPECT_CONTAINS(check_control_config(space(), c, false, false), "one of relu, tanh");
  c = {{"momentum", 0.9}};
  EXPECT_CONTAINS(check_control_config(space(), c, false, false),
                  "'momentum' is not a parameter of the search space; valid: lr, layers, act");
  c = {};
  EXPECT_CONTAINS(check_control_config(space(), c, false, false), "no parameter to change");
  c = {{"lr", 0.01}, {"act", std::string("tanh")}};
  EXPECT_EQ(check_control_config(space(), c, false, false), "");
  EXPECT_CONTAINS(check_control_config(space(), c, true, false), "'layers' is missing: a new trial needs every parameter");
  c["layers"] = std::int64_t{3};
  EXPECT_EQ(check_control_config(space(), c, true, false), "");
}


// Issue 32: `ctl set` keeps to [scheduler] mutable, and `ctl add` needs the active parameters
// only (an inactive one given is dropped).
TEST(ControlConfig, MutationScopeAndConditions) {
  Space s = space();
  s.mutable_params = {"lr"};
  Config c = {{"act", std::string("tanh")}};
  EXPECT_CONTAINS(check_control_config(s, c, false, false), "'act' is not in [scheduler] mutable (lr)");
  c = {{"lr", 0.01}};
  EXPECT_EQ(check_control_config(s, c, false, false), "");
  // A new trial may take any value: the scope is about a trial's life.
  c = {{"lr", 0.01}, {"layers", std::int64_t{2}}, {"act", std::string("relu")}};
  EXPECT_EQ(check_control_config(s, c, true, false), "");

  Space cond = space();
  std::string error;
  ASSERT_TRUE(parse_condition("act == 'tanh'", cond.params[1].when, error)) << error;  // layers only with tanh
  c = {{"lr", 0.01}, {"act", std::string("relu")}, {"layers", std::int64_t{2}}};
  EXPECT_EQ(check_control_config(cond, c, true, false), "");
  EXPECT_FALSE(c.contains("layers"));  // inactive with relu: dropped
  c = {{"lr", 0.01}, {"act", std::string("tanh")}};
  EXPECT_CONTAINS(check_control_config(cond, c, true, false), "'layers' is missing");

  // ctl set on a running trial: values for active parameters only; turning one on needs its
  // value, turning one off is a new trial.
  const Config relu = {{"lr", 0.01}, {"act", std::string("relu")}};
  const Config tanh = {{"lr", 0.01}, {"act", std::string("tanh")}, {"layers", std::int64_t{2}}};
  EXPECT_EQ(check_set_conditions(cond, relu, {{"lr", 0.02}}), "");
  EXPECT_CONTAINS(check_set_conditions(cond, relu, {{"layers", std::int64_t{3}}}), "'layers' is inactive in this trial");
  EXPECT_CONTAINS(check_set_conditions(cond, relu, {{"act", std::string("tanh")}}), "turn 'layers' on");
  EXPECT_EQ(check_set_conditions(cond, relu, {{"act", std::string("tanh")}, {"layers", std::int64_t{3}}}), "");
  EXPECT_CONTAINS(check_set_conditions(cond, tanh, {{"act", std::string("relu")}}), "turn 'layers' off");
}

Controller make(ControllerOptions o, std::int64_t n, Events* rec, const std::string& scheduler = "fifo") {
  return Controller(std::move(o), make_searcher("random", fixtures::one_param(), {1, n}), make_scheduler(scheduler, {}),
                    rec);
}

// Trial 1 running on worker 1 of a FIFO run that checkpoints on stop, having reported
// `losses` at iterations 1, 2, ... (at times 1, 2, ...): where the `set` tests start.
Controller running_trial(std::int64_t max_t, std::initializer_list<double> losses, Events* rec) {
  ControllerOptions o = opts(max_t);
  o.checkpoint_on_stop = true;
  Controller c = make(o, 1, rec);
  c.on_worker_free(1, 0);
  std::int64_t i = 0;
  for (const double loss : losses) {
    ++i;
    c.on_result(1, 0, {{"loss", loss}}, static_cast<double>(i));
  }
  return c;
}

std::size_t count(const std::vector<Instruction>& cmds, Instruction::Kind k, TrialId trial) {
  return static_cast<std::size_t>(
      std::count_if(cmds.begin(), cmds.end(), [&](const Instruction& c) { return c.kind == k && c.trial == trial; }));
}

TEST(Control, StopEndsARunningTrialAndFreesItsWorkerForTheNext) {
  Events ev;
  Controller c = make(opts(10), 3, &ev);
  c.on_worker_free(1, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  std::vector<Instruction> out;
  const ControlOutcome o = c.on_control(request(ControlRequest::Kind::Stop, 1), 2, out);
  EXPECT_TRUE(o.applied);
  EXPECT_EQ(o.message, "trial 1 stopped at iteration 1 (it was RUNNING)");
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  EXPECT_EQ(count(out, Instruction::Kind::Stop, 1), 1u);
  EXPECT_EQ(count(out, Instruction::Kind::Start, 2), 1u);  // the freed worker takes trial 2
  // Again: it has ended.
  const ControlOutcome again = c.on_control(request(ControlRequest::Kind::Stop, 1), 3, out);
  EXPECT_FALSE(again.applied);
  EXPECT_EQ(again.message, "trial 1 already ended (TERMINATED)");
  EXPECT_FALSE(c.on_control(request(ControlRequest::Kind::Stop, 9), 3, out).applied);
}

TEST(Control, StopWithAtEndCheckpointsFirst) {
  ControllerOptions o = opts(10);
  o.checkpoint_at_end = true;
  Controller c = make(o, 1, nullptr);
  c.on_worker_free(1, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Stop, 1), 2, out).applied);
  EXPECT_EQ(count(out, Instruction::Kind::Pause, 1), 1u);  // saves, then stops
  EXPECT_FALSE(c.finished());                          // until the checkpoint lands
  c.on_checkpoint(1, 0, 1, 3);
  EXPECT_TRUE(c.finished());
}

TEST(Control, SetOnARunningTrialPausesItAndRestartsItFromItsCheckpointWithTheNewValues) {
  Events ev;
  Controller c = running_trial(10, {1.0, 0.9}, &ev);
  std::vector<Instruction> out;
  const double old_x = std::get<double>(c.find(1)->config.at("x"));
  ControlRequest set = request(ControlRequest::Kind::Set, 1, {{"x", 0.25}});
  set.id = "r1";
  const ControlOutcome r = c.on_control(set, 3, out);
  ASSERT_TRUE(r.applied) << r.message;
  // Not in effect yet (issue 12 item 1): it says when it will be.
  EXPECT_TRUE(r.pending);
  EXPECT_CONTAINS(r.message, "trial 1 takes x ");
  EXPECT_CONTAINS(r.message, "-> 0.25 when it resumes from its next checkpoint (pausing it at iteration 2");
  EXPECT_EQ(count(out, Instruction::Kind::Pause, 1), 1u);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Paused);
  // The config (what /trials shows) is what it trained with; the request waits.
  EXPECT_EQ(std::get<double>(c.find(1)->config.at("x")), old_x);
  EXPECT_EQ(std::get<double>(c.find(1)->pending.at("x")), 0.25);
  // Its checkpoint lands: it starts again on the free worker, from iteration 2, with x = 0.25.
  const auto starts = c.on_checkpoint(1, 0, 2, 4);
  ASSERT_EQ(count(starts, Instruction::Kind::Start, 1), 1u);
  const Instruction& s = starts.front();
  EXPECT_EQ(s.restore_trial, 1);
  EXPECT_EQ(s.restore_checkpoint, 2);
  EXPECT_EQ(s.iterations, 2);
  EXPECT_EQ(std::get<double>(s.config.at("x")), 0.25);
  EXPECT_EQ(s.attempt, 0);  // not a failure
  EXPECT_EQ(std::get<double>(c.find(1)->config.at("x")), 0.25);
  EXPECT_TRUE(c.find(1)->pending.empty());
  // A second answer records when it took effect.
  const std::string applied = ev.last("control:1:");
  EXPECT_CONTAINS(applied, "control:1:#r1 applied: trial 1 goes on from iteration 2 (its checkpoint) with x ");
  EXPECT_CONTAINS(applied, "-> 0.25");
  // It runs to max_t as usual.
  for (int i = 3; i <= 10; ++i) c.on_result(1, 0, {{"loss", 0.5}}, 4 + i);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  EXPECT_EQ(c.find(1)->iterations, 10);
}

// Issue 12 item 1, FIFO: the worker ran on in its lease after the Pause, so the checkpoint
// (and the change) came at iteration 4, not at 2 where it was asked.
TEST(Control, SetTakesEffectAtTheCheckpointItResumesFromNotWhereItWasAsked) {
  Events ev;
  Controller c = running_trial(10, {1.0, 0.9}, &ev);
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Set, 1, {{"x", 0.25}}), 3, out).pending);
  c.on_result(1, 0, {{"loss", 0.8}}, 3);  // results of its lease, sent before it saw the Pause
  c.on_result(1, 0, {{"loss", 0.7}}, 4);
  EXPECT_NE(std::get<double>(c.find(1)->config.at("x")), 0.25);  // iterations 3-4 ran with the old x
  const auto starts = c.on_checkpoint(1, 0, 4, 5);
  ASSERT_EQ(count(starts, Instruction::Kind::Start, 1), 1u);
  EXPECT_EQ(starts.front().iterations, 4);
  EXPECT_EQ(std::get<double>(starts.front().config.at("x")), 0.25);
  EXPECT_CONTAINS(ev.last("control:1:"), "applied: trial 1 goes on from iteration 4 (its checkpoint)");
}

// Issue 27 item 4: with more trials than workers, the worker that the Pause frees went to
// the next trial at once, and the changed trial, PENDING once its checkpoint landed, waited
// until some trial ended (17 s in a small run). Its worker is kept for it: it goes on there
// as soon as its checkpoint is stored.
TEST(Control, SetOnARunningTrialGoesOnAtOnceOnTheWorkerItPausedOn) {
  ControllerOptions o = opts(10);
  o.checkpoint_on_stop = true;
  Events ev;
  Controller c = make(o, 4, &ev);
  c.on_workers_free({1, 2}, 0);  // trials 1 and 2 run
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Set, 1, {{"x", 0.25}}), 2, out).pending);
  EXPECT_EQ(count(out, Instruction::Kind::Pause, 1), 1u);
  EXPECT_EQ(count(out, Instruction::Kind::Start, 3), 0u) << "trial 3 took the worker that trial 1 paused on";
  const auto running = [&] { return c.counts()[static_cast<std::size_t>(TrialStatus::Running)]; };
  EXPECT_EQ(running(), 1);  // trial 2
  const auto starts = c.on_checkpoint(1, 0, 1, 3);
  ASSERT_EQ(count(starts, Instruction::Kind::Start, 1), 1u);
  const auto start = std::find_if(starts.begin(), starts.end(), [](const Instruction& k) { return k.kind == Instruction::Kind::Start; });
  EXPECT_EQ(start->worker, 1);
  EXPECT_EQ(start->iterations, 1);
  EXPECT_EQ(std::get<double>(start->config.at("x")), 0.25);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Running);
  EXPECT_EQ(running(), 2);  // trials 1 and 2: trial 3 waits for a worker, as before the set
  EXPECT_CONTAINS(ev.last("control:1:"), "applied: trial 1 goes on from iteration 1 (its checkpoint)");
  // Everything else runs as usual: trial 2's end frees worker 2 for trial 3.
  for (int i = 1; i <= 10; ++i) out = c.on_result(2, 0, {{"loss", 1.0}}, 3 + i);
  EXPECT_EQ(count(out, Instruction::Kind::Start, 3), 1u);
}

// When the trial will not go on after all (its checkpoint failed to save, or its scheduler
// stopped it on a result sent before the Pause), the worker kept for it is free at once.
TEST(Control, AWorkerKeptForAChangedTrialIsFreedWhenItDoesNotGoOn) {
  ControllerOptions o = opts(10);
  o.checkpoint_on_stop = true;
  o.max_failures = 1;
  {
    Controller c = make(o, 3, nullptr);
    c.on_worker_free(1, 0);
    std::vector<Instruction> out;
    ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Set, 1, {{"x", 0.25}}), 1, out).pending);
    // The save failed: trial 1 is retried (attempt 1) from the start, and worker 1 takes it up.
    const auto next = c.on_trial_failed(1, 0, "cannot save", "", 2);
    ASSERT_EQ(next.size(), 1u);
    EXPECT_EQ(next.front().kind, Instruction::Kind::Start);
    EXPECT_EQ(next.front().trial, 1);
    EXPECT_EQ(next.front().attempt, 1);
    EXPECT_EQ(next.front().worker, 1);
  }
  {
    o.max_t = 2;
    Controller c = make(o, 3, nullptr);
    c.on_worker_free(1, 0);
    c.on_result(1, 0, {{"loss", 1.0}}, 1);
    std::vector<Instruction> out;
    ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Set, 1, {{"x", 0.25}}), 2, out).pending);
    // Its last iteration, reported before it saw the Pause: it ends, and trial 2 starts on worker 1.
    const auto next = c.on_result(1, 0, {{"loss", 0.5}}, 3);
    EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
    ASSERT_EQ(count(next, Instruction::Kind::Start, 2), 1u);
    EXPECT_EQ(next.front().worker, 1);
  }
}

// Issue 12 item 1, ASHA: the trial ended (its lease reached a stop) before it took the new
// value. It never trained with it: /trials keeps the old value and a warning says so.
TEST(Control, SetOnATrialThatEndsBeforeItResumesIsReportedNotApplied) {
  Events ev;
  Controller c = running_trial(3, {1.0}, &ev);
  std::vector<Instruction> out;
  ControlRequest set = request(ControlRequest::Kind::Set, 1, {{"x", 0.25}});
  set.id = "r2";
  ASSERT_TRUE(c.on_control(set, 2, out).pending);
  const double old_x = std::get<double>(c.find(1)->config.at("x"));
  c.on_result(1, 0, {{"loss", 0.9}}, 3);
  c.on_result(1, 0, {{"loss", 0.8}}, 4);  // max_t, in the lease it was pausing from: it ends
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  EXPECT_EQ(std::get<double>(c.find(1)->config.at("x")), old_x);
  EXPECT_TRUE(c.find(1)->pending.empty());
  const auto warning = std::find_if(ev.lines.begin(), ev.lines.end(),
                                    [](const std::string& l) { return l.rfind("warning:1:", 0) == 0; });
  ASSERT_NE(warning, ev.lines.end());
  EXPECT_CONTAINS(*warning, "ctl set #r2 not applied: the trial ended (TERMINATED) at iteration 3");
  EXPECT_CONTAINS(*warning, "never trained with x ");
  c.on_checkpoint(1, 0, 3, 5);  // its checkpoint still lands; nothing restarts
  EXPECT_TRUE(c.finished());
}

// The ASHA case: set at iteration 1, the worker reports iteration 2 (a rung) before
// it sees the Pause, and ASHA stops the trial there. It never trained with the new value.
TEST(Control, SetOnATrialThatAshaStopsWhilePausingIsNotApplied) {
  ControllerOptions o = opts(8);
  o.checkpoint_on_stop = true;
  Events ev;
  Controller c(o, make_searcher("random", fixtures::one_param(), {1, 2}),
               make_scheduler("asha", {o.metric, o.mode, o.max_t}, {{"reduction_factor", 2.0}}), &ev);
  c.on_worker_free(1, 0);
  for (int i = 1; i <= 8; ++i) c.on_result(1, 0, {{"loss", 1.0}}, i);  // trial 1 sets every rung at loss 1
  ASSERT_EQ(c.find(1)->status, TrialStatus::Terminated);
  ASSERT_EQ(c.find(2)->status, TrialStatus::Running);
  c.on_result(2, 0, {{"loss", 1.0}}, 9);  // rung 1: a tie goes on
  std::vector<Instruction> out;
  const double old_x = std::get<double>(c.find(2)->config.at("x"));
  const ControlOutcome r = c.on_control(request(ControlRequest::Kind::Set, 2, {{"x", 0.5}}), 10, out);
  ASSERT_TRUE(r.pending) << r.message;
  c.on_result(2, 0, {{"loss", 5.0}}, 11);  // rung 2, sent before the Pause arrived: stopped
  EXPECT_EQ(c.find(2)->status, TrialStatus::Terminated);
  EXPECT_EQ(std::get<double>(c.find(2)->config.at("x")), old_x);  // /trials: what it trained with
  EXPECT_CONTAINS(ev.last("warning:2:"), "not applied: the trial ended (TERMINATED) at iteration 2");
}

// Issue 12 item 12: `ctl set channels=4` on a trial whose checkpoint cannot load with it.
TEST(Control, ASetWhoseCheckpointDoesNotLoadGoesBackToTheOldValuesOnce) {
  Events ev;
  Controller c = running_trial(10, {1.0, 0.9}, &ev);
  const Config before = c.find(1)->config;
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Set, 1, {{"x", 0.25}}), 3, out).pending);
  ASSERT_EQ(count(c.on_checkpoint(1, 0, 2, 4), Instruction::Kind::Start, 1), 1u);
  // The restarted attempt fails before its first result.
  const auto again = c.on_trial_failed(1, 0, "exited with code 1", "RuntimeError: size mismatch", 5);
  const Trial& t = *c.find(1);
  EXPECT_EQ(t.status, TrialStatus::Running);  // restarted at once on the freed worker
  EXPECT_EQ(t.config, before);
  EXPECT_EQ(t.attempt, 0);  // nothing past its checkpoint was recorded
  EXPECT_EQ(t.failures, 0);
  EXPECT_CONTAINS(t.error, "exited with code 1 (after ctl set x ");
  ASSERT_EQ(count(again, Instruction::Kind::Start, 1), 1u);
  EXPECT_EQ(again.front().restore_trial, 1);
  EXPECT_EQ(again.front().restore_checkpoint, 2);
  EXPECT_EQ(again.front().config, before);
  const auto revert = std::find_if(ev.lines.begin(), ev.lines.end(),
                                   [](const std::string& l) { return l.rfind("revert:1:", 0) == 0; });
  ASSERT_NE(revert, ev.lines.end());
  EXPECT_CONTAINS(*revert, "failed before its first result after ctl set x ");
  EXPECT_CONTAINS(*revert, "it goes back to its own checkpoint at iteration 2 with its old values");
  // Once it reported with the old values, a later failure is an ordinary one.
  c.on_result(1, 0, {{"loss", 0.8}}, 6);
  c.on_trial_failed(1, 0, "exited with code 1", "", 7);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Error);
}

// Issue 12 item 4: /trials.workers keeps the ranks of the last attempt after it ends.
TEST(Control, AnEndedTrialKeepsTheRanksThatRanItsLastAttempt) {
  Controller c = make(opts(1), 2, nullptr);
  c.on_worker_free(3, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  EXPECT_TRUE(c.find(1)->workers.empty());  // it runs nowhere
  EXPECT_EQ(c.find(1)->ran_on, std::vector<int>{3});
}

TEST(Control, SetIsRefusedForARunningTrialThatCannotCheckpoint) {
  Controller c = make(opts(10), 1, nullptr);  // checkpoint_on_stop false: a command without checkpoints
  c.on_worker_free(1, 0);
  std::vector<Instruction> out;
  const ControlOutcome r = c.on_control(request(ControlRequest::Kind::Set, 1, {{"x", 0.5}}), 1, out);
  EXPECT_FALSE(r.applied);
  EXPECT_CONTAINS(r.message, "cannot checkpoint");
  EXPECT_TRUE(out.empty());
  EXPECT_NE(std::get<double>(c.find(1)->config.at("x")), 0.5);
}

TEST(Control, SetAndStopOnPendingTrials) {
  Controller c = make(opts(2), 3, nullptr);
  c.on_worker_free(1, 0);  // trial 1 runs
  std::vector<Instruction> out;
  ControlRequest add = request(ControlRequest::Kind::Add, 0, {{"x", 0.75}});
  ASSERT_TRUE(c.on_control(add, 1, out).applied);  // trial 2, pending: no worker is free
  EXPECT_EQ(c.find(2)->status, TrialStatus::Pending);
  const ControlOutcome set = c.on_control(request(ControlRequest::Kind::Set, 2, {{"x", 0.5}}), 1, out);
  ASSERT_TRUE(set.applied);
  EXPECT_CONTAINS(set.message, "it starts with them");
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Stop, 2), 1, out).applied);
  EXPECT_EQ(c.find(2)->status, TrialStatus::Terminated);
  EXPECT_TRUE(std::isnan(c.find(2)->start_time));  // it never ran
  EXPECT_EQ(c.expected_trials(), 4);                // the searcher's 3 and the added one
}

TEST(Control, AddedTrialRunsWithItsConfigAndTheSearcherGoesOn) {
  Controller c = make(opts(1), 2, nullptr);
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Add, 0, {{"x", 0.125}}), 0, out).applied);
  EXPECT_TRUE(out.empty());  // no worker yet
  auto cmds = c.on_worker_free(1, 0);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].trial, 1);  // first in, first run
  EXPECT_EQ(std::get<double>(cmds[0].config.at("x")), 0.125);
  std::vector<Instruction> pending = c.on_result(1, 0, {{"loss", 1.0}}, 1);
  int guard = 0;
  while (!c.finished() && ++guard < 10) {
    const auto start = std::find_if(pending.begin(), pending.end(), [](const Instruction& k) { return k.kind == Instruction::Kind::Start; });
    ASSERT_NE(start, pending.end());
    pending = c.on_result(start->trial, 0, {{"loss", 1.0}}, 2);
  }
  EXPECT_EQ(c.trials().size(), 3u);  // the added one and the searcher's two
  EXPECT_TRUE(c.finished());
  // Once the experiment is ending, nothing is accepted.
  c.on_tick(5);
  EXPECT_FALSE(c.on_control(request(ControlRequest::Kind::Add, 0, {{"x", 0.5}}), 6, out).applied);
}

// Runs every command to completion (each trial reports loss 1 per iteration); returns the
// trials run.
std::size_t run_all(Controller& c, std::vector<Instruction> pending) {
  for (int guard = 0; !pending.empty() && guard < 10000; ++guard) {
    const Instruction cmd = pending.front();
    pending.erase(pending.begin());
    if (cmd.kind != Instruction::Kind::Start && cmd.kind != Instruction::Kind::Continue) continue;
    auto more = c.on_result(cmd.trial, cmd.attempt, {{"loss", 1.0}}, guard);
    pending.insert(pending.end(), more.begin(), more.end());
  }
  return c.trials().size();
}

TEST(Control, AddCountExtendsTheSearcherAndSurvivesResume) {
  Controller c = make(opts(1), 2, nullptr);
  ControlRequest more = request(ControlRequest::Kind::Add, 0);
  more.count = 3;
  std::vector<Instruction> out;
  const ControlOutcome o = c.on_control(more, 0, out);
  ASSERT_TRUE(o.applied) << o.message;
  EXPECT_EQ(o.message, "the search algorithm proposes 3 more trials (5 in all)");
  EXPECT_EQ(c.expected_trials(), 5);
  // The extension is in the saved state: a controller resumed from it plans 5 too.
  const std::string state = c.save_state();
  EXPECT_EQ(state.rfind("controller 5\nextended 3\nadded 0\nheld 0\n", 0), 0u) << state;
  Controller resumed = make(opts(1), 2, nullptr);
  resumed.resume({}, {}, state, "test", 0);
  EXPECT_EQ(resumed.expected_trials(), 5);
  EXPECT_EQ(run_all(resumed, resumed.on_worker_free(1, 0)), 5u);
  EXPECT_TRUE(resumed.finished());
  // Once the searcher has finished, its scheduler knows it: refused.
  EXPECT_EQ(run_all(c, c.on_worker_free(1, 0)), 5u);
  const ControlOutcome late = c.on_control(more, 10, out);
  EXPECT_FALSE(late.applied);
  EXPECT_CONTAINS(late.message, "add trials with explicit configs instead");
  // A state from before version 2 still resumes.
  Controller old = make(opts(1), 2, nullptr);
  old.resume({}, {}, "controller 1\n" + state.substr(state.find("open 0\n") + 7), "test", 0);
  EXPECT_EQ(old.expected_trials(), 2);
}

// Issue 27 item 12: a trial added while fewer trials existed than the searcher plans could
// not be told from the searcher's own after a resume, so the total left it out and the
// status line ended at "4 of 3". The saved state counts the added trials.
TEST(Control, AddedTrialsCountInTheTotalBeforeAndAfterAResume) {
  Controller c = make(opts(1), 3, nullptr);
  c.on_worker_free(1, 0);  // trial 1 runs
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Add, 0, {{"x", 0.5}}), 1, out).applied);  // trial 2
  EXPECT_EQ(c.expected_trials(), 4);
  const std::string state = c.save_state();
  EXPECT_EQ(state.rfind("controller 5\nextended 0\nadded 1\nheld 0\n", 0), 0u) << state;
  Controller resumed = make(opts(1), 3, nullptr);
  resumed.resume(c.trials(), {}, state, "test", 2);
  EXPECT_EQ(resumed.expected_trials(), 4);
  EXPECT_EQ(resumed.added_by_control(), 1);  // what the limit on added trials counts
  EXPECT_EQ(run_all(resumed, resumed.on_worker_free(1, 2)), 4u);
  EXPECT_EQ(resumed.expected_trials(), 4);
  EXPECT_TRUE(resumed.finished());
  // A bad count is refused, saying which line.
  Controller bad = make(opts(1), 3, nullptr);
  std::string broken = state;
  broken.replace(broken.find("added 1"), 7, "added -1");
  try {
    bad.resume(c.trials(), {}, broken, "test", 2);
    ADD_FAILURE() << "a negative count of added trials was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(e.what(), "bad 'added' line");
  }
}

TEST(Control, AddCountOnAGridGoesOnThroughItsPointsAndARepeaterTakesWholeGroups) {
  Space grid;
  grid.params = {{"x", Domain{DomainKind::Grid, 0, 0, 0, {1.0, 2.0}}}};
  ControlRequest more = request(ControlRequest::Kind::Add, 0);
  more.count = 3;
  std::vector<Instruction> out;
  Controller g(opts(1), make_searcher("grid", grid, {1, 1}), make_scheduler("fifo", {}), nullptr);
  ASSERT_TRUE(g.on_control(more, 0, out).applied);
  EXPECT_EQ(run_all(g, g.on_worker_free(1, 0)), 5u);
  std::vector<double> xs;
  for (const Trial& t : g.trials()) xs.push_back(std::get<double>(t.config.at("x")));
  EXPECT_EQ(xs, (std::vector<double>{1, 2, 1, 2, 1}));  // the next pass over the grid
  Controller r(opts(1), make_searcher("random", fixtures::one_param(), {1, 4}, {{"repeat", std::int64_t{2}}}),
               make_scheduler("fifo", {}), nullptr);
  const ControlOutcome b = r.on_control(more, 0, out);
  EXPECT_FALSE(b.applied);
  EXPECT_CONTAINS(b.message, "each config runs repeat = 2 times: add a multiple of 2 trials");
  more.count = 4;
  EXPECT_TRUE(r.on_control(more, 0, out).applied);
  EXPECT_EQ(r.expected_trials(), 12);
}

TEST(Control, StopOfAPausedHyperBandTrialEndsIt) {
  // HyperBand pauses trials at rung ends; stopping a paused one ends it for good.
  ControllerOptions o = opts(9);
  o.checkpoint_on_stop = true;
  Controller c(o, make_searcher("random", fixtures::one_param(), {1, 9}),
               make_scheduler("hyperband", {o.metric, o.mode, o.max_t}), nullptr);
  const TrialId paused = fixtures::run_until_paused(c, c.on_worker_free(1, 0));
  ASSERT_NE(paused, 0) << "HyperBand paused no trial";
  ASSERT_EQ(c.find(paused)->status, TrialStatus::Paused);
  std::vector<Instruction> out;
  ASSERT_TRUE(c.on_control(request(ControlRequest::Kind::Stop, paused), 300, out).applied);
  EXPECT_EQ(c.find(paused)->status, TrialStatus::Terminated);
}

}  // namespace
}  // namespace ranktune::search
