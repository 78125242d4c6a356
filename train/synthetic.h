#pragma once
/// Built-in benchmark trainables: classic test functions with known optima (or, for the
/// multi-objective ones, known Pareto fronts), made multi-fidelity by a learning-curve term
/// that fades with the step count, plus seeded noise. They cost nothing but an optional
/// sleep, so they measure the farm's scheduling overhead.

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "train/registry.h"
#include "train/trainable.h"

namespace ranktune::train {

/// One benchmark function of the synthetic trainable: a single objective (branin, ...) or
/// several (zdt1, ...), all minimized.
struct SyntheticFunction {
  std::string name;
  /// Required parameter names. Empty means variadic: x1..xn, n >= min_params, every one
  /// present in the config up to the first missing index.
  std::vector<std::string> params;
  /// The minimum of the first objective over the domain: for a single-objective function,
  /// the global minimum of `eval`.
  double optimum = 0.0;
  /// What each step reports: {"loss", "objective"} for one objective, {"f1", "f2"[, "f3"]}
  /// (objective_metric()) for several.
  std::vector<std::string> metrics;
  /// The objectives at `x` (in the order of `params`, or x1..xn), minimized: one value for
  /// a single-objective function, objectives() values otherwise.
  std::vector<double> (*eval)(std::span<const double> x) = nullptr;
  /// The minima of the second and later objectives over the domain (empty for one
  /// objective). With `optimum` they make the ideal point, from which each objective's
  /// learning-curve gap is measured.
  std::vector<double> further_optima;
  /// A variadic function's fewest parameters (ZDT divides by n - 1; DTLZ2 needs n >= 3).
  int min_params = 1;
  /// Every input must lie in [lower, upper]: outside it the ZDT and DTLZ2 formulas lose
  /// their meaning (a negative g, the root of a negative number). Unbounded by default.
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  /// Points on the true Pareto front (pareto_front()); nullptr for one objective.
  std::vector<std::vector<double>> (*front)(int n) = nullptr;

