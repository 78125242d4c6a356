// PB2 (search/pb2_scheduler.h): PBT's exploit through the controller with the numeric
// values chosen by the model inside the explore bounds, its observations of score changes,
// the choice going where the score grows fastest, simultaneous choices spreading out, the
// drifting-optimum problem against PBT, options, and save/restore.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "search/pb2_scheduler.h"
#include "tests/unit/controller/controller_fixtures.h"
#include "tests/unit/common/expect_text.h"
#include "tests/unit/search/state_scenarios.h"

using namespace ranktune::search;
using namespace ranktune::controller;
using namespace ranktune::search::fixtures;

namespace {

using Kind = Instruction::Kind;

Space lr_space() {
  Space space;
  space.params.push_back({"lr", {DomainKind::LogUniform, 1e-4, 1.0, 0, {}}});
  return space;
}

// A trial of one_param() at x that has reported `iterations` results, the last `loss`.
Trial trial_at(TrialId id, double x, std::int64_t iterations, double loss) {
  Trial t;
  t.id = id;
  t.config = {{"x", x}};
  t.status = TrialStatus::Running;
  t.iterations = iterations;
  t.last = loss;
  return t;
}

}  // namespace

TEST(Pb2, RegisteredAndItsOptionsCheckedUnderItsName) {
  const auto names = scheduler_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "pb2"), names.end());
  const Space space = one_param();
  const auto error = [&](const Space& s, const Options& o) {
    try {
      make_scheduler("pb2", {"loss", Mode::Min, 10, &s, 1}, o);
    } catch (const OptionError& e) {
      return e.key() + ": " + e.what();
    }
    return std::string("no error");
  };
  EXPECT_CONTAINS(error(space, {{"quantile_fraction", 0.7}}), "quantile_fraction: pb2 option 'quantile_fraction' must be in (0, 0.5]");
  EXPECT_CONTAINS(error(space, {{"perturbation_interval", std::int64_t{0}}}), "pb2 option 'perturbation_interval' must be >= 1");
  EXPECT_CONTAINS(error(space, {{"bounds.y.low", 0.1}}), "bounds.y.low: pb2 option");
  EXPECT_CONTAINS(error(space, {{"kappa", 2.0}}), "unknown option for pb2");
  EXPECT_CONTAINS(error(lr_space(), {{"bounds.lr.low", -1.0}, {"bounds.lr.high", 0.5}}),
                  "bounds.lr: pb2 option 'bounds.lr': 'lr' is loguniform, so its bounds must be > 0");
  Space ints;
  ints.params.push_back({"n", {DomainKind::RandInt, 1, 10, 0, {}}});
  EXPECT_CONTAINS(error(ints, {{"bounds.n.low", 2.2}, {"bounds.n.high", 2.8}}), "bounds.n: pb2 option 'bounds.n' holds no integer of 'n'");
  EXPECT_EQ(error(ints, {{"bounds.n.low", 2.0}, {"bounds.n.high", 4.0}}), "no error");
  EXPECT_THROW(Pb2Scheduler({"loss", Mode::Min, 10, nullptr, 1}, {}), std::invalid_argument);
}

// PBT's four-trial scene (pbt_test): the worst quarter exploits the best trial's checkpoint,
// as under PBT; its x is PB2's choice, inside the custom bounds, and its listed value moves
// by one as PBT moves it.
TEST(Pb2, ExploitsAsPbtWithTheNumericValuesChosenInsideTheBounds) {
  Space space = one_param();
  Domain batch;
  batch.kind = DomainKind::Choice;
  batch.values = {Value{std::int64_t{16}}, Value{std::int64_t{32}}, Value{std::int64_t{64}}};
  space.params.push_back({"batch", batch});
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    Controller c(opts(100), make_searcher("random", space, {7, 4}),
                 make_scheduler("pb2", {"loss", Mode::Min, 100, &space, seed},
                                {{"perturbation_interval", std::int64_t{2}}, {"resample_probability", 0.0},
                                 {"bounds.x.low", 0.2}, {"bounds.x.high", 0.5}}));
    for (int w = 1; w <= 4; ++w) c.on_worker_free(w, 0);
    for (int k = 1; k <= 4; ++k) c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 1);
    for (int k = 1; k <= 3; ++k) {
      const auto out = c.on_result(k, 0, {{"loss", static_cast<double>(k)}}, 2);
      ASSERT_EQ(out.size(), 1u);
      EXPECT_TRUE(out[0].save);
      c.on_checkpoint(k, 0, 2, 2);
    }
    const auto donor_batch = std::get<std::int64_t>(c.find(1)->config.at("batch"));
    const auto out = c.on_result(4, 0, {{"loss", 4.0}}, 2);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].kind, Kind::Start);
    EXPECT_EQ(out[1].restore_trial, 1);
    EXPECT_EQ(out[1].restore_checkpoint, 2);
    const double x = std::get<double>(c.find(4)->config.at("x"));
    EXPECT_TRUE(x >= 0.2 && x <= 0.5) << x;
    const auto b = std::get<std::int64_t>(c.find(4)->config.at("batch"));
    EXPECT_NE(b, donor_batch);
    EXPECT_LE(std::abs(std::log2(static_cast<double>(b)) - std::log2(static_cast<double>(donor_batch))), 1.0);
  }
}

