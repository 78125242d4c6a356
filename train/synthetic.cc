// The synthetic trainable (train/synthetic.h): the benchmark functions, their learning
// curve and seeded noise, its steps and checkpoints, and the synthetic kind's line of
// trainable_kinds().
#include "train/synthetic.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numbers>
#include <thread>
#include <unordered_set>
#include <variant>
#include <vector>

#include "search/options.h"
#include "sys/text.h"
#include "train/collective.h"

namespace ranktune::train {

double branin(std::span<const double> x) {
  constexpr double pi = std::numbers::pi;
  constexpr double b = 5.1 / (4 * pi * pi), c = 5 / pi, r = 6, s = 10, t = 1 / (8 * pi);
  const double u = x[1] - b * x[0] * x[0] + c * x[0] - r;
  return u * u + s * (1 - t) * std::cos(x[0]) + s;
}

double hartmann6(std::span<const double> x) {
  static constexpr std::array<double, 4> alpha = {1.0, 1.2, 3.0, 3.2};
  static constexpr double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                     {0.05, 10, 17, 0.1, 8, 14},
                                     {3, 3.5, 1.7, 10, 17, 8},
                                     {17, 8, 0.05, 10, 0.1, 14}};
  static constexpr double P[4][6] = {{1312, 1696, 5569, 124, 8283, 5886},
                                     {2329, 4135, 8307, 3736, 1004, 9991},
                                     {2348, 1451, 3522, 2883, 3047, 6650},
                                     {4047, 8828, 8732, 5743, 1091, 381}};
  double f = 0;
  for (int i = 0; i < 4; ++i) {
    double e = 0;
    for (int j = 0; j < 6; ++j) {
      const double d = x[j] - P[i][j] * 1e-4;
      e += A[i][j] * d * d;
    }
    f -= alpha[i] * std::exp(-e);
  }
  return f;
}

double rosenbrock(std::span<const double> x) {
  if (x.size() == 1) return (1 - x[0]) * (1 - x[0]);
  double f = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i) {
    const double a = x[i + 1] - x[i] * x[i], b = 1 - x[i];
    f += 100 * a * a + b * b;
  }
  return f;
}

double sphere(std::span<const double> x) {
  double f = 0;
  for (double v : x) f += v * v;
  return f;
}

const std::vector<SyntheticFunction>& synthetic_functions() {
  static const std::vector<std::string> metrics = {"loss", "objective"};
  static const std::vector<SyntheticFunction> table = {
      {"branin", {"x1", "x2"}, 0.397887357729739, metrics, &branin},
      {"hartmann6", {"x1", "x2", "x3", "x4", "x5", "x6"}, -3.32236801141551, metrics, &hartmann6},
      {"rosenbrock", {}, 0.0, metrics, &rosenbrock},
      {"sphere", {}, 0.0, metrics, &sphere},
  };
  return table;
}

std::string variadic_param(int i) {
  std::string name = "x";
  name += std::to_string(i);
  return name;
}

