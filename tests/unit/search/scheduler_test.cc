// Decision sequences for the early-stopping schedulers (asha, median_stopping), Tune style:
// trials are built by hand, results fed one by one, and every decision is checked against
// an expectation computed by hand in the comments. Scores are sign(mode) * value.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "search/asha_scheduler.h"
#include "search/median_stopping.h"
#include "search/scheduler.h"
#include "tests/unit/search/scheduler_fixtures.h"

namespace ranktune::search {
namespace {

using namespace fixtures;  // kNaN, kInf, C, S, SchedulerFeed

/// Feeds results of the metric "loss" to a scheduler made by name.
struct Feed : fixtures::SchedulerFeed {
  Feed(const std::string& name, Mode mode, Options options, std::int64_t max_t = 8)
      : SchedulerFeed(make_scheduler(name, {"loss", mode, max_t}, options)) {}

  /// Trial `id` reports its next iteration with loss `v`.
  Decision report(TrialId id, double v) {
    if (std::isfinite(v)) trial(id).last = v;
    return report_metrics(id, {{"loss", v}});
  }
  /// A result without the experiment metric.
  Decision report_other(TrialId id) { return report_metrics(id, {{"accuracy", 0.5}}); }
};

// ---------------------------------------------------------------- asha

TEST(Asha, RungsAreGraceTimesRfPowersBelowMaxT) {
  AshaScheduler a({"loss", Mode::Max, 8}, {{"reduction_factor", 2.0}});
  EXPECT_EQ(a.milestones(0), (std::vector<std::int64_t>{1, 2, 4}));  // 8 = max_t excluded
  AshaScheduler b({"loss", Mode::Max, 100}, {{"grace_period", std::int64_t{3}}});
  EXPECT_EQ(b.milestones(0), (std::vector<std::int64_t>{3, 12, 48}));  // rf 4
  AshaScheduler c({"loss", Mode::Max, 100}, {{"max_t", std::int64_t{20}}});
  EXPECT_EQ(c.milestones(0), (std::vector<std::int64_t>{1, 4, 16}));  // option beats ctx
  // rf 1.5 from grace 1: 1, 1.5->2, 2.25->3, 3.375->4, 5.06->6 (all < 8).
  AshaScheduler d({"loss", Mode::Max, 8}, {{"reduction_factor", 1.5}});
  EXPECT_EQ(d.milestones(0), (std::vector<std::int64_t>{1, 2, 3, 4, 6}));
}

TEST(Asha, MaxModeDecisionSequenceRf2) {
  // rf 2, grace 1, max_t 8: rungs 1, 2, 4. Cutoff over the m scores already at the rung,
  // sorted x_0 <= ...: x_i with i = floor((m-1)/2); stop iff score < cutoff.
  Feed f("asha", Mode::Max, {{"reduction_factor", 2.0}, {"stop_rule", std::string("quantile")}});
  f.add(5);
  EXPECT_EQ(f.report(1, 5), C);    // rung 1: m=0, first always goes on. {5}
  EXPECT_EQ(f.report(2, 3), S);    // m=1, i=0, cutoff 5: 3 < 5. {3,5}
  EXPECT_EQ(f.report(3, 4), C);    // m=2, i=0, cutoff 3. {3,4,5}
  EXPECT_EQ(f.report(4, 3.5), S);  // m=3, i=1, cutoff 4. {3,3.5,4,5}
  EXPECT_EQ(f.report(5, 4), C);    // m=4, i=1, cutoff 3.5. {3,3.5,4,4,5}
  EXPECT_EQ(f.report(1, 6), C);    // rung 2: m=0. {6}
  EXPECT_EQ(f.report(3, 7), C);    // m=1, cutoff 6. {6,7}
  EXPECT_EQ(f.report(5, 6), C);    // m=2, i=0, cutoff 6: a tie goes on. {6,6,7}
  EXPECT_EQ(f.report(1, 0), C);    // iteration 3: no rung, so even a bad score goes on
  EXPECT_EQ(f.report(1, 8), C);    // rung 4: m=0. {8}
  EXPECT_EQ(f.report(3, 1), C);    // iteration 3
  EXPECT_EQ(f.report(3, 7.5), S);  // rung 4: m=1, cutoff 8
  EXPECT_EQ(f.report(1, 0), C);    // iterations 5..7: past the last rung
  EXPECT_EQ(f.report(1, 0), C);
}

TEST(Asha, MinModeStopsTheLargerLoss) {
  // Scores are -loss. rf 2: loss 1 first; loss 2 (score -2 < -1) stops; loss 0.5: m=2,
  // i=0, cutoff min(-1,-2) = -2, -0.5 goes on; loss 3: m=3, i=1, sorted {-2,-1,-0.5},
  // cutoff -1, -3 stops.
  Feed f("asha", Mode::Min, {{"reduction_factor", 2.0}});
  f.add(4);
  EXPECT_EQ(f.report(1, 1.0), C);
  EXPECT_EQ(f.report(2, 2.0), S);
  EXPECT_EQ(f.report(3, 0.5), C);
  EXPECT_EQ(f.report(4, 3.0), S);
}

// Issue 29: the default stop rule is the paper's top k (Li et al.; Optuna's
// SuccessiveHalvingPruner): of the n trials at a rung, this one included, the best
// k = max(1, floor(n / rf)) go on. Under Tune's quantile rule (below) a model-based searcher,
// whose later trials are better, gets most of them past every rung (issue 29: 65-92%).
TEST(Asha, TopKRuleKeepsTheBestFloorNOverRf) {
  // rf 4, max mode, rung 1. Cutoff x_{m-k} of the m scores before, ascending.
  Feed f("asha", Mode::Max, {}, 100);
  f.add(8);
  EXPECT_EQ(f.report(1, 10), C);  // m=0: the first goes on
  EXPECT_EQ(f.report(2, 20), C);  // n=2, k=1: best of {10,20}
  EXPECT_EQ(f.report(3, 15), S);  // n=3, k=1: 20 beats it
  EXPECT_EQ(f.report(4, 12), S);  // n=4, k=1
  EXPECT_EQ(f.report(5, 25), C);  // n=5, k=1: the new best
  EXPECT_EQ(f.report(6, 18), S);  // n=6, k=1
  EXPECT_EQ(f.report(7, 22), S);  // n=7, k=1: 25 beats it
  EXPECT_EQ(f.report(8, 24), C);  // n=8, k=2: second of {..., 22, 24, 25}
}

TEST(Asha, TopKRuleTiesGoOnAndTheRuleIsChecked) {
  Feed f("asha", Mode::Min, {{"reduction_factor", 2.0}});
  f.add(3);
  EXPECT_EQ(f.report(1, 1.0), C);
  EXPECT_EQ(f.report(2, 1.0), C);  // n=2, k=1: a tie with the best goes on
  EXPECT_EQ(f.report(3, 1.5), S);  // n=3, k=1
  try {
    AshaScheduler({"loss", Mode::Min, 8}, {{"stop_rule", std::string("median")}});
    ADD_FAILURE() << "stop_rule = \"median\" was accepted";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("stop_rule"), std::string::npos) << e.what();
  }
}

TEST(Asha, QuantileRuleRf4KeepsTheTopQuarter) {
  // rf 4: i = floor(3(m-1)/4). Max mode, rung 1, arrivals 1..5:
  // 10: m=0 go. 20: m=1, i=0, cutoff 10, go. 15: m=2, i=0, cutoff 10, go.
  // 12: m=3, i=1, sorted {10,15,20}, cutoff 15, stop. 25: m=4, i=2, {10,12,15,20} -> 15, go.
  // 18: m=5, i=3, {10,12,15,20,25} -> 20, stop.
  Feed f("asha", Mode::Max, {{"stop_rule", std::string("quantile")}}, 100);
  f.add(6);
  EXPECT_EQ(f.report(1, 10), C);
  EXPECT_EQ(f.report(2, 20), C);
  EXPECT_EQ(f.report(3, 15), C);
  EXPECT_EQ(f.report(4, 12), S);
  EXPECT_EQ(f.report(5, 25), C);
  EXPECT_EQ(f.report(6, 18), S);
}

TEST(Asha, NonFiniteIsWorst) {
  // Min mode, rf 2, the quantile rule. NaN and +inf losses score -inf.
  Feed f("asha", Mode::Min, {{"reduction_factor", 2.0}, {"stop_rule", std::string("quantile")}});
  f.add(4);
  EXPECT_EQ(f.report(1, 1.0), C);   // {-1}
  EXPECT_EQ(f.report(2, kNaN), S);  // -inf < cutoff -1. {-inf,-1}
  EXPECT_EQ(f.report(3, kInf), C);  // m=2, i=0, cutoff -inf: a tie goes on. {-inf,-inf,-1}
  EXPECT_EQ(f.report(4, 5.0), C);   // m=3, i=1, cutoff -inf: -5 goes on
}

TEST(Asha, ResultWithoutMetricIsJudgedAtTheNextScoredResult) {
  Feed f("asha", Mode::Max, {{"reduction_factor", 2.0}});
  f.add(2);
  EXPECT_EQ(f.report(1, 5), C);     // rung 1 {5}
  EXPECT_EQ(f.report(1, 6), C);     // rung 2 {6}
  EXPECT_EQ(f.report_other(2), C);  // iteration 1 without "loss": nothing to judge
  EXPECT_EQ(f.report(2, 5.5), S);   // iteration 2: judged at rung 2 (the highest reached),
                                    // cutoff 6; with 5.5 it would have passed rung 1
}

TEST(Asha, BracketsAreRoundRobin) {
  // brackets 2, rf 2, grace 1, max_t 8: bracket 0 rungs {1,2,4}, bracket 1 rungs {2,4}.
  AshaScheduler a({"loss", Mode::Max, 8},
                  {{"reduction_factor", 2.0}, {"brackets", std::int64_t{2}}});
  EXPECT_EQ(a.milestones(1), (std::vector<std::int64_t>{2, 4}));
  Feed f("asha", Mode::Max, {{"reduction_factor", 2.0}, {"brackets", std::int64_t{2}}});
  f.add(4);
  auto* asha = dynamic_cast<AshaScheduler*>(f.sched.get());
  ASSERT_NE(asha, nullptr);
  EXPECT_EQ(asha->bracket_of(1), 0);
  EXPECT_EQ(asha->bracket_of(2), 1);
  EXPECT_EQ(asha->bracket_of(3), 0);
  EXPECT_EQ(asha->bracket_of(4), 1);
  EXPECT_EQ(f.report(1, 5), C);  // bracket 0, rung 1 {5}
  EXPECT_EQ(f.report(2, 1), C);  // bracket 1 has no rung at 1
  EXPECT_EQ(f.report(3, 1), S);  // bracket 0, rung 1: cutoff 5
  EXPECT_EQ(f.report(4, 9), C);  // bracket 1: no rung at 1
  EXPECT_EQ(f.report(2, 1), C);  // bracket 1, rung 2: first. {1}
  EXPECT_EQ(f.report(4, 0), S);  // bracket 1, rung 2: 0 < 1. Bracket 0's rung 2 is separate.
  EXPECT_EQ(f.report(1, 0), C);  // bracket 0, rung 2: first
}

TEST(Schedulers, NextDecisionIsTheNextPossibleStop) {
  // asha rf 2, max_t 8: rungs 1, 2, 4. Between rungs a worker may run without waiting.
  Feed f("asha", Mode::Max, {{"reduction_factor", 2.0}});
  f.add(1);
  const Trial& t = f.trials[0];
  EXPECT_EQ(f.sched->next_decision(t), 1);  // iterations 0: rung 1 next
  f.report(1, 1);
  EXPECT_EQ(f.sched->next_decision(t), 2);
  f.report(1, 1);
  EXPECT_EQ(f.sched->next_decision(t), 4);  // iterations 2: rung 4 next
  f.report(1, 1);
  f.report(1, 1);
  EXPECT_EQ(f.sched->next_decision(t), std::numeric_limits<std::int64_t>::max());
  // median_stopping, grace 3: nothing before iteration 3, then every iteration.
  Feed m("median_stopping", Mode::Max, {{"grace_period", std::int64_t{3}}});
  m.add(1);
  EXPECT_EQ(m.sched->next_decision(m.trials[0]), 3);
  for (int i = 0; i < 4; ++i) m.report(1, 1);
  EXPECT_EQ(m.sched->next_decision(m.trials[0]), 5);
}

TEST(Asha, OptionErrors) {
  const SchedulerContext ctx{"loss", Mode::Max, 8};
  try {
    make_scheduler("asha", ctx, {{"reduction_factr", 3.0}});
    FAIL() << "no error";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "reduction_factr");
    EXPECT_NE(std::string(e.what()).find("Did you mean 'reduction_factor'?"), std::string::npos)
        << e.what();
  }
  const auto key_of = [&](const Options& o) {
    try {
      make_scheduler("asha", ctx, o);
    } catch (const OptionError& e) {
      return e.key();
    }
    return std::string("(none)");
  };
  EXPECT_EQ(key_of({{"reduction_factor", 1.0}}), "reduction_factor");
  EXPECT_EQ(key_of({{"reduction_factor", std::int64_t{1}}}), "reduction_factor");
  EXPECT_EQ(key_of({{"reduction_factor", 0.5}}), "reduction_factor");
  EXPECT_EQ(key_of({{"grace_period", std::int64_t{0}}}), "grace_period");
  EXPECT_EQ(key_of({{"grace_period", 1.5}}), "grace_period");  // not an integer
  EXPECT_EQ(key_of({{"grace_period", std::int64_t{8}}}), "grace_period");  // no rung < 8
  EXPECT_EQ(key_of({{"brackets", std::int64_t{0}}}), "brackets");
  // rf 4, max_t 8: bracket 1's first rung is 4, bracket 2's would be 16.
  EXPECT_EQ(key_of({{"brackets", std::int64_t{2}}}), "(none)");
  EXPECT_EQ(key_of({{"brackets", std::int64_t{3}}}), "brackets");
  EXPECT_EQ(key_of({{"max_t", std::int64_t{0}}}), "max_t");
  EXPECT_THROW(make_scheduler("ashaa", ctx), std::invalid_argument);
  try {
    make_scheduler("ashaa", ctx);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fifo, asha, hyperband, median_stopping, pbt"), std::string::npos);
  }
}

