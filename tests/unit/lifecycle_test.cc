// Pause, resume and exploit: the controller's checkpoint lifecycle, the schedulers that use
// it (HyperBand, PBT), and whole experiments on the simulator.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "search/asha_promotion.h"
#include "search/hyperband_scheduler.h"
#include "search/pbt_scheduler.h"
#include "search/simulator.h"
#include "tests/unit/controller_fixtures.h"
#include "train/synthetic.h"

using namespace ranktune::search;
using namespace ranktune::search::fixtures;

namespace {

using Kind = Command::Kind;

// A scheduler that pauses every trial at iteration 2 once, and resumes paused trials first.
class PauseAtTwo final : public Scheduler {
 public:
  Decision on_trial_result(const Trial& t) override {
    return t.iterations == 2 ? Decision::Pause : Decision::Continue;
  }
  std::optional<TrialId> choose_trial_to_run(const std::vector<Trial>& trials) override {
    for (const auto& t : trials)
      if (t.status == TrialStatus::Paused && t.runnable()) return t.id;
    for (const auto& t : trials)
      if (t.status == TrialStatus::Pending) return t.id;
    return std::nullopt;
  }
  std::string save() const override { return {}; }
  void restore(const std::string&) override {}
};

Controller with(std::unique_ptr<Scheduler> s, std::int64_t trials, std::int64_t max_t) {
  return Controller(opts(max_t), make_searcher("random", one_param(), {1, trials}), std::move(s));
}

}  // namespace

TEST(Lifecycle, PausedTrialResumesFromItsCheckpointOnAnotherWorker) {
  Controller c = with(std::make_unique<PauseAtTwo>(), 2, 4);
  auto out = c.on_worker_free(1, 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Start);
  EXPECT_EQ(out[0].restore_trial, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  // Pause at iteration 2: worker 1 is free at once and takes trial 2.
  out = c.on_result(1, 0, {{"loss", 0.9}}, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, Kind::Pause);
  EXPECT_EQ(out[1].kind, Kind::Start);
  EXPECT_EQ(out[1].trial, 2);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Paused);
  EXPECT_TRUE(c.find(1)->saving);
  // Worker 2 comes: trial 1 cannot resume before its checkpoint is stored.
  EXPECT_TRUE(c.on_worker_free(2, 3).empty());
  EXPECT_FALSE(c.finished());
  out = c.on_checkpoint(1, 0, 2, 4);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Start);
  EXPECT_EQ(out[0].trial, 1);
  EXPECT_EQ(out[0].worker, 2);
  EXPECT_EQ(out[0].restore_trial, 1);
  EXPECT_EQ(out[0].restore_checkpoint, 2);
  EXPECT_EQ(out[0].iterations, 2);  // goes on counting from 2
  EXPECT_EQ(out[0].attempt, 0);
  // It continues at iteration 3 and ends at max_t = 4.
  out = c.on_result(1, 0, {{"loss", 0.8}}, 5);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Continue);
  out = c.on_result(1, 0, {{"loss", 0.7}}, 6);
  EXPECT_EQ(out[0].kind, Kind::Stop);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  EXPECT_EQ(c.find(1)->iterations, 4);
}

TEST(Lifecycle, EachStartSaysWhyForTheTrialLog) {
  // The worker appends to the attempt's log unless the cause is "start".
  ControllerOptions o = opts(4);
  o.max_failures = 1;
  o.checkpoint_on_stop = true;
  Controller c(o, make_searcher("random", one_param(), {1, 2}), std::make_unique<PauseAtTwo>());
  auto out = c.on_worker_free(1, 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].cause, "start");
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  out = c.on_result(1, 0, {{"loss", 0.9}}, 2);  // paused; worker 1 takes trial 2
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].cause, "start");
  out = c.on_checkpoint(1, 0, 2, 3);
  EXPECT_TRUE(out.empty());
  out = c.on_worker_free(2, 4);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].trial, 1);
  EXPECT_EQ(out[0].cause, "resume");
  // `ctl set` on the running trial: it pauses, and its next start says what changed.
  std::vector<Command> cmds;
  ControlRequest set;
  set.kind = ControlRequest::Kind::Set;
  set.trial = 1;
  set.config = {{"x", 0.25}};
  ASSERT_TRUE(c.on_control(set, 5, cmds).applied);
  out = c.on_checkpoint(1, 0, 2, 6);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].trial, 1);
  EXPECT_EQ(out[0].cause.rfind("ctl set: x ", 0), 0u) << out[0].cause;
  // A failure after it trained with the new values (a failure before its first result would
  // go back to the old values instead): the retry is a new attempt (a new log).
  c.on_result(1, 0, {{"loss", 0.8}}, 7);
  out = c.on_trial_failed(1, 0, "segfault", "", 7);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].attempt, 1);
  EXPECT_EQ(out[0].cause, "retry");
}

