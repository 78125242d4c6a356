// Importance on planted problems whose answer is known (planted.h), over many seeds, as a
// user gets it: the default method (auto), its intervals and its noise floor. The trials
// are generated in-process, so that 20 seeds x 2 sizes x 3 problems take seconds.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "analysis/importance.h"
#include "planted.h"

namespace ra = ranktune::analysis;
namespace rp = ranktune::planted;

namespace {

constexpr std::size_t kSeeds = 20;

struct Tally {
  std::size_t right = 0, runs = 0;         // top-k is the planted set
  std::size_t quiet = 0, no_effect = 0;    // a parameter with no effect marked below_noise
  std::size_t under = 0;                   // ... whose share itself is at most the floor
  std::size_t loud = 0, planted = 0;       // a planted parameter stands above the floor
  std::set<ra::Method> methods;
};

Tally run(const rp::Problem& p, std::size_t n) {
  Tally t;
  for (std::size_t s = 0; s < kSeeds; ++s) {
    const ra::Importance r = ra::evaluate(rp::trials(p, n, 1000 + s), {.seed = s});
    t.methods.insert(r.method);
    std::set<std::string> top;
    for (std::size_t k = 0; k < p.important.size(); ++k) top.insert(r.scores.at(k).name);
    t.right += top == p.important;
    ++t.runs;
    for (const ra::Score& sc : r.scores) {
      if (p.no_effect.count(sc.name)) {
        ++t.no_effect;
        t.quiet += sc.below_noise;
        t.under += sc.value <= r.noise_floor;
      }
      if (p.important.count(sc.name)) {
        ++t.planted;
        t.loud += !sc.below_noise;
      }
      EXPECT_LE(sc.low, sc.value) << p.name << " " << sc.name;
      EXPECT_GE(sc.high, sc.value) << p.name << " " << sc.name;
    }
  }
  return t;
}

void expect_planted(const rp::Problem& p, std::size_t n, ra::Method expected) {
  const Tally t = run(p, n);
  SCOPED_TRACE(p.name + " at " + std::to_string(n) + " trials");
  EXPECT_EQ(t.methods, std::set<ra::Method>{expected});
  // The top-k is the planted set in at least 95% of the seeds...
  EXPECT_GE(t.right * 100, t.runs * 95) << t.right << " of " << t.runs;
  // ...parameters with no effect are below the noise floor in at least 90%...
  EXPECT_GE(t.quiet * 100, t.no_effect * 90) << t.quiet << " of " << t.no_effect;
  // ...the floor is what such a parameter gets (its share itself is at most the floor, not
  // just its interval's low end)...
  EXPECT_GE(t.under * 100, t.no_effect * 85) << t.under << " of " << t.no_effect;
  // ...and the planted ones stand above it (the floor is not simply high).
  EXPECT_GE(t.loud * 100, t.planted * 90) << t.loud << " of " << t.planted;
}

}  // namespace

TEST(PlantedImportance, Issue34Loss) {
  expect_planted(rp::issue34(), 60, ra::Method::Fanova);
  expect_planted(rp::issue34(), 600, ra::Method::PedAnova);
}

TEST(PlantedImportance, Hartmann6TwoDominant) {
  expect_planted(rp::hartmann6(), 60, ra::Method::Fanova);
  expect_planted(rp::hartmann6(), 600, ra::Method::PedAnova);
}

TEST(PlantedImportance, TenParametersTwoMatterLogAndListed) {
  expect_planted(rp::ten_two(), 60, ra::Method::Fanova);
  expect_planted(rp::ten_two(), 600, ra::Method::PedAnova);
}
