// The synthetic trainable (train/synthetic.h): the benchmark functions, their learning
// curve and seeded noise, its steps and checkpoints, and the synthetic kind's line of
// trainable_kinds().
#include "train/synthetic.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numbers>
#include <stdexcept>
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

namespace {

// ZDT's g: 1 + 9 (x2 + ... + xn) / (n - 1), which is 1 exactly on the front.
double zdt_g(std::span<const double> x) {
  double sum = 0;
  for (std::size_t i = 1; i < x.size(); ++i) sum += x[i];
  return 1 + 9 * sum / static_cast<double>(x.size() - 1);
}

// ZDT3's front as a curve of f1 (g = 1), dominated where it rises above its earlier part.
double zdt3_curve(double f1) { return 1 - std::sqrt(f1) - f1 * std::sin(10 * std::numbers::pi * f1); }

}  // namespace

std::vector<double> zdt1(std::span<const double> x) {
  const double g = zdt_g(x);
  return {x[0], g * (1 - std::sqrt(x[0] / g))};
}

std::vector<double> zdt2(std::span<const double> x) {
  const double g = zdt_g(x), r = x[0] / g;
  return {x[0], g * (1 - r * r)};
}

std::vector<double> zdt3(std::span<const double> x) {
  const double g = zdt_g(x), r = x[0] / g;
  return {x[0], g * (1 - std::sqrt(r) - r * std::sin(10 * std::numbers::pi * x[0]))};
}

std::vector<double> dtlz2(std::span<const double> x, std::size_t objectives) {
  const std::size_t m = objectives;
  double g = 0;
  for (std::size_t i = m - 1; i < x.size(); ++i) g += (x[i] - 0.5) * (x[i] - 0.5);
  // f_j (1-based) = (1 + g) cos(x1 pi/2) ... cos(x_{M-j} pi/2) sin(x_{M-j+1} pi/2); f1 has
  // no sine factor.
  std::vector<double> f(m, 1 + g);
  for (std::size_t j = 0; j < m; ++j) {
    for (std::size_t i = 0; i + j + 1 < m; ++i) f[j] *= std::cos(x[i] * std::numbers::pi / 2);
    if (j > 0) f[j] *= std::sin(x[m - j - 1] * std::numbers::pi / 2);
  }
  return f;
}

std::string objective_metric(std::size_t i) {
  std::string name = "f";  // appended, not "f" + ...: GCC 12 warns falsely (-Wrestrict) on that
  name += std::to_string(i + 1);
  return name;
}

namespace {

// A single-objective function as a row of the table: its one objective.
template <double (*F)(std::span<const double>)>
std::vector<double> one_objective(std::span<const double> x) {
  return {F(x)};
}

// n points of a 2-objective front f2 = curve(f1), spread evenly in f1 over `pieces` laid end
// to end; a point on a boundary between pieces belongs to the earlier piece, whose right end
// is closed (a later piece's left end is dominated by it).
std::vector<std::vector<double>> front_2d(double (*curve)(double), std::span<const double[2]> pieces, int n) {
  double total = 0;
  for (const auto& p : pieces) total += p[1] - p[0];
  std::vector<std::vector<double>> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    double u = total * i / (n - 1);
    std::size_t k = 0;
    for (; k + 1 < pieces.size() && u > pieces[k][1] - pieces[k][0]; ++k) u -= pieces[k][1] - pieces[k][0];
    const double f1 = std::min(pieces[k][0] + u, pieces[k][1]);
    out.push_back({f1, curve(f1)});
  }
  return out;
}

constexpr double kUnitInterval[1][2] = {{0.0, 1.0}};

std::vector<std::vector<double>> zdt1_front(int n) {
  return front_2d([](double f1) { return 1 - std::sqrt(f1); }, kUnitInterval, n);
}
std::vector<std::vector<double>> zdt2_front(int n) {
  return front_2d([](double f1) { return 1 - f1 * f1; }, kUnitInterval, n);
}
std::vector<std::vector<double>> zdt3_front(int n) { return front_2d(&zdt3_curve, kZdt3Pieces, n); }

