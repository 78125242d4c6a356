// TPE (search/tpe_searcher.h): bounds and types, determinism, the startup phase, beating
// random search on Branin, max mode, options, the constant liar and save/restore.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>
#include <set>

#include "search/random_searcher.h"
#include "search/searcher.h"
#include "search/tpe_searcher.h"
#include "tests/unit/search/searcher_fixtures.h"

using namespace ranktune::search;
using namespace ranktune::search::searcher_fixtures;

namespace {

double best_of(const std::vector<Config>& configs, const Objective& f) {
  double best = INFINITY;
  for (const auto& c : configs) best = std::min(best, f(c));
  return best;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

TEST(Tpe, RegisteredWithTheFactory) {
  const auto names = searcher_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "tpe"), names.end());
  auto s = make_searcher("tpe", branin_space(), opts(1, 7), {{"n_startup", std::int64_t{3}}});
  EXPECT_EQ(s->total(), 7);
  EXPECT_EQ(drive(*s, branin, 100).size(), 7u);
  EXPECT_EQ(s->suggest(8).kind, Suggestion::Kind::Finished);
}

TEST(Tpe, EveryDomainKindStaysInBoundsAndType) {
  TpeSearcher s(every_kind_space(), opts(3, 80), {.n_startup = 5});
  const auto configs = drive(s, edge_loss, 80);
  ASSERT_EQ(configs.size(), 80u);
  for (const auto& c : configs) expect_every_kind_in_bounds(c);
  EXPECT_EQ(s.observations(), 80u);
  // The model pushes ri to its top value 4 (high is excluded) most of the time late on.
  int top = 0;
  for (std::size_t i = 40; i < 80; ++i) top += std::get<std::int64_t>(configs[i].at("ri")) == 4;
  EXPECT_GT(top, 25);
}

TEST(Tpe, SameSeedAndObservationsGiveTheSameSuggestions) {
  TpeSearcher a(branin_space(), opts(11, 40)), b(branin_space(), opts(11, 40)),
      c(branin_space(), opts(12, 40));
  const auto ca = drive(a, branin, 40), cb = drive(b, branin, 40), cc = drive(c, branin, 40);
  EXPECT_EQ(ca, cb);
  EXPECT_NE(ca, cc);
  // Also past the startup phase: the model's suggestions differ between seeds.
  EXPECT_NE(std::vector<Config>(ca.begin() + 20, ca.end()), std::vector<Config>(cc.begin() + 20, cc.end()));
}

TEST(Tpe, StartupSuggestionsIgnoreTheObservations) {
  const std::int64_t n_startup = 10;
  TpeSearcher a(branin_space(), opts(5, 30), {.n_startup = n_startup});
  TpeSearcher b(branin_space(), opts(5, 30), {.n_startup = n_startup});
  const auto ca = drive(a, branin, 30);
  const auto cb = drive(b, [](const Config& c) { return -branin(c); }, 30);
  for (std::int64_t i = 0; i < n_startup; ++i) EXPECT_EQ(ca[i], cb[i]) << "suggestion " << i;
  // From then on the model is used, so opposite objectives lead apart.
  int differ = 0;
  for (std::size_t i = n_startup; i < ca.size(); ++i) differ += ca[i] != cb[i];
  EXPECT_GE(differ, 15);
}

TEST(Tpe, StartupCountsCompletedObservationsNotSuggestions) {
  TpeSearcher s(branin_space(), opts(5, 30), {.n_startup = 3});
  TpeSearcher fresh(branin_space(), opts(5, 30), {.n_startup = 3});
  // Five suggestions before anything completes are all startup ones, and so equal to those
  // of a searcher that never observes anything.
  for (TrialId id = 1; id <= 5; ++id) EXPECT_EQ(s.suggest(id).config, fresh.suggest(id).config);
  // Errored trials, missing and non-finite metrics are not observations.
  s.on_trial_complete(1, {{"loss", 1.0}}, true);
  s.on_trial_complete(2, {{"other", 1.0}}, false);
  s.on_trial_complete(3, {{"loss", NAN}}, false);
  s.on_trial_complete(4, {{"loss", INFINITY}}, false);
  s.on_trial_complete(99, {{"loss", 1.0}}, false);  // never suggested
  EXPECT_EQ(s.observations(), 0u);
  s.on_trial_complete(5, {{"loss", 2.0}}, false);
  s.on_trial_complete(5, {{"loss", 2.0}}, false);  // twice counts once
  EXPECT_EQ(s.observations(), 1u);
  EXPECT_EQ(s.suggest(6).config, fresh.suggest(6).config);
}

TEST(Tpe, BeatsRandomSearchOnBranin) {
  std::vector<double> tpe_best, random_best;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    TpeSearcher tpe(branin_space(), opts(seed, 60));
    RandomSearcher rnd(branin_space(), opts(seed, 60));
    tpe_best.push_back(best_of(drive(tpe, branin, 60), branin));
    random_best.push_back(best_of(drive(rnd, branin, 60), branin));
  }
  const double t = median(tpe_best), r = median(random_best);
  RecordProperty("tpe_median_best", std::to_string(t));
  RecordProperty("random_median_best", std::to_string(r));
  EXPECT_LT(t, r) << "TPE median best " << t << " vs random " << r;
}

