// The searcher chosen when a config names none (search/default_searcher.h, issue 29).
#include "search/default_searcher.h"

#include <gtest/gtest.h>

namespace ranktune::search {
namespace {

Param p(const std::string& name, DomainKind kind) {
  Param q;
  q.name = name;
  q.domain.kind = kind;
  return q;
}

TEST(DefaultSearcher, MostlyNumericSpacesGetGp) {
  Space s;
  s.params = {p("lr", DomainKind::LogUniform), p("layers", DomainKind::RandInt), p("act", DomainKind::Choice),
              p("drop", DomainKind::QUniform)};
  EXPECT_EQ(default_searcher(s).algorithm, "gp");
  s.params.push_back(p("opt", DomainKind::Choice));  // 2 of 5 categorical: still at most half
  EXPECT_EQ(default_searcher(s).algorithm, "gp");
  s.params.push_back(p("norm", DomainKind::Choice));  // 3 of 6: half
  EXPECT_EQ(default_searcher(s).algorithm, "gp");
}

TEST(DefaultSearcher, MostlyCategoricalSpacesGetTpe) {
  Space s;
  s.params = {p("lr", DomainKind::LogUniform), p("act", DomainKind::Choice), p("opt", DomainKind::Choice)};
  const DefaultSearcher d = default_searcher(s);
  EXPECT_EQ(d.algorithm, "tpe");
  EXPECT_EQ(d.reason, "tpe, since 2 of the 3 parameters are categorical (gp is the default when at most half are)");
}

TEST(DefaultSearcher, ManyParametersGetTpe) {
  Space s;
  for (std::size_t i = 0; i < kMaxGpParams; ++i) s.params.push_back(p("x" + std::to_string(i), DomainKind::Uniform));
  EXPECT_EQ(default_searcher(s).algorithm, "gp");
  s.params.push_back(p("one_more", DomainKind::Uniform));
  const DefaultSearcher d = default_searcher(s);
  EXPECT_EQ(d.algorithm, "tpe");
  EXPECT_NE(d.reason.find("21 parameters"), std::string::npos) << d.reason;
}

TEST(DefaultSearcher, FixedValuesDoNotCountAndConditionsGetTpe) {
  Space s;
  s.params = {p("lr", DomainKind::LogUniform), p("epochs", DomainKind::Choice), p("batch", DomainKind::Choice)};
  s.params[1].fixed = true;
  s.params[2].fixed = true;  // two fixed "choices" of one value: the space is one number
  EXPECT_EQ(default_searcher(s).algorithm, "gp");
  s.params[2].fixed = false;
  s.params[2].when.text = "lr > 0.01";
  const DefaultSearcher d = default_searcher(s);
  EXPECT_EQ(d.algorithm, "tpe");
  EXPECT_NE(d.reason.find("conditional"), std::string::npos) << d.reason;
}

TEST(DefaultSearcher, GridAxesGetRandomWhichCrossesThem) {
  Space s;
  s.params = {p("lr", DomainKind::LogUniform), p("depth", DomainKind::Grid)};
  const DefaultSearcher d = default_searcher(s);
  EXPECT_EQ(d.algorithm, "random");
  EXPECT_NE(d.reason.find("grid axes"), std::string::npos) << d.reason;
}

}  // namespace
}  // namespace ranktune::search
