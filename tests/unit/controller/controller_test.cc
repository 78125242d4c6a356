// The controller (controller/controller.h) with FIFO trials: reusing workers, retries, bad or
// missing metrics, the target and the time budget, interrupt and resume, and leases.
#include <gtest/gtest.h>

#include <cmath>

#include "controller/controller.h"
#include "tests/unit/controller/controller_fixtures.h"

using namespace ranktune::search;
using namespace ranktune::controller;
using namespace ranktune::search::fixtures;

namespace {

struct Recorder : ControllerObserver {
  std::vector<std::string> events;
  std::int64_t results = 0;
  void on_result(const Trial&, std::int64_t, double, const Metrics&) override { ++results; }
  void on_event(double, TrialId t, int, EventKind kind, const std::string&) override {
    events.push_back(std::string(to_string(kind)) + ":" + std::to_string(t));
  }
};

Controller make(ControllerOptions o, std::int64_t n, Recorder* rec) {
  return Controller(std::move(o), make_searcher("random", one_param(), {1, n}),
                    make_scheduler("fifo", {}), rec);
}

}  // namespace

TEST(Controller, FifoRunsEveryTrialToMaxTAndReusesFreedWorkers) {
  Recorder rec;
  Controller c = make(opts(3), 5, &rec);
  std::vector<Instruction> pending;
  for (int w : {1, 2}) {
    auto cmds = c.on_worker_free(w, 0);
    pending.insert(pending.end(), cmds.begin(), cmds.end());
  }
  ASSERT_EQ(pending.size(), 2u);
  int steps = 0;
  while (!pending.empty()) {
    Instruction cmd = pending.front();
    pending.erase(pending.begin());
    if (cmd.kind == Instruction::Kind::Stop) continue;
    ++steps;
    // Trial k reports loss = k at every iteration.
    auto next = c.on_result(cmd.trial, cmd.attempt, {{"loss", double(cmd.trial)}}, steps);
    pending.insert(pending.end(), next.begin(), next.end());
  }
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(steps, 15);
  EXPECT_EQ(rec.results, 15);
  ASSERT_EQ(c.trials().size(), 5u);
  for (const auto& t : c.trials()) {
    EXPECT_EQ(t.status, TrialStatus::Terminated);
    EXPECT_EQ(t.iterations, 3);
    EXPECT_EQ(t.end_reason, TrialEnd::MaxT);
  }
  EXPECT_EQ(c.best()->id, 1);
  c.on_tick(100);
  EXPECT_EQ(c.end_reason(), EndReason::Completed);
}

TEST(Controller, FailedAttemptIsRetriedThenEndsAsError) {
  Recorder rec;
  auto o = opts(2);
  o.max_failures = 1;
  Controller c = make(o, 1, &rec);
  auto cmds = c.on_worker_free(1, 0);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].attempt, 0);
  cmds = c.on_trial_failed(1, 0, "exited with code 1", "tail", 1);
  // The retry starts at once on the freed worker, as attempt 1.
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].kind, Instruction::Kind::Start);
  EXPECT_EQ(cmds[0].attempt, 1);
  // A stale message about attempt 0 is ignored.
  EXPECT_TRUE(c.on_result(1, 0, {{"loss", 1}}, 2).empty());
  EXPECT_EQ(c.trials()[0].iterations, 0);
  EXPECT_EQ(c.trials()[0].end_reason, TrialEnd::None);  // retried: it has not ended
  cmds = c.on_trial_failed(1, 1, "killed by signal SIGSEGV (11)", "", 3);
  EXPECT_TRUE(cmds.empty());
  EXPECT_EQ(c.trials()[0].status, TrialStatus::Error);
  EXPECT_EQ(c.trials()[0].end_reason, TrialEnd::Error);
  EXPECT_EQ(c.trials()[0].error, "killed by signal SIGSEGV (11)");
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(rec.events, (std::vector<std::string>{"start:1", "error:1", "retry:1", "start:1",
                                                   "error:1"}));
}

