// Start-ahead dispatch (search/controller_ahead.cc): a worker on its last lease is sent its
// next trial, which stays PENDING until its current trial ends; taken back when the
// experiment ends, when `ranktune ctl` touches it, and when an idle worker has nothing else.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "search/controller.h"
#include "tests/unit/controller_fixtures.h"

using namespace ranktune::search;
using namespace ranktune::search::fixtures;

namespace {

ControllerOptions ahead_opts(std::int64_t max_t) {
  ControllerOptions o = opts(max_t);
  o.start_ahead = true;
  o.continue_every_result = false;  // as the driver runs it
  return o;
}

Controller make(ControllerOptions o, std::int64_t trials, Events* events = nullptr,
                const std::string& scheduler = "fifo") {
  return Controller(std::move(o), make_searcher("random", one_param(), {1, trials}), make_scheduler(scheduler, {}),
                    events);
}

std::vector<Command> of_kind(const std::vector<Command>& cmds, Command::Kind kind) {
  std::vector<Command> out;
  for (const Command& c : cmds)
    if (c.kind == kind) out.push_back(c);
  return out;
}

const Command* start_for(const std::vector<Command>& cmds, TrialId trial) {
  for (const Command& c : cmds)
    if (c.kind == Command::Kind::Start && c.trial == trial) return &c;
  return nullptr;
}

}  // namespace

TEST(StartAhead, AWorkerOnItsLastLeaseGetsItsNextTrialWhichStaysPending) {
  Events ev;
  Controller c = make(ahead_opts(1), 6, &ev);
  const auto cmds = c.on_workers_free({1, 2}, 0);
  // Trials 1 and 2 start; 3 and 4 go ahead to workers 1 and 2.
  const auto starts = of_kind(cmds, Command::Kind::Start);
  ASSERT_EQ(starts.size(), 4u);
  std::map<int, std::vector<TrialId>> by_worker;
  std::set<std::uint64_t> runs;
  for (const Command& s : starts) {
    by_worker[s.worker].push_back(s.trial);
    EXPECT_TRUE(s.last) << "a lease of max_t 1 is the last";
    EXPECT_EQ(s.until, 1);
    EXPECT_EQ(s.cause, "start");
    runs.insert(s.run);
  }
  EXPECT_EQ(runs.size(), 4u) << "every Start has its own run number";
  EXPECT_EQ(by_worker[1], (std::vector<TrialId>{1, 3}));
  EXPECT_EQ(by_worker[2], (std::vector<TrialId>{2, 4}));
  EXPECT_EQ(c.find(3)->status, TrialStatus::Pending);
  EXPECT_EQ(c.find(3)->sent_ahead, 1);
  EXPECT_TRUE(std::isnan(c.find(3)->start_time));
  EXPECT_FALSE(c.find(3)->runnable());
  EXPECT_EQ(c.counts()[static_cast<int>(TrialStatus::Running)], 2);
  EXPECT_EQ(c.counts()[static_cast<int>(TrialStatus::Pending)], 2);
  EXPECT_EQ(ev.last("start:3:"), "") << "no start event before the worker moves on to it";

  // Trial 1's last result: its worker has moved on to trial 3, which now runs from this
  // moment, and trial 5 goes ahead to worker 1.
  const auto next = c.on_result(1, 0, {{"loss", 1.0}}, 2.5);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  const Trial* t3 = c.find(3);
  EXPECT_EQ(t3->status, TrialStatus::Running);
  EXPECT_EQ(t3->sent_ahead, 0);
  EXPECT_EQ(t3->workers, (std::vector<int>{1}));
  EXPECT_EQ(t3->ran_on, (std::vector<int>{1}));
  EXPECT_DOUBLE_EQ(t3->start_time, 2.5);
  EXPECT_EQ(t3->lease_until, 1);
  EXPECT_NE(ev.last("start:3:"), "");
  // No Stop for trial 1: its worker stops it by itself and goes on to trial 3 (a Stop
  // would only be read and dropped).
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].kind, Command::Kind::Start);
  EXPECT_EQ(next[0].trial, 5);
  EXPECT_EQ(next[0].worker, 1);
  EXPECT_EQ(c.find(5)->status, TrialStatus::Pending);
  // Nothing is started twice: the worker is not idle, so no Start goes to it for trial 3.
  EXPECT_EQ(start_for(next, 3), nullptr);
}