// ---------------------------------------------------------------- median_stopping

TEST(MedianStopping, MaxModeWithMinSamplesAndCompletedTrials) {
  // Defaults: grace 1, min_samples_required 3, statistic "best".
  Feed f("median_stopping", Mode::Max, {});
  f.add(5);
  // t = 1. Others with a score at 1 must number >= 3.
  EXPECT_EQ(f.report(1, 1), C);    // others {}
  EXPECT_EQ(f.report(2, 2), C);    // others {1}
  EXPECT_EQ(f.report(3, 3), C);    // others {1,2}: still 2 < 3
  EXPECT_EQ(f.report(4, 0.5), S);  // others {1,2,3}: median 2, best 0.5 < 2
  EXPECT_EQ(f.report(5, 2), C);    // others {0.5,1,2,3} (a stopped trial still counts):
                                   // median (1+2)/2 = 1.5, best 2 goes on
  // t = 2. Running averages at 2: trial 1 (1+4)/2 = 2.5, trial 2 (2+1)/2 = 1.5, trial 3 3.
  EXPECT_EQ(f.report(1, 4), C);    // others at 2: {}
  EXPECT_EQ(f.report(2, 1), C);    // {2.5}
  EXPECT_EQ(f.report(3, 3), C);    // {2.5,1.5}
  EXPECT_EQ(f.report(5, 1), S);    // {2.5,1.5,3}: median 2.5; best max(2,1) = 2 < 2.5
  // t = 3: trial 3 alone at 3 for now; trials 1 and 2 follow with 2 and 1 others.
  EXPECT_EQ(f.report(3, 0), C);
}