TEST(Lifecycle, ANonFiniteFailureAsksTheWorkerForItsLogTail) {
  ControllerOptions o = opts(4);
  o.max_failures = 1;
  Controller c(o, make_searcher("random", one_param(), {1, 1}), make_scheduler("fifo", {}));
  c.on_worker_free(1, 0);
  auto out = c.on_result(1, 0, {{"loss", NAN}}, 1);
  ASSERT_GE(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Stop);
  EXPECT_TRUE(out[0].failed);
  EXPECT_EQ(c.find(1)->attempt, 1);  // retried
  c.on_log_tail(1, 1, "not this attempt's");  // the retry has not failed: ignored
  EXPECT_EQ(c.find(1)->log_tail, "");
  c.on_log_tail(1, 0, "diverged\n");
  EXPECT_EQ(c.find(1)->log_tail, "diverged\n");
  c.on_log_tail(1, 0, "again");  // the first one stays
  EXPECT_EQ(c.find(1)->log_tail, "diverged\n");
  // A trial that never reports its metric keeps the tail its Ended carried.
  out = c.on_result(1, 1, {{"other", 1.0}}, 2);
  c.on_trial_done(1, 1, 3, "printed, never reported\n");
  EXPECT_EQ(c.find(1)->status, TrialStatus::Error);
  EXPECT_EQ(c.find(1)->log_tail, "printed, never reported\n");
}

TEST(Lifecycle, RetryRestartsFromTheLastCheckpoint) {
  ControllerOptions o = opts(10);
  o.max_failures = 1;
  o.checkpoint_every = 3;
  Controller c(o, make_searcher("random", one_param(), {1, 1}), make_scheduler("fifo", {}));
  c.on_worker_free(1, 0);
  std::vector<Command> out;
  for (int i = 1; i <= 3; ++i) out = c.on_result(1, 0, {{"loss", 1.0}}, i);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].save);  // iteration 3 is a multiple of checkpoint_every
  c.on_checkpoint(1, 0, 3, 3.5);
  c.on_result(1, 0, {{"loss", 1.0}}, 4);
  out = c.on_trial_failed(1, 0, "segfault", "", 5);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Start);
  EXPECT_EQ(out[0].attempt, 1);
  EXPECT_EQ(out[0].restore_trial, 1);
  EXPECT_EQ(out[0].restore_checkpoint, 3);
  EXPECT_EQ(out[0].iterations, 3);
  // A stale checkpoint of the failed attempt is ignored.
  c.on_checkpoint(1, 0, 6, 6);
  EXPECT_EQ(c.find(1)->restore_checkpoint, 3);
}

TEST(Lifecycle, FailedPauseCheckpointRetriesTheTrial) {
  ControllerOptions o = opts(4);
  o.max_failures = 1;
  Controller c(o, make_searcher("random", one_param(), {1, 1}), std::make_unique<PauseAtTwo>());
  c.on_worker_free(1, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  c.on_result(1, 0, {{"loss", 1.0}}, 2);  // pause
  const auto out = c.on_trial_failed(1, 0, "save failed", "", 3);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Start);
  EXPECT_EQ(out[0].attempt, 1);
  EXPECT_EQ(out[0].restore_trial, 0);  // no checkpoint was ever stored
}

TEST(Lifecycle, GracefulStopPausesRunningTrialsWhenTheyCanCheckpoint) {
  ControllerOptions o = opts(10);
  o.checkpoint_on_stop = true;
  Controller c(o, make_searcher("random", one_param(), {1, 3}), make_scheduler("fifo", {}));
  c.on_worker_free(1, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  const auto out = c.request_stop(2);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Pause);
  EXPECT_FALSE(c.finished());  // waits for the checkpoint
  c.on_checkpoint(1, 0, 1, 3);
  EXPECT_TRUE(c.finished());
  // PENDING from its checkpoint, so that whatever the scheduler, a resume runs it again.
  EXPECT_EQ(c.find(1)->status, TrialStatus::Pending);
  EXPECT_EQ(c.find(1)->restore_checkpoint, 1);
  EXPECT_EQ(c.end_reason(), EndReason::Interrupted);
}