// One observation per interval between a trial's perturbation points: its score change per
// iteration (here the loss falls by 0.5 over 2 iterations: +0.25), and after an exploit the
// next interval starts from the donor's score.
TEST(Pb2, ObservesScoreChangesPerIterationFromTheDonorsScoreAfterAnExploit) {
  const Space space = one_param();
  Pb2Scheduler pb2({"loss", Mode::Min, 100, &space, 1},
                   {{"perturbation_interval", std::int64_t{2}}, {"quantile_fraction", 0.5}});
  for (TrialId id = 1; id <= 2; ++id) pb2.on_trial_add(trial_at(id, 0.3 * static_cast<double>(id), 0, NAN));
  EXPECT_EQ(pb2.on_trial_result(trial_at(1, 0.3, 2, 1.0)), Decision::Continue);  // first point: no interval yet
  EXPECT_EQ(pb2.observations(), 0u);
  // Trial 2 is the worse of two at its first point: it exploits trial 1 (score -1 there).
  ASSERT_EQ(pb2.on_trial_result(trial_at(2, 0.6, 2, 3.0)), Decision::Exploit);
  const Exploit e = pb2.exploit(trial_at(2, 0.6, 2, 3.0));
  EXPECT_EQ(e.donor, 1);
  EXPECT_EQ(pb2.on_trial_result(trial_at(1, 0.3, 4, 0.5)), Decision::Continue);
  ASSERT_EQ(pb2.observations(), 1u);
  EXPECT_CONTAINS(pb2.save(), "\ndata 1\n2 0.25 0.3\n");  // start, change, x
  // Trial 2 goes on from trial 1's score -1.0 (not its own -3.0): -0.8 at iteration 4 is
  // +0.1 per iteration with the chosen x.
  const double x = std::get<double>(e.config.at("x"));
  pb2.on_trial_result(trial_at(2, x, 4, 0.8));
  ASSERT_EQ(pb2.observations(), 2u);
  const std::string state = pb2.save();
  std::istringstream row(state.substr(state.find("\ndata 2\n") + 8));
  double skip = 0, start = 0, change = 0, at = 0;
  row >> skip >> skip >> skip >> start >> change >> at;  // the second row
  EXPECT_EQ(start, 2);
  EXPECT_NEAR(change, 0.1, 1e-12);
  EXPECT_EQ(at, x);
}

// The score grows fastest per step at x = 0.7 (1 - 4 (x - 0.7)^2 a step): after a run, the
// trials that exploited were given values near 0.7 by the model. Random values within [0,
// 1] would be 0.25 from it on average.
TEST(Pb2, ChoosesTheValuesWhereTheScoreGrowsFastest) {
  const StepModel growth = [](const Config& config, TrialId, int, ModelState& s) {
    if (s.values.empty()) s.values.push_back(0.0);
    const double x = std::get<double>(config.at("x"));
    s.values[0] += 1 - 4 * (x - 0.7) * (x - 0.7);
    return Metrics{{"score", s.values[0]}};
  };
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const Space space = one_param();
    ControllerOptions o;
    o.metric = "score";
    o.mode = Mode::Max;
    o.max_t = 60;
    struct Chosen : ControllerObserver {
      std::vector<double> x;  // of every exploit's new config
      void on_exploit(double, const Trial& trial, TrialId, std::int64_t, const Config&) override {
        x.push_back(std::get<double>(trial.config.at("x")));
      }
    } observer;
    Controller c(o, make_searcher("random", space, {seed, 8}),
                 make_scheduler("pb2", {"score", Mode::Max, 60, &space, seed}, {{"perturbation_interval", std::int64_t{2}}}),
                 &observer);
    SimulatorOptions so;
    so.workers = 8;
    simulate(c, growth, so);
    const std::vector<double>& chosen = observer.x;
    ASSERT_GE(chosen.size(), 6u) << "seed " << seed;
    std::vector<double> distance;
    for (std::size_t i = chosen.size() / 2; i < chosen.size(); ++i) distance.push_back(std::abs(chosen[i] - 0.7));
    std::sort(distance.begin(), distance.end());
    EXPECT_LT(distance[distance.size() / 2], 0.05) << "seed " << seed << ": median distance of the later choices";
  }
}