TEST(Controller, NonFiniteMetricFailsUnderErrorPolicyAndIsWorstOtherwise) {
  Controller strict = make(opts(5), 1, nullptr);
  strict.on_worker_free(1, 0);
  auto cmds = strict.on_result(1, 0, {{"loss", NAN}}, 1);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].kind, Instruction::Kind::Stop);
  EXPECT_EQ(strict.trials()[0].status, TrialStatus::Error);
  EXPECT_NE(strict.trials()[0].error.find("nan"), std::string::npos);

  auto o = opts(2);
  o.non_finite = NonFinitePolicy::Worst;
  Controller lax = make(o, 1, nullptr);
  lax.on_worker_free(1, 0);
  EXPECT_EQ(lax.on_result(1, 0, {{"loss", INFINITY}}, 1)[0].kind, Instruction::Kind::Continue);
  lax.on_result(1, 0, {{"loss", 0.5}}, 2);
  EXPECT_EQ(lax.trials()[0].status, TrialStatus::Terminated);
  EXPECT_EQ(lax.trials()[0].best, 0.5);
  EXPECT_EQ(lax.trials()[0].best_iteration, 2);
}

TEST(Controller, TrialThatNeverReportsTheMetricIsAnError) {
  Controller c = make(opts(5), 1, nullptr);
  c.on_worker_free(1, 0);
  c.on_result(1, 0, {{"accuracy", 0.3}}, 1);
  c.on_trial_done(1, 0, 2);
  EXPECT_EQ(c.trials()[0].status, TrialStatus::Error);
  EXPECT_NE(c.trials()[0].error.find("without reporting metric 'loss'"), std::string::npos);
}

// A script that reports its metric under another name (`acc` for `loss`): the error names
// what it did report, in the order first seen, and cuts a long list short.
TEST(Controller, TrialThatReportsOtherMetricsNamesThemInItsError) {
  Controller c = make(opts(5), 2, nullptr);
  c.on_worker_free(1, 0);
  c.on_worker_free(2, 0);
  ASSERT_EQ(c.trials().size(), 2u);
  c.on_result(1, 0, {{"acc", 0.3}, {"epoch", 1}}, 1);
  c.on_result(1, 0, {{"acc", 0.4}, {"epoch", 2}, {"val_acc", 0.2}}, 2);
  c.on_trial_done(1, 0, 3);
  const std::string& error = c.trials()[0].error;
  EXPECT_NE(error.find("without reporting metric 'loss', it reported: acc, epoch, val_acc"), std::string::npos)
      << error;

  c.on_result(2, 0, {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}, {"f", 1}, {"g", 1}}, 4);
  c.on_trial_done(2, 0, 5);
  EXPECT_EQ(c.trials()[1].status, TrialStatus::Error);
  EXPECT_NE(c.trials()[1].error.find("it reported: a, b, c, d, e, ..."), std::string::npos) << c.trials()[1].error;
}

TEST(Controller, TrialThatRunsToMaxTUnderAnotherMetricNameIsAnError) {
  // It reports every iteration, but `acc`, not `loss`: reaching max_t is no success.
  Controller c = make(opts(3), 1, nullptr);
  c.on_worker_free(1, 0);
  c.on_result(1, 0, {{"acc", 0.1}}, 1);
  c.on_result(1, 0, {{"acc", 0.2}}, 2);
  const std::vector<Instruction> out = c.on_result(1, 0, {{"acc", 0.3}}, 3);
  const Trial& t = c.trials()[0];
  EXPECT_EQ(t.status, TrialStatus::Error);
  EXPECT_NE(t.error.find("without reporting metric 'loss', it reported: acc"), std::string::npos) << t.error;
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[0].kind, Instruction::Kind::Stop);
  EXPECT_TRUE(out[0].failed);  // the worker sends the log tail of a failed Stop
}

TEST(Controller, TargetStopsEveryRunningTrial) {
  auto o = opts(100);
  o.target = 0.1;
  Controller c = make(o, 10, nullptr);
  c.on_worker_free(1, 0);
  c.on_worker_free(2, 0);
  EXPECT_EQ(c.on_result(1, 0, {{"loss", 0.5}}, 1)[0].kind, Instruction::Kind::Continue);
  auto cmds = c.on_result(2, 0, {{"loss", 0.05}}, 2);
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0].kind, Instruction::Kind::Stop);
  EXPECT_EQ(cmds[1].kind, Instruction::Kind::Stop);
  EXPECT_EQ(c.end_reason(), EndReason::TargetReached);
  EXPECT_TRUE(c.finished());
  EXPECT_TRUE(c.on_worker_free(1, 3).empty());
  EXPECT_EQ(c.trials().size(), 2u);
  EXPECT_EQ(c.trials()[0].end_reason, TrialEnd::Target);  // cut short by the other's target
  EXPECT_EQ(c.trials()[1].end_reason, TrialEnd::Target);
}