// ---------------------------------------------------------------- HyperBand

TEST(HyperBand, BracketsOfTheJmlrPaper) {
  // Table 1 of Li et al. (2018), R = 81, eta = 3.
  HyperBandScheduler hb({"loss", Mode::Min, 81}, {});
  ASSERT_EQ(hb.s_max(), 4);
  const std::map<int, std::pair<std::int64_t, std::vector<std::int64_t>>> expected = {
      {4, {81, {1, 3, 9, 27, 81}}}, {3, {34, {3, 9, 27, 81}}}, {2, {15, {9, 27, 81}}},
      {1, {8, {27, 81}}},           {0, {5, {81}}}};
  for (const auto& [s, e] : expected) {
    const auto shape = hb.shape(s);
    EXPECT_EQ(shape.trials, e.first) << "s=" << s;
    EXPECT_EQ(shape.milestones, e.second) << "s=" << s;
  }
  HyperBandScheduler small({"loss", Mode::Min, 9}, {{"reduction_factor", 3.0}});
  ASSERT_EQ(small.s_max(), 2);
  EXPECT_EQ(small.shape(2).trials, 9);
  EXPECT_EQ(small.shape(2).milestones, (std::vector<std::int64_t>{1, 3, 9}));
  EXPECT_EQ(small.shape(1).trials, 5);
  EXPECT_EQ(small.shape(0).trials, 3);
}

TEST(HyperBand, FullRungPromotesTheTopThirdAndAbandonsTheRest) {
  // R = 9, eta = 3: the first bracket (s = 2) takes 9 trials, 1 iteration each at rung 0.
  Controller c = with(make_scheduler("hyperband", {"loss", Mode::Min, 9}), 9, 9);
  for (int w = 1; w <= 9; ++w) c.on_worker_free(w, 0);
  // Trial k reports loss k: trials 1, 2 and 3 are the best third.
  for (int k = 1; k <= 9; ++k) {
    const auto out = c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 1);
    if (k < 9) {
      ASSERT_EQ(out[0].kind, Kind::Pause) << k;
      c.on_checkpoint(k, 0, 1, 1);
    } else {
      ASSERT_EQ(out[0].kind, Kind::Stop) << "the last one settles the rung and loses";
    }
  }
  for (int k = 1; k <= 3; ++k) EXPECT_EQ(c.find(k)->status, TrialStatus::Running) << k;
  for (int k = 4; k <= 9; ++k) EXPECT_EQ(c.find(k)->status, TrialStatus::Terminated) << k;
  EXPECT_EQ(c.find(1)->restore_checkpoint, 1);
}

TEST(HyperBand, LastTrialOfARungThatWinsGoesOnWithoutPausing) {
  Controller c = with(make_scheduler("hyperband", {"loss", Mode::Min, 9}), 9, 9);
  for (int w = 1; w <= 9; ++w) c.on_worker_free(w, 0);
  for (int k = 1; k <= 8; ++k) {
    c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 1);
    c.on_checkpoint(k, 0, 1, 1);
  }
  const auto out = c.on_result(9, 0, {{"loss", 0.0}}, 1);  // the best
  EXPECT_EQ(out[0].kind, Kind::Continue);
  EXPECT_EQ(c.find(9)->status, TrialStatus::Running);
}

TEST(HyperBand, SaveRestoreKeepsBracketsAndPromotions) {
  HyperBandScheduler a({"loss", Mode::Min, 9}, {});
  std::vector<Trial> trials(3);
  for (int i = 0; i < 3; ++i) {
    trials[i].id = i + 1;
    a.on_trial_add(trials[i]);
  }
  HyperBandScheduler b({"loss", Mode::Min, 9}, {});
  b.restore(a.save());
  EXPECT_EQ(b.save(), a.save());
  EXPECT_EQ(b.bracket_of(2), 0);
  EXPECT_THROW(b.restore("hyperband 2 0"), std::invalid_argument);
}

