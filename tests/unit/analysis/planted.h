#pragma once
// Planted importance problems: random-search trials of functions whose important
// parameters are known by construction, generated in-process (no HDF5, no MPI) for the
// many-seed tests (planted_test.cc) and benchmarks/bench_importance.cc.

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/importance.h"
#include "train/synthetic.h"

namespace ranktune::planted {

struct Problem {
  std::string name;
  search::Space space;
  std::set<std::string> important;  ///< the planted top-k
  std::set<std::string> no_effect;  ///< parameters the loss does not depend on (to noise level)
};

inline search::Param uniform(const std::string& name, double low, double high) {
  return {name, search::Domain{search::DomainKind::Uniform, low, high, 0, {}}};
}

/// Issue 34's trainable at one budget: 10 (a - 0.7)^2 + 5 |b - 0.2| + 0.01 c + 0.01 d + 1/27.
inline Problem issue34() {
  Problem p{"issue34", {}, {"a", "b"}, {"c", "d"}};
  for (const char* n : {"a", "b", "c", "d"}) p.space.params.push_back(uniform(n, 0, 1));
  return p;
}

/// Hartmann-6 over tests/data/importance_hartmann6.toml's box: x5 and x6 over [0, 1] dominate,
/// x1..x4 over narrow intervals near the optimum follow in a graded order.
inline Problem hartmann6() {
  Problem p{"hartmann6", {}, {"x5", "x6"}, {}};
  p.space.params = {uniform("x1", 0, 0.55),  uniform("x2", 0, 0.5), uniform("x3", 0.3, 0.65),
                    uniform("x4", 0.25, 0.3), uniform("x5", 0, 1),   uniform("x6", 0, 1)};
  return p;
}

/// Ten parameters of which two matter: a log-scaled learning rate and a listed optimizer;
/// six floats, an integer and a second listed one do nothing.
inline Problem ten_two() {
  Problem p{"ten_two", {}, {"lr", "opt"}, {"u1", "u2", "u3", "u4", "u5", "u6", "layers", "act"}};
  using search::Domain, search::DomainKind, search::Value;
  p.space.params.push_back({"lr", Domain{DomainKind::LogUniform, 1e-5, 1e-1, 0, {}}});
  p.space.params.push_back({"opt", Domain{DomainKind::Choice, 0, 0, 0, {Value{"sgd"}, Value{"adam"}, Value{"rmsprop"}}}});
  for (const char* n : {"u1", "u2", "u3", "u4", "u5", "u6"}) p.space.params.push_back(uniform(n, 0, 1));
  p.space.params.push_back({"layers", Domain{DomainKind::RandInt, 1, 9, 0, {}}});
  p.space.params.push_back({"act", Domain{DomainKind::Choice, 0, 0, 0, {Value{"relu"}, Value{"tanh"}}}});
  return p;
}

inline double loss_of(const Problem& p, const search::Config& c) {
  auto x = [&](const char* n) { return search::to_double(c.at(n)); };
  if (p.name == "issue34")
    return 10 * (x("a") - 0.7) * (x("a") - 0.7) + 5 * std::abs(x("b") - 0.2) + 0.01 * x("c") + 0.01 * x("d") + 1.0 / 27;
  if (p.name == "hartmann6") {
    const double v[6] = {x("x1"), x("x2"), x("x3"), x("x4"), x("x5"), x("x6")};
    return train::hartmann6(v);
  }
  const double lr = std::log10(x("lr")) + 3;
  const std::string& opt = std::get<std::string>(c.at("opt"));
  return lr * lr + (opt == "adam" ? 0.0 : opt == "rmsprop" ? 1.5 : 3.0);
}

/// `n` random configs of `p` drawn with `seed`, encoded with their loss.
inline analysis::Observations trials(const Problem& p, std::size_t n, std::uint64_t seed) {
  search::Rng rng(seed);
  std::vector<search::Config> configs;
  std::vector<double> values;
  for (std::size_t i = 0; i < n; ++i) {
    search::Config c;
    for (const search::Param& q : p.space.params) c[q.name] = search::sample(q.domain, rng);
    values.push_back(loss_of(p, c));
    configs.push_back(std::move(c));
  }
  return analysis::encode(p.space, configs, values, search::Mode::Min);
}

inline std::vector<Problem> all() { return {issue34(), hartmann6(), ten_two()}; }

}  // namespace ranktune::planted
