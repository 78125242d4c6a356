// Hyperparameter importance: the encoding of configs, PED-ANOVA, fANOVA, the bootstrap and
// the shuffled copies of the noise floor (analysis/importance.h, analysis/ped_anova.h,
// analysis/fanova.h, analysis/bootstrap.h, analysis/null_importance.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>

#include "analysis/bootstrap.h"
#include "analysis/fanova.h"
#include "analysis/importance.h"
#include "analysis/null_importance.h"
#include "analysis/ped_anova.h"

namespace ri = ranktune::analysis;
using ranktune::search::Config;
using ranktune::search::Domain;
using ranktune::search::DomainKind;
using ranktune::search::Mode;
using ranktune::search::Space;
using ranktune::search::Value;

namespace {

Space three_floats() {
  Space s;
  for (const char* name : {"a", "b", "c"}) s.params.push_back({name, Domain{DomainKind::Uniform, 0.0, 1.0, 0.0, {}}});
  return s;
}

/// n random configs over three floats in [0, 1] and loss(a, b, c).
template <class F>
ri::Observations sample(std::size_t n, F loss, std::uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Config> configs;
  std::vector<double> values;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = u(rng), b = u(rng), c = u(rng);
    configs.push_back({{"a", a}, {"b", b}, {"c", c}});
    values.push_back(loss(a, b, c));
  }
  return ri::encode(three_floats(), configs, values, Mode::Min);
}

double score_of(const std::vector<ri::Score>& scores, const std::string& name) {
  for (const auto& s : scores)
    if (s.name == name) return s.value;
  ADD_FAILURE() << "no score for " << name;
  return NAN;
}

double total(const std::vector<ri::Score>& scores) {
  return std::accumulate(scores.begin(), scores.end(), 0.0, [](double t, const ri::Score& s) { return t + s.value; });
}

}  // namespace

TEST(ImportanceEncode, LogIntListedDomainsNanAndModes) {
  Space s;
  s.params.push_back({"lr", Domain{DomainKind::LogUniform, 1e-4, 1e-1, 0, {}}});
  s.params.push_back({"layers", Domain{DomainKind::RandInt, 1, 5, 0, {}}});
  s.params.push_back({"act", Domain{DomainKind::Choice, 0, 0, 0, {Value{"relu"}, Value{"tanh"}}}});
  s.params.push_back({"bs", Domain{DomainKind::Choice, 0, 0, 0, {Value{std::int64_t{32}}, Value{std::int64_t{64}}}}});
  const std::vector<Config> configs = {
      {{"lr", 1e-3}, {"layers", std::int64_t{2}}, {"act", "tanh"}, {"bs", std::int64_t{64}}},
      {{"lr", 1.0}, {"layers", std::int64_t{9}}, {"act", "relu"}, {"bs", 32.0}},  // clamped; 32.0 is the value 32
      {{"lr", 1e-2}, {"layers", std::int64_t{1}}, {"act", "gelu"}, {"bs", std::int64_t{32}}},  // not a value: left out
      {{"lr", 1e-2}, {"layers", std::int64_t{1}}, {"act", "relu"}},                           // lacks bs: left out
      {{"lr", 1e-2}, {"layers", std::int64_t{1}}, {"act", "relu"}, {"bs", std::int64_t{32}}},  // NaN metric: left out
  };
  const ri::Observations obs = ri::encode(s, configs, {0.5, 0.25, 0.1, 0.1, NAN}, Mode::Max);
  ASSERT_EQ(obs.features.size(), 4u);
  EXPECT_NEAR(obs.features[0].low, std::log(1e-4), 1e-12);
  EXPECT_EQ(obs.features[1].steps, 4u);
  EXPECT_EQ(obs.features[1].high, 4);
  EXPECT_EQ(obs.features[2].categories, 2u);
  ASSERT_EQ(obs.rows.size(), 2u);
  EXPECT_NEAR(obs.rows[0][0], std::log(1e-3), 1e-12);
  EXPECT_EQ(obs.rows[0][1], 2);
  EXPECT_EQ(obs.rows[0][2], 1.5);
  EXPECT_EQ(obs.rows[0][3], 1.5);
  EXPECT_NEAR(obs.rows[1][0], std::log(1e-1), 1e-12);
  EXPECT_EQ(obs.rows[1][1], 4);
  EXPECT_EQ(obs.rows[1][2], 0.5);
  EXPECT_EQ(obs.rows[1][3], 0.5);
  // A max metric: lower loss is better, so the loss is the negated value.
  EXPECT_EQ(obs.loss, (std::vector<double>{-0.5, -0.25}));
}

