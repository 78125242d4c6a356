// Search spaces as users write them (issue 32): the condition language of `when`
// (search/condition.h), inactive parameters through every searcher and PBT's explore, the
// mutation scope, points to evaluate first (search/enqueued.h) and warm observations.

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "search/condition.h"
#include "search/pb2_scheduler.h"
#include "search/pbt_scheduler.h"
#include "search/searcher.h"
#include "search/options.h"

using namespace ranktune::search;

namespace {

Domain uniform(double lo, double hi) { return {DomainKind::Uniform, lo, hi, 0.0, {}}; }
Domain listed(DomainKind k, std::vector<Value> v) { return {k, 0, 0, 0, std::move(v)}; }
SearcherOptions opts(std::uint64_t seed, std::int64_t n) { return {seed, n, "loss", Mode::Min}; }
Space box_space() { return {{{"x1", uniform(-5, 10)}, {"x2", uniform(0, 15)}}}; }
// A bowl on the box, its minimum at (2, 3).
double bowl(const Config& c) {
  const double a = std::get<double>(c.at("x1")) - 2, b = std::get<double>(c.at("x2")) - 3;
  return a * a + b * b;
}

// Suggest, evaluate `f` as "loss", complete; returns the configs in order.
std::vector<Config> drive(Searcher& s, double (*f)(const Config&), std::int64_t trials) {
  std::vector<Config> out;
  for (TrialId id = 1; id <= trials; ++id) {
    auto sug = s.suggest(id);
    if (sug.kind != Suggestion::Kind::Config) break;
    s.on_trial_complete(id, {{"loss", f(sug.config)}}, false);
    out.push_back(std::move(sug.config));
  }
  return out;
}

Condition parsed(const std::string& text) {
  Condition c;
  std::string error;
  EXPECT_TRUE(parse_condition(text, c, error)) << text << ": " << error;
  return c;
}

std::string parse_error(const std::string& text) {
  Condition c;
  std::string error;
  EXPECT_FALSE(parse_condition(text, c, error)) << text;
  return error;
}

Param when(Param p, const std::string& text) {
  p.when = parsed(text);
  return p;
}

// optimizer in {sgd, adam}; momentum only with sgd; depth 1..4; width2 only when depth >= 2;
// beta under (adam and width2 > 64): a condition on a conditional parameter.
Space conditional_space() {
  Space s;
  s.params.push_back({"optimizer", listed(DomainKind::Choice, {std::string("sgd"), std::string("adam")})});
  s.params.push_back(when({"momentum", uniform(0.0, 0.99)}, "optimizer == 'sgd'"));
  s.params.push_back({"depth", {DomainKind::RandInt, 1, 5, 0, {}}});
  s.params.push_back(when({"width2", {DomainKind::RandInt, 16, 129, 0, {}}}, "depth >= 2"));
  s.params.push_back(when({"beta", uniform(0.5, 0.999)}, "optimizer in ['adam'] and width2 > 64"));
  s.params.push_back({"lr", {DomainKind::LogUniform, 1e-4, 1e-1, 0, {}}});
  return s;
}

// Every config holds exactly its active parameters.
void expect_settled(const Config& c) {
  const bool sgd = std::get<std::string>(c.at("optimizer")) == "sgd";
  EXPECT_EQ(c.contains("momentum"), sgd);
  const bool deep = std::get<std::int64_t>(c.at("depth")) >= 2;
  EXPECT_EQ(c.contains("width2"), deep);
  const bool beta = !sgd && deep && std::get<std::int64_t>(c.at("width2")) > 64;
  EXPECT_EQ(c.contains("beta"), beta);
  EXPECT_TRUE(c.contains("lr"));
}

double objective(const Config& c) {
  double loss = std::log10(std::get<double>(c.at("lr"))) + 2.5;
  loss = loss * loss;
  // sgd with momentum near 0.9 beats adam, which costs 0.5.
  const auto m = c.find("momentum");
  return loss + (m != c.end() ? std::fabs(std::get<double>(m->second) - 0.9) : 0.5);
}

}  // namespace

TEST(Condition, ParsesComparisonsListsAndOrAndWithParentheses) {
  const Config sgd = {{"optimizer", std::string("sgd")}, {"depth", std::int64_t{3}}};
  EXPECT_TRUE(holds(parsed("optimizer == 'sgd'"), sgd));
  EXPECT_TRUE(holds(parsed("optimizer == \"sgd\""), sgd));
  EXPECT_FALSE(holds(parsed("optimizer != 'sgd'"), sgd));
  EXPECT_TRUE(holds(parsed("depth >= 3 and depth < 4"), sgd));
  EXPECT_TRUE(holds(parsed("depth > 5 or optimizer in ['adam', 'sgd']"), sgd));
  EXPECT_FALSE(holds(parsed("optimizer not in ['sgd']"), sgd));
  EXPECT_TRUE(holds(parsed("(depth == 1 or depth == 3) and optimizer == 'sgd'"), sgd));
  EXPECT_FALSE(holds(parsed("depth <= 2.5"), sgd));
  // A comparison with an absent (inactive) parameter is false, whichever the operator.
  EXPECT_FALSE(holds(parsed("width2 != 3"), sgd));
  EXPECT_EQ(condition_names(parsed("a == 1 or (b > 2 and a < 0)")), (std::vector<std::string>{"a", "b"}));
}