TEST(MedianStopping, StatisticAverageIsStricterThanBest) {
  // Three reference trials with running averages at t = 2 of 2.5, 2.5, 2.5; the tested trial
  // reports 3 then 1: best 3 >= 2.5 goes on, average 2 < 2.5 stops.
  for (const auto& [stat, expected] : {std::pair{"best", C}, std::pair{"average", S}}) {
    Feed f("median_stopping", Mode::Max, {{"statistic", std::string(stat)}});
    f.add(4);
    for (TrialId id = 1; id <= 3; ++id) {
      EXPECT_EQ(f.report(id, 2), C);
      EXPECT_EQ(f.report(id, 3), C);
    }
    EXPECT_EQ(f.report(4, 3), C) << stat;  // t=1: others {2,2,2}, 3 >= 2
    EXPECT_EQ(f.report(4, 1), expected) << stat;
  }
}

TEST(MedianStopping, MinModeAndNonFinite) {
  // Scores -loss; NaN scores -inf, and so does every running average that includes it.
  Feed f("median_stopping", Mode::Min, {});
  f.add(6);
  EXPECT_EQ(f.report(1, 1), C);
  EXPECT_EQ(f.report(2, 2), C);
  EXPECT_EQ(f.report(3, 3), C);
  EXPECT_EQ(f.report(4, kNaN), S);  // others {-1,-2,-3}: median -2; -inf < -2
  EXPECT_EQ(f.report(5, 2.5), C);   // others {-inf,-3,-2,-1}: median -2.5; -2.5 is a tie
  EXPECT_EQ(f.report(6, 2.6), S);   // others {-inf,-3,-2.5,-2,-1}: median -2.5; -2.6 < it
}

