// Search spaces (search/space.h): draws within bounds, log-uniform, impossible domains; the
// random and grid searchers' sequences; and unknown searcher names.
#include <gtest/gtest.h>

#include <set>

#include "search/grid_searcher.h"
#include "search/random_searcher.h"
#include "search/scheduler.h"
#include "search/searcher.h"
#include "search/space.h"

using namespace ranktune::search;

namespace {

Domain range(DomainKind k, double lo, double hi, double q = 0) {
  Domain d;
  d.kind = k;
  d.low = lo;
  d.high = hi;
  d.q = q;
  return d;
}

Domain listed(DomainKind k, std::vector<Value> v) {
  Domain d;
  d.kind = k;
  d.values = std::move(v);
  return d;
}

Space mixed_space() {
  Space s;
  s.params = {{"u", range(DomainKind::Uniform, -2, 3)},
              {"lr", range(DomainKind::LogUniform, 1e-4, 1e-1)},
              {"h", range(DomainKind::QUniform, 16, 250, 16)},
              {"d", range(DomainKind::RandInt, 1, 5)},
              {"act", listed(DomainKind::Choice, {std::string("relu"), std::string("tanh")})},
              {"mix", listed(DomainKind::Choice, {std::int64_t{1}, 2.5})}};
  return s;
}

}  // namespace

TEST(Space, SamplesStayWithinBoundsAndHaveTheDomainType) {
  const Space s = mixed_space();
  Rng rng(7);
  std::set<std::int64_t> ints;
  for (int i = 0; i < 5000; ++i) {
    for (const auto& p : s.params) {
      const Value v = sample(p.domain, rng);
      switch (p.domain.type()) {
        case ValueType::Float: ASSERT_TRUE(std::holds_alternative<double>(v)) << p.name; break;
        case ValueType::Int: ASSERT_TRUE(std::holds_alternative<std::int64_t>(v)) << p.name; break;
        case ValueType::String: ASSERT_TRUE(std::holds_alternative<std::string>(v)) << p.name; break;
      }
      if (!p.domain.is_listed()) {
        const double x = to_double(v);
        EXPECT_GE(x, p.domain.low) << p.name;
        EXPECT_LE(x, p.domain.high) << p.name;
      }
      if (p.name == "h") EXPECT_DOUBLE_EQ(std::fmod(to_double(v), 16.0), 0.0);
      if (p.name == "d") ints.insert(std::get<std::int64_t>(v));
    }
  }
  // randint's upper bound is exclusive and every value in [low, high) appears.
  EXPECT_EQ(ints, (std::set<std::int64_t>{1, 2, 3, 4}));
}

TEST(Space, LogUniformIsUniformInLogSpace) {
  const Domain d = range(DomainKind::LogUniform, 1e-4, 1e-0);
  Rng rng(1);
  int below = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) below += to_double(sample(d, rng)) < 1e-2;
  EXPECT_NEAR(below / double(n), 0.5, 0.02);
}

TEST(Space, CheckDomainRejectsImpossibleDomains) {
  EXPECT_EQ(check_domain(range(DomainKind::Uniform, 0, 1)), "");
  EXPECT_NE(check_domain(range(DomainKind::Uniform, 1, 1)), "");
  EXPECT_NE(check_domain(range(DomainKind::LogUniform, 0, 1)), "");
  EXPECT_NE(check_domain(range(DomainKind::QUniform, 0, 1, 0)), "");
  EXPECT_NE(check_domain(range(DomainKind::QUniform, 1, 3, 5)), "");
  EXPECT_NE(check_domain(range(DomainKind::RandInt, 0.5, 3)), "");
  EXPECT_NE(check_domain(listed(DomainKind::Choice, {})), "");
  EXPECT_NE(check_domain(listed(DomainKind::Grid, {1.0, std::string("a")})), "");
}

TEST(RandomSearcher, IsDeterministicForASeedAndDiffersAcrossSeeds) {
  auto a = make_searcher("random", mixed_space(), {42, 10});
  auto b = make_searcher("random", mixed_space(), {42, 10});
  auto c = make_searcher("random", mixed_space(), {43, 10});
  int differ = 0;
  for (TrialId id = 1; id <= 10; ++id) {
    const auto sa = a->suggest(id), sb = b->suggest(id), sc = c->suggest(id);
    ASSERT_EQ(sa.kind, Suggestion::Kind::Config);
    EXPECT_EQ(sa.config, sb.config);
    differ += sa.config != sc.config;
  }
  EXPECT_EQ(differ, 10);
  EXPECT_EQ(a->suggest(11).kind, Suggestion::Kind::Finished);
}

TEST(RandomSearcher, RestoreContinuesTheSameSequence) {
  auto a = make_searcher("random", mixed_space(), {5, 6});
  for (TrialId id = 1; id <= 3; ++id) a->suggest(id);
  auto b = make_searcher("random", mixed_space(), {5, 6});
  b->restore(a->save());
  for (TrialId id = 4; id <= 6; ++id) EXPECT_EQ(a->suggest(id).config, b->suggest(id).config);
  EXPECT_THROW(b->restore("x1"), std::invalid_argument);
}

TEST(GridSearch, CrossesGridAxesFirstAxisSlowestAndRepeats) {
  Space s;
  s.params = {{"a", listed(DomainKind::Grid, {std::int64_t{1}, std::int64_t{2}})},
              {"x", range(DomainKind::Uniform, 0, 1)},
              {"b", listed(DomainKind::Grid, {std::string("p"), std::string("q"), std::string("r")})}};
  EXPECT_EQ(s.grid_size(), 6u);
  auto r = make_searcher("random", s, {0, 2});
  EXPECT_EQ(r->total(), 12);
  std::vector<std::pair<std::int64_t, std::string>> seen;
  for (TrialId id = 1; id <= 12; ++id) {
    const auto c = r->suggest(id).config;
    seen.emplace_back(std::get<std::int64_t>(c.at("a")), std::get<std::string>(c.at("b")));
    EXPECT_TRUE(std::holds_alternative<double>(c.at("x")));
  }
  const std::vector<std::pair<std::int64_t, std::string>> one_pass = {
      {1, "p"}, {1, "q"}, {1, "r"}, {2, "p"}, {2, "q"}, {2, "r"}};
  EXPECT_EQ(std::vector(seen.begin(), seen.begin() + 6), one_pass);
  EXPECT_EQ(std::vector(seen.begin() + 6, seen.end()), one_pass);
}

TEST(GridSearch, GridAlgorithmEnumeratesChoicesToo) {
  Space s;
  s.params = {{"act", listed(DomainKind::Choice, {std::string("relu"), std::string("tanh")})},
              {"w", listed(DomainKind::Grid, {std::int64_t{8}, 16.5})}};
  auto g = make_searcher("grid", s, {3, 1});
  EXPECT_EQ(g->total(), 4);
  std::set<std::pair<std::string, double>> points;
  for (TrialId id = 1; id <= 4; ++id) {
    const auto c = g->suggest(id).config;
    // A numeric list with a float is a float column: 8 comes back as 8.0.
    points.emplace(std::get<std::string>(c.at("act")), std::get<double>(c.at("w")));
  }
  EXPECT_EQ(points.size(), 4u);
  EXPECT_TRUE(points.count({"relu", 8.0}));
  EXPECT_EQ(g->suggest(5).kind, Suggestion::Kind::Finished);
}

TEST(Searchers, UnknownNameListsTheValidOnes) {
  try {
    make_searcher("bayes", mixed_space(), {});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("random, grid"), std::string::npos);
  }
  EXPECT_THROW(make_scheduler("asha2", {}), std::invalid_argument);
}