TEST(Condition, SyntaxErrorsSayWhatAndWhere) {
  EXPECT_NE(parse_error("optimizer = 'sgd'").find("write '=='"), std::string::npos);
  EXPECT_NE(parse_error("optimizer == sgd").find("quote strings"), std::string::npos);
  EXPECT_NE(parse_error("optimizer == 'sgd").find("not closed"), std::string::npos);
  EXPECT_NE(parse_error("depth > 2 and").find("expected a parameter name"), std::string::npos);
  EXPECT_NE(parse_error("(depth > 2").find("expected ')'"), std::string::npos);
  EXPECT_NE(parse_error("depth in [1, 2").find("expected ',' or ']'"), std::string::npos);
  EXPECT_NE(parse_error("depth > 2 xor depth < 1").find("at character 11"), std::string::npos);
  EXPECT_NE(parse_error("  ").find("is empty"), std::string::npos);
}

TEST(Condition, ChecksNamesTypesValuesAndCycles) {
  Space s = conditional_space();
  EXPECT_EQ(check_condition(parsed("optimizer == 'sgd'"), s, "momentum"), "");
  EXPECT_NE(check_condition(parsed("optimiser == 'sgd'"), s, "momentum").find("did you mean 'optimizer'"), std::string::npos);
  EXPECT_NE(check_condition(parsed("optimizer == 1"), s, "momentum").find("takes strings"), std::string::npos);
  EXPECT_NE(check_condition(parsed("depth == 'x'"), s, "momentum").find("takes numbers"), std::string::npos);
  EXPECT_NE(check_condition(parsed("optimizer == 'sgdd'"), s, "momentum").find("is not a value of 'optimizer'"),
            std::string::npos);
  EXPECT_NE(check_condition(parsed("optimizer > 'a'"), s, "momentum").find("not <"), std::string::npos);
  EXPECT_NE(check_condition(parsed("momentum > 0.1"), s, "momentum").find("cannot depend on itself"), std::string::npos);
  EXPECT_EQ(check_condition_cycles(s), "");
  s.params[0] = when(s.params[0], "beta > 0.6");  // optimizer -> beta -> optimizer
  EXPECT_NE(check_condition_cycles(s).find("optimizer -> beta -> optimizer"), std::string::npos);
}

TEST(Condition, DropInactiveFollowsDependencies) {
  const Space s = conditional_space();
  Config c = {{"optimizer", std::string("adam")}, {"momentum", 0.5}, {"depth", std::int64_t{1}},
              {"width2", std::int64_t{100}}, {"beta", 0.9}, {"lr", 0.01}};
  drop_inactive(s, c);
  // width2 is inactive at depth 1, so beta (which reads it) is too.
  EXPECT_EQ(c, (Config{{"optimizer", std::string("adam")}, {"depth", std::int64_t{1}}, {"lr", 0.01}}));
}

// Every searcher suggests configs holding exactly their active parameters, and the model
// searchers keep working (they learn from the trials where a parameter was active).
TEST(ConditionalSpace, EverySearcherSuggestsOnlyActiveParameters) {
  const Space s = conditional_space();
  for (const auto& kind : searchers()) {
    for (const bool multivariate : {false, true}) {
      if (multivariate && std::string(kind.name) != "tpe" && std::string(kind.name) != "bohb") continue;
      Options o;
      if (multivariate) o["multivariate"] = std::int64_t{1};
      if (std::string(kind.name) == "tpe" || std::string(kind.name) == "gp") o["n_startup"] = std::int64_t{5};
      auto searcher = make_searcher(kind.name, s, opts(3, 24), o);
      const auto configs = drive(*searcher, objective, 24);
      ASSERT_FALSE(configs.empty()) << kind.name;
      std::set<bool> sgd;
      for (const Config& c : configs) {
        expect_settled(c);
        sgd.insert(std::get<std::string>(c.at("optimizer")) == "sgd");
      }
      EXPECT_EQ(sgd.size(), 2u) << kind.name << " never changed the optimizer";
      // A resume from the saved state (inactive values are NaN in TPE's and BOHB's points).
      auto again = make_searcher(kind.name, s, opts(3, 30), o);
      again->restore(searcher->save());
      EXPECT_EQ(again->save(), searcher->save()) << kind.name;
    }
  }
}