// ---------------------------------------------------------------- PBT

TEST(Pbt, BottomQuantileExploitsATopTrialWithAPerturbedConfig) {
  const Space space = one_param();
  Controller c(opts(100), make_searcher("random", space, {7, 4}),
               make_scheduler("pbt", {"loss", Mode::Min, 100, &space, 7},
                              {{"perturbation_interval", std::int64_t{2}}, {"quantile_fraction", 0.25},
                               {"resample_probability", 0.0}}));
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
  struct Events : ControllerObserver {
    std::vector<std::string> lines;
    void on_event(double, TrialId t, int, const std::string& kind, const std::string& msg) override {
      lines.push_back(kind + ":" + std::to_string(t) + ":" + msg);
    }
  } ev;
  const Space space = one_param();
  Controller c(opts(100), make_searcher("random", space, {7, 4}),
               make_scheduler("pbt", {"loss", Mode::Min, 100, &space, 7},
                              {{"perturbation_interval", std::int64_t{2}}, {"quantile_fraction", 0.25},
                               {"resample_probability", 0.0}}),
               &ev);
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

// ---------------------------------------------------------------- whole experiments

namespace {

// The synthetic trainable's step, as `ranktune simulate` runs it (f evaluated per start).
// Virtual time at which the noise-free objective of a result first comes within 10% of
// Hartmann-6's optimum (-3.32237), or +inf. (Within 1% is out of reach of random search:
// not one of 2 million uniform draws gets there; about 1 in 10^4 is within 10%.)
double time_to_ten_percent(const std::string& scheduler, std::int64_t trials, std::uint64_t seed) {
  const Space space = hartmann6_space();
  ControllerOptions o;
  o.metric = "loss";
  o.mode = Mode::Min;
  o.max_t = 27;
  const bool promotion = scheduler == "asha_promotion";
  Controller c(o, make_searcher("random", space, {seed, trials}),
               make_scheduler(promotion ? "asha" : scheduler, {"loss", Mode::Min, 27, &space, seed},
                              promotion ? Options{{"variant", std::string("promotion")}, {"reduction_factor", 3.0}}
                                        : Options{}));
  SimulatorOptions so;
  so.workers = 16;
  return time_to_hartmann6(c, 0.1, 0.0, seed, so);
}

}  // namespace

TEST(SimulatedSearch, HyperBandReachesTenPercentOfHartmann6FasterThanRandomSearch) {
  // Same searcher, seeds and worker count; HyperBand spends most steps on few configs, so it
  // can try many more within the time FIFO needs. Medians over 5 seeds.
  std::vector<double> fifo, hb;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    fifo.push_back(time_to_ten_percent("fifo", 30000, seed));
    hb.push_back(time_to_ten_percent("hyperband", 30000, seed));
  }
  std::sort(fifo.begin(), fifo.end());
  std::sort(hb.begin(), hb.end());
  EXPECT_TRUE(std::isfinite(hb[2])) << "HyperBand never got within 10%";
  EXPECT_LT(hb[2], fifo[2]) << "median time to 10%: hyperband " << hb[2] << " fifo " << fifo[2];
  std::printf("median virtual time to 10%% of the optimum, 16 workers: hyperband %g, fifo %g\n", hb[2], fifo[2]);
}

namespace {

// A model whose best learning rate falls over time: each step adds
// exp(-(log10(lr) - opt(t))^2) to the state's score, with opt moving from -1 to -3 over
// 40 steps. Any fixed lr gains less than a schedule that follows opt.
Metrics drifting_optimum(const Config& config, TrialId, int, ModelState& s) {
  if (s.values.empty()) s.values.push_back(0.0);
  const double opt = -1.0 - 2.0 * std::min(1.0, static_cast<double>(s.t) / 40.0);
  const double d = std::log10(std::get<double>(config.at("lr"))) - opt;
  s.values[0] += std::exp(-d * d);
  return {{"score", s.values[0]}};
}

double best_score(const std::string& scheduler, std::uint64_t seed) {
  Space space;
  Domain lr;
  lr.kind = DomainKind::LogUniform;
  lr.low = 1e-4;
  lr.high = 1.0;
  space.params.push_back({"lr", lr});
  ControllerOptions o;
  o.metric = "score";
  o.mode = Mode::Max;
  o.max_t = 60;
  Controller c(o, make_searcher("random", space, {seed, 16}),
               make_scheduler(scheduler, {"score", Mode::Max, 60, &space, seed},
                              scheduler == "pbt" ? Options{{"perturbation_interval", std::int64_t{4}}} : Options{}));
  SimulatorOptions so;
  so.workers = 16;
  return simulate(c, drifting_optimum, so).best;
}

}  // namespace