TEST(MedianStopping, GracePeriod) {
  Feed f("median_stopping", Mode::Max, {{"grace_period", std::int64_t{2}}});
  f.add(4);
  for (TrialId id = 1; id <= 3; ++id) EXPECT_EQ(f.report(id, 5), C);
  EXPECT_EQ(f.report(4, 0), C);  // t=1 < grace 2: the median 5 is not consulted
  for (TrialId id = 1; id <= 3; ++id) EXPECT_EQ(f.report(id, 5), C);
  EXPECT_EQ(f.report(4, 0), S);  // t=2: others' averages {5,5,5}; best 0 < 5
}

TEST(MedianStopping, MinSamplesRequired) {
  Feed f("median_stopping", Mode::Max, {{"min_samples_required", std::int64_t{1}}});
  f.add(2);
  EXPECT_EQ(f.report(1, 5), C);  // no other trial
  EXPECT_EQ(f.report(2, 4), S);  // one other, enough: median 5
}

TEST(MedianStopping, RetryDropsTheFailedAttempt) {
  Feed f("median_stopping", Mode::Max, {{"min_samples_required", std::int64_t{1}}});
  f.add(2);
  EXPECT_EQ(f.report(1, 10), C);
  // Trial 1 fails and is retried: attempt 1 starts at iteration 1 again.
  f.trials[0].attempt = 1;
  f.trials[0].iterations = 0;
  EXPECT_EQ(f.report(1, 1), C);  // its old 10 is gone, so no other trial at t=1
  EXPECT_EQ(f.report(2, 2), C);  // others {1}
}