TEST(StartAhead, OnlyAWorkerWithoutAFiniteMetricIsToldToStop) {
  // Worker 1 holds trial 2 and reports a NaN: it waits for the answer (the driver fails the
  // attempt and wants the output's tail), which is a Stop.
  Controller d = make(ahead_opts(1), 3);
  d.on_workers_free({1}, 0);
  ASSERT_EQ(d.find(2)->sent_ahead, 1);
  auto cmds = d.on_result(1, 0, {{"loss", NAN}}, 1);
  ASSERT_FALSE(cmds.empty());
  EXPECT_EQ(cmds[0].kind, Command::Kind::Stop);
  EXPECT_TRUE(cmds[0].failed);
  EXPECT_EQ(d.find(2)->status, TrialStatus::Running) << "the worker goes on to trial 2 after the Stop";
  // Trial 2's last result is finite: no Stop; the worker goes on to trial 3, sent ahead
  // when it moved on to trial 2.
  cmds = d.on_result(2, 0, {{"loss", 2.0}}, 2);
  EXPECT_TRUE(of_kind(cmds, Command::Kind::Stop).empty());
  EXPECT_EQ(d.find(3)->status, TrialStatus::Running);
  // Trial 3's is too, with nothing left to hold: no Stop either (the worker ends it and
  // waits as an idle one), and the experiment is over.
  cmds = d.on_result(3, 0, {{"loss", 3.0}}, 3);
  EXPECT_TRUE(cmds.empty());
  EXPECT_TRUE(d.finished());
}

TEST(StartAhead, WorkersThatGoOnByThemselvesRunEveryTrialOnce) {
  // Two workers that behave as mpi/worker.cc does: they run the Starts they hold in order
  // and report one result each (the controller sends no Stop for them).
  Controller c = make(ahead_opts(1), 25);
  std::map<int, std::vector<Command>> held;  // per worker, in order
  for (const Command& s : of_kind(c.on_workers_free({1, 2}, 0), Command::Kind::Start)) held[s.worker].push_back(s);
  std::map<TrialId, int> results;
  double now = 1;
  for (int round = 0; round < 100 && !c.finished(); ++round) {
    for (int w : {1, 2}) {
      auto& queue = held[w];
      if (queue.empty()) continue;
      const Command s = queue.front();
      queue.erase(queue.begin());
      ++results[s.trial];
      for (const Command& cmd : c.on_result(s.trial, s.attempt, {{"loss", double(s.trial)}}, now += 1)) {
        if (cmd.kind == Command::Kind::Start) held[cmd.worker].push_back(cmd);
        if (cmd.kind == Command::Kind::Stop) {  // a Stop of a held Start takes it back
          auto& q = held[cmd.worker];
          q.erase(std::remove_if(q.begin(), q.end(), [&](const Command& h) { return h.trial == cmd.trial; }), q.end());
        }
      }
    }
  }
  EXPECT_TRUE(c.finished());
  ASSERT_EQ(c.trials().size(), 25u);
  for (const Trial& t : c.trials()) {
    EXPECT_EQ(t.status, TrialStatus::Terminated) << "trial " << t.id;
    EXPECT_EQ(results[t.id], 1) << "trial " << t.id;
    EXPECT_EQ(t.sent_ahead, 0);
  }
}

TEST(StartAhead, AnIdleWorkerTakesBackATrialSentAheadWhenNothingElseIsLeft) {
  Controller c = make(ahead_opts(1), 3);
  auto cmds = c.on_workers_free({1, 2}, 0);
  ASSERT_EQ(c.find(3)->sent_ahead, 1);
  const std::uint64_t first_run = c.find(3)->run;
  // Worker 2 finishes trial 2 first (and ends it itself: no Stop), holding nothing; nothing
  // is left but trial 3, held by worker 1, which is still busy with trial 1: it is taken
  // back and started on worker 2.
  cmds = c.on_result(2, 0, {{"loss", 2.0}}, 1);
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0].kind, Command::Kind::Stop);  // takes it back from worker 1
  EXPECT_EQ(cmds[0].trial, 3);
  EXPECT_EQ(cmds[0].worker, 1);
  EXPECT_EQ(cmds[1].kind, Command::Kind::Start);
  EXPECT_EQ(cmds[1].trial, 3);
  EXPECT_EQ(cmds[1].worker, 2);
  const Trial* t3 = c.find(3);
  EXPECT_EQ(t3->status, TrialStatus::Running);
  EXPECT_EQ(t3->workers, (std::vector<int>{2}));
  EXPECT_NE(t3->run, first_run) << "a run taken back is told apart from the one that replaced it";
  EXPECT_EQ(t3->attempt, 0) << "taking a Start back is no failure";
  // Worker 1 ends trial 1 and is idle: nothing more to do.
  cmds = c.on_result(1, 0, {{"loss", 1.0}}, 2);
  EXPECT_TRUE(of_kind(cmds, Command::Kind::Start).empty());
  c.on_result(3, 0, {{"loss", 3.0}}, 3);
  EXPECT_TRUE(c.finished());
}

