#pragma once
// What bench_quality and bench_mo_quality share: their command line (FUNCTION BUDGET WORKERS
// SEED_FIRST SEED_LAST SEARCHER SCHEDULER [search.KEY=VALUE|scheduler.KEY=VALUE ...]), the
// synthetic trainable on the simulator as the quality suites run it (max_t 27, noise 0.01, steps
// of 1 virtual second with lognormal jitter 0.1), the curve of a score at every budget / 20
// iterations, and the JSON numbers they print. One
// place, so that the single- and the multi-objective suites run their pairs alike.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controller/simulator.h"
#include "search/types.h"
#include "train/synthetic.h"

namespace ranktune::bench {

inline constexpr int kCurvePoints = 20;
inline constexpr std::int64_t kMaxT = 27;  ///< iterations per trial, every function
inline constexpr double kNoise = 0.01;     ///< standard deviation of each reported value's noise

/// The command line of a quality benchmark.
struct PairArgs {
  std::string function;
  std::int64_t budget = 0;
  int workers = 0;
  int first = 0, last = 0;
  std::string searcher, scheduler;
  search::Options searcher_options, scheduler_options;
};

/// An option value: an integer, else a number, else the text.
inline search::Value parse_value(const std::string& text) {
  char* end = nullptr;
  const long long i = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() && *end == '\0') return std::int64_t{i};
  const double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') return d;
  return text;
}

/// Parses argv[1..]; on a bad command line prints `usage` (or what is wrong) to stderr, prefixed
/// with `program`, and returns nothing.
inline std::optional<PairArgs> parse_pair_args(int argc, char** argv, const char* program, const char* usage) {
  if (argc < 8) {
    std::fprintf(stderr, "%s", usage);
    return std::nullopt;
  }
  PairArgs a;
  a.function = argv[1];
  a.budget = std::atoll(argv[2]);
  a.workers = std::atoi(argv[3]);
  a.first = std::atoi(argv[4]);
  a.last = std::atoi(argv[5]);
  a.searcher = argv[6];
  a.scheduler = argv[7];
  for (int i = 8; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto eq = arg.find('=');
    const auto dot = arg.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
      std::fprintf(stderr, "%s: '%s' is not search.KEY=VALUE or scheduler.KEY=VALUE\n", program, argv[i]);
      return std::nullopt;
    }
    const std::string table = arg.substr(0, dot), key = arg.substr(dot + 1, eq - dot - 1);
    (table == "search" ? a.searcher_options : a.scheduler_options)[key] = parse_value(arg.substr(eq + 1));
  }
  if (a.budget < 1 || a.workers < 1 || a.first > a.last) {
    std::fprintf(stderr, "%s: need BUDGET >= 1, WORKERS >= 1, SEED_FIRST <= SEED_LAST\n", program);
    return std::nullopt;
  }
  return a;
}

/// A JSON number with `digits` significant digits; null for NaN and the infinities.
inline std::string json_number(double v, int digits) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

/// A score after every budget / kCurvePoints iterations of a simulation.
class Curve {
 public:
  explicit Curve(std::int64_t budget) : budget_(budget) {}
  /// Call after every result: records score() (computed once) at each point that `steps`
  /// has reached since the last call.
  void update(std::int64_t steps, const std::function<double()>& score) {
    if (next_ > kCurvePoints || steps < mark(next_)) return;
    const double v = score();
    for (; next_ <= kCurvePoints && steps >= mark(next_); ++next_) points_.emplace_back(mark(next_), v);
  }
  /// [[steps, score], ...] with `digits` significant digits.
  std::string json(int digits) const {
    std::string out = "[";
    for (const auto& [steps, v] : points_) {
      // Appended piece by piece, not "," + ...: GCC 12 warns falsely (-Wrestrict) on that.
      if (out.size() > 1) out += ',';
      out += '[';
      out += std::to_string(steps);
      out += ',';
      out += json_number(v, digits);
      out += ']';
    }
    return out + "]";
  }

 private:
  std::int64_t mark(std::int64_t k) const { return budget_ * k / kCurvePoints; }
  std::int64_t budget_;
  std::int64_t next_ = 1;
  std::vector<std::pair<std::int64_t, double>> points_;
};

/// Runs `c` (fresh) to its end on `workers` virtual workers of the simulator, each step of a
/// trial reporting what the synthetic trainable's step of `function` reports with noise kNoise
/// (train::synthetic_step, keyed by the seed, the trial and its attempt); steps of 1 virtual
/// second with lognormal jitter 0.1; `curve` updated with `score` after every result.
inline void simulate_synthetic(controller::Controller& c, const train::SyntheticFunction& function, std::uint64_t seed,
                               int workers, Curve& curve, const std::function<double()>& score) {
  controller::SimulatorOptions so;
  so.workers = workers;
  so.seed = seed;
  so.jitter = 0.1;
  so.progress_every = 1;
  so.on_progress = [&](double) { curve.update(c.steps_done(), score); };
  const controller::StepModel model = [&](const search::Config& config, search::TrialId trial, int attempt,
                                          controller::ModelState& s) {
    return train::synthetic_step(train::evaluate_synthetic(function, config), kNoise, seed, trial, attempt, s.t);
  };
  controller::simulate(c, model, so);
}

/// main() of a quality benchmark: run(argc, argv), or exit status 2 with the message of what it
/// threw, prefixed with `program`.
inline int guarded_main(const char* program, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 2;
  }
}

}  // namespace ranktune::bench
