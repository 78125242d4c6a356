// OptionReader (search/options.h): typed values, defaults and refusals, the closest known
// key for a typo, and the factories' option limits.
#include <gtest/gtest.h>

#include "search/options.h"
#include "search/scheduler.h"
#include "search/searcher.h"

using namespace ranktune::search;

TEST(OptionReader, ReadsTypedValuesWithDefaults) {
  const Options o{{"grace_period", std::int64_t{4}}, {"rf", 3.5}, {"mode", std::string("max")},
                  {"stop_last", std::int64_t{1}}};
  OptionReader r(o, "asha");
  EXPECT_EQ(r.integer("grace_period", 1), 4);
  EXPECT_EQ(r.integer("brackets", 1), 1);
  EXPECT_DOUBLE_EQ(r.number("rf", 4), 3.5);
  EXPECT_EQ(r.text("mode", "min", {"min", "max"}), "max");
  EXPECT_TRUE(r.flag("stop_last", false));
  EXPECT_NO_THROW(r.finish());
}

TEST(OptionReader, RejectsWrongTypesAndUnknownKeysWithTheKey) {
  const Options o{{"grace_period", 2.5}, {"reduction_factr", std::int64_t{3}}};
  OptionReader r(o, "asha");
  try {
    r.integer("grace_period", 1);
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "grace_period");
    EXPECT_NE(std::string(e.what()).find("must be an integer"), std::string::npos);
  }
  r.number("reduction_factor", 4);
  try {
    r.finish();
    FAIL();
  } catch (const OptionError& e) {
    EXPECT_EQ(e.key(), "reduction_factr");
    EXPECT_NE(std::string(e.what()).find("Did you mean 'reduction_factor'?"), std::string::npos);
  }
}

TEST(OptionReader, RejectsValuesOutsideTheValidList) {
  const Options o{{"mode", std::string("maks")}};
  OptionReader r(o, "median_stopping");
  EXPECT_THROW(r.text("mode", "min", {"min", "max"}), OptionError);
}

TEST(Factories, AlgorithmsWithoutOptionsRefuseAny) {
  EXPECT_THROW(make_scheduler("fifo", {}, {{"grace_period", std::int64_t{1}}}), OptionError);
  EXPECT_THROW(make_searcher("random", {}, {}, {{"n_startup", std::int64_t{1}}}), OptionError);
  EXPECT_NO_THROW(make_scheduler("fifo", {}, {}));
}

TEST(Factories, SearcherCountOptionsHaveUpperBounds) {
  // n_ei_candidates = 10^12 passed check, then rank 0 spun scoring candidates.
  Space space;
  space.params.push_back({"x", Domain{DomainKind::Uniform, 0.0, 1.0}});
  const SearcherOptions so{1, 10, "loss", Mode::Min};
  const std::int64_t huge = 1'000'000'000'000;
  struct Case {
    std::string algorithm, key, limit;
  };
  for (const auto& c : std::vector<Case>{{"tpe", "n_ei_candidates", "10000"},
                                         {"bohb", "n_ei_candidates", "10000"},
                                         {"tpe", "n_startup", "1000000000"},
                                         {"bohb", "min_points_in_model", "1000000000"},
                                         {"random", "repeat", "10000"},
                                         {"tpe", "max_concurrent", "1000000000"}}) {
    SCOPED_TRACE(c.algorithm + " " + c.key);
    try {
      make_searcher(c.algorithm, space, so, {{c.key, huge}});
      ADD_FAILURE() << "no error";
    } catch (const OptionError& e) {
      EXPECT_EQ(e.key(), c.key);
      EXPECT_NE(std::string(e.what()).find("must be <= " + c.limit + " (got 1000000000000)"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(make_searcher("tpe", space, so, {{"n_ei_candidates", std::int64_t{10'000}}}));
}
