// Hyperparameter importance: configs encoded as coordinates, and the two methods behind one
// call (analysis/importance.h).
#include "analysis/importance.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "analysis/fanova.h"
#include "analysis/ped_anova.h"

namespace ranktune::analysis {
namespace {

Feature feature_of(const Param& p) {
  Feature f;
  f.name = p.name;
  const Domain& d = p.domain;
  switch (d.kind) {
    case DomainKind::Choice:
    case DomainKind::Grid:
      f.categories = d.values.size();
      break;
    case DomainKind::LogUniform:
      f.low = std::log(d.low);
      f.high = std::log(d.high);
      break;
    case DomainKind::RandInt:  // integers in [low, high)
      f.low = d.low;
      f.high = d.high - 1;
      f.steps = static_cast<std::size_t>(std::max(0.0, d.high - d.low));
      break;
    case DomainKind::QUniform:
      f.low = d.low;
      f.high = d.high;
      f.steps = static_cast<std::size_t>(std::floor((d.high - d.low) / d.q + 1e-9)) + 1;
      break;
    case DomainKind::Uniform:
      f.low = d.low;
      f.high = d.high;
      break;
  }
  return f;
}

/// The coordinate of `v` on `p`'s feature `f`, or NaN when `v` is not one of its values.
double coordinate(const Param& p, const Feature& f, const Value& v) {
  if (f.categories) {
    const auto& values = p.domain.values;
    const auto it = std::find(values.begin(), values.end(), v);
    // A number may come back as an integer or a double: compare as numbers too.
    if (it == values.end()) {
      const double x = to_double(v);
      for (std::size_t k = 0; k < values.size(); ++k)
        if (!std::isnan(x) && to_double(values[k]) == x) return static_cast<double>(k) + 0.5;
      return std::nan("");
    }
    return static_cast<double>(it - values.begin()) + 0.5;
  }
  double x = to_double(v);
  if (std::isnan(x)) return x;
  if (p.domain.kind == DomainKind::LogUniform) x = x > 0 ? std::log(x) : f.low;
  return std::clamp(x, std::min(f.low, f.high), std::max(f.low, f.high));
}

}  // namespace

const char* to_string(Method m) { return m == Method::PedAnova ? "ped-anova" : "fanova"; }

Observations encode(const Space& space, const std::vector<Config>& configs, const std::vector<double>& values,
                    Mode mode) {
  Observations obs;
  for (const Param& p : space.params) obs.features.push_back(feature_of(p));
  for (std::size_t i = 0; i < configs.size() && i < values.size(); ++i) {
    if (std::isnan(values[i]) || std::isinf(values[i])) continue;
    std::vector<double> row;
    row.reserve(space.params.size());
    for (std::size_t j = 0; j < space.params.size(); ++j) {
      const auto it = configs[i].find(space.params[j].name);
      const double x = it == configs[i].end() ? std::nan("") : coordinate(space.params[j], obs.features[j], it->second);
      if (!std::isfinite(x)) break;
      row.push_back(x);
    }
    if (row.size() != space.params.size()) continue;
    obs.rows.push_back(std::move(row));
    obs.loss.push_back(-sign(mode) * values[i]);
  }
  return obs;
}

std::vector<Score> evaluate(const Observations& obs, const Options& options) {
  std::vector<double> shares;
  std::size_t live = 0;
  for (const Feature& f : obs.features) live += !f.constant();
  if (obs.loss.size() < 3) {
    shares.assign(obs.features.size(), 0.0);
    for (std::size_t f = 0; f < obs.features.size(); ++f)
      if (!obs.features[f].constant()) shares[f] = 1.0 / static_cast<double>(live);
  } else if (options.method == Method::PedAnova) {
    shares = ped_anova(obs, options.quantile);
  } else {
    shares = fanova(obs, options.trees, options.seed);
  }
  std::vector<Score> scores;
  for (std::size_t f = 0; f < obs.features.size(); ++f) scores.push_back({obs.features[f].name, shares[f]});
  std::stable_sort(scores.begin(), scores.end(), [](const Score& a, const Score& b) { return a.value > b.value; });
  return scores;
}

}  // namespace ranktune::analysis