TEST(Controller, TimeBudgetStopsRunningTrialsAndStartsNoMore) {
  auto o = opts(100);
  o.time_budget_s = 10;
  Controller c = make(o, 10, nullptr);
  c.on_worker_free(1, 0);
  EXPECT_TRUE(c.on_tick(9.9).empty());
  c.on_result(1, 0, {{"loss", 0.5}}, 5);
  auto cmds = c.on_tick(10.0);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].kind, Instruction::Kind::Stop);
  EXPECT_EQ(c.end_reason(), EndReason::TimeBudget);
  EXPECT_TRUE(c.finished());
  // Issue 27 item 9: TERMINATED as any other, and nothing said it was cut.
  EXPECT_EQ(c.trials()[0].status, TrialStatus::Terminated);
  EXPECT_EQ(c.trials()[0].end_reason, TrialEnd::Budget);
}

// Issue 27 item 9: every way a trial ends is recorded, not only TERMINATED or ERROR.
TEST(Controller, EachTrialRecordsWhyItEnded) {
  // ctl stop, running or pending; and a program that ends by itself before max_t.
  Controller c = make(opts(10), 3, nullptr);
  c.on_worker_free(1, 0);
  c.on_worker_free(2, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  std::vector<Instruction> out;
  ControlRequest stop;
  stop.trial = 1;
  EXPECT_TRUE(c.on_control(stop, 2, out).applied);
  EXPECT_EQ(c.trials()[0].end_reason, TrialEnd::User);
  c.on_result(2, 0, {{"loss", 2.0}}, 3);
  c.on_trial_done(2, 0, 4);
  EXPECT_EQ(c.trials()[1].status, TrialStatus::Terminated);
  EXPECT_EQ(c.trials()[1].end_reason, TrialEnd::Done);
  ASSERT_EQ(c.trials().size(), 3u);
  EXPECT_EQ(c.trials()[2].end_reason, TrialEnd::None);  // running
  EXPECT_STREQ(to_string(TrialEnd::Budget), "budget");
  EXPECT_EQ(parse_trial_end("stopped"), TrialEnd::Stopped);
  EXPECT_EQ(parse_trial_end("nope"), std::nullopt);

  // Stopped by its scheduler (ASHA, rungs at 1 and 2 of max_t 4): below the cutoff at a rung.
  Controller asha(opts(4), make_searcher("random", one_param(), {1, 8}),
                  make_scheduler("asha", {"loss", Mode::Min, 4}, {{"reduction_factor", 2.0}}));
  std::vector<Instruction> pending;
  for (int w : {1, 2}) {
    auto cmds = asha.on_worker_free(w, 0);
    pending.insert(pending.end(), cmds.begin(), cmds.end());
  }
  for (int step = 0; !pending.empty() && step < 1000; ++step) {
    const Instruction cmd = pending.front();
    pending.erase(pending.begin());
    if (cmd.kind == Instruction::Kind::Stop) continue;
    // Trial k reports loss k: the later a trial, the worse.
    auto more = asha.on_result(cmd.trial, cmd.attempt, {{"loss", double(cmd.trial)}}, step);
    pending.insert(pending.end(), more.begin(), more.end());
  }
  int stopped = 0, ran = 0;
  for (const Trial& t : asha.trials()) {
    EXPECT_EQ(t.status, TrialStatus::Terminated);
    EXPECT_EQ(t.end_reason, t.iterations < 4 ? TrialEnd::Stopped : TrialEnd::MaxT) << t.id;
    (t.iterations < 4 ? stopped : ran) += 1;
  }
  EXPECT_GT(stopped, 0);
  EXPECT_GT(ran, 0);
}

TEST(Controller, InterruptLeavesRunningTrialsPendingForResume) {
  Controller c = make(opts(100), 3, nullptr);
  c.on_worker_free(1, 0);
  auto cmds = c.request_stop(1);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(c.trials()[0].status, TrialStatus::Pending);
  EXPECT_EQ(c.trials()[0].end_reason, TrialEnd::None);
  EXPECT_EQ(c.end_reason(), EndReason::Interrupted);
  EXPECT_TRUE(c.finished());
}

TEST(Controller, ResumeGoesOnFromEachTrialsNewestCheckpointInANewAttemptWhenWorkWasLost) {
  // Both trials recorded three results; trial 1's newest checkpoint is of iteration 2, trial
  // 2's of iteration 3. Trial 1's third iteration runs again, as a new attempt, so that no
  // (trial, attempt, iteration) is recorded twice; trial 2 lost nothing and keeps its attempt.
  Controller c = make(opts(100), 2, nullptr);
  (void)c.on_workers_free({1, 2}, 0);
  for (int i = 1; i <= 3; ++i)
    for (TrialId id : {1, 2}) (void)c.on_result(id, 0, {{"loss", 1.0}}, i);
  Controller resumed = make(opts(100), 2, nullptr);
  resumed.resume(c.trials(), {{1, 2}, {2, 3}}, c.save_state(), "test", 4);
  for (TrialId id : {1, 2}) {
    const Trial& t = *resumed.find(id);
    EXPECT_EQ(t.status, TrialStatus::Pending) << "trial " << id;
    EXPECT_EQ(t.iterations, id + 1) << "trial " << id;
    EXPECT_EQ(t.restore_trial, id) << "trial " << id;
    EXPECT_EQ(t.restore_checkpoint, id + 1) << "trial " << id;
  }
  EXPECT_EQ(resumed.find(1)->attempt, 1);
  EXPECT_EQ(resumed.find(2)->attempt, 0);
  const std::vector<Instruction> starts = resumed.on_workers_free({1, 2}, 4);
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].trial, 1);
  EXPECT_EQ(starts[0].attempt, 1);
  EXPECT_EQ(starts[0].iterations, 2);
  EXPECT_EQ(starts[0].restore_checkpoint, 2);
  EXPECT_EQ(starts[1].trial, 2);
  EXPECT_EQ(starts[1].attempt, 0);
  EXPECT_EQ(starts[1].iterations, 3);
}