TEST(MedianStopping, OptionErrors) {
  const SchedulerContext ctx{"loss", Mode::Max, 8};
  const auto key_of = [&](const Options& o) {
    try {
      make_scheduler("median_stopping", ctx, o);
    } catch (const OptionError& e) {
      return e.key();
    }
    return std::string("(none)");
  };
  EXPECT_EQ(key_of({{"grace_period", std::int64_t{0}}}), "grace_period");
  EXPECT_EQ(key_of({{"min_samples_required", std::int64_t{0}}}), "min_samples_required");
  EXPECT_EQ(key_of({{"statistic", std::string("mean")}}), "statistic");
  EXPECT_EQ(key_of({{"statistic", std::string("average")}}), "(none)");
  try {
    make_scheduler("median_stopping", ctx, {{"min_sample_required", std::int64_t{2}}});
    FAIL() << "no error";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "min_sample_required");
    EXPECT_NE(std::string(e.what()).find("Did you mean 'min_samples_required'?"),
              std::string::npos)
        << e.what();
  }
}

// ---------------------------------------------------------------- both

/// Feeds a seeded random workload: `n` trials, each reporting up to max_t iterations in
/// round-robin order, until every trial stopped; returns every decision.
std::vector<Decision> random_run(Feed& f, std::mt19937_64& rng, int rounds) {
  std::vector<Decision> out;
  std::uniform_real_distribution<double> u(0, 1);
  for (int r = 0; r < rounds; ++r) {
    for (auto& t : f.trials) {
      if (t.status != TrialStatus::Running) continue;
      const double v = u(rng) < 0.05 ? kNaN : u(rng);
      out.push_back(f.report(t.id, v));
    }
  }
  return out;
}