TEST(ConditionalSpace, TpeLearnsAConditionalParameterFromTheTrialsThatHaveIt) {
  // momentum matters only with sgd, and sgd is better: TPE's later momentum values crowd 0.9.
  const Space s = conditional_space();
  auto tpe = make_searcher("tpe", s, opts(11, 60), {{"n_startup", std::int64_t{10}}});
  const auto configs = drive(*tpe, objective, 60);
  double late = 0;
  int n = 0;
  for (std::size_t i = 40; i < configs.size(); ++i)
    if (const auto m = configs[i].find("momentum"); m != configs[i].end()) {
      late += std::fabs(std::get<double>(m->second) - 0.9);
      ++n;
    }
  ASSERT_GT(n, 3);
  EXPECT_LT(late / n, 0.2);  // uniform on [0, 0.99] would be about 0.4 away
}

TEST(MutationScope, PbtAndPb2ChangeOnlyTheMutableParametersAndSettleConditions) {
  Space s = conditional_space();
  s.mutable_params = {"lr", "optimizer"};
  PbtScheduler pbt({"loss", Mode::Min, 10, &s, 1}, {{"resample_probability", 0.5}});
  const Config donor = {{"optimizer", std::string("adam")}, {"depth", std::int64_t{3}},
                        {"width2", std::int64_t{100}}, {"beta", 0.9}, {"lr", 0.01}};
  std::set<std::string> optimizers;
  for (std::uint64_t i = 0; i < 100; ++i) {
    const Config c = pbt.explore(donor, i);
    expect_settled(c);
    EXPECT_EQ(c.at("depth"), donor.at("depth"));
    EXPECT_EQ(c.at("width2"), donor.at("width2"));
    if (c.contains("beta")) {
      EXPECT_EQ(c.at("beta"), donor.at("beta"));
    }
    optimizers.insert(std::get<std::string>(c.at("optimizer")));
  }
  EXPECT_EQ(optimizers.size(), 2u);  // sgd turns momentum on: it gets a value (expect_settled)
  Pb2Scheduler pb2({"loss", Mode::Min, 10, &s, 1}, {});
  EXPECT_TRUE(s.may_mutate("lr"));
  EXPECT_FALSE(s.may_mutate("depth"));
}

TEST(PointsToEvaluate, ComeFirstInOrderWithinTheTotalAndTheModelLearnsFromThem) {
  const Space s = box_space();
  SearcherOptions o = opts(5, 6);
  o.points_to_evaluate = {{{"x1", 1.0}, {"x2", 2.0}}, {{"x1", 3.0}, {"x2", 4.0}}};
  for (const char* name : {"random", "tpe", "gp", "cmaes", "bohb", "nsga2"}) {
    auto searcher = make_searcher(name, s, o, name == std::string("tpe") ? Options{{"n_startup", std::int64_t{2}}} : Options{});
    const auto configs = drive(*searcher, bowl, 10);
    ASSERT_EQ(configs.size(), 6u) << name;  // the points count in num_samples
    EXPECT_EQ(configs[0], o.points_to_evaluate[0]) << name;
    EXPECT_EQ(configs[1], o.points_to_evaluate[1]) << name;
    EXPECT_NE(configs[2], o.points_to_evaluate[0]) << name;
    // A resume goes on after the points.
    auto again = make_searcher(name, s, o, name == std::string("tpe") ? Options{{"n_startup", std::int64_t{2}}} : Options{});
    again->restore(searcher->save());
    EXPECT_EQ(again->suggest(7).kind, Suggestion::Kind::Finished) << name;
  }
  // TPE models them: with n_startup = 2, its third suggestion is a model proposal.
  auto tpe = make_searcher("tpe", s, o, {{"n_startup", std::int64_t{2}}});
  drive(*tpe, bowl, 3);
  EXPECT_NE(tpe->save().find("observed 3\n1 "), std::string::npos) << tpe->save();
}

TEST(WarmStart, ModelSearchersStartFromTheObservationsWithoutCountingThem) {
  const Space s = box_space();
  SearcherOptions o = opts(5, 4);
  for (int i = 0; i < 12; ++i) {
    const Config c = {{"x1", -5.0 + 15.0 * i / 11}, {"x2", 15.0 * ((i * 7) % 12) / 11}};
    o.warm.push_back({c, {{"loss", bowl(c)}}, 1});
  }
  auto tpe = make_searcher("tpe", s, o, {{"n_startup", std::int64_t{10}}});
  EXPECT_NE(tpe->save().find("observed 12"), std::string::npos);
  EXPECT_EQ(drive(*tpe, bowl, 10).size(), 4u);  // num_samples of its own
  auto gp = make_searcher("gp", s, o, {});
  EXPECT_EQ(drive(*gp, bowl, 10).size(), 4u);
  // CMA-ES starts its mean at the best warm point rather than the box's centre.
  auto cold = make_searcher("cmaes", s, opts(5, 4), {});
  auto warm = make_searcher("cmaes", s, o, {});
  EXPECT_NE(cold->save(), warm->save());
  auto bohb = make_searcher("bohb", s, o, {});
  EXPECT_EQ(drive(*bohb, bowl, 10).size(), 4u);
}
