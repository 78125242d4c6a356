// The importance section of `ranktune report` (report/importance.h): which budget the values
// come from, and how the method, intervals and noise floor read in every format.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "io/store.h"
#include "report/charts.h"
#include "report/importance.h"

namespace ranktune::report {
namespace {

/// `n` trials of a, b, c in [0, 1] minimizing 10 (a - 0.7)^2 + 5 |b - 0.2| + 1 / iteration
/// (c does nothing), trial i reporting every iteration up to depth(i).
template <class Depth>
io::ResultsFile asha_like(std::size_t n, Depth depth) {
  io::ResultsFile f;
  f.meta.metric = "loss";
  f.meta.mode = search::Mode::Min;
  f.schema.metrics = {"loss"};
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  for (std::size_t i = 0; i < n; ++i) {
    search::Trial t;
    t.id = static_cast<search::TrialId>(i + 1);
    const double a = u(rng), b = u(rng), c = u(rng);
    t.config = {{"a", a}, {"b", b}, {"c", c}};
    t.iterations = depth(i);
    for (std::int64_t it = 1; it <= t.iterations; ++it) {
      const double loss = 10 * (a - 0.7) * (a - 0.7) + 5 * std::abs(b - 0.2) + 1.0 / static_cast<double>(it);
      f.results.push_back({t.id, 0, it, 0.0, {loss}});
      t.best = std::isnan(t.best) ? loss : std::min(t.best, loss);
    }
    f.trials.push_back(t);
  }
  return f;
}

TEST(ImportanceReport, MixedBudgetsAreJudgedAtOneIterationCount) {
  // ASHA-like: every trial reached iteration 1, a third went on to 3, a ninth to 9.
  const io::ResultsFile f = asha_like(90, [](std::size_t i) { return i % 9 == 0 ? 9 : i % 3 == 0 ? 3 : 1; });
  const BudgetValues v = values_for_importance(f);
  EXPECT_EQ(v.iteration, 1);
  ASSERT_EQ(v.values.size(), 90u);
  // Each value is the trial's loss at iteration 1, not its best over 9.
  for (std::size_t i = 0; i < 90; ++i) {
    const double a = search::to_double(v.configs[i].at("a")), b = search::to_double(v.configs[i].at("b"));
    EXPECT_DOUBLE_EQ(v.values[i], 10 * (a - 0.7) * (a - 0.7) + 5 * std::abs(b - 0.2) + 1.0);
  }
  EXPECT_NE(v.budget.find("up to iteration 1,"), std::string::npos) << v.budget;
  EXPECT_NE(v.budget.find("budgets are not mixed"), std::string::npos) << v.budget;

  // Half went to 4, half to 2: B = 4; those that stopped at 2 are left out, and said so.
  const io::ResultsFile g = asha_like(40, [](std::size_t i) { return i % 2 ? 4 : 2; });
  const BudgetValues w = values_for_importance(g);
  EXPECT_EQ(w.iteration, 4);
  EXPECT_EQ(w.values.size(), 20u);
  EXPECT_NE(w.budget.find("20 trials that stopped earlier left out"), std::string::npos) << w.budget;

  // One budget for all: each trial's best, and which budget that was.
  const io::ResultsFile h = asha_like(30, [](std::size_t) { return 5; });
  const BudgetValues x = values_for_importance(h);
  EXPECT_EQ(x.iteration, 0);
  EXPECT_EQ(x.values.size(), 30u);
  EXPECT_EQ(x.budget, "each trial's best value; every trial reported 5 iterations");
}

TEST(ImportanceReport, EveryFormatSaysMethodWhyIntervalsAndNoise) {
  const io::ResultsFile f = asha_like(60, [](std::size_t i) { return i % 3 ? 1 : 3; });
  const ImportanceReport r = importance_of(f, {}, nullptr);
  ASSERT_EQ(r.result.scores.size(), 3u);
  EXPECT_EQ(r.result.method, analysis::Method::Fanova);  // auto: 6 top trials are too few for PED-ANOVA
  EXPECT_EQ(r.result.scores.back().name, "c");
  EXPECT_TRUE(r.result.scores.back().below_noise);
  EXPECT_FALSE(r.result.scores.front().below_noise);

  const auto doc = nlohmann::json::parse(importance_json(r));
  EXPECT_EQ(doc["method"], "fanova");
  EXPECT_EQ(doc["trials"], 60);
  EXPECT_NE(doc["reason"].get<std::string>().find("6 trials, under the 20"), std::string::npos) << doc["reason"];
  EXPECT_GT(doc["noise_floor"].get<double>(), 0);
  EXPECT_EQ(doc["level"], 0.9);
  EXPECT_EQ(doc["resamples"], 100);
  EXPECT_NE(doc["budget"].get<std::string>().find("iteration 1"), std::string::npos);
  for (const auto& s : doc["scores"]) {
    for (const char* key : {"name", "share", "low", "high", "below_noise"}) EXPECT_TRUE(s.contains(key)) << key;
    EXPECT_LE(s["low"].get<double>(), s["share"].get<double>());
    EXPECT_GE(s["high"].get<double>(), s["share"].get<double>());
  }
  EXPECT_EQ(doc["scores"][2]["below_noise"], true);

  const std::string table = render_importance(r, Format::Table);
  EXPECT_NE(table.find("Hyperparameter importance (fANOVA over 60 trials: a forest of 64 trees)"), std::string::npos) << table;
  EXPECT_NE(table.find("  why: fANOVA: PED-ANOVA's top 10% would hold 6 trials"), std::string::npos) << table;
  EXPECT_NE(table.find("  values: each trial's best up to iteration 1"), std::string::npos) << table;
  EXPECT_NE(table.find("~ could be noise"), std::string::npos) << table;
  EXPECT_NE(table.find("c is indistinguishable from noise"), std::string::npos) << table;
  EXPECT_NE(table.find("90% intervals from 100 bootstrap resamples"), std::string::npos) << table;
  const std::string md = render_importance(r, Format::Markdown);
  EXPECT_NE(md.find("| hyperparameter | share | 90% interval | |"), std::string::npos) << md;
  EXPECT_NE(md.find("| could be noise |"), std::string::npos) << md;

  // HTML: error bars, the floor as a dashed line, the noise faded.
  const std::string svg = importance_chart(r);
  EXPECT_NE(svg.find("noise floor"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray=\"4 3\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("opacity=\"0.3\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("could be noise"), std::string::npos) << svg;
}

TEST(ImportanceReport, TooFewTrialsSayWhyInsteadOfShares) {
  const io::ResultsFile f = asha_like(5, [](std::size_t) { return 2; });
  const ImportanceReport r = importance_of(f, {}, nullptr);
  EXPECT_TRUE(r.result.scores.empty());
  const std::string table = render_importance(r, Format::Table);
  EXPECT_NE(table.find("Hyperparameter importance (no shares)"), std::string::npos) << table;
  EXPECT_NE(table.find("5 trials with a value, under the 10 any method needs"), std::string::npos) << table;
  EXPECT_EQ(table.find('%'), std::string::npos) << table;
  const auto doc = nlohmann::json::parse(importance_json(r));
  EXPECT_TRUE(doc["scores"].empty());
  EXPECT_EQ(doc["trials"], 5);
}

}  // namespace
}  // namespace ranktune::report