TEST(Tpe, FindsTheBestCategory) {
  const Space space{{
      {"act", listed(DomainKind::Choice, {std::string("relu"), std::string("tanh"), std::string("gelu"),
                                          std::string("elu")})},
      {"x", uniform(-1, 1)},
  }};
  const Objective f = [](const Config& c) {
    const double x = std::get<double>(c.at("x"));
    return (std::get<std::string>(c.at("act")) == "gelu" ? 0.0 : 1.0) + 0.1 * x * x;
  };
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    TpeSearcher s(space, opts(seed, 60));
    const auto configs = drive(s, f, 60);
    int gelu = 0;
    for (std::size_t i = 30; i < configs.size(); ++i) gelu += std::get<std::string>(configs[i].at("act")) == "gelu";
    EXPECT_GE(gelu, 20) << "seed " << seed << ": gelu in " << gelu << " of the last 30";
  }
}

TEST(Tpe, MaxModeOnTheNegatedFunctionMatchesMinMode) {
  TpeSearcher mn(branin_space(), opts(7, 50, Mode::Min)), mx(branin_space(), opts(7, 50, Mode::Max));
  const auto cmin = drive(mn, branin, 50);
  const auto cmax = drive(mx, [](const Config& c) { return -branin(c); }, 50);
  EXPECT_EQ(cmin, cmax);
  EXPECT_LT(best_of(cmax, branin), 2.0);
  // Max mode on the function itself goes the other way: towards large values.
  TpeSearcher wrong(branin_space(), opts(7, 50, Mode::Max));
  const auto cw = drive(wrong, branin, 50);
  double worst = 0;
  for (const auto& c : cw) worst = std::max(worst, branin(c));
  EXPECT_GT(worst, 150.0);
  EXPECT_NE(cw, cmin);
}