// Two trials choosing at the same time: the second sees the first's new interval as if
// observed, so the model's uncertainty at the first's values, and with it the upper bound
// the second maximizes there, is lower (GP-BUCB) and the second goes elsewhere. Compared
// with a copy in which the first trial has ended since (the same observations and fit, its
// interval gone).
TEST(Pb2, ARunningIntervalLowersTheBoundAtItsValuesForTheNextChoice) {
  const Space space = one_param();
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Pb2Scheduler pb2({"loss", Mode::Min, 100, &space, seed},
                     {{"perturbation_interval", std::int64_t{2}}, {"quantile_fraction", 0.5}});
    std::map<TrialId, double> x, loss;
    for (TrialId id = 1; id <= 4; ++id) {
      x[id] = 0.2 * static_cast<double>(id);
      loss[id] = 10;
      pb2.on_trial_add(trial_at(id, x[id], 0, NAN));
    }
    // Losses that fall fastest near x = 0.5; trials 1-3 go on, round after round, so the
    // model has observations, while trial 4 stays the worst and chooses each round.
    Config chosen;
    for (std::int64_t t = 2; t <= 8; t += 2) {
      for (TrialId id = 1; id <= 4; ++id) {
        loss[id] -= id == 4 ? 0.0 : 2 * (1 - 4 * (x[id] - 0.5) * (x[id] - 0.5));
        const Trial tr = trial_at(id, x[id], t, loss[id]);
        if (pb2.on_trial_result(tr) != Decision::Exploit) continue;
        chosen = pb2.exploit(tr).config;
        x[id] = std::get<double>(chosen.at("x"));
      }
    }
    ASSERT_GE(pb2.observations(), 3u);
    ASSERT_EQ(x[4], std::get<double>(chosen.at("x")));  // trial 4 chose last, at iteration 8
    Pb2Scheduler ended = pb2;
    ended.on_trial_complete(trial_at(4, x[4], 8, loss[4]));
    const double with = pb2.acquisition(3, 8, chosen), without = ended.acquisition(3, 8, chosen);
    EXPECT_LT(with, without - 0.05) << "seed " << seed << " at x = " << x[4];
  }
}

// The paper's claim for small populations, on the drifting optimum: with 4 and 8 trials,
// PB2 ends with a better score than PBT on at least 4 of 5 seeds (measured: 5 of 5 each,
// 47-57 against 25-45), and than FIFO. (A uniform draw within the bounds instead of the
// model's choice passes this too, by its larger steps than PBT's x0.8 and x1.2; the test
// above is the one that needs the model.)
TEST(Pb2, BeatsPbtWithASmallPopulationWhenTheBestLearningRateDrifts) {
  for (const std::int64_t population : {4, 8}) {
    int over_pbt = 0, over_fifo = 0;
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      const double pb2 = drifting_best("pb2", seed, population);
      over_pbt += pb2 > drifting_best("pbt", seed, population);
      over_fifo += pb2 > drifting_best("fifo", seed, population);
    }
    EXPECT_GE(over_pbt, 4) << population << " trials";
    EXPECT_GE(over_fifo, 4) << population << " trials";
  }
}

// Restored mid-run (the model fitted, intervals running), PB2 decides on as the original.
TEST(Pb2, RestoredMidRunDecidesAsTheOriginal) {
  using namespace ranktune::search::scenarios;
  const SchedulerCase c{"pb2", "pb2", {{"perturbation_interval", std::int64_t{2}}, {"quantile_fraction", 0.5}}};
  SchedulerRun a(c);
  for (int i = 0; i < 8; ++i) a.round();
  const std::string state = a.sched->save();
  EXPECT_CONTAINS(state, "\nfit 1 ");  // the model has been used
  SchedulerRun b(c);
  b.trials = a.trials;
  b.sched->restore(state);
  EXPECT_EQ(b.sched->save(), state);
  a.log.clear();
  for (int i = 0; i < 8; ++i) {
    a.round();
    b.round();
  }
  EXPECT_EQ(a.log, b.log);
  EXPECT_NE(std::count_if(a.log.begin(), a.log.end(), [](const std::string& l) { return l.rfind("exploit", 0) == 0; }), 0);
  EXPECT_EQ(a.sched->save(), b.sched->save());
  // A damaged inner PBT state is refused and changes nothing.
  SchedulerRun d(c);
  const std::string before = d.sched->save();
  EXPECT_THROW(d.sched->restore(state.substr(0, state.size() - 4)), std::invalid_argument);
  EXPECT_EQ(d.sched->save(), before);
}