// The simplex lattice of n divisions (Das and Dennis 1998) scaled onto the unit sphere.
std::vector<std::vector<double>> dtlz2_front(int n) {
  std::vector<std::vector<double>> out;
  for (int i = 0; i <= n; ++i) {
    for (int j = 0; i + j <= n; ++j) {
      std::vector<double> w = {static_cast<double>(i), static_cast<double>(j), static_cast<double>(n - i - j)};
      const double norm = std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
      for (double& v : w) v /= norm;
      out.push_back(std::move(w));
    }
  }
  return out;
}

std::vector<double> dtlz2_3(std::span<const double> x) { return dtlz2(x, 3); }

}  // namespace

const std::vector<SyntheticFunction>& synthetic_functions() {
  static const std::vector<std::string> metrics = {"loss", "objective"};
  static const std::vector<std::string> two = {objective_metric(0), objective_metric(1)};
  static const std::vector<std::string> three = {objective_metric(0), objective_metric(1), objective_metric(2)};
  // ZDT3's f2 is smallest at the right end of its last front piece.
  static const double zdt3_min_f2 = zdt3_curve(kZdt3Pieces[4][1]);
  static const std::vector<SyntheticFunction> table = {
      {"branin", {"x1", "x2"}, 0.397887357729739, metrics, &one_objective<branin>},
      {"hartmann6", {"x1", "x2", "x3", "x4", "x5", "x6"}, -3.32236801141551, metrics, &one_objective<hartmann6>},
      {"rosenbrock", {}, 0.0, metrics, &one_objective<rosenbrock>},
      {"sphere", {}, 0.0, metrics, &one_objective<sphere>},
      {"zdt1", {}, 0.0, two, &zdt1, {0.0}, 2, 0.0, 1.0, &zdt1_front},
      {"zdt2", {}, 0.0, two, &zdt2, {0.0}, 2, 0.0, 1.0, &zdt2_front},
      {"zdt3", {}, 0.0, two, &zdt3, {zdt3_min_f2}, 2, 0.0, 1.0, &zdt3_front},
      {"dtlz2", {}, 0.0, three, &dtlz2_3, {0.0, 0.0}, 3, 0.0, 1.0, &dtlz2_front},
  };
  return table;
}

std::vector<std::vector<double>> pareto_front(const SyntheticFunction& function, int n) {
  if (function.front == nullptr) return {};
  if (n < 2) throw std::invalid_argument("pareto_front of " + function.name + " needs n >= 2, not " + std::to_string(n));
  return function.front(n);
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

double seeded_normal(std::uint64_t seed, std::int64_t trial_id, int attempt, std::int64_t t, std::size_t stream) {
  // Chaining the keys through the mixer (rather than adding them) keeps nearby key tuples,
  // e.g. (trial 1, step 2) and (trial 2, step 1), from sharing a stream.
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<std::uint64_t>(trial_id));
  h = splitmix64(h ^ static_cast<std::uint64_t>(attempt));
  h = splitmix64(h ^ static_cast<std::uint64_t>(t));
  // Only further streams mix once more, so stream 0 (every single-objective function) draws
  // exactly what it drew before there were several.
  if (stream > 0) h = splitmix64(h ^ static_cast<std::uint64_t>(stream));
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
    if (names.size() < static_cast<std::size_t>(function.min_params)) {
      throw TrialFailure(function.name + " needs parameters x1..xn with n >= " + std::to_string(function.min_params) +
                         "; the config has x1.." + names.back() + " (no " + variadic_param(static_cast<int>(names.size()) + 1) + ")");
    }
  }
  std::vector<double> x;
  x.reserve(names.size());
  for (const auto& name : names) {
    const auto it = config.find(name);
    if (it == config.end()) throw TrialFailure(function.name + " needs parameter '" + name + "'");
    if (const auto* d = std::get_if<double>(&it->second)) x.push_back(*d);
    else if (const auto* i = std::get_if<std::int64_t>(&it->second)) x.push_back(static_cast<double>(*i));
    else throw TrialFailure("parameter '" + name + "' of " + function.name + " must be a number");
    // Not !(x in range): a NaN is refused too.
    if (!(x.back() >= function.lower && x.back() <= function.upper)) {
      throw TrialFailure("parameter '" + name + "' of " + function.name + " is " + config::number_text(x.back()) +
                         ", outside its domain [" + config::number_text(function.lower) + ", " +
                         config::number_text(function.upper) + "]");
    }
  }
  SyntheticPoint point{function.eval(x), {}};
  point.gaps.reserve(point.values.size());
  for (std::size_t i = 0; i < point.values.size(); ++i) point.gaps.push_back(std::max(0.0, point.values[i] - function.optimum_of(i)));
  return point;
}

