// Decision sequences for multi-objective ASHA (search/mo_asha_scheduler.h): trials built by
// hand, results fed one by one, each decision checked against ranks and crowding distances
// computed by hand in the comments; then the reduction to AshaScheduler with one objective,
// and the saved state.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "search/asha_scheduler.h"
#include "search/mo_asha_scheduler.h"
#include "tests/unit/search/scheduler_fixtures.h"

namespace ranktune::search {
namespace {

using namespace fixtures;  // kNaN, kInf, C, S, SchedulerFeed, acc_size, expect_refused,
                           // replaced

/// Feeds results of any metrics to one scheduler.
struct Feed : fixtures::SchedulerFeed {
  using SchedulerFeed::SchedulerFeed;
  Decision report(TrialId id, Metrics m) { return report_metrics(id, std::move(m)); }
  Decision report(TrialId id, double acc, double size, double latency = 1.0) {
    return report_metrics(id, {{"acc", acc}, {"size", size}, {"latency", latency}});
  }
};

std::unique_ptr<Scheduler> mo_asha(Objectives o, Options options, std::int64_t max_t = 8) {
  return std::make_unique<MoAshaScheduler>(SchedulerContext{"acc", Mode::Max, max_t}, std::move(o), options);
}

TEST(MoAsha, TwoObjectivesTopKDecisionSequence) {
  // rf 2, max_t 8: rungs 1, 2, 4. top_k: of the n = m + 1 points at a rung, the first
  // k = max(1, floor(n/2)) in the selection order (front, then crowding descending, the
  // newcomer winning full ties) go on.
  Feed f(mo_asha(acc_size(), {{"reduction_factor", 2.0}}));
  f.add(9);
  EXPECT_EQ(f.report(1, 0.8, 10), C);  // rung 1, m=0: the first goes on
  // m=1, k=1. T1 and T2 do not dominate each other (T2 is smaller but less accurate): one
  // front of two, both crowding inf, and the tie goes to the newcomer. On either objective
  // alone, single-objective ASHA would rank T2 second of 2 and stop it on acc.
  EXPECT_EQ(f.report(2, 0.7, 5), C);
  EXPECT_EQ(f.report(3, 0.6, 12), S);  // m=2, k=1: dominated by T1 and by T2, 2 ahead
  // m=3, k=2. Front {T4 (0.9,20), T1 (0.8,10), T2 (0.7,5)}, T3 behind. Crowding: the ends
  // T4 and T2 inf, T1 0.2/0.2 + 15/15 = 2. T4 ties T2 at inf and wins: 0 ahead.
  EXPECT_EQ(f.report(4, 0.9, 20), C);
  // m=4, k=2. T5 (0.75, 8) is dominated by none: front {T4, T1, T5, T2}, T3 behind.
  // Crowding: -acc sorted T4 -.9, T1 -.8, T5 -.75, T2 -.7 (range .2): T1 .15/.2 = .75,
  // T5 .1/.2 = .5; size sorted T2 5, T5 8, T1 10, T4 20 (range 15): T5 5/15, T1 12/15.
  // T1 1.55, T5 0.83, T2 and T4 inf: T4, T2, T1 ahead (3 >= 2), though T5 is on the front.
  EXPECT_EQ(f.report(5, 0.75, 8), S);
  // m=5, k=3. T6 dominates every trial's objectives but breaks latency <= 2 (violation 1):
  // every feasible point dominates it, 5 ahead.
  EXPECT_EQ(f.report(6, 0.95, 1, 3.0), S);
  // m=6, k=3. A NaN objective is a failed point (violation inf): T6's violation 1 is
  // smaller, so all 6 are ahead.
  EXPECT_EQ(f.report(7, kNaN, 4), S);
  // m=7, k=4. Size missing: failed as well. It ties with T7 (both failed, crowding 0) and
  // wins that tie, so 6 are ahead.
  EXPECT_EQ(f.report(8, Metrics{{"acc", 0.99}, {"latency", 1.0}}), S);
  // A result with neither objective judges nothing (T9 is judged at its next scored rung).
  EXPECT_EQ(f.report(9, Metrics{{"loss", 0.1}}), C);

  EXPECT_EQ(f.report(1, 0.85, 10), C);  // rung 2 (iteration 2), m=0
  EXPECT_EQ(f.report(4, 0.92, 20), C);  // m=1, k=1: a front of two, the tie to the newcomer
  EXPECT_EQ(f.report(2, 0.6, 11), S);   // m=2, k=1: dominated by T1
  // T9 at iteration 2, judged at rung 2 (the highest reached). m=3, k=2. T9 (0.86, 9)
  // dominates T1 (0.85, 10): front {T9, T4} of two, both inf, the tie to T9: 0 ahead.
  EXPECT_EQ(f.report(9, 0.86, 9), C);
  EXPECT_EQ(f.report(1, 0.1, 99), C);  // iteration 3: no rung
  EXPECT_EQ(f.report(1, 0.9, 10), C);  // rung 4 (iteration 4), m=0
}

TEST(MoAsha, QuantileRuleKeepsMoreThanTopK) {
  // rf 2. Recorded A (0.8, 10), then B (0.5, 12), which A dominates: stopped by both rules.
  // Then C (0.7, 11): A dominates C, C dominates B, so fronts {A}, {C}, {B}: 1 ahead of m=2.
  // top_k: k = max(1, floor(3/2)) = 1, 1 ahead: stop. quantile: i = floor((m-1)/2) = 0, it
  // stops iff at least m - i = 2 are ahead: it goes on (ASHA's cutoff x_0, the worst).
  for (const bool top_k : {true, false}) {
    Feed f(mo_asha(acc_size(false),
                   {{"reduction_factor", 2.0}, {"stop_rule", std::string(top_k ? "top_k" : "quantile")}}));
    f.add(3);
    EXPECT_EQ(f.report(1, 0.8, 10), C);
    EXPECT_EQ(f.report(2, 0.5, 12), S) << top_k;
    EXPECT_EQ(f.report(3, 0.7, 11), top_k ? S : C) << top_k;
  }
}

TEST(MoAsha, BracketsAreRoundRobinAsAsha) {
  // brackets 2, rf 2, max_t 8: bracket 0 rungs {1,2,4}, bracket 1 rungs {2,4}.
  MoAshaScheduler a({"acc", Mode::Max, 8}, acc_size(), {{"reduction_factor", 2.0}, {"brackets", std::int64_t{2}}});
  EXPECT_EQ(a.milestones(0), (std::vector<std::int64_t>{1, 2, 4}));
  EXPECT_EQ(a.milestones(1), (std::vector<std::int64_t>{2, 4}));
  Trial t;
  for (TrialId id = 1; id <= 3; ++id) {
    t.id = id;
    a.on_trial_add(t);
  }
  EXPECT_EQ(a.bracket_of(1), 0);
  EXPECT_EQ(a.bracket_of(2), 1);
  EXPECT_EQ(a.bracket_of(3), 0);
  t.id = 2;
  t.iterations = 0;
  EXPECT_EQ(a.next_decision(t), 2);  // bracket 1's first rung
}

/// Random results for `trials` trials, fed in a random interleaving to every scheduler of
/// `feeds`; the metric values come from a small set (ties), with NaN, inf and results
/// without the metrics now and then. Returns the decisions of the first, and checks that every
/// other feed decided the same at every step (and gave the same next_decision).
std::vector<Decision> feed_random(std::vector<Feed*> feeds, std::mt19937_64& rng, int trials, int steps,
                                  bool two_objectives) {
  for (Feed* f : feeds) f->add(trials);
  std::vector<Decision> out;
  std::uniform_int_distribution<int> pick(1, trials), value(0, 5), rare(0, 19);
  for (int step = 0; step < steps; ++step) {
    const TrialId id = pick(rng);
    if (feeds[0]->trials[static_cast<std::size_t>(id - 1)].status != TrialStatus::Running) continue;
    Metrics m;
    const int r = rare(rng);
    const double v = r == 0 ? kNaN : r == 1 ? kInf : r == 2 ? -kInf : value(rng);
    if (r != 3) {
      m["loss"] = v;
      if (two_objectives) {
        m["size"] = value(rng);
        m["latency"] = value(rng);
      }
    } else {
      m["other"] = 1;
    }
    const Decision d = feeds[0]->report(id, m);
    for (std::size_t i = 1; i < feeds.size(); ++i) {
      EXPECT_EQ(feeds[i]->report(id, m), d) << "feed " << i << ", step " << step << ", trial " << id;
      const Trial& t = feeds[0]->trials[static_cast<std::size_t>(id - 1)];
      EXPECT_EQ(feeds[i]->sched->next_decision(t), feeds[0]->sched->next_decision(t));
    }
    out.push_back(d);
  }
  return out;
}

// The strong check: with one objective and no constraint, every decision is AshaScheduler's,
// over random results with ties, non-finite values and results without the metric, for both
// modes, both stop rules, rf 2 and 3, one and two brackets.
TEST(MoAsha, OneObjectiveDecidesAsAsha) {
  std::mt19937_64 rng(30);
  int stops = 0;
  for (const Mode mode : {Mode::Max, Mode::Min})
    for (const std::string rule : {"top_k", "quantile"})
      for (const double rf : {2.0, 3.0})
        for (const std::int64_t brackets : {1, 2}) {
          const Options o{{"reduction_factor", rf}, {"stop_rule", rule}, {"brackets", brackets}};
          const SchedulerContext ctx{"loss", mode, 30};
          Feed asha(std::make_unique<AshaScheduler>(ctx, o));
          Feed mo(std::make_unique<MoAshaScheduler>(ctx, Objectives{{"loss"}, {mode}, {}}, o));
          const auto d = feed_random({&asha, &mo}, rng, 40, 1500, false);
          stops += static_cast<int>(std::count(d.begin(), d.end(), S));
        }
  EXPECT_GT(stops, 100);  // the sequences did judge trials
}

TEST(MoAsha, SaveRestoreMidRunGivesTheSameNextDecisions) {
  const Options o{{"reduction_factor", 2.0}, {"brackets", std::int64_t{2}}};
  const Objectives obj{{"loss", "size"}, {Mode::Min, Mode::Min}, {{"latency", true, 3.0}}};
  const SchedulerContext ctx{"loss", Mode::Min, 16};
  Feed a(std::make_unique<MoAshaScheduler>(ctx, obj, o));
  std::mt19937_64 rng(7);
  feed_random({&a}, rng, 30, 200, true);
  const std::string state = a.sched->save();
  Feed b(std::make_unique<MoAshaScheduler>(ctx, obj, o));
  b.sched->restore(state);
  b.trials = a.trials;
  EXPECT_EQ(b.sched->save(), state);
  // Go on from the same trial table: every decision the same, some of them stops.
  std::vector<Decision> da, db;
  std::uniform_int_distribution<int> pick(1, 30), value(0, 5);
  for (int step = 0; step < 300; ++step) {
    const TrialId id = pick(rng);
    if (a.trials[static_cast<std::size_t>(id - 1)].status != TrialStatus::Running) continue;
    const Metrics m{{"loss", double(value(rng))}, {"size", double(value(rng))}, {"latency", double(value(rng))}};
    da.push_back(a.report(id, m));
    db.push_back(b.report(id, m));
  }
  EXPECT_EQ(da, db);
  EXPECT_GT(std::count(da.begin(), da.end(), S), 0);
  EXPECT_GT(std::count(da.begin(), da.end(), C), 0);
  EXPECT_EQ(a.sched->save(), b.sched->save());
}

TEST(MoAsha, RestoreRefusesBadState) {
  const SchedulerContext ctx{"acc", Mode::Max, 8};
  Feed f(std::make_unique<MoAshaScheduler>(ctx, acc_size(), Options{{"reduction_factor", 2.0}}));
  f.add(3);
  f.report(1, 0.8, 10);
  f.report(2, 0.7, 5, 3.0);  // infeasible: violation 1
  const std::string good = f.sched->save();
  ASSERT_NE(good.find("\n1 -0.7 5\n"), std::string::npos) << good;  // T2's point: violation 1, -acc, size
  Scheduler& s = *f.sched;
  expect_refused(s, "garbage", "mo_asha");
  expect_refused(s, replaced(good, "mo_asha 1", "mo_asha 2"), "version");
  expect_refused(s, good.substr(0, good.size() - 4), "saved state");  // cut short
  expect_refused(s, replaced(good, "\n1 -0.7 5\n", "\n-1 -0.7 5\n"), "violation must be >= 0");
  expect_refused(s, replaced(good, "\n1 -0.7 5\n", "\nnan -0.7 5\n"), "violation must be >= 0");
  // Other objectives, other constraints, other rungs.
  MoAshaScheduler other_mode(ctx, Objectives{{"acc", "size"}, {Mode::Max, Mode::Max}, {{"latency", true, 2.0}}},
                             {{"reduction_factor", 2.0}});
  expect_refused(s, other_mode.save(), "other objectives (acc max, size max; latency <= 2; this experiment has "
                                       "acc max, size min; latency <= 2)");
  MoAshaScheduler other_bound(ctx, acc_size(false), {{"reduction_factor", 2.0}});
  expect_refused(s, other_bound.save(), "other objectives");
  MoAshaScheduler other_rungs(ctx, acc_size(), {{"reduction_factor", 3.0}});
  expect_refused(s, other_rungs.save(), "rungs differ");
  // A single-objective ASHA state is not one.
  AshaScheduler asha(ctx, {{"reduction_factor", 2.0}});
  expect_refused(s, asha.save(), "mo_asha");
  // And the good state reads back.
  MoAshaScheduler fresh(ctx, acc_size(), {{"reduction_factor", 2.0}});
  fresh.restore(good);
  EXPECT_EQ(fresh.save(), good);
}

TEST(MoAsha, BadObjectivesAndOptionsAreRefused) {
  const SchedulerContext ctx{"acc", Mode::Max, 8};
  auto refused = [&](const Objectives& o, const std::string& says) {
    try {
      MoAshaScheduler(ctx, o, {});
      ADD_FAILURE() << "accepted " << says;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(Objectives{}, "none given");
  refused(Objectives{{"acc", "size"}, {Mode::Max}, {}}, "2 metrics and 1 modes");
  refused(Objectives{{"acc", "acc"}, {Mode::Max, Mode::Max}, {}}, "'acc' is named twice");
  refused(Objectives{{"acc"}, {Mode::Max}, {{"latency", true, kNaN}}}, "'latency' has a bound that is not finite");
  try {
    MoAshaScheduler(ctx, acc_size(), {{"variant", std::string("promotion")}});
    ADD_FAILURE() << "variant = promotion accepted";
  } catch (const OptionError& e) {
    EXPECT_NE(std::string(e.what()).find("variant"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MoAshaScheduler(ctx, acc_size(), {{"reduction_factr", 2.0}}), OptionError);
}

}  // namespace
}  // namespace ranktune::search