TEST(Schedulers, SaveRestoreRoundTripMakesTheSameDecisions) {
  const std::vector<std::pair<std::string, Options>> cases = {
      {"asha", {{"reduction_factor", 2.0}, {"brackets", std::int64_t{2}}}},
      {"median_stopping", {{"statistic", std::string("average")}}},
      {"median_stopping", {}},
  };
  for (const auto& [name, options] : cases) {
    Feed a(name, Mode::Min, options, 16);
    a.add(40);
    std::mt19937_64 rng(7);
    random_run(a, rng, 5);
    const std::string saved = a.sched->save();

    Feed b(name, Mode::Min, options, 16);
    b.trials = a.trials;  // the controller's table comes back from the results file
    b.sched->restore(saved);
    EXPECT_EQ(b.sched->save(), saved) << name;

    a.add(10);  // new trials too: the round-robin position must survive
    b.add(10);
    std::mt19937_64 rng_a(11), rng_b(11);
    const auto da = random_run(a, rng_a, 10);
    const auto db = random_run(b, rng_b, 10);
    EXPECT_EQ(da, db) << name;
    EXPECT_GT(std::count(da.begin(), da.end(), S), 0) << name;
    EXPECT_EQ(a.sched->save(), b.sched->save()) << name;
  }
}

TEST(Schedulers, RestoreRejectsBadState) {
  auto asha = make_scheduler("asha", {"loss", Mode::Max, 8}, {});
  EXPECT_THROW(asha->restore("garbage"), std::invalid_argument);
  EXPECT_THROW(asha->restore("asha 1 0 1 0\n2 1 4\n"), std::invalid_argument);  // other rungs
  auto median = make_scheduler("median_stopping", {"loss", Mode::Max, 8}, {});
  EXPECT_THROW(median->restore("median_stopping 1 1\n1 0 2 2 x"), std::invalid_argument);
  EXPECT_NO_THROW(median->restore(median->save()));
}

TEST(Schedulers, ChooseTrialToRunIsFifo) {
  for (const std::string name : {"asha", "median_stopping"}) {
    auto s = make_scheduler(name, {"loss", Mode::Max, 8}, {});
    std::vector<Trial> trials(3);
    for (int i = 0; i < 3; ++i) trials[i].id = i + 1;
    trials[0].status = TrialStatus::Running;
    EXPECT_EQ(s->choose_trial_to_run(trials), TrialId{2});
    EXPECT_EQ(s->choose_trial_to_run(trials), TrialId{2});  // idempotent
    trials[1].status = trials[2].status = TrialStatus::Terminated;
    EXPECT_EQ(s->choose_trial_to_run(trials), std::nullopt);
  }
}

TEST(Schedulers, HundredThousandTrials) {
  // Scale: 10^5 trials through rung 1 of asha (rf 4). With iid scores a newcomer goes on
  // with probability about 1/4. No timing assertion here (benchmarks/bench_schedulers.cc
  // measures it); a quadratic scheduler would take minutes.
  constexpr int kTrials = 100000;
  {
    Feed f("asha", Mode::Max, {}, 64);
    f.add(kTrials);
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(0, 1);
    int kept = 0;
    for (TrialId id = 1; id <= kTrials; ++id) kept += f.report(id, u(rng)) == C;
    EXPECT_NEAR(static_cast<double>(kept) / kTrials, 0.25, 0.01);
  }
  {
    Feed f("median_stopping", Mode::Max, {}, 64);
    f.add(kTrials);
    std::mt19937_64 rng(1);
    const auto decisions = random_run(f, rng, 3);
    const auto stopped = std::count(decisions.begin(), decisions.end(), S);
    EXPECT_GT(stopped, kTrials / 4);
    EXPECT_LT(stopped, kTrials);
  }
}