search::Metrics synthetic_step(const SyntheticPoint& point, double noise, std::uint64_t seed,
                               search::TrialId trial, int attempt, std::int64_t t) {
  if (point.values.size() == 1) {
    double loss = point.values[0] + learning_curve(point.gaps[0], t);
    if (noise > 0) loss += noise * seeded_normal(seed, trial, attempt, t);
    return {{"loss", loss}, {"objective", point.values[0]}};
  }
  search::Metrics m;
  for (std::size_t i = 0; i < point.values.size(); ++i) {
    double f = point.values[i] + learning_curve(point.gaps[i], t);
    if (noise > 0) f += noise * seeded_normal(seed, trial, attempt, t, i);
    m[objective_metric(i)] = f;
  }
  return m;
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

// A bounded function's input `p` draws nothing outside [lower, upper]: said at check time
// rather than as a failure of every trial that draws such a value.
void check_within(const config::ExperimentConfig& cfg, const SyntheticFunction& f, const search::Param& p) {
  const search::Domain& d = p.domain;
  double low = d.low, high = d.high;
  if (d.is_listed()) {
    low = std::numeric_limits<double>::infinity();
    high = -low;
    for (const auto& v : d.values) {
      const double x = std::holds_alternative<double>(v) ? std::get<double>(v) : static_cast<double>(std::get<std::int64_t>(v));
      low = std::min(low, x);
      high = std::max(high, x);
    }
  } else if (d.kind == search::DomainKind::RandInt) {
    high -= 1;  // [low, high)
  }
  if (low >= f.lower && high <= f.upper) return;
  const std::string domain = "[" + config::number_text(f.lower) + ", " + config::number_text(f.upper) + "]";
  cfg.fail("search.space." + p.name, "'" + p.name + "' is an input of " + f.name + ", which is defined on " + domain +
                                         "; its values reach " + config::number_text(low < f.lower ? low : high) +
                                         ". Keep its range within " + domain);
}

// The function exists, its parameters are in the space and numeric (and in its domain), the
// metric is one it reports.
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
    if (highest < f->min_params) {
      std::vector<std::string> missing;
      for (int i = highest + 1; i <= f->min_params; ++i) missing.push_back(variadic_param(i));
      cfg.fail("search.space", spec.function + " needs parameters x1..xn (n >= " + std::to_string(f->min_params) +
                                   "); missing: " + sys::comma_list(missing));
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
    if (f->bounded()) check_within(cfg, *f, p);
  }

  if (std::find(f->metrics.begin(), f->metrics.end(), cfg.metric) == f->metrics.end()) {
    cfg.fail("experiment.metric", "the synthetic trainable reports " + sys::comma_list(f->metrics) + "; '" + sys::excerpt(cfg.metric) +
                                      "' is not one of them" +
                                      (f->multi_objective() ? " (" + spec.function + " has " + std::to_string(f->objectives()) +
                                                                  " objectives, fi with its learning curve)"
                                                            : " (\"objective\" is f(x) without noise)"));
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