TEST(Tpe, RejectsBadOptions) {
  const auto expect_error = [](const Options& o, const std::string& key, const std::string& text) {
    try {
      make_searcher("tpe", branin_space(), opts(1, 10), o);
      FAIL() << "no error for " << key;
    } catch (const OptionError& e) {
      EXPECT_EQ(e.key(), key);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error({{"gamma", 0.0}}, "gamma", "must be in (0, 1)");
  expect_error({{"gamma", 1.0}}, "gamma", "must be in (0, 1)");
  expect_error({{"gamma", -0.5}}, "gamma", "must be in (0, 1)");
  expect_error({{"n_startup", std::int64_t{0}}}, "n_startup", "must be >= 1");
  expect_error({{"n_startup", 2.5}}, "n_startup", "must be an integer");
  expect_error({{"n_ei_candidates", std::int64_t{0}}}, "n_ei_candidates", "must be >= 1");
  expect_error({{"prior_weight", 0.0}}, "prior_weight", "must be > 0");
  expect_error({{"gama", 0.3}}, "gama", "Did you mean 'gamma'?");
  expect_error({{"constant_liar", std::int64_t{2}}}, "constant_liar", "must be true or false");
  const Options all{{"n_startup", std::int64_t{4}}, {"gamma", 0.1}, {"n_ei_candidates", std::int64_t{48}},
                    {"prior_weight", 2.0}};
  const auto t = TpeOptions::read(all);
  EXPECT_EQ(t.n_startup, 4);
  EXPECT_DOUBLE_EQ(t.gamma, 0.1);
  EXPECT_EQ(t.n_ei_candidates, 48);
  EXPECT_DOUBLE_EQ(t.prior_weight, 2.0);
  EXPECT_TRUE(t.constant_liar);  // the default
  EXPECT_FALSE(TpeOptions::read({{"constant_liar", std::int64_t{0}}}).constant_liar);
}

// 40 suggestions in a row with none completing, as 40 workers asking at once, after 12
// completed trials scored by |x - 0.2|: the mean distance from each suggestion to its
// nearest neighbour among them (how spread out they are).
double spread_of_simultaneous(bool constant_liar) {
  const Space space{{{"x", uniform(0, 1)}}};
  auto t = make_searcher("tpe", space, opts(3, 100), {{"constant_liar", std::int64_t{constant_liar}}});
  TrialId id = 1;
  for (int i = 0; i < 12; ++i, ++id) {
    const Config c = t->suggest(id).config;
    t->on_trial_complete(id, {{"loss", std::abs(std::get<double>(c.at("x")) - 0.2)}}, false);
  }
  std::vector<double> xs;
  for (int i = 0; i < 40; ++i, ++id) xs.push_back(std::get<double>(t->suggest(id).config.at("x")));
  double sum = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double nearest = 1;
    for (std::size_t j = 0; j < xs.size(); ++j)
      if (j != i) nearest = std::min(nearest, std::abs(xs[i] - xs[j]));
    sum += nearest;
  }
  return sum / static_cast<double>(xs.size());
}

TEST(Tpe, ConstantLiarSpreadsSimultaneousSuggestions) {
  const double with = spread_of_simultaneous(true), without = spread_of_simultaneous(false);
  std::printf("mean nearest-neighbour distance of 40 simultaneous suggestions: %.4f with the liar, %.4f without\n",
              with, without);
  // Without the liar all 40 come from one model and crowd its modes; with it, each running
  // suggestion makes its neighbourhood look bad to the next ones.
  EXPECT_GT(with, 1.5 * without);
}

TEST(Tpe, SaveRestoreContinuesIdentically) {
  const Space space = resume_space();
  const Objective f = resume_loss;
  TpeSearcher a(space, opts(21, 100), {.n_startup = 5});
  drive(a, f, 25);
  // Two trials still running at save time.
  const auto p26 = a.suggest(26).config, p27 = a.suggest(27).config;
  const std::string state = a.save();

  TpeSearcher b(space, opts(21, 100), {.n_startup = 5});
  b.restore(state);
  EXPECT_EQ(b.save(), state);
  EXPECT_EQ(b.observations(), 25u);
  EXPECT_EQ(a.suggest(28).config, b.suggest(28).config);
  // The running trials complete after the restore, and the two go on together.
  for (auto* s : {&a, &b}) {
    s->on_trial_complete(26, {{"loss", f(p26)}}, false);
    s->on_trial_complete(27, {{"loss", f(p27)}}, false);
  }
  EXPECT_EQ(b.observations(), 27u);
  EXPECT_EQ(a.suggest(29).config, b.suggest(29).config);
  EXPECT_EQ(a.save(), b.save());

  for (const std::string& broken :
       {std::string(""), std::string("tpe 2\n"), state.substr(0, state.size() / 2), state + "junk\n",
        std::string("tpe 1\nnext 3\npending 1\n5 1 2 0.01 3 7\nobserved 0\n"),
        std::string("tpe 1\nnext 3\npending 1\n5 1 2 0.5 3 1\nobserved 0\n")}) {
    TpeSearcher c(space, opts(21, 100));
    EXPECT_THROW(c.restore(broken), std::invalid_argument) << broken;
  }
}

namespace {

// The proposal with the searcher's kept orders is the one sorting gives, bit for bit: ties
// (randint and quniform coordinates repeat), the prior's centre, running points (the
// constant liar) and both halves of the split included.
TEST(Parzen, KeptOrdersGiveTheSameProposalAsSorting) {
  Space s;
  s.params.push_back({"u", {DomainKind::Uniform, -5, 5, 0, {}}});
  s.params.push_back({"q", {DomainKind::QUniform, 0, 10, 1, {}}});
  s.params.push_back({"k", {DomainKind::RandInt, 0, 4, 0, {}}});
  s.params.push_back({"l", {DomainKind::LogUniform, 1e-4, 1, 0, {}}});
  s.params.push_back({"c", {DomainKind::Choice, 0, 0, 0, {std::string("a"), std::string("b")}}});
  Rng rng = index_rng(7, 0);
  std::vector<parzen::Point> points;
  for (int i = 0; i < 300; ++i) points.push_back(parzen::sample_point(s, rng));
  points.push_back(points[3]);  // exact duplicates too
  points.push_back(points[3]);
  parzen::SortedObservations sorted;
  std::vector<parzen::Scored> scored;
  for (std::size_t i = 0; i < points.size(); ++i) {
    sorted.add(s, points[i]);
    scored.push_back({-std::abs(points[i][0] - 1.0) - 0.1 * points[i][2], &points[i]});
  }
  std::vector<const parzen::Point*> running = {&points[10], &points[3], &points[200]};
  for (const double gamma : {0.1, 0.25, 0.5}) {
    parzen::ModelOptions o;
    o.gamma = gamma;
    for (int seed = 0; seed < 5; ++seed) {
      Rng a = index_rng(11, static_cast<std::uint64_t>(seed)), b = a;
      const parzen::Point with = parzen::propose(s, scored, o, a, running, &sorted);
      const parzen::Point without = parzen::propose(s, scored, o, b, running);
      EXPECT_EQ(with, without) << "gamma " << gamma << " seed " << seed;
    }
  }
  // A restore's one sort orders them as the additions one by one did.
  parzen::SortedObservations at_once;
  std::vector<const parzen::Point*> all;
  for (const auto& p : points) all.push_back(&p);
  at_once.assign(s, all);
  for (std::size_t p = 0; p < s.params.size(); ++p) EXPECT_EQ(at_once.order(p), sorted.order(p)) << p;
  // Orders of other observations than those passed are not used.
  parzen::SortedObservations stale;
  stale.add(s, points[0]);
  Rng a = index_rng(3, 0), b = a;
  EXPECT_EQ(parzen::propose(s, scored, {}, a, {}, &stale), parzen::propose(s, scored, {}, b));
}

}  // namespace