TEST(StartAhead, AGracefulStopTakesBackTheTrialsSentAheadAndLeavesThemPending) {
  ControllerOptions o = ahead_opts(1);
  o.checkpoint_on_stop = true;
  Controller c = make(o, 10);
  c.on_workers_free({1, 2}, 0);
  const auto cmds = c.request_stop(1);
  // The running trials pause (they checkpoint); the ones sent ahead get a Stop, no Pause:
  // they never began as far as the controller knows, and would have nothing to save.
  std::set<TrialId> paused, stopped;
  for (const Command& cmd : cmds) (cmd.kind == Command::Kind::Pause ? paused : stopped).insert(cmd.trial);
  EXPECT_EQ(paused, (std::set<TrialId>{1, 2}));
  EXPECT_EQ(stopped, (std::set<TrialId>{3, 4}));
  EXPECT_EQ(c.find(3)->status, TrialStatus::Pending);
  EXPECT_EQ(c.find(3)->sent_ahead, 0);
  EXPECT_TRUE(c.find(3)->runnable());
  // Both checkpoints land: the run is over, with trials 3 and 4 still to run after a resume.
  c.on_checkpoint(1, 0, 1, 2);
  c.on_checkpoint(2, 0, 1, 2);
  EXPECT_TRUE(c.finished());
}

TEST(StartAhead, TheTargetEndsTheExperimentWithTheTrialsSentAheadStillPending) {
  ControllerOptions o = ahead_opts(1);
  o.target = 0.5;
  Controller c = make(o, 10);
  c.on_workers_free({1, 2}, 0);
  const auto cmds = c.on_result(1, 0, {{"loss", 0.1}}, 1);
  EXPECT_EQ(c.end_reason(), EndReason::TargetReached);
  EXPECT_TRUE(of_kind(cmds, Command::Kind::Start).empty());
  EXPECT_EQ(c.find(3)->status, TrialStatus::Pending) << "trial 3 was sent ahead and never began";
  EXPECT_EQ(c.find(3)->sent_ahead, 0);
  EXPECT_TRUE(c.finished());
}

TEST(StartAhead, CtlStopAndSetTakeATrialSentAheadBackFirst) {
  Events ev;
  Controller c = make(ahead_opts(1), 10, &ev);
  c.on_workers_free({1, 2}, 0);
  ASSERT_EQ(c.find(3)->sent_ahead, 1);
  ASSERT_EQ(c.find(4)->sent_ahead, 2);

  std::vector<Command> out;
  ControlRequest stop{ControlRequest::Kind::Stop, "a", 3};
  const ControlOutcome stopped = c.on_control(stop, 1, out);
  EXPECT_TRUE(stopped.applied);
  EXPECT_NE(stopped.message.find("it was PENDING"), std::string::npos) << stopped.message;
  EXPECT_EQ(c.find(3)->status, TrialStatus::Terminated);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[0].kind, Command::Kind::Stop);
  EXPECT_EQ(out[0].trial, 3);
  EXPECT_EQ(out[0].worker, 1);
  // Worker 1 wants another trial ahead: trial 5 goes to it.
  const Command* five = start_for(out, 5);
  ASSERT_NE(five, nullptr);
  EXPECT_EQ(five->worker, 1);

  out.clear();
  ControlRequest set{ControlRequest::Kind::Set, "b", 4, {{"x", 0.25}}};
  const ControlOutcome changed = c.on_control(set, 2, out);
  EXPECT_TRUE(changed.applied);
  EXPECT_FALSE(changed.pending) << "a trial that never began takes the values at once: " << changed.message;
  ASSERT_GE(out.size(), 2u);
  EXPECT_EQ(out[0].kind, Command::Kind::Stop);  // the Start with the old values, taken back
  EXPECT_EQ(out[0].trial, 4);
  EXPECT_EQ(out[0].worker, 2);
  // It goes ahead again (it is the first runnable trial), with the new values.
  const Command* again = start_for(out, 4);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->worker, 2);
  EXPECT_DOUBLE_EQ(std::get<double>(again->config.at("x")), 0.25);
  EXPECT_DOUBLE_EQ(std::get<double>(c.find(4)->config.at("x")), 0.25);
}