TEST(PedAnova, DensitiesAreDistributionsOnTheGrid) {
  const ri::Observations obs = sample(40, [](double a, double, double) { return a; });
  std::vector<std::size_t> all(40), none;
  std::iota(all.begin(), all.end(), std::size_t{0});
  for (const auto& members : {all, none}) {
    const std::vector<double> p = ri::ped_anova_density(obs, 0, members);
    EXPECT_EQ(p.size(), 50u);
    EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-9);
    for (const double v : p) EXPECT_GT(v, 0);
  }
  // With no members only the prior is left: symmetric about the middle.
  const std::vector<double> prior = ri::ped_anova_density(obs, 0, none);
  EXPECT_NEAR(prior.front(), prior.back(), 1e-12);
  EXPECT_GT(prior[25], prior[0]);
}

TEST(PedAnova, RanksTheDominantParameterFirst) {
  const auto scores = ri::evaluate(
      sample(400, [](double a, double b, double) { return 10 * (a - 0.3) * (a - 0.3) + 0.5 * b; }), {ri::Method::PedAnova}).scores;
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_EQ(scores[0].name, "a");
  EXPECT_EQ(scores[1].name, "b");
  EXPECT_GT(scores[0].value, 0.6);
  EXPECT_LT(score_of(scores, "c"), 0.1);
  EXPECT_NEAR(total(scores), 1.0, 1e-9);
}

TEST(PedAnova, ListedDomainsAndConstants) {
  Space s;
  s.params.push_back({"opt", Domain{DomainKind::Choice, 0, 0, 0, {Value{"sgd"}, Value{"adam"}, Value{"rms"}}}});
  s.params.push_back({"x", Domain{DomainKind::Uniform, 0, 1, 0, {}}});
  s.params.push_back({"fixed", Domain{DomainKind::Choice, 0, 0, 0, {Value{"only"}}}});
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  const char* names[] = {"sgd", "adam", "rms"};
  std::vector<Config> configs;
  std::vector<double> values;
  for (int i = 0; i < 300; ++i) {
    const int k = i % 3;
    const double x = u(rng);
    configs.push_back({{"opt", names[k]}, {"x", x}, {"fixed", "only"}});
    values.push_back((k == 1 ? 0.0 : 1.0) + 0.05 * x);  // adam wins; x barely matters
  }
  const ri::Observations obs = ri::encode(s, configs, values, Mode::Min);
  // The top third are the adam trials, with x spread evenly: only opt sets them apart.
  for (const ri::Method m : {ri::Method::PedAnova, ri::Method::Fanova}) {
    const auto scores = ri::evaluate(obs, {m, 0.33, 16, 1}).scores;
    EXPECT_EQ(scores[0].name, "opt") << ri::to_string(m);
    EXPECT_GT(scores[0].value, 0.8) << ri::to_string(m);
    EXPECT_EQ(score_of(scores, "fixed"), 0.0) << ri::to_string(m);
    EXPECT_NEAR(total(scores), 1.0, 1e-9) << ri::to_string(m);
  }
  // PED-ANOVA is local: the top 10% are the adam trials of the lowest x, so within that
  // region x matters as much as opt (Pearson divergences 2.3 and 2 in closed form).
  const auto local = ri::evaluate(obs, {ri::Method::PedAnova, 0.1}).scores;
  EXPECT_GT(score_of(local, "x"), 0.4);
  EXPECT_GT(score_of(local, "opt"), 0.4);
}

TEST(Importance, TooFewTrialsSaySoInsteadOfShares) {
  // PED-ANOVA alone still splits evenly what it cannot judge (no top set of 2 trials)...
  for (const double s : ri::ped_anova(sample(2, [](double a, double, double) { return a; }), 0.1))
    EXPECT_NEAR(s, 1.0 / 3, 1e-12);
  // ...but evaluate, which people read, gives no shares under kMinTrials and says why.
  for (const ri::Method m : {ri::Method::Auto, ri::Method::PedAnova, ri::Method::Fanova}) {
    for (const std::size_t n : {std::size_t{0}, std::size_t{2}, ri::kMinTrials - 1}) {
      const ri::Importance r = ri::evaluate(sample(n, [](double a, double, double) { return a; }), {m});
      EXPECT_TRUE(r.scores.empty()) << ri::to_string(m) << " " << n;
      EXPECT_EQ(r.trials, n);
      EXPECT_NE(r.reason.find("no shares"), std::string::npos) << r.reason;
      EXPECT_NE(r.reason.find(std::to_string(n) + " trial"), std::string::npos) << r.reason;
    }
    EXPECT_EQ(ri::evaluate(sample(ri::kMinTrials, [](double a, double, double) { return a; }), {m}).scores.size(), 3u);
  }
}

