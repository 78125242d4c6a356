// The synthetic trainable: its benchmark functions, its steps, noise and checkpoints.

#include <chrono>
#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "train/synthetic.h"
#include "train/trainable.h"

namespace ranktune::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---------------------------------------------------------------- synthetic functions

TEST(SyntheticFunctions, BraninAtItsThreeMinimizers) {
  constexpr double pi = std::numbers::pi;
  for (auto [x1, x2] : {std::pair{-pi, 12.275}, std::pair{pi, 2.275}, std::pair{9.42478, 2.475}}) {
    const double x[] = {x1, x2};
    EXPECT_NEAR(branin(x), 0.397887, 1e-5) << x1 << ", " << x2;
  }
  const double elsewhere[] = {0.0, 0.0};
  EXPECT_GT(branin(elsewhere), 1.0);
  EXPECT_NEAR(find_synthetic_function("branin")->optimum, 0.397887, 1e-6);
}

TEST(SyntheticFunctions, Hartmann6AtItsMinimizer) {
  const double x[] = {0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573};
  EXPECT_NEAR(hartmann6(x), -3.32237, 1e-5);
  const double centre[] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
  EXPECT_GT(hartmann6(centre), -3.3);
}

TEST(SyntheticFunctions, RosenbrockAndSphere) {
  const double ones[] = {1, 1, 1, 1}, zeros[] = {0, 0, 0};
  EXPECT_EQ(rosenbrock(ones), 0.0);
  EXPECT_EQ(sphere(zeros), 0.0);
  const double x[] = {0.5, 2.0};
  EXPECT_DOUBLE_EQ(rosenbrock(x), 100 * (2.0 - 0.25) * (2.0 - 0.25) + 0.25);
  EXPECT_DOUBLE_EQ(sphere(x), 4.25);
  const double one[] = {3.0};
  EXPECT_DOUBLE_EQ(rosenbrock(one), 4.0);
}

TEST(SyntheticFunctions, TableListsEveryFunction) {
  for (const char* name : {"branin", "hartmann6", "rosenbrock", "sphere"}) {
    const SyntheticFunction* f = find_synthetic_function(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->metrics, (std::vector<std::string>{"loss", "objective"}));
  }
  EXPECT_EQ(find_synthetic_function("branni"), nullptr);
  EXPECT_EQ(find_synthetic_function("hartmann6")->params.size(), 6u);
  EXPECT_TRUE(find_synthetic_function("sphere")->variadic());
}

// ---------------------------------------------------------------- synthetic trainable

config::TrainableSpec synthetic_spec(const std::string& function, double noise = 0.0, double seconds = 0.0) {
  SyntheticOptions spec;
  spec.function = function;
  spec.noise = noise;
  spec.seconds_per_step = seconds;
  return make_spec(spec);
}

Context context_for(search::TrialId id, int attempt = 0, std::uint64_t seed = 42) {
  Context c;
  c.trial_id = id;
  c.attempt = attempt;
  c.seed = seed;
  return c;
}

std::vector<double> losses(const config::TrainableSpec& spec, const search::Config& config, const Context& ctx, int steps) {
  SyntheticTrainable t(spec);
  t.setup(config, ctx);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    const StepResult r = t.step();
    EXPECT_FALSE(r.done);
    out.push_back(r.metrics.at("loss"));
  }
  return out;
}

const search::Config kBraninPoint = {{"x1", 2.0}, {"x2", 5.0}};

TEST(SyntheticTrainable, ReportsLossAndNoiseFreeObjective) {
  SyntheticTrainable t(synthetic_spec("branin", 0.3));
  t.setup(kBraninPoint, context_for(1));
  const double x[] = {2.0, 5.0};
  for (int i = 0; i < 3; ++i) {
    const StepResult r = t.step();
    EXPECT_EQ(r.metrics.size(), 2u);
    EXPECT_EQ(r.metrics.at("objective"), branin(x));
  }
}

TEST(SyntheticTrainable, LossDecreasesInExpectationWithT) {
  // Mean over many trials of the noisy loss at t = 1, 4, 16, 64: strictly decreasing.
  const auto spec = synthetic_spec("branin", 0.5);
  std::vector<double> mean(64, 0.0);
  constexpr int kTrials = 300;
  for (int id = 1; id <= kTrials; ++id) {
    const auto l = losses(spec, kBraninPoint, context_for(id), 64);
    for (int t = 0; t < 64; ++t) mean[t] += l[t] / kTrials;
  }
  EXPECT_GT(mean[0], mean[3]);
  EXPECT_GT(mean[3], mean[15]);
  EXPECT_GT(mean[15], mean[63]);
  const double x[] = {2.0, 5.0};
  EXPECT_GT(mean[63], branin(x));  // the curve approaches f(x) from above
}