  bool variadic() const { return params.empty(); }
  bool bounded() const { return std::isfinite(lower) || std::isfinite(upper); }
  std::size_t objectives() const { return 1 + further_optima.size(); }
  bool multi_objective() const { return objectives() > 1; }
  /// The minimum of objective i (0-based) over the domain.
  double optimum_of(std::size_t i) const { return i == 0 ? optimum : further_optima.at(i - 1); }
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

// Multi-objective functions. ZDT1-3: E. Zitzler, K. Deb, L. Thiele, "Comparison of
// multiobjective evolutionary algorithms: empirical results", Evolutionary Computation 8(2),
// 2000. x1..xn in [0, 1], n >= 2 (the paper uses n = 30): f1 = x1,
// g = 1 + 9 (x2 + ... + xn) / (n - 1), f2 = g h(f1, g). The front is where g = 1, that is
// x2 = ... = xn = 0, with f1 in [0, 1]; both ideal values are 0 except ZDT3's f2.

/// ZDT1, h = 1 - sqrt(f1 / g). Convex front: f2 = 1 - sqrt(f1).
std::vector<double> zdt1(std::span<const double> x);
/// ZDT2, h = 1 - (f1 / g)^2. Concave front: f2 = 1 - f1^2.
std::vector<double> zdt2(std::span<const double> x);
/// ZDT3, h = 1 - sqrt(f1 / g) - (f1 / g) sin(10 pi f1). Disconnected front: f2 = 1 - sqrt(f1)
/// - f1 sin(10 pi f1) where that curve is not dominated by its own earlier part, five pieces
/// of f1 (kZdt3Pieces): [0, 0.0830], (0.1822, 0.2578], (0.4093, 0.4539], (0.6184, 0.6525],
/// (0.8233, 0.8518]. Each piece ends at a local minimum of the curve, and the next begins where
/// the curve falls below that minimum again. The minimum of f2, -0.773369, is at the last end.
std::vector<double> zdt3(std::span<const double> x);
/// ZDT3's front pieces in f1, (left, right]; the first is closed. Computed by a scan of the
/// curve on a grid of 2 * 10^6 points, refined by a bounded minimization (right ends) and a
/// root search (left ends); tests/unit/train/synthetic_test.cc checks them against the curve.
inline constexpr double kZdt3Pieces[5][2] = {{0.0, 0.083001533535},
                                             {0.182228728029, 0.257762363414},
                                             {0.409313674809, 0.453882104106},
                                             {0.618396794439, 0.652511703798},
                                             {0.823331798327, 0.851832862213}};

/// DTLZ2 with M = `objectives` objectives: K. Deb, L. Thiele, M. Laumanns, E. Zitzler,
/// "Scalable multi-objective optimization test problems", CEC 2002, and "Scalable test
/// problems for evolutionary multiobjective optimization", Evolutionary Multiobjective
/// Optimization, Springer 2005. x1..xn in [0, 1],
/// n = M + k - 1 (the paper's k = 10, so n = 12 for M = 3), g = sum over i >= M of (xi - 1/2)^2,
/// and for M = 3: f1 = (1 + g) cos(x1 pi/2) cos(x2 pi/2), f2 = (1 + g) cos(x1 pi/2) sin(x2 pi/2),
/// f3 = (1 + g) sin(x1 pi/2). The front is where g = 0 (xM..xn = 1/2): the octant of the unit
/// sphere, f1^2 + ... + fM^2 = 1 with every fi >= 0. Ideal point: the origin.
std::vector<double> dtlz2(std::span<const double> x, std::size_t objectives = 3);

/// The metric of objective i (0-based) of a multi-objective function: "f1", "f2", ...
std::string objective_metric(std::size_t i);

/// Points on the true Pareto front of a multi-objective function, each a vector of its
/// objectives, for tests and hypervolume references; empty for a single-objective function.
/// Two objectives: n points evenly spaced in f1 over the front, f1 = 0 first and the last
/// piece's right end last (ZDT3: over its five pieces laid end to end, so no point falls in a
/// gap or on a piece's open left end). DTLZ2: the simplex lattice of n divisions (Das and
/// Dennis 1998), (n + 1)(n + 2) / 2 points, each scaled onto the unit sphere. Throws
/// std::invalid_argument when n < 2.
std::vector<std::vector<double>> pareto_front(const SyntheticFunction& function, int n);

/// The learning-curve term added to f(x) at step t >= 1: (1 + gap) / sqrt(t), where
/// gap = f(x) - optimum >= 0. So loss_t - optimum = gap (1 + 1/sqrt(t)) + 1/sqrt(t): it
/// decreases with t towards gap, and at every t it grows with gap, so in expectation a
/// better config also looks better early (what ASHA and median stopping rely on).
double learning_curve(double gap, std::int64_t t);

/// A standard normal draw that depends only on its keys (splitmix64 + Box-Muller), so a
/// trial's noise is reproducible across runs, ranks and standard libraries. `stream` tells
/// the objectives of a multi-objective function apart; stream 0 is the single-objective one.
double seeded_normal(std::uint64_t seed, std::int64_t trial_id, int attempt, std::int64_t t, std::size_t stream = 0);

/// A synthetic function at one config: its objectives and their gaps to their optima,
/// computed once.
struct SyntheticPoint {
  std::vector<double> values;  ///< each objective at x (one for a single-objective function)
  std::vector<double> gaps;    ///< max(0, values[i] - optimum_of(i))
};

/// Evaluates `function` at the config's parameters (Float or Int values). Throws
/// TrialFailure when one is missing or a string, when a variadic function has fewer than
/// min_params of them, or when one is outside [lower, upper].
SyntheticPoint evaluate_synthetic(const SyntheticFunction& function, const search::Config& config);

/// What step t (1-based) of a synthetic trial reports. One objective: loss = f(x) +
/// learning_curve(gap, t) + noise * seeded_normal(seed, trial, attempt, t), and objective =
/// f(x). Several: each fi = fi(x) + learning_curve(gap_i, t) + noise * seeded_normal(seed,
/// trial, attempt, t, i - 1), so every objective approaches its final value from above and
/// stopping early matters for each. The one implementation behind SyntheticTrainable::step
/// and `ranktune simulate`.
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
/// synthetic_step(): for one objective, loss = f(x) + learning_curve(gap, t) + noise * N(0, 1)
/// and objective = f(x) (noise-free, no curve); for several, f1, f2, ... each with its own
/// curve and noise. It never finishes by itself; the stop rule ends it.
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