namespace {

/// Answers every Start with one result (loss 1) until no command is left; the trials made.
std::vector<Trial> run_to_end(Controller& c, std::vector<Instruction> pending, double now) {
  for (int guard = 0; !pending.empty() && guard < 10000; ++guard) {
    const Instruction cmd = pending.front();
    pending.erase(pending.begin());
    if (cmd.kind != Instruction::Kind::Start) continue;
    auto more = c.on_result(cmd.trial, cmd.attempt, {{"loss", 1.0}}, now + guard);
    pending.insert(pending.end(), more.begin(), more.end());
  }
  return c.trials();
}

}  // namespace

TEST(Controller, ResumeFromAStateOlderThanTheRowsMakesNoTrialTwice) {
  // The disk filled while the state was written and the rows went in after it: the file
  // holds trials the state never knew (fault.full_disk's resume made 301 trials of 300).
  Controller c = make(opts(1), 6, nullptr);
  (void)c.on_worker_free(1, 0);                    // trial 1 starts
  (void)c.on_result(1, 0, {{"loss", 1.0}}, 1);     // trial 1 ends, trial 2 starts
  ASSERT_EQ(c.trials().size(), 2u);
  const std::string state = c.save_state();        // knows trials 1 and 2, trial 2 running
  (void)c.on_result(2, 0, {{"loss", 1.0}}, 2);     // trial 3 starts
  (void)c.on_result(3, 0, {{"loss", 1.0}}, 3);     // trial 4 starts
  ASSERT_EQ(c.trials().size(), 4u);

  Controller resumed = make(opts(1), 6, nullptr);
  resumed.resume(c.trials(), {}, state, "test", 4);
  const std::vector<Instruction> first = resumed.on_worker_free(1, 4);
  // Trial 4, running when the file was left, starts again; its log's separator says why
  // (issue 12 item 2).
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].trial, 4);
  EXPECT_EQ(first[0].cause, "ranktune run --resume");
  const std::vector<Trial> trials = run_to_end(resumed, first, 4);
  ASSERT_EQ(trials.size(), 6u);
  EXPECT_TRUE(resumed.finished());
  // The searcher went on where the file ends: trials 5 and 6 are those of a run never stopped.
  Controller whole = make(opts(1), 6, nullptr);
  const std::vector<Trial> expected = run_to_end(whole, whole.on_worker_free(1, 0), 0);
  ASSERT_EQ(expected.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(trials[i].config, expected[i].config) << "trial " << i + 1;
  // A state that claims more trials than the file has is refused, not believed.
  Controller ahead = make(opts(1), 6, nullptr);
  EXPECT_THROW(ahead.resume({}, {}, state, "test", 0), std::invalid_argument);
}