TEST(SyntheticTrainable, BetterConfigLooksBetterEarly) {
  const auto spec = synthetic_spec("branin");
  const auto good = losses(spec, {{"x1", 3.0}, {"x2", 2.5}}, context_for(1), 10);
  const auto bad = losses(spec, {{"x1", -4.0}, {"x2", 1.0}}, context_for(2), 10);
  for (int t = 0; t < 10; ++t) EXPECT_LT(good[t], bad[t]) << "t=" << t + 1;
}

TEST(SyntheticTrainable, NoiseIsReproducibleAndPerTrial) {
  const auto spec = synthetic_spec("hartmann6", 0.2);
  const search::Config x = {{"x1", 0.1}, {"x2", 0.2}, {"x3", 0.3}, {"x4", 0.4}, {"x5", 0.5}, {"x6", 0.6}};
  const auto a = losses(spec, x, context_for(7), 20);
  EXPECT_EQ(a, losses(spec, x, context_for(7), 20));
  const auto other_trial = losses(spec, x, context_for(8), 20);
  const auto other_attempt = losses(spec, x, context_for(7, 1), 20);
  const auto other_seed = losses(spec, x, context_for(7, 0, 43), 20);
  for (int t = 0; t < 20; ++t) {
    EXPECT_NE(a[t], other_trial[t]);
    EXPECT_NE(a[t], other_attempt[t]);
    EXPECT_NE(a[t], other_seed[t]);
  }
}

TEST(SyntheticTrainable, NoiseHasTheConfiguredSpread) {
  double sum = 0, sq = 0;
  constexpr int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double z = seeded_normal(1, i, 0, 1);
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(sq / n, 1.0, 0.05);
}

TEST(SyntheticTrainable, VariadicFunctionsUseX1ToXn) {
  SyntheticTrainable t(synthetic_spec("sphere"));
  t.setup({{"x1", 1.0}, {"x2", std::int64_t{2}}, {"x4", 100.0}, {"lr", 0.1}}, context_for(1));
  EXPECT_DOUBLE_EQ(t.step().metrics.at("objective"), 5.0);  // x4 is past the gap at x3
}

TEST(SyntheticTrainable, SleepsSecondsPerStep) {
  SyntheticTrainable t(synthetic_spec("sphere", 0.0, 0.02));
  t.setup({{"x1", 0.0}}, context_for(1));
  const auto t0 = Clock::now();
  for (int i = 0; i < 5; ++i) t.step();
  EXPECT_GE(seconds_since(t0), 0.1);
}

TEST(SyntheticTrainable, MissingOrStringParameterFailsTheTrial) {
  SyntheticTrainable t(synthetic_spec("branin"));
  EXPECT_THROW(t.setup({{"x1", 1.0}}, context_for(1)), TrialFailure);
  EXPECT_THROW(t.setup({{"x1", 1.0}, {"x2", std::string("a")}}, context_for(1)), TrialFailure);
  SyntheticTrainable s(synthetic_spec("sphere"));
  EXPECT_THROW(s.setup({{"y", 1.0}}, context_for(1)), TrialFailure);
  SyntheticTrainable u(synthetic_spec("nope"));
  EXPECT_THROW(u.setup({{"x1", 1.0}}, context_for(1)), TrialFailure);
}

TEST(SyntheticTrainable, RestoredTrialReportsWhatAnUnpausedOneWould) {
  const auto spec = synthetic_spec("branin", 0.4);
  const auto straight = losses(spec, kBraninPoint, context_for(3), 10);
  SyntheticTrainable first(spec);
  first.setup(kBraninPoint, context_for(3));
  for (int i = 0; i < 4; ++i) first.step();
  CheckpointBytes bytes;
  MemoryCheckpointWriter out(bytes);
  first.save(out);
  SyntheticTrainable second(spec);  // a fresh object, as on another rank
  second.setup(kBraninPoint, context_for(3));
  MemoryCheckpointReader in(bytes);
  second.restore(in);
  EXPECT_EQ(in.remaining(), 0u);
  for (int i = 4; i < 10; ++i) EXPECT_EQ(second.step().metrics.at("loss"), straight[i]) << "step " << i + 1;
}

TEST(SyntheticTrainable, RefusesAForeignOrTruncatedCheckpoint) {
  SyntheticTrainable t(synthetic_spec("branin"));
  t.setup(kBraninPoint, context_for(1));
  const CheckpointBytes foreign(16, std::byte{'x'});
  MemoryCheckpointReader a(foreign);
  EXPECT_THROW(t.restore(a), CheckpointError);
  CheckpointBytes bytes;
  MemoryCheckpointWriter out(bytes);
  t.save(out);
  bytes.resize(bytes.size() - 1);
  MemoryCheckpointReader b(bytes);
  EXPECT_THROW(t.restore(b), CheckpointError);
}

}  // namespace
}  // namespace ranktune::train