TEST(Fanova, PureTreesReproduceTheirSample) {
  const ri::Observations obs = sample(200, [](double a, double b, double c) { return std::sin(6 * a) + b * c; });
  std::vector<std::size_t> rows(obs.loss.size());
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  const ri::RegressionTree tree = ri::fit_tree(obs, rows, 1);
  for (const std::size_t i : rows) EXPECT_DOUBLE_EQ(tree.predict(obs.rows[i]), obs.loss[i]);
}

TEST(Fanova, VarianceSharesOfAnAdditiveStepFunctionAreExact) {
  // loss = 2 [a > 0.5] + [b > 0.5] on a 10 x 10 x 2 grid of cell centres: the tree splits
  // at 0.5 exactly, V_a = 4 / 4 = 1, V_b = 1 / 4, V = 1.25, and c explains nothing.
  ri::Observations obs;
  for (const char* name : {"a", "b", "c"}) obs.features.push_back({name, 0, 1});
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j)
      for (int k = 0; k < 2; ++k) {
        const double a = 0.05 + 0.1 * i, b = 0.05 + 0.1 * j, c = 0.25 + 0.5 * k;
        obs.rows.push_back({a, b, c});
        obs.loss.push_back(2.0 * (a > 0.5) + 1.0 * (b > 0.5));
      }
  std::vector<std::size_t> rows(obs.loss.size());
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  const std::vector<double> shares = ri::tree_variance_shares(ri::fit_tree(obs, rows, 5), obs.features);
  EXPECT_NEAR(shares[0], 0.8, 1e-12);
  EXPECT_NEAR(shares[1], 0.2, 1e-12);
  EXPECT_NEAR(shares[2], 0.0, 1e-12);
  // A constant tree has no variance to share.
  ri::RegressionTree flat;
  flat.nodes.push_back({});
  EXPECT_EQ(ri::tree_variance_shares(flat, obs.features), (std::vector<double>{0, 0, 0}));
}

TEST(Fanova, RanksLikeTheFunctionAndIsReproducible) {
  const auto loss = [](double a, double b, double c) { return 4 * std::sin(3 * a) + (b - 0.5) * (b - 0.5) + 0.01 * c; };
  const ri::Options opt{ri::Method::Fanova, 0.1, 32, 11};
  const ri::Importance r = ri::evaluate(sample(300, loss), opt);
  const auto& scores = r.scores;
  EXPECT_EQ(scores[0].name, "a");
  EXPECT_EQ(scores[1].name, "b");
  EXPECT_GT(scores[0].value, 0.8);
  EXPECT_NEAR(total(scores), 1.0, 1e-9);
  // The same seed, the same figures: shares, intervals, floor.
  const ri::Importance again = ri::evaluate(sample(300, loss), opt);
  EXPECT_EQ(again.noise_floor, r.noise_floor);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    EXPECT_EQ(scores[i].value, again.scores[i].value);
    EXPECT_EQ(scores[i].low, again.scores[i].low);
    EXPECT_EQ(scores[i].high, again.scores[i].high);
    EXPECT_EQ(scores[i].below_noise, again.scores[i].below_noise);
  }
}

