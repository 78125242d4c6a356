#pragma once
// Shared by the tests of the searchers that model their observations (tpe_test, gp_test):
// domains, Branin on its box, a sequential suggest-evaluate-complete loop, and a space with
// every kind of domain with a check that a config lies in it.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "search/searcher.h"
#include "train/synthetic.h"

namespace ranktune::search::searcher_fixtures {

inline Domain uniform(double lo, double hi) { return {DomainKind::Uniform, lo, hi, 0.0, {}}; }
inline Domain listed(DomainKind k, std::vector<Value> v) { return {k, 0, 0, 0, std::move(v)}; }

inline Space branin_space() { return {{{"x1", uniform(-5, 10)}, {"x2", uniform(0, 15)}}}; }

/// The synthetic trainable's Branin, at a config of x1 and x2; its minimum is kBraninMin.
inline double branin(const Config& c) {
  const double x[] = {std::get<double>(c.at("x1")), std::get<double>(c.at("x2"))};
  return ranktune::train::branin(x);
}
inline constexpr double kBraninMin = 0.397887357729738;

inline SearcherOptions opts(std::uint64_t seed, std::int64_t n, Mode mode = Mode::Min) {
  return {seed, n, "loss", mode};
}

using Objective = std::function<double(const Config&)>;

/// The pure sequential loop: suggest, evaluate `f` as "loss", complete; trial ids from
/// `first`. Returns the configs in order.
inline std::vector<Config> drive(Searcher& s, const Objective& f, std::int64_t trials, TrialId first = 1) {
  std::vector<Config> out;
  for (TrialId id = first; id < first + trials; ++id) {
    auto sug = s.suggest(id);
    if (sug.kind != Suggestion::Kind::Config) break;
    s.on_trial_complete(id, {{"loss", f(sug.config)}}, false);
    out.push_back(std::move(sug.config));
  }
  return out;
}

/// One parameter of each domain kind, integers and floats mixed in one choice.
inline Space every_kind_space() {
  return {{
      {"u", uniform(-1, 2)},
      {"lu", {DomainKind::LogUniform, 1e-4, 1e-1, 0, {}}},
      {"q", {DomainKind::QUniform, 0.1, 1.05, 0.25, {}}},
      {"ri", {DomainKind::RandInt, 2, 5, 0, {}}},
      {"cs", listed(DomainKind::Choice, {std::string("a"), std::string("b"), std::string("c")})},
      {"cn", listed(DomainKind::Choice, {std::int64_t{1}, 2.5})},
      {"g", listed(DomainKind::Grid, {std::int64_t{32}, std::int64_t{64}})},
  }};
}

/// A loss on every_kind_space() that pulls towards the edges, so that a model proposes at
/// the bounds too: best at u = 2, lu = 1e-4, q = 0.1, ri = 4, cs = c, cn = 1, g = 32.
inline double edge_loss(const Config& c) {
  return -std::get<double>(c.at("u")) + std::log(std::get<double>(c.at("lu"))) + std::get<double>(c.at("q")) -
         static_cast<double>(std::get<std::int64_t>(c.at("ri"))) + (std::get<std::string>(c.at("cs")) == "c" ? 0 : 1) +
         std::get<double>(c.at("cn")) + static_cast<double>(std::get<std::int64_t>(c.at("g"))) / 64;
}

/// `c` is a config of every_kind_space(): each value of its type and in its domain.
inline void expect_every_kind_in_bounds(const Config& c) {
  ASSERT_EQ(c.size(), 7u);
  const double u = std::get<double>(c.at("u"));
  EXPECT_TRUE(u >= -1 && u <= 2) << u;
  const double lu = std::get<double>(c.at("lu"));
  EXPECT_TRUE(lu >= 1e-4 && lu <= 1e-1) << lu;
  const double q = std::get<double>(c.at("q"));
  EXPECT_TRUE(q >= 0.1 && q <= 1.05) << q;
  EXPECT_NEAR(std::remainder(q, 0.25), 0.0, 1e-9) << q;
  const auto ri = std::get<std::int64_t>(c.at("ri"));
  EXPECT_TRUE(ri >= 2 && ri <= 4) << ri;  // high is excluded
  const auto& cs = std::get<std::string>(c.at("cs"));
  EXPECT_TRUE(cs == "a" || cs == "b" || cs == "c") << cs;
  const double cn = std::get<double>(c.at("cn"));  // int and float mixed: widened to float
  EXPECT_TRUE(cn == 1.0 || cn == 2.5) << cn;
  const auto g = std::get<std::int64_t>(c.at("g"));
  EXPECT_TRUE(g == 32 || g == 64) << g;
}

/// Branin plus a log-uniform, an integer and a categorical parameter: the save/restore tests'
/// space, so that every kind of point coordinate goes through a saved state.
inline Space resume_space() {
  return {{
      {"x1", uniform(-5, 10)},
      {"x2", uniform(0, 15)},
      {"lr", {DomainKind::LogUniform, 1e-4, 1e-1, 0, {}}},
      {"n", {DomainKind::RandInt, 1, 9, 0, {}}},
      {"act", listed(DomainKind::Choice, {std::string("relu"), std::string("tanh")})},
  }};
}

inline double resume_loss(const Config& c) {
  return branin(c) + std::log10(std::get<double>(c.at("lr"))) + static_cast<double>(std::get<std::int64_t>(c.at("n"))) +
         (std::get<std::string>(c.at("act")) == "relu" ? 0 : 1);
}

}  // namespace ranktune::search::searcher_fixtures