const SyntheticFunction* find_synthetic_function(const std::string& name) {
  for (const auto& f : synthetic_functions()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

double learning_curve(double gap, std::int64_t t) {
  return (1 + gap) / std::sqrt(static_cast<double>(t));
}

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform draw in the open interval (0, 1), so log() below is finite.
double open_unit(std::uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1p-53; }

}  // namespace

double seeded_normal(std::uint64_t seed, std::int64_t trial_id, int attempt, std::int64_t t) {
  // Chaining the keys through the mixer (rather than adding them) keeps nearby key tuples,
  // e.g. (trial 1, step 2) and (trial 2, step 1), from sharing a stream.
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<std::uint64_t>(trial_id));
  h = splitmix64(h ^ static_cast<std::uint64_t>(attempt));
  h = splitmix64(h ^ static_cast<std::uint64_t>(t));
  const double u1 = open_unit(splitmix64(h)), u2 = open_unit(splitmix64(h + 1));
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

SyntheticTrainable::SyntheticTrainable(const config::TrainableSpec& spec)
    : function_(find_synthetic_function(options_of<SyntheticOptions>(spec).function)),
      seconds_per_step_(options_of<SyntheticOptions>(spec).seconds_per_step),
      noise_(options_of<SyntheticOptions>(spec).noise) {}  // an unknown name fails in setup(), so building never throws

SyntheticPoint evaluate_synthetic(const SyntheticFunction& function, const search::Config& config) {
  std::vector<std::string> names = function.params;
  if (function.variadic()) {
    for (int i = 1; config.contains(variadic_param(i)); ++i) names.push_back(variadic_param(i));
    if (names.empty()) throw TrialFailure(function.name + " needs parameters x1..xn; the config has no x1");
  }
  std::vector<double> x;
  x.reserve(names.size());
  for (const auto& name : names) {
    const auto it = config.find(name);
    if (it == config.end()) throw TrialFailure(function.name + " needs parameter '" + name + "'");
    if (const auto* d = std::get_if<double>(&it->second)) x.push_back(*d);
    else if (const auto* i = std::get_if<std::int64_t>(&it->second)) x.push_back(static_cast<double>(*i));
    else throw TrialFailure("parameter '" + name + "' of " + function.name + " must be a number");
  }
  const double value = function.eval(x);
  return {value, std::max(0.0, value - function.optimum)};
}

search::Metrics synthetic_step(const SyntheticPoint& point, double noise, std::uint64_t seed,
                               search::TrialId trial, int attempt, std::int64_t t) {
  double loss = point.value + learning_curve(point.gap, t);
  if (noise > 0) loss += noise * seeded_normal(seed, trial, attempt, t);
  return {{"loss", loss}, {"objective", point.value}};
}

void SyntheticTrainable::setup(const search::Config& config, const Context& context) {
  if (!function_) throw TrialFailure("unknown synthetic function");
  context_ = context;
  t_ = 0;
  point_ = evaluate_synthetic(*function_, config);
}

StepResult SyntheticTrainable::step() {
  if (!function_) throw TrialFailure("unknown synthetic function");
  ++t_;
  if (seconds_per_step_ > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds_per_step_));
  StepResult r{synthetic_step(point_, noise_, context_.seed, context_.trial_id, context_.attempt, t_), false};
  if (context_.collective != nullptr) {
    // In a gang every member computes the same step; the mean over the members is what a
    // data-parallel trainable reports, and it exercises the gang's collective every step.
    std::vector<double> sums;
    for (const auto& [name, value] : r.metrics) sums.push_back(value);
    context_.collective->allreduce_sum(std::span<double>(sums));
    std::size_t i = 0;
    for (auto& [name, value] : r.metrics) value = sums[i++] / context_.collective->size();
  }
  return r;
}

namespace {
constexpr char kSyntheticTag[9] = "synth001";
}

void SyntheticTrainable::save(CheckpointWriter& out) {
  put_tag(out, kSyntheticTag);
  out.put<std::int64_t>(t_);
}

void SyntheticTrainable::restore(CheckpointReader& in) {
  expect_tag(in, kSyntheticTag);
  const auto t = in.get<std::int64_t>();
  if (t < 0) throw CheckpointError("synthetic checkpoint has a negative step count");
  t_ = t;
}

// ---------------------------------------------------------------- the kind

namespace {

// The index n of a parameter named "x<n>", or 0.
int x_index(const std::string& name) {
  if (name.size() < 2 || name[0] != 'x' || name[1] == '0') return 0;
  if (!std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; })) return 0;
  return name.size() > 6 ? 0 : std::atoi(name.c_str() + 1);
}