TEST(SimulatedSearch, PbtBeatsAFixedScheduleWhenTheBestLearningRateDrifts) {
  int wins = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) wins += best_score("pbt", seed) > best_score("fifo", seed);
  EXPECT_GE(wins, 4) << "PBT beat the fixed-lr population in " << wins << " of 5 seeds";
}

TEST(SimulatedSearch, HyperBandTrialsEndAtTheHandComputedRungs) {
  // R = 27, eta = 3: brackets (27 trials from 1 iteration), (12 from 3), (6 from 9), (4 from
  // 27); a third of each full rung goes on. So trials end at 1, 3, 9 and 27 iterations:
  // 18; 6 + 8; 2 + 3 + 4; 1 + 1 + 2 + 4. Also with fewer workers than a bracket's trials,
  // where promoted trials pause and resume many times.
  Space space;
  for (const char* name : {"x1", "x2"}) {
    Domain d;
    d.low = name[1] == '1' ? -5 : 0;
    d.high = name[1] == '1' ? 10 : 15;
    space.params.push_back({name, d});
  }
  for (int workers : {3, 16, 64}) {
    Controller c(opts(27), make_searcher("random", space, {5, 49}),
                 make_scheduler("hyperband", {"loss", Mode::Min, 27, &space, 5}, {}));
    SimulatorOptions so;
    so.workers = workers;
    so.jitter = 0.3;
    simulate(c, synthetic_model("branin", 0.05, 5), so);
    std::map<std::int64_t, int> ends;
    for (const auto& t : c.trials()) {
      EXPECT_EQ(t.status, TrialStatus::Terminated);
      ++ends[t.iterations];
    }
    EXPECT_EQ(ends, (std::map<std::int64_t, int>{{1, 18}, {3, 14}, {9, 9}, {27, 8}})) << workers << " workers";
  }
}

TEST(Lifecycle, CheckpointAtEndIsStoredBeforeTheExperimentFinishes) {
  ControllerOptions o = opts(2);
  o.checkpoint_at_end = true;
  Controller c(o, make_searcher("random", one_param(), {1, 2}), make_scheduler("fifo", {}));
  c.on_worker_free(1, 0);
  c.on_result(1, 0, {{"loss", 1.0}}, 1);
  auto out = c.on_result(1, 0, {{"loss", 1.0}}, 2);  // max_t: the trial ends, saving
  ASSERT_GE(out.size(), 1u);
  EXPECT_EQ(out[0].kind, Kind::Pause);
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  ASSERT_EQ(out.size(), 2u);  // the worker is free at once: trial 2 starts behind the Pause
  c.on_result(2, 0, {{"loss", 1.0}}, 3);
  out = c.on_result(2, 0, {{"loss", 1.0}}, 4);
  EXPECT_EQ(out[0].kind, Kind::Pause);
  c.on_checkpoint(2, 0, 2, 5);
  EXPECT_FALSE(c.finished());  // trial 1's checkpoint is still on its way
  c.on_trial_failed(1, 0, "disk full", "", 6);  // its save failed: the result stands
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.find(1)->status, TrialStatus::Terminated);
  EXPECT_EQ(c.find(2)->checkpoint_iteration, 2);
}

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

TEST(SimulatedSearch, AshaPromotionFindsAGoodHartmann6ConfigFasterThanFifo) {
  std::vector<double> fifo, asha;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    fifo.push_back(time_to_ten_percent("fifo", 30000, seed));
    asha.push_back(time_to_ten_percent("asha_promotion", 30000, seed));
  }
  std::sort(fifo.begin(), fifo.end());
  std::sort(asha.begin(), asha.end());
  EXPECT_LT(asha[2], fifo[2]) << "median time to 10%: asha " << asha[2] << " fifo " << fifo[2];
  std::printf("median virtual time to 10%% of the optimum, 16 workers: asha (promotion) %g, fifo %g\n", asha[2], fifo[2]);
}