// ---------------------------------------------------------------- limits (issue 13, items 10, 11)

namespace limits {

// The milestones as asha_milestones defined them before it skipped ahead: every power of rf,
// rounding duplicates dropped. Only usable where the powers are few.
std::vector<std::int64_t> every_power(std::int64_t grace, double rf, std::int64_t max_t, int s) {
  std::vector<std::int64_t> out;
  for (int k = 0;; ++k) {
    const double at = std::ceil(static_cast<double>(grace) * std::pow(rf, static_cast<double>(s + k)));
    if (at >= static_cast<double>(max_t)) break;
    if (!out.empty() && out.back() >= static_cast<std::int64_t>(at)) continue;
    out.push_back(static_cast<std::int64_t>(at));
  }
  return out;
}

std::string error_of(const std::string& name, const Options& o, std::int64_t max_t, std::string* key) {
  static const Space space = [] {
    Space s;
    s.params.push_back({"x", Domain{DomainKind::Uniform, 0.0, 1.0}});
    return s;
  }();
  try {
    make_scheduler(name, {"loss", Mode::Max, max_t, &space}, o);
  } catch (const OptionError& e) {
    *key = e.key();
    return e.what();
  }
  return "";
}

}  // namespace limits

TEST(Asha, MilestonesSkipAheadToTheSameRungs) {
  for (const double rf : {1.001, 1.01, 1.05, 1.1, 1.5, 2.0, 3.0, 4.0, 7.5}) {
    for (const std::int64_t grace : {1, 2, 3, 7}) {
      for (const std::int64_t max_t : {8, 50, 1000}) {
        for (const int s : {0, 1, 3}) {
          SCOPED_TRACE(std::to_string(rf) + " " + std::to_string(grace) + " " + std::to_string(max_t) + " " +
                       std::to_string(s));
          auto expected = limits::every_power(grace, rf, max_t, s);
          if (expected.size() > 65) expected.resize(65);  // asha_milestones stops after limit + 1
          EXPECT_EQ(asha_milestones(grace, rf, max_t, s, 64), expected);
        }
      }
    }
  }
}