// The function exists, its parameters are in the space and numeric, the metric is one it reports.
void check_synthetic(const config::ExperimentConfig& cfg) {
  const auto& spec = options_of<SyntheticOptions>(cfg.trainable);
  const SyntheticFunction* f = find_synthetic_function(spec.function);
  if (f == nullptr) {
    std::vector<std::string> names;
    for (const auto& g : synthetic_functions()) names.push_back(g.name);
    cfg.fail("trainable.function", "unknown function '" + sys::excerpt(spec.function) + "'; valid: " + sys::comma_list(names));
  }

  std::vector<std::string> needed = f->params;
  if (f->variadic()) {
    // x1..xn up to the first gap are used; a later xk would be silently ignored, so refuse it.
    int highest = 0;
    for (const auto& p : cfg.space.params) highest = std::max(highest, x_index(p.name));
    if (highest == 0) {
      cfg.fail("search.space", spec.function + " needs parameters x1..xn (n >= 1); missing: x1");
    }
    for (int i = 1; i <= highest; ++i) needed.push_back(variadic_param(i));
  }
  // Sets, not linear scans: a space of 50,000 parameters must not take minutes to check.
  std::unordered_set<std::string> in_space, inputs(needed.begin(), needed.end());
  for (const auto& p : cfg.space.params) in_space.insert(p.name);
  std::vector<std::string> missing;
  for (const auto& name : needed) {
    if (!in_space.contains(name)) missing.push_back(name);
  }
  if (!missing.empty()) {
    cfg.fail("search.space", spec.function + " needs parameters " + sys::comma_list(needed) + "; missing: " + sys::comma_list(missing));
  }
  for (const auto& p : cfg.space.params) {
    if (!inputs.contains(p.name)) continue;
    for (const auto& v : p.domain.values) {
      if (std::holds_alternative<std::string>(v)) {
        cfg.fail("search.space." + p.name, "'" + p.name + "' is an input of " + spec.function + " and must be numeric");
      }
    }
  }

  if (std::find(f->metrics.begin(), f->metrics.end(), cfg.metric) == f->metrics.end()) {
    cfg.fail("experiment.metric", "the synthetic trainable reports " + sys::comma_list(f->metrics) + "; '" + sys::excerpt(cfg.metric) +
                                      "' is not one of them (\"objective\" is f(x) without noise)");
  }
}


const std::vector<std::string>& synthetic_keys() {
  static const std::vector<std::string> keys = {"function", "seconds_per_step", "noise"};
  return keys;
}

std::shared_ptr<const config::TrainableOptions> read_synthetic(const config::TrainableKeys& keys, config::ExperimentConfig&) {
  auto o = std::make_shared<SyntheticOptions>();
  keys.read("function", o->function);
  // A longer sleep overflows the clock and sleeps not at all.
  keys.read_range("seconds_per_step", o->seconds_per_step, 0.0, search::kMaxSeconds);
  keys.read_min("noise", o->noise, 0.0);
  return o;
}

}  // namespace

void SyntheticOptions::print(config::TomlWriter& out, const std::vector<std::string>&) const {
  out.string("function", function);
  out.number("seconds_per_step", seconds_per_step);
  out.number("noise", noise);
}

namespace {

TrainableTraits synthetic_traits(const config::TrainableSpec& spec) {
  TrainableTraits t;
  t.can_checkpoint = true;
  t.can_gang = true;
  const SyntheticFunction* f = find_synthetic_function(options_of<SyntheticOptions>(spec).function);
  if (f != nullptr) t.metrics = f->metrics;
  return t;
}

std::unique_ptr<Trainable> make_synthetic(const config::TrainableSpec& spec) { return std::make_unique<SyntheticTrainable>(spec); }

}  // namespace

TrainableKind synthetic_kind() {
  return {"synthetic", "a benchmark function with a learning curve and seeded noise, computed in the worker",
          synthetic_keys, read_synthetic, check_synthetic, synthetic_traits, make_synthetic};
}

}  // namespace ranktune::train