TEST(NullImportance, ShadowsArePermutedCopiesOfTheSampledColumns) {
  const ri::Observations obs = sample(50, [](double a, double b, double) { return a + b; });
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < 50; ++i) rows.push_back((i * 7) % 50 / 2);  // repeats, as a bootstrap has
  ranktune::search::Rng rng(4);
  const ri::Observations s = ri::with_shadows(obs, rows, {0, 2}, rng);
  ASSERT_EQ(s.features.size(), 5u);
  EXPECT_EQ(s.features[3].name, "shadow:a");
  EXPECT_EQ(s.features[4].name, "shadow:c");
  ASSERT_EQ(s.rows.size(), rows.size());
  std::vector<double> a, shadow_a, c, shadow_c;
  std::size_t moved = 0;
  for (std::size_t p = 0; p < rows.size(); ++p) {
    EXPECT_EQ(s.loss[p], obs.loss[rows[p]]);
    for (std::size_t f = 0; f < 3; ++f) EXPECT_EQ(s.rows[p][f], obs.rows[rows[p]][f]);
    a.push_back(s.rows[p][0]);
    shadow_a.push_back(s.rows[p][3]);
    c.push_back(s.rows[p][2]);
    shadow_c.push_back(s.rows[p][4]);
    moved += s.rows[p][3] != s.rows[p][0];
  }
  EXPECT_GT(moved, 30u);  // shuffled, not copied in place
  for (auto* v : {&a, &shadow_a, &c, &shadow_c}) std::sort(v->begin(), v->end());
  EXPECT_EQ(a, shadow_a);  // the same values, so the same distribution
  EXPECT_EQ(c, shadow_c);
}

TEST(Bootstrap, QuantilesAndTheWeightedTopSetCut) {
  EXPECT_DOUBLE_EQ(ri::quantile({3, 1, 2, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(ri::quantile({3, 1, 2, 4}, 1.0), 4);
  EXPECT_DOUBLE_EQ(ri::quantile({5}, 0.05), 5);
  EXPECT_TRUE(std::isnan(ri::quantile({}, 0.5)));
  // A resample counted by multiplicities cuts where the resample written out does.
  const std::vector<double> loss = {0.5, 0.1, 0.9, 0.3, 0.7, 0.2};
  const std::vector<std::size_t> order = {1, 5, 3, 0, 4, 2};
  const std::vector<std::uint32_t> weight = {0, 3, 1, 0, 4, 2};  // 10 draws
  std::vector<double> drawn;
  for (std::size_t i = 0; i < loss.size(); ++i) drawn.insert(drawn.end(), weight[i], loss[i]);
  std::vector<std::size_t> drawn_order(drawn.size());
  std::iota(drawn_order.begin(), drawn_order.end(), std::size_t{0});
  std::sort(drawn_order.begin(), drawn_order.end(), [&](std::size_t x, std::size_t y) { return drawn[x] < drawn[y]; });
  for (const double q : {0.1, 0.3, 0.5, 1.0})
    EXPECT_EQ(ri::ped_anova_cut(loss, order, weight, q), ri::ped_anova_cut(drawn, drawn_order, {}, q)) << q;
  EXPECT_EQ(ri::ped_anova_cut(loss, order, {}, 0.1), 0.2);  // no better than the 2nd
}

TEST(Bootstrap, IntervalsNarrowWithTrialsAndTheSeedIsTheOnlyChance) {
  const auto loss = [](double a, double b, double) { return 10 * (a - 0.7) * (a - 0.7) + 5 * std::abs(b - 0.2); };
  for (const ri::Method m : {ri::Method::PedAnova, ri::Method::Fanova}) {
    const ri::Importance small = ri::evaluate(sample(60, loss), {.method = m});
    const ri::Importance large = ri::evaluate(sample(600, loss), {.method = m});
    ASSERT_EQ(small.resamples, 100u);
    const auto width = [](const ri::Importance& r, const std::string& name) {
      for (const auto& s : r.scores)
        if (s.name == name) return s.high - s.low;
      return -1.0;
    };
    EXPECT_GT(width(small, "a"), 0) << ri::to_string(m);
    EXPECT_LT(width(large, "a"), width(small, "a")) << ri::to_string(m);
    // c does nothing: below the floor; a and b stand above it (but PED-ANOVA's 6 top trials
    // of 60 cannot tell them from noise, which is why auto runs fANOVA there).
    for (const ri::Importance* r : {&small, &large}) {
      EXPECT_GT(r->noise_floor, 0) << ri::to_string(m);
      if (m == ri::Method::PedAnova && r == &small) continue;
      for (const auto& s : r->scores) EXPECT_EQ(s.below_noise, s.name == "c") << ri::to_string(m) << " " << r->trials << " " << s.name;
    }
    // The same seed gives the same figures, another seed other intervals.
    const ri::Importance again = ri::evaluate(sample(60, loss), {.method = m});
    const ri::Importance other = ri::evaluate(sample(60, loss), {.method = m, .seed = 9});
    EXPECT_EQ(again.noise_floor, small.noise_floor);
    EXPECT_EQ(again.scores[0].low, small.scores[0].low);
    EXPECT_NE(other.scores[0].low, small.scores[0].low) << ri::to_string(m);
  }
}