namespace {

/// Proposes x = 0.5 up to `total` times and notes which trials it was told completed.
struct NotingSearcher final : Searcher {
  std::int64_t next = 0, limit = 0;
  std::vector<TrialId> completed;
  explicit NotingSearcher(std::int64_t total) : limit(total) {}
  Suggestion suggest(TrialId) override {
    if (next >= limit) return {Suggestion::Kind::Finished, {}};
    ++next;
    return {Suggestion::Kind::Config, {{"x", 0.5}}};
  }
  void on_trial_complete(TrialId id, const Metrics&, bool) override { completed.push_back(id); }
  std::int64_t total() const override { return limit; }
  std::string save() const override { return std::to_string(next); }
  void restore(const std::string& state) override { next = std::stoll(state); }
};

}  // namespace

TEST(Controller, ResumeTellsTheSearcherOfTrialsThatEndedAfterItsState) {
  auto first = std::make_unique<NotingSearcher>(4);
  Controller c(opts(1), std::move(first), make_scheduler("fifo", {}), nullptr);
  (void)c.on_worker_free(1, 0);
  (void)c.on_result(1, 0, {{"loss", 1.0}}, 1);  // trial 2 starts
  const std::string state = c.save_state();     // trial 1 ended, trial 2 running
  (void)c.on_result(2, 0, {{"loss", 1.0}}, 2);  // trial 2 ends, trial 3 starts
  (void)c.on_result(3, 0, {{"loss", 1.0}}, 3);  // trial 3 ends, trial 4 starts
  auto again = std::make_unique<NotingSearcher>(4);
  NotingSearcher& s = *again;
  Controller resumed(opts(1), std::move(again), make_scheduler("fifo", {}), nullptr);
  resumed.resume(c.trials(), {}, state, "test", 4);
  // Trial 1 ended before the state (the searcher knew it); 2 and 3 ended after it.
  EXPECT_EQ(s.completed, (std::vector<TrialId>{2, 3}));
  EXPECT_EQ(s.next, 4);  // trials 3 and 4 were asked of it again
  EXPECT_EQ(run_to_end(resumed, resumed.on_worker_free(1, 4), 4).size(), 4u);
}


namespace {

/// A scheduler that keeps the default lease: a decision after every iteration.
struct EveryStep final : Scheduler {
  Decision on_trial_result(const Trial&) override { return Decision::Continue; }
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override {
    for (const auto& t : trials)
      if (t.status == TrialStatus::Pending) return t.id;
    return std::nullopt;
  }
  std::string save() const override { return {}; }
  void restore(const std::string&) override {}
};

}  // namespace

TEST(Controller, LeasesFollowTheSchedulerMaxTAndTheFlowControlCap) {
  auto o = opts(200);
  o.max_lease = 64;
  Controller fifo = make(o, 1, nullptr);
  auto cmds = fifo.on_worker_free(1, 0);
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0].until, 64);  // FIFO never decides; the cap bounds results in flight
  for (int i = 1; i < 64; ++i) fifo.on_result(1, 0, {{"loss", 1.0}}, i);
  cmds = fifo.on_result(1, 0, {{"loss", 1.0}}, 64);
  ASSERT_EQ(cmds[0].kind, Instruction::Kind::Continue);
  EXPECT_EQ(cmds[0].until, 128);
  for (int i = 65; i < 192; ++i) fifo.on_result(1, 0, {{"loss", 1.0}}, i);
  cmds = fifo.on_result(1, 0, {{"loss", 1.0}}, 192);
  EXPECT_EQ(cmds[0].until, 200);  // never past max_t

  Controller sync(opts(200), make_searcher("random", one_param(), {1, 1}),
                  std::make_unique<EveryStep>(), nullptr);
  EXPECT_EQ(sync.on_worker_free(1, 0)[0].until, 1);
  EXPECT_EQ(sync.on_result(1, 0, {{"loss", 1.0}}, 1)[0].until, 2);
}

