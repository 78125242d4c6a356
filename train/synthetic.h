#pragma once
/// Built-in benchmark trainables: classic test functions with known optima, made
/// multi-fidelity by a learning-curve term that fades with the step count, plus seeded noise.
/// They cost nothing but an optional sleep, so they measure the farm's scheduling overhead.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "train/registry.h"
#include "train/trainable.h"

namespace ranktune::train {

/// One benchmark function of the synthetic trainable.
struct SyntheticFunction {
  std::string name;
  /// Required parameter names. Empty means variadic: x1..xn, n >= 1, every one present in
  /// the config up to the first missing index.
  std::vector<std::string> params;
  double optimum = 0.0;              ///< global minimum of `eval`
  std::vector<std::string> metrics;  ///< what each step reports: {"loss", "objective"}
  /// The function itself, minimized; `x` is in the order of `params` (or x1..xn).
  double (*eval)(std::span<const double> x) = nullptr;

  bool variadic() const { return params.empty(); }
};

/// The name of the i-th parameter of a variadic function: "x1", "x2", ...
std::string variadic_param(int i);

/// Every synthetic function, in the order error messages list them.
const std::vector<SyntheticFunction>& synthetic_functions();

/// The function called `name`, or nullptr.
const SyntheticFunction* find_synthetic_function(const std::string& name);

/// Branin-Hoo: x1 in [-5, 10], x2 in [0, 15]; minimum 0.397887 at (-pi, 12.275),
/// (pi, 2.275) and (9.42478, 2.475).
double branin(std::span<const double> x);
/// Hartmann 6-D: x1..x6 in [0, 1]; minimum -3.32237 at
/// (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573).
double hartmann6(std::span<const double> x);
/// Rosenbrock, sum over i < n of 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2; for n = 1 just
/// (1 - x1)^2. Minimum 0 at all ones.
double rosenbrock(std::span<const double> x);
/// Sum of squares; minimum 0 at the origin.
double sphere(std::span<const double> x);

/// The learning-curve term added to f(x) at step t >= 1: (1 + gap) / sqrt(t), where
/// gap = f(x) - optimum >= 0. So loss_t - optimum = gap (1 + 1/sqrt(t)) + 1/sqrt(t): it
/// decreases with t towards gap, and at every t it grows with gap, so in expectation a
/// better config also looks better early (what ASHA and median stopping rely on).
double learning_curve(double gap, std::int64_t t);

/// A standard normal draw that depends only on its four keys (splitmix64 + Box-Muller), so
/// a trial's noise is reproducible across runs, ranks and standard libraries.
double seeded_normal(std::uint64_t seed, std::int64_t trial_id, int attempt, std::int64_t t);

/// A synthetic function at one config: f(x) and its gap to the optimum, computed once.
struct SyntheticPoint {
  double value = 0.0;  ///< f(x)
  double gap = 0.0;    ///< max(0, f(x) - optimum)
};

/// Evaluates `function` at the config's parameters (Float or Int values). Throws
/// TrialFailure when one is missing or a string.
SyntheticPoint evaluate_synthetic(const SyntheticFunction& function, const search::Config& config);

/// What step t (1-based) of a synthetic trial reports: loss = f(x) + learning_curve(gap, t)
/// + noise * seeded_normal(seed, trial, attempt, t), and objective = f(x). The one
/// implementation behind SyntheticTrainable::step and `ranktune simulate`.
search::Metrics synthetic_step(const SyntheticPoint& point, double noise, std::uint64_t seed,
                               search::TrialId trial, int attempt, std::int64_t t);

/// `[trainable] kind = "synthetic"`: its own keys (configs/README.md).
struct SyntheticOptions : config::TrainableOptions {
  static constexpr const char* kKind = "synthetic";
  std::string function = "branin";  ///< one of synthetic_functions()
  double seconds_per_step = 0.0;    ///< sleep per step, to emulate work
  double noise = 0.0;               ///< std-dev of seeded Gaussian noise added to each report
  void print(config::TomlWriter& out, const std::vector<std::string>& metrics) const override;
};

/// The synthetic kind: its line of trainable_kinds() (train/registry.h).
TrainableKind synthetic_kind();

/// The synthetic trainable. Step t (1-based) sleeps `seconds_per_step`, then reports
/// loss = f(x) + learning_curve(gap, t) + noise * N(0, 1) and objective = f(x) (noise-free,
/// no curve). It never finishes by itself; the stop rule ends it.
class SyntheticTrainable : public Trainable {
 public:
  explicit SyntheticTrainable(const config::TrainableSpec& spec);
  /// Reads the function's parameters (Float or Int values). Throws TrialFailure when one is
  /// missing or a string.
  void setup(const search::Config& config, const Context& context) override;
  StepResult step() override;
  /// The checkpoint is the step count: the noise is a function of (seed, trial, attempt,
  /// step), so a restored trial reports exactly what an unpaused one would.
  bool can_checkpoint() const override { return true; }
  void save(CheckpointWriter& out) override;
  void restore(CheckpointReader& in) override;

 private:
  const SyntheticFunction* function_;
  double seconds_per_step_;
  double noise_;
  SyntheticPoint point_;  ///< computed once in setup
  std::int64_t t_ = 0;
  Context context_;
};

}  // namespace ranktune::train