TEST(StartAhead, OnlyTheLastLeaseGetsATrialAhead) {
  ControllerOptions o = ahead_opts(3);
  o.max_lease = 1;  // a decision after each iteration
  Controller c = make(o, 4);
  auto cmds = c.on_workers_free({1}, 0);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_FALSE(cmds[0].last);
  cmds = c.on_result(1, 0, {{"loss", 1.0}}, 1);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].kind, Command::Kind::Continue);
  EXPECT_FALSE(cmds[0].last);
  // The lease to iteration 3 is the last: trial 2 goes ahead with the Continue.
  cmds = c.on_result(1, 0, {{"loss", 1.0}}, 2);
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0].kind, Command::Kind::Continue);
  EXPECT_EQ(cmds[0].until, 3);
  EXPECT_TRUE(cmds[0].last);
  EXPECT_EQ(cmds[1].kind, Command::Kind::Start);
  EXPECT_EQ(cmds[1].trial, 2);
  EXPECT_EQ(cmds[1].worker, 1);
  EXPECT_FALSE(cmds[1].last);
}

TEST(StartAhead, ARetryIsNotSentAheadAndAFailureBeforeTheEndMovesTheWorkerOn) {
  ControllerOptions o = ahead_opts(1);
  o.max_failures = 1;
  Controller c = make(o, 2);
  c.on_workers_free({1}, 0);
  ASSERT_EQ(c.find(2)->sent_ahead, 1);
  // Trial 1 fails: worker 1 goes on to trial 2 (it holds it). The retry of trial 1 is not
  // sent ahead (it may need its log appended to); it waits for an idle worker.
  auto cmds = c.on_trial_failed(1, 0, "exit 1", "", 1);
  EXPECT_TRUE(cmds.empty());
  EXPECT_EQ(c.find(2)->status, TrialStatus::Running);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Pending);
  EXPECT_EQ(c.find(1)->sent_ahead, 0);
  cmds = c.on_result(2, 0, {{"loss", 2.0}}, 2);
  const Command* retry = start_for(cmds, 1);
  ASSERT_NE(retry, nullptr);
  EXPECT_EQ(retry->attempt, 1);
  EXPECT_EQ(retry->cause, "retry");
}

TEST(StartAhead, GangsAndTheSimulatorNeverGoAhead) {
  ControllerOptions gangs = ahead_opts(1);
  gangs.ranks_per_trial = 2;
  Controller c = make(gangs, 6);
  const auto gang_starts = of_kind(c.on_workers_free({1, 2, 3, 4}, 0), Command::Kind::Start);
  EXPECT_EQ(gang_starts.size(), 4u);  // 2 trials x 2
  for (const Command& s : gang_starts) EXPECT_FALSE(s.last) << "a gang waits for its Stop";
  for (const Trial& t : c.trials()) EXPECT_EQ(t.sent_ahead, 0);
  // The gang's leader reports the last result: both members are told to stop.
  EXPECT_EQ(of_kind(c.on_result(1, 0, {{"loss", 1.0}}, 1), Command::Kind::Stop).size(), 2u);
  Controller off = make(opts(1), 6);  // start_ahead is off unless the driver sets it
  const auto starts = of_kind(off.on_workers_free({1, 2}, 0), Command::Kind::Start);
  EXPECT_EQ(starts.size(), 2u);
  for (const Command& s : starts) EXPECT_FALSE(s.last) << "without start-ahead the worker waits for its Stop";
  const auto stops = of_kind(off.on_result(1, 0, {{"loss", 1.0}}, 1), Command::Kind::Stop);
  EXPECT_EQ(stops.size(), 1u) << "without start-ahead every trial's end is a Stop";
}

TEST(StartAhead, ASearcherAskedAheadIsNotFinishedSoCtlAddCountStillExtendsIt) {
  // One trial on one worker: asked for a trial ahead, the searcher has none left. That is
  // not taken as its end, so an operator can still add trials from it during the last one.
  Controller c = make(ahead_opts(1), 1);
  c.on_workers_free({1}, 0);
  std::vector<Command> out;
  ControlRequest add{ControlRequest::Kind::Add, "more"};
  add.count = 2;
  const ControlOutcome o = c.on_control(add, 1, out);
  EXPECT_TRUE(o.applied) << o.message;
  EXPECT_EQ(c.expected_trials(), 3);
  const Command* two = start_for(out, 2);
  ASSERT_NE(two, nullptr) << "the first added trial goes ahead to the busy worker";
  EXPECT_EQ(two->worker, 1);
}