// Issue 29: [stop] max_total_steps is exact with any number of workers, even when workers
// run ahead on leases: a lease never grants more iterations than the budget has left.
TEST(Controller, StepBudgetLeasesNeverGrantMoreThanIsLeft) {
  Recorder rec;
  auto o = opts(100);
  o.max_total_steps = 150;
  o.max_lease = 64;
  o.continue_every_result = false;  // as the MPI driver: no decision inside a lease
  Controller c = make(o, 10, &rec);
  std::vector<Instruction> starts;
  for (int w : {1, 2, 3}) {
    auto cmds = c.on_worker_free(w, 0);
    starts.insert(starts.end(), cmds.begin(), cmds.end());
  }
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(starts[0].until, 64);
  EXPECT_EQ(starts[1].until, 64);
  EXPECT_EQ(starts[2].until, 22);  // 150 - 64 - 64
  EXPECT_TRUE(c.on_worker_free(4, 0).empty()) << "a fourth trial started with no step left";
  // Trial 3 runs out first: its last granted iteration answers Stop (budget), and no other
  // trial takes its worker, since trials 1 and 2 hold the rest of the budget.
  std::vector<Instruction> out;
  for (int i = 1; i <= 22; ++i) out = c.on_result(3, 0, {{"loss", 1.0}}, i);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Instruction::Kind::Stop);
  EXPECT_EQ(c.trials()[2].end_reason, TrialEnd::Budget);
  EXPECT_EQ(c.trials().size(), 3u);
  for (int i = 1; i <= 64; ++i) c.on_result(1, 0, {{"loss", 2.0}}, i);
  EXPECT_EQ(c.end_reason(), EndReason::None);
  for (int i = 1; i < 64; ++i) EXPECT_TRUE(c.on_result(2, 0, {{"loss", 3.0}}, i).empty());
  out = c.on_result(2, 0, {{"loss", 3.0}}, 64);
  EXPECT_EQ(c.end_reason(), EndReason::StepBudget);
  EXPECT_EQ(c.steps_done(), 150);
  EXPECT_EQ(rec.results, 150);
  EXPECT_TRUE(c.finished());
  for (const Trial& t : c.trials()) EXPECT_EQ(t.end_reason, TrialEnd::Budget) << "trial " << t.id;
}

// A trial stopped early hands back the rest of its lease, which the next trial gets.
TEST(Controller, StepBudgetReturnsTheLeaseOfATrialThatEnds) {
  auto o = opts(10);
  o.max_total_steps = 12;
  o.continue_every_result = false;
  Controller c = make(o, 5, nullptr);
  auto start = c.on_worker_free(1, 0);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0].until, 10);
  auto second = c.on_worker_free(2, 0);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].until, 2) << "10 of 12 leased to trial 1";
  // Trial 1's program ends after 3 iterations: 7 of its lease come back.
  for (int i = 1; i <= 3; ++i) c.on_result(1, 0, {{"loss", 1.0}}, i);
  auto next = c.on_trial_done(1, 0, 3);  // its worker is free again
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].kind, Instruction::Kind::Start);
  EXPECT_EQ(next[0].until, 7) << "12 - 3 done - 2 leased to trial 2";
}

// On resume, the iterations the file holds count against the budget.
TEST(Controller, StepBudgetCountsTheStepsOfEarlierRuns) {
  auto o = opts(10);
  o.max_total_steps = 25;
  Controller c = make(o, 5, nullptr);
  c.count_steps_done(20);
  auto start = c.on_worker_free(1, 0);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0].until, 5);
  c.count_steps_done(25);
  Controller spent = make(o, 5, nullptr);
  spent.count_steps_done(25);
  EXPECT_TRUE(spent.on_worker_free(1, 0).empty());
}