TEST(Asha, ReductionFactorJustAbove1IsRefusedAtOnce) {
  // 1 + 2^-52 stepped through ~1e16 powers per rung: check ran for minutes.
  for (const std::string variant : {"stopping", "promotion"}) {
    SCOPED_TRACE(variant);
    std::string key;
    const std::string msg = limits::error_of(
        "asha", {{"reduction_factor", 1.0000000000000002}, {"variant", variant}}, 100, &key);
    EXPECT_EQ(key, "reduction_factor");
    EXPECT_NE(msg.find("= 1.0000000000000002 with grace_period = 1 and max_t = 100 makes about 99 rungs; "
                       "at most 64 are allowed"),
              std::string::npos)
        << msg;
    // With max_t = 10^9 too: the milestones stop after the 65th.
    EXPECT_NE(limits::error_of("asha", {{"reduction_factor", 1.0000000000000002}, {"variant", variant}},
                               1'000'000'000, &key)
                  .find("at most 64"),
              std::string::npos);
  }
  EXPECT_EQ(asha_milestones(1, 1.0000000000000002, 1'000'000'000, 0, 64).size(), 65u);
  // 64 rungs are allowed: grace 1, max_t 65, rf 1.01 gives 1..64.
  std::string key;
  EXPECT_EQ(limits::error_of("asha", {{"reduction_factor", 1.01}}, 65, &key), "");
  EXPECT_NE(limits::error_of("asha", {{"reduction_factor", 1.01}}, 66, &key), "");
}

TEST(HyperBand, ReductionFactorJustAbove1IsRefusedAtOnce) {
  std::string key;
  const std::string msg = limits::error_of("hyperband", {{"reduction_factor", 1.000000001}}, 100, &key);
  EXPECT_EQ(key, "reduction_factor");
  EXPECT_NE(msg.find("= 1.000000001 with max_t = 100 makes 4605169808 brackets; at most 64 are allowed"),
            std::string::npos)
      << msg;
  // floor(log_eta(max_t)) + 1 brackets: 42 with eta 1.4, 145 with eta 1.1 (max_t 10^6).
  EXPECT_EQ(limits::error_of("hyperband", {{"reduction_factor", 1.4}}, 1'000'000, &key), "");
  EXPECT_NE(limits::error_of("hyperband", {{"reduction_factor", 1.1}}, 1'000'000, &key).find("makes 145 brackets"),
            std::string::npos);
}

TEST(Schedulers, CountOptionsHaveUpperBounds) {
  struct Case {
    std::string scheduler, key;
    Value value;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"asha", "brackets", std::int64_t{1'000'000'000'000}, "must be <= 64"},
      {"asha", "max_t", std::int64_t{1'000'000'000'001}, "must be <= 1000000000"},
      {"asha", "grace_period", std::int64_t{1'000'000'000'001}, "must be <= 1000000000"},
      {"hyperband", "max_t", std::int64_t{1'000'000'000'001}, "must be <= 1000000000"},
      {"median_stopping", "grace_period", std::int64_t{1'000'000'000'001}, "must be <= 1000000000"},
      {"median_stopping", "min_samples_required", std::int64_t{1'000'000'000'001}, "must be <= 1000000000"},
      {"pbt", "perturbation_interval", std::int64_t{1'000'000'000'001}, "must be <= 1000000000"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.scheduler + " " + c.key);
    std::string key;
    const std::string msg = limits::error_of(c.scheduler, {{c.key, c.value}}, 8, &key);
    EXPECT_EQ(key, c.key);
    EXPECT_NE(msg.find(c.fragment), std::string::npos) << msg;
    EXPECT_NE(msg.find("ranktune's limit"), std::string::npos) << msg;
  }
}

TEST(Schedulers, TheRegistryIsOneTableOfNamesHelpAndFactories) {
  std::vector<std::string> names;
  for (const auto& k : schedulers()) {
    EXPECT_NE(std::string(k.help), "") << k.name;
    EXPECT_EQ(std::string(k.help).find('\n'), std::string::npos) << k.name << ": one line of help";
    EXPECT_EQ(std::count(names.begin(), names.end(), k.name), 0) << k.name << " twice";
    names.emplace_back(k.name);
    const Space space;
    EXPECT_NE(make_scheduler(k.name, {"loss", Mode::Min, 8, &space, 1}), nullptr) << k.name;
  }
  EXPECT_EQ(scheduler_names(), names);
}

// What the report asks instead of a scheduler's name (report/charts_curves.cc, report/brackets.cc).
TEST(Schedulers, TraitsSayWhatTheReportDraws) {
  for (const auto& k : schedulers()) {
    const Space space;
    const auto s = make_scheduler(k.name, {"loss", Mode::Min, 8, &space, 1});
    EXPECT_EQ(scheduler_traits(k.name).brackets, dynamic_cast<const BracketLayout*>(s.get()) != nullptr)
        << k.name << ": a bracket scheduler is a BracketLayout, and only one";
  }
  EXPECT_TRUE(scheduler_traits("asha").rungs);
  EXPECT_FALSE(scheduler_traits("asha").brackets);
  EXPECT_TRUE(scheduler_traits("hyperband").rungs);
  EXPECT_TRUE(scheduler_traits("hyperband").brackets);
  for (const char* name : {"fifo", "median_stopping", "pbt", "no_such_scheduler"}) {
    EXPECT_FALSE(scheduler_traits(name).rungs) << name;
    EXPECT_FALSE(scheduler_traits(name).brackets) << name;
  }
}

}  // namespace
}  // namespace ranktune::search
